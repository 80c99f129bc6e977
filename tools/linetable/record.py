"""Record line-table fixtures from the running interpreter.

Usage: python record.py SAMPLE_SOURCE OUT_JSON

Compiles SAMPLE_SOURCE (never executes it), walks every code object reachable
through co_consts, and writes, per code object, the raw line table and the
line CPython itself assigns to every instruction offset. The C++ decoders in
src/python/line_table.cpp are tested against these files.

Ground truth, by version (all offsets are in bytes from the start of co_code):
  3.8, 3.9  co_lnotab; dis.findlinestarts() (CPython's own decoder), expanded
            so every instruction gets the line of the last line start at or
            before it.
  3.10      co_linetable; code.co_lines() ranges (line None = no line).
  3.11+     co_linetable; code.co_positions() start line, one entry per code
            unit, so inline CACHE units are recorded as well as instructions.

Must stay runnable on every CPython from 3.8 on.
"""

import dis
import json
import sys


def table_format(version):
    if version < (3, 10):
        return "lnotab"
    if version < (3, 11):
        return "linetable310"
    return "locations311"


def expected_lnotab(code):
    starts = dict(dis.findlinestarts(code))
    out = []
    line = None
    for offset in range(0, len(code.co_code), 2):
        line = starts.get(offset, line)
        # findlinestarts always yields offset 0 (it falls back to
        # co_firstlineno), so `line` is never None here.
        assert line is not None, (code, offset)
        out.append([offset, line])
    return out


def expected_co_lines(code):
    lines = {}
    for start, end, line in code.co_lines():
        for offset in range(start, end, 2):
            lines[offset] = line
    return [[offset, lines.get(offset)] for offset in range(0, len(code.co_code), 2)]


def expected_positions(code, stats):
    positions = list(code.co_positions())
    assert len(positions) * 2 == len(code.co_code), code
    out = [[2 * i, pos[0]] for i, pos in enumerate(positions)]

    # Sanity checks whose outcome is reported, not enforced: do inline CACHE
    # units carry their instruction's line, and does co_lines() agree?
    starts = sorted(i.offset for i in dis.get_instructions(code))
    owner = {}
    for index, start in enumerate(starts):
        end = starts[index + 1] if index + 1 < len(starts) else len(code.co_code)
        for offset in range(start, end, 2):
            owner[offset] = start
    by_offset = dict((o, l) for o, l in out)
    for offset, line in out:
        if owner[offset] != offset:
            stats["cache_units"] += 1
            if by_offset[owner[offset]] != line:
                stats["cache_line_differs"] += 1
    co_lines = dict((o, l) for o, l in expected_co_lines(code))
    for offset, line in out:
        if co_lines[offset] != line:
            stats["co_lines_differs"] += 1
    return out


def walk(code, parent_path, out, stats):
    qualname = getattr(code, "co_qualname", None)
    if qualname is None:
        # Before 3.11 code objects carry no qualname: build a dotted path.
        qualname = code.co_name if parent_path in (None, "<module>") else parent_path + "." + code.co_name
    if sys.version_info < (3, 10):
        table = code.co_lnotab
        expected = expected_lnotab(code)
    elif sys.version_info < (3, 11):
        table = code.co_linetable
        expected = expected_co_lines(code)
    else:
        table = code.co_linetable
        expected = expected_positions(code, stats)
    stats["entries"] += len(expected)
    stats["no_line"] += sum(1 for _, line in expected if line is None)
    out.append({
        "qualname": qualname,
        "first_line": code.co_firstlineno,
        "code_size": len(code.co_code),
        "table_hex": table.hex(),
        "expected": expected,
    })
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            walk(const, qualname, out, stats)


def main():
    source_path, out_path = sys.argv[1], sys.argv[2]
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    code = compile(source, "sample_source.py", "exec", dont_inherit=True, optimize=0)
    stats = {"entries": 0, "no_line": 0, "cache_units": 0,
             "cache_line_differs": 0, "co_lines_differs": 0}
    objects = []
    walk(code, None, objects, stats)
    version = "%d.%d.%d" % sys.version_info[:3]
    # One code object per line keeps the files diffable and small.
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("{\n")
        f.write('"python": %s,\n' % json.dumps(version))
        f.write('"format": %s,\n' % json.dumps(table_format(sys.version_info)))
        f.write('"source": "tools/linetable/sample_source.py",\n')
        f.write('"code_objects": [\n')
        f.write(",\n".join(json.dumps(o, separators=(",", ":")) for o in objects))
        f.write("\n]\n}\n")
    print("%s: %d code objects, %d entries (%d no line; %d cache units, %d with a line "
          "differing from their instruction; %d differing from co_lines)" % (
              version, len(objects), stats["entries"], stats["no_line"], stats["cache_units"],
              stats["cache_line_differs"], stats["co_lines_differs"]))


if __name__ == "__main__":
    main()
