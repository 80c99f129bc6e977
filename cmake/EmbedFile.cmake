# cmake -DINPUT=<file> -DOUTPUT=<file.cpp> -DSYMBOL=<name> -P EmbedFile.cmake
# Turns a data file (the CPython offsets table) into a C++ translation unit so
# the single pyebpf binary carries it; no data files are needed at run time.
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUTPUT}
  "// Generated from ${INPUT}; do not edit.\n"
  "#include <cstddef>\n"
  "namespace pyebpf::embedded {\n"
  "extern const unsigned char ${SYMBOL}[] = {${bytes} 0x00};\n"
  "extern const std::size_t ${SYMBOL}_size = ${size};\n"
  "}\n")
