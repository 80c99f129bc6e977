# bpf_object(<name> <source.bpf.c>)
#
# Compiles one CO-RE BPF program with clang against the pinned vmlinux.h, links
# it with bpftool (which also strips DWARF, keeping BTF) and generates a libbpf
# skeleton header. Creates an INTERFACE target <name>_skel whose include path
# holds <name>.skel.h, so C++ code embeds the object by including the header:
# the final pyebpf binary needs no .o files at run time.

find_program(BPF_CLANG NAMES clang clang-16 clang-15 clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /usr/local/sbin REQUIRED)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64")
  set(BPF_TARGET_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(BPF_TARGET_ARCH arm64)
else()
  message(FATAL_ERROR "pyebpf: unsupported architecture ${CMAKE_SYSTEM_PROCESSOR}")
endif()

set(BPF_VMLINUX_DIR ${CMAKE_SOURCE_DIR}/bpf/vmlinux/${BPF_TARGET_ARCH})
if(NOT EXISTS ${BPF_VMLINUX_DIR}/vmlinux.h)
  message(FATAL_ERROR "pyebpf: ${BPF_VMLINUX_DIR}/vmlinux.h is missing; run tools/gen-vmlinux ${BPF_TARGET_ARCH}")
endif()

# <bpf/usdt.bpf.h> includes <linux/errno.h>, which needs the multiarch
# <asm/errno.h> (/usr/include/x86_64-linux-gnu on Debian); searched after
# everything else so vmlinux.h keeps precedence, as libbpf-bootstrap does.
set(BPF_SYS_INCLUDES)
if(CMAKE_LIBRARY_ARCHITECTURE AND EXISTS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
  list(APPEND BPF_SYS_INCLUDES -idirafter /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
endif()

set(BPF_SKEL_DIR ${CMAKE_BINARY_DIR}/skel)
file(MAKE_DIRECTORY ${BPF_SKEL_DIR})

function(bpf_object name source)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/${source})
  set(obj ${BPF_SKEL_DIR}/${name}.bpf.o)
  set(linked ${BPF_SKEL_DIR}/${name}.linked.o)
  set(skel ${BPF_SKEL_DIR}/${name}.skel.h)
  file(GLOB bpf_headers ${CMAKE_SOURCE_DIR}/bpf/*.h)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPF_CLANG} -target bpf -g -O2 -Wall -Werror
            -D__TARGET_ARCH_${BPF_TARGET_ARCH}
            -I${BPF_VMLINUX_DIR} -I${CMAKE_SOURCE_DIR}/bpf ${BPF_SYS_INCLUDES}
            -c ${src} -o ${obj}
    COMMAND ${BPFTOOL} gen object ${linked} ${obj}
    COMMAND ${BPFTOOL} gen skeleton ${linked} name ${name}_bpf > ${skel}
    # bpftool declares __kconfig booleans (usdt.bpf.h's LINUX_HAS_BPF_COOKIE)
    # with C's _Bool, a GNU extension in C++: g++ takes it, clang++ (the
    # sanitizer build) in strict C++20 does not. Skeletons are C++-only here.
    COMMAND sed -i s/_Bool/bool/g ${skel}
    DEPENDS ${src} ${bpf_headers}
    COMMENT "BPF ${name}: clang -> bpftool skeleton"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${BPF_SKEL_DIR})
endfunction()
