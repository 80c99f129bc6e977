# Runs inside gdb's embedded Python (see tools/gen-offsets, which builds the
# command line).  It reads CPython struct layouts out of the DWARF of each
# given build (a pyenv libpython, or a Debian interpreter with the DWARF its
# python3.X-dbg package ships) and writes offsets/cpython.json, one row per
# build.  pyebpf itself never runs Python; this only runs when the table is
# regenerated.
#
# Invocation (done by tools/gen-offsets), inputs in the environment:
#   GEN_OFFSETS_OUT=/tmp/x.json GEN_OFFSETS_BUILDS=/tmp/builds.json \
#   gdb -nx -batch -x dwarf_offsets.py
# where builds.json lists {"label", "minor", "python", "path", "file",
# "source", "debug_dir"} per build (debug_dir: where gdb finds separate DWARF,
# "" when the file carries its own).
#
# Every number in the output comes from the DWARF or from the ELF's data; the
# script holds names only.  A name that a build's DWARF lacks is omitted from
# that build's row, never guessed.

import json
import os
import sys

import gdb

# Predicates on a member's type.  A candidate may carry one, for names whose
# meaning would change if the member kept its name but changed its type (the
# loader would read a pointer as an embedded struct or vice versa).
def is_struct(tag):
    def check(t):
        t = t.strip_typedefs()
        return t.code == gdb.TYPE_CODE_STRUCT and t.tag == tag
    return check


def is_pointer(t):
    return t.strip_typedefs().code == gdb.TYPE_CODE_PTR


def is_array(t):
    return t.strip_typedefs().code == gdb.TYPE_CODE_ARRAY


def is_pointer_to(tag):
    def check(t):
        t = t.strip_typedefs()
        return (t.code == gdb.TYPE_CODE_PTR
                and t.target().strip_typedefs().tag == tag)
    return check


def is_pointer_to_struct_with(member):
    def check(t):
        t = t.strip_typedefs()
        if t.code != gdb.TYPE_CODE_PTR:
            return False
        try:
            find_member(t.target(), member)
            return True
        except Missing:
            return False
    return check


GIL = "struct _gil_runtime_state"

# Logical field -> candidate C member paths, tried in order; the first one the
# build's DWARF has wins and is cited in "member".  A path is "<root type>.<m>.<m>";
# the root type is everything before the first dot (it may be "struct X").
FIELDS = {
    "runtime.interpreters_head": ["_PyRuntimeState.interpreters.head"],
    "runtime.interpreters_main": ["_PyRuntimeState.interpreters.main"],
    "runtime.tss_key": ["_PyRuntimeState.autoTSSkey._key",
                        "_PyRuntimeState.gilstate.autoTSSkey._key"],
    "runtime.tss_initialized": ["_PyRuntimeState.autoTSSkey._is_initialized",
                                "_PyRuntimeState.gilstate.autoTSSkey._is_initialized"],
    "runtime.tstate_current": ["_PyRuntimeState.gilstate.tstate_current"],
    # Only meaningful where the runtime embeds the GIL itself (<=3.11).
    "runtime.gil": [("_PyRuntimeState.ceval.gil", is_struct("_gil_runtime_state"))],
    # 3.8 keeps the GC state in the runtime rather than the interpreter.
    "runtime.gc": [("_PyRuntimeState.gc", is_struct("_gc_runtime_state"))],
    "interp.next": [("PyInterpreterState.next", is_pointer_to("_is"))],
    "interp.threads_head": ["PyInterpreterState.threads.head",
                            "PyInterpreterState.tstate_head"],
    "interp.threads_main": ["PyInterpreterState.threads.main"],
    "interp.modules": ["PyInterpreterState.imports.modules",
                       "PyInterpreterState.modules"],
    "interp.gc": ["PyInterpreterState.gc"],
    # 3.12+: the interpreter points at its GIL ...
    "interp.ceval_gil": [("PyInterpreterState.ceval.gil", is_pointer)],
    # ... which by default is the one embedded in the interpreter.
    "interp.gil": [("PyInterpreterState._gil", is_struct("_gil_runtime_state"))],
    # The same two GIL fields measured from the interpreter (3.14+ publish
    # them in _Py_DebugOffsets), to check gil.locked / gil.last_holder.
    "interp.gil_locked": ["PyInterpreterState._gil.locked"],
    "interp.gil_holder": ["PyInterpreterState._gil.last_holder"],
    # 3.14+: bumped by every code_dealloc, for profilers' code object caches.
    "interp.code_object_generation": ["PyInterpreterState._code_object_generation"],
    "gc.collecting": ["struct _gc_runtime_state.collecting"],
    # The gc tracker: per-generation totals CPython bumps once per collection
    # (gc.get_stats()), and generation0 == &generations[0], a self-check.
    "gc.generations": ["struct _gc_runtime_state.generations"],
    "gc.generation0": ["struct _gc_runtime_state.generation0"],
    # <= 3.14: the totals are an array in the GC state ...
    "gc.generation_stats": [("struct _gc_runtime_state.generation_stats", is_array)],
    # ... 3.15: it points at struct gc_stats, one ring of running totals per
    # generation (young, old[0], old[1]); ring.index is the newest entry.
    "gc.stats_rings": [("struct _gc_runtime_state.generation_stats", is_pointer)],
    "gcrings.young": ["struct gc_stats.young"],
    "gcrings.old": ["struct gc_stats.old"],
    "gcring_young.items": ["struct gc_young_stats_buffer.items"],
    "gcring_young.index": ["struct gc_young_stats_buffer.index"],
    "gcring_old.items": ["struct gc_old_stats_buffer.items"],
    "gcring_old.index": ["struct gc_old_stats_buffer.index"],
    "gcstats.collections": ["struct gc_generation_stats.collections"],
    "gcstats.collected": ["struct gc_generation_stats.collected"],
    "gcstats.uncollectable": ["struct gc_generation_stats.uncollectable"],
    # 3.15+: the running total of the collections' durations (seconds, a
    # double), which CPython times itself: pauses without a probe.
    "gcstats.duration": ["struct gc_generation_stats.duration"],
    "tstate.prev": ["PyThreadState.prev"],
    "tstate.next": ["PyThreadState.next"],
    "tstate.interp": ["PyThreadState.interp"],
    "tstate.thread_id": ["PyThreadState.thread_id"],
    "tstate.native_thread_id": ["PyThreadState.native_thread_id"],
    # The loader tells a _PyCFrame* (3.11/3.12) from a frame pointer by "member".
    # 3.10 also has a "cframe" member, but its CFrame holds no frame pointer
    # (only use_tracing/previous); there PyThreadState.frame is the one.
    "tstate.frame": ["PyThreadState.current_frame",
                     ("PyThreadState.cframe", is_pointer_to_struct_with("current_frame")),
                     "PyThreadState.frame"],
    "cframe.current_frame": ["_PyCFrame.current_frame"],
    "frame.back": ["_PyInterpreterFrame.previous", "PyFrameObject.f_back"],
    "frame.code": ["_PyInterpreterFrame.f_executable",
                   "_PyInterpreterFrame.f_code",
                   "PyFrameObject.f_code"],
    "frame.instr": ["_PyInterpreterFrame.instr_ptr",
                    "_PyInterpreterFrame.prev_instr",
                    "PyFrameObject.f_lasti"],
    "frame.owner": ["_PyInterpreterFrame.owner"],
    "frame.is_entry": ["_PyInterpreterFrame.is_entry"],
    "object.type": ["PyObject.ob_type"],
    "varobject.size": ["PyVarObject.ob_size"],
    "heaptype.cached_keys": ["PyHeapTypeObject.ht_cached_keys"],
    "unicode.length": ["PyASCIIObject.length"],
    "unicode.state": ["PyASCIIObject.state"],
    "unicode.utf8_length": ["PyCompactUnicodeObject.utf8_length"],
    "unicode.utf8": ["PyCompactUnicodeObject.utf8"],
    "bytes.sval": ["PyBytesObject.ob_sval"],
    "long.digit": ["PyLongObject.long_value.ob_digit", "PyLongObject.ob_digit"],
    "long.lv_tag": ["PyLongObject.long_value.lv_tag"],
    "dictvalues.values": ["struct _dictvalues.values", "PyDictValues.values"],
    "module.dict": ["PyModuleObject.md_dict"],
    "float.value": ["PyFloatObject.ob_fval"],
    "tuple.items": ["PyTupleObject.ob_item"],
    "list.items": ["PyListObject.ob_item"],
    # pyebpf dump names the lock a blocked thread waits on from its top
    # frame's fast locals and value stack (src/dump/python_locks.cpp): where
    # they start, how many there are (3.11+: co_nlocalsplus + co_stacksize;
    # <= 3.10: up to f_valuestack, then co_stacksize more), and on 3.14+
    # where the live part of the value stack ends.
    "frame.localsplus": ["_PyInterpreterFrame.localsplus", "PyFrameObject.f_localsplus"],
    "frame.valuestack": ["PyFrameObject.f_valuestack"],
    "frame.stackpointer": [("_PyInterpreterFrame.stackpointer", is_pointer)],
    "code.stacksize": ["PyCodeObject.co_stacksize"],
    "code.nlocalsplus": ["PyCodeObject.co_nlocalsplus"],
    # What a `with lock:` leaves on the stack on 3.8-3.11: lock.__exit__
    # bound to the lock (a C method); a Python method's self, for Condition.
    "cfunction.self": ["PyCFunctionObject.m_self"],
    "method.self": ["PyMethodObject.im_self"],
    # _thread.lock / _thread.RLock (Modules/_threadmodule.c). Up to 3.13.0 a
    # lock is a sem_t the waiter's futex word is the start of; from 3.13.1
    # (RLock: 3.14) a PyMutex whose waiters park (Python/parking_lot.c) in a
    # wait_entry on their own stack, with the futex word in its `sema` and
    # the PyMutex's address in `addr`. An RLock records its owner.
    "lock.sem": ["lockobject.lock_lock"],
    "lock.mutex": ["lockobject.lock"],
    "rlock.sem": ["rlockobject.rlock_lock"],
    "rlock.mutex": ["rlockobject.lock.mutex"],
    "rlock.owner": ["rlockobject.rlock_owner", "rlockobject.lock.thread"],
    "parked.addr": ["struct wait_entry.addr"],
    "parked.sema": ["struct wait_entry.sema"],
}
for m in ["last_holder", "locked", "switch_number", "interval", "mutex", "cond"]:
    FIELDS["gil." + m] = [GIL + "." + m]
for m in ["argcount", "posonlyargcount", "kwonlyargcount", "flags",
          "firstlineno", "filename", "name", "qualname", "lnotab",
          "linetable", "code", "code_adaptive"]:
    FIELDS["code." + m] = ["PyCodeObject.co_" + m]
for m in ["name", "basicsize", "itemsize", "flags", "dictoffset"]:
    FIELDS["type." + m] = ["PyTypeObject.tp_" + m]
for m in ["used", "keys", "values"]:
    FIELDS["dict." + m] = ["PyDictObject.ma_" + m]
for m in ["size", "log2_size", "log2_index_bytes", "kind", "nentries", "indices"]:
    FIELDS["dictkeys." + m] = ["PyDictKeysObject.dk_" + m]

SIZES = ["_PyRuntimeState", "PyInterpreterState", "PyThreadState",
         "PyCodeObject", "PyFrameObject", "_PyInterpreterFrame", "_PyCFrame",
         GIL, "PyASCIIObject", "PyCompactUnicodeObject", "PyBytesObject",
         "PyDictKeyEntry", "PyDictUnicodeEntry", "PyObject", "PyVarObject",
         "PyLongObject", "PyTypeObject", "PyHeapTypeObject",
         "struct _gc_runtime_state", "struct gc_generation",
         "struct gc_generation_stats",
         "struct gc_stats", "struct gc_young_stats_buffer",
         "struct gc_old_stats_buffer",
         # tp_basicsize of _thread.LockType / _thread.RLock must match: 3.13
         # changed _thread.lock's layout in a patch release (3.13.1)
         "lockobject", "rlockobject"]

# Element counts of arrays, by logical field (whose candidates name them).
ARRAYS = ["gc.generations", "gc.generation_stats", "gcrings.old",
          "gcring_young.items", "gcring_old.items"]

# Bitfields inside PyASCIIObject.state; positions are relative to "state".
BITS = {"unicode.state." + b: "PyASCIIObject.state." + b
        for b in ["interned", "kind", "compact", "ascii", "ready"]}

# Enumerators.  Taken only if DWARF has them as enumerators (LOC_CONST
# symbols); something that exists only as a #define is left out.
CONSTANTS = {
    "frame.owner_thread": "FRAME_OWNED_BY_THREAD",
    "frame.owner_generator": "FRAME_OWNED_BY_GENERATOR",
    "frame.owner_frame_object": "FRAME_OWNED_BY_FRAME_OBJECT",
    "frame.owner_cstack": "FRAME_OWNED_BY_CSTACK",
    "frame.owner_interpreter": "FRAME_OWNED_BY_INTERPRETER",
    "dictkeys.kind_general": "DICT_KEYS_GENERAL",
    "dictkeys.kind_unicode": "DICT_KEYS_UNICODE",
    "dictkeys.kind_split": "DICT_KEYS_SPLIT",
}


# 3.13+ describe themselves: _PyRuntime starts with a _Py_DebugOffsets whose
# uint64 members hold offsets of the interpreter's own structs.  Logical field
# (or "size:<type>") -> member of _Py_DebugOffsets holding its value.  The table
# records where each lives inside _Py_DebugOffsets, so pyebpf can read the
# values from a live 3.13.x target and prefer them to the table's numbers.
DEBUG_OFFSETS = {
    "runtime.interpreters_head": "runtime_state.interpreters_head",
    "interp.next": "interpreter_state.next",
    "interp.threads_head": "interpreter_state.threads_head",
    "interp.threads_main": "interpreter_state.threads_main",
    "interp.gc": "interpreter_state.gc",
    "interp.modules": "interpreter_state.imports_modules",
    "interp.ceval_gil": "interpreter_state.ceval_gil",
    "interp.gil": "interpreter_state.gil_runtime_state",
    "interp.gil_locked": "interpreter_state.gil_runtime_state_locked",
    "interp.gil_holder": "interpreter_state.gil_runtime_state_holder",
    "interp.code_object_generation": "interpreter_state.code_object_generation",
    "tstate.prev": "thread_state.prev",
    "tstate.next": "thread_state.next",
    "tstate.interp": "thread_state.interp",
    "tstate.frame": "thread_state.current_frame",
    "tstate.thread_id": "thread_state.thread_id",
    "tstate.native_thread_id": "thread_state.native_thread_id",
    "frame.back": "interpreter_frame.previous",
    "frame.code": "interpreter_frame.executable",
    "frame.instr": "interpreter_frame.instr_ptr",
    "frame.owner": "interpreter_frame.owner",
    "code.filename": "code_object.filename",
    "code.name": "code_object.name",
    "code.qualname": "code_object.qualname",
    "code.linetable": "code_object.linetable",
    "code.firstlineno": "code_object.firstlineno",
    "code.argcount": "code_object.argcount",
    "code.code_adaptive": "code_object.co_code_adaptive",
    "object.type": "pyobject.ob_type",
    "type.name": "type_object.tp_name",
    "type.flags": "type_object.tp_flags",
    "type.basicsize": "type_object.tp_basicsize",
    "type.dictoffset": "type_object.tp_dictoffset",
    "heaptype.cached_keys": "heap_type_object.ht_cached_keys",
    "tuple.items": "tuple_object.ob_item",
    "list.items": "list_object.ob_item",
    "dict.keys": "dict_object.ma_keys",
    "dict.values": "dict_object.ma_values",
    "float.value": "float_object.ob_fval",
    "long.lv_tag": "long_object.lv_tag",
    "long.digit": "long_object.ob_digit",
    "varobject.size": "bytes_object.ob_size",
    "bytes.sval": "bytes_object.ob_sval",
    "unicode.state": "unicode_object.state",
    "unicode.length": "unicode_object.length",
    "gc.collecting": "gc.collecting",
    "gc.stats_rings": "gc.generation_stats",
    "size:_PyRuntimeState": "runtime_state.size",
    "size:struct _gc_runtime_state": "gc.size",
    "size:struct gc_stats": "gc.generation_stats_size",
    "size:PyCompactUnicodeObject": "unicode_object.compactunicodeobject_size",
    "size:PyInterpreterState": "interpreter_state.size",
    "size:PyThreadState": "thread_state.size",
    "size:_PyInterpreterFrame": "interpreter_frame.size",
    "size:PyCodeObject": "code_object.size",
    "size:PyASCIIObject": "unicode_object.asciiobject_size",
}


class Missing(Exception):
    pass


def lookup_type(name):
    try:
        return gdb.lookup_type(name)
    except gdb.error:
        raise Missing(name)


def find_member(t, name):
    """(bit offset, field) of member `name` of struct/union t, looking
    through anonymous struct/union members the way C name lookup does."""
    t = t.strip_typedefs()
    if t.code not in (gdb.TYPE_CODE_STRUCT, gdb.TYPE_CODE_UNION):
        raise Missing(name)
    for f in t.fields():
        if f.name == name:
            return f.bitpos, f
        if not f.name:
            try:
                bit, inner = find_member(f.type, name)
                return f.bitpos + bit, inner
            except Missing:
                pass
    raise Missing(name)


def resolve(path):
    """(byte offset, member field) for "<root type>.<m>...", or Missing."""
    root, rest = path.split(".", 1)
    t = lookup_type(root)
    bits, field = 0, None
    for name in rest.split("."):
        bit, field = find_member(t if field is None else field.type, name)
        bits += bit
    if field.bitsize:
        raise Missing(path + " is a bitfield")
    assert bits % 8 == 0, path
    offset = bits // 8
    # Cross-check the field walk against gdb's own C expression evaluator, so
    # a mistake in find_member (anonymous members, unions) cannot slip into
    # the table silently.
    via_expr = int(gdb.parse_and_eval(
        "(unsigned long)&((%s *)0)->%s" % (root, rest)))
    if via_expr != offset:
        raise AssertionError("%s: walk %d != expr %d" % (path, offset, via_expr))
    return offset, field


def first_present(candidates):
    for c in candidates:
        path, check = c if isinstance(c, tuple) else (c, None)
        try:
            offset, field = resolve(path)
        except Missing:
            continue
        if check is not None and not check(field.type):
            # Same name but a different kind of thing: not the field the
            # loader expects, so treat it as absent.
            continue
        return {"offset": offset, "member": path}
    return None


def enumerator(name):
    for lookup in (gdb.lookup_static_symbol, gdb.lookup_global_symbol):
        sym = lookup(name)
        if sym is not None and sym.addr_class == gdb.SYMBOL_LOC_CONST:
            return int(sym.value())
    return None


def version_hex(python):
    """PY_VERSION_HEX for a final release named like "3.11.7"."""
    major, minor, micro = (int(x) for x in python.split("."))
    return (major << 24) | (minor << 16) | (micro << 8) | 0xF0


def load(build):
    """Loads one build's file (and its separate DWARF, if any) into gdb."""
    path = build["path"]
    if not os.path.isfile(path):
        raise SystemExit("gen-offsets: %s not found" % path)
    if any(c.isspace() for c in path + build["debug_dir"]):
        # gdb's "file" command splits its argument on whitespace.
        raise SystemExit("gen-offsets: path contains whitespace: %s" % path)
    gdb.execute("set debug-file-directory " + (build["debug_dir"] or "/nonexistent"), to_string=True)
    gdb.execute("file " + path, to_string=True)
    # Exactly one file must be loaded, so nothing leaks across builds; its
    # separate debug file (Debian's -dbg) is owned by it.
    objfiles = [o for o in gdb.objfiles() if o.is_valid() and o.owner is None]
    if [o.filename for o in objfiles] != [os.path.realpath(path)]:
        raise SystemExit("gen-offsets: unexpected objfiles %r" % objfiles)
    try:
        lookup_type("PyObject")
    except Missing:
        raise SystemExit("gen-offsets: %s has no DWARF (build with -g, or install its -dbg)" % path)
    if lookup_type("void").pointer().sizeof != 8:
        raise SystemExit("gen-offsets: %s is not a 64-bit build" % path)
    return objfiles[0]


def row_for(build):
    objfile = load(build)
    path, python = build["path"], build["python"]
    row = {"minor": build["minor"],
           "derived_from": {"python": python, "file": build["file"],
                            "source": build["source"],
                            "build_id": objfile.build_id},
           "fields": {}, "sizes": {}, "bits": {}, "constants": {}, "arrays": {}}

    for name, candidates in FIELDS.items():
        hit = first_present(candidates)
        if hit is not None:
            row["fields"][name] = hit

    for name in SIZES:
        try:
            row["sizes"][name] = lookup_type(name).sizeof
        except Missing:
            pass

    for name in ARRAYS:
        hit = row["fields"].get(name)
        if hit is None:
            continue
        field = resolve(hit["member"])[1]
        low, high = field.type.strip_typedefs().range()
        row["arrays"][name] = high - low + 1

    for name, path in BITS.items():
        root, rest = path.split(".", 1)
        try:
            *outer, last = rest.split(".")
            t = lookup_type(root)
            for m in outer:
                t = find_member(t, m)[1].type
            bit, field = find_member(t, last)
        except Missing:
            continue
        row["bits"][name] = {"bit": bit, "width": field.bitsize}

    for name, enum in CONSTANTS.items():
        value = enumerator(enum)
        if value is not None:
            row["constants"][name] = value

    debug = debug_offsets(row)
    if debug is not None:
        row["debug_offsets"] = debug

    # Py_Version (3.11+) is a const in .rodata; gdb reads it from the file.
    try:
        pv = int(gdb.parse_and_eval("Py_Version"))
    except gdb.error:
        pv = None
    if pv is not None:
        if pv != version_hex(python):
            raise SystemExit("gen-offsets: %s: Py_Version 0x%08x does not match"
                             " the build's version %s" % (path, pv, python))
        row["py_version_hex"] = "0x%08x" % pv
    return row


def debug_offsets(row):
    """Where each value sits in _Py_DebugOffsets, checked against the row: the
    value the build itself stores in _PyRuntime.debug_offsets must equal what
    the DWARF says (a mismatch means the mapping above is wrong)."""
    try:
        t = lookup_type("struct _Py_DebugOffsets")
    except Missing:
        return None
    out = {"size": t.sizeof, "fields": {}, "sizes": {}}
    for logical, member in DEBUG_OFFSETS.items():
        try:
            at, _ = resolve("struct _Py_DebugOffsets." + member)
        except Missing:
            continue
        stored = int(gdb.parse_and_eval("_PyRuntime.debug_offsets." + member))
        if logical.startswith("size:"):
            name = logical[len("size:"):]
            expected = row["sizes"].get(name)
            out["sizes"][name] = {"at": at, "member": member}
        else:
            expected = row["fields"].get(logical, {}).get("offset")
            out["fields"][logical] = {"at": at, "member": member}
        if expected is not None and stored != expected:
            raise SystemExit("gen-offsets: _PyRuntime.debug_offsets.%s is %d but DWARF"
                             " says %s is %d" % (member, stored, logical, expected))
    for name in ("cookie", "version", "free_threaded"):
        try:
            out[name + "_at"] = resolve("struct _Py_DebugOffsets." + name)[0]
        except Missing:
            pass
    return out


def py_version_string(hex_value):
    """"3.14.10", "3.15.0b4" from PY_VERSION_HEX."""
    level = {0xA: "a", 0xB: "b", 0xC: "rc", 0xF: ""}[(hex_value >> 4) & 0xF]
    serial = str(hex_value & 0xF) if level else ""
    return "%d.%d.%d%s%s" % (hex_value >> 24, (hex_value >> 16) & 0xFF,
                             (hex_value >> 8) & 0xFF, level, serial)


def merge(rows, committed_path, check):
    """Rows of builds not on this machine are kept from the committed table:
    they were derived where those builds were (their derived_from says which),
    and a row cannot be re-derived without its DWARF. Returns the new table
    and, for --check, whether every row derivable here is identical."""
    try:
        with open(committed_path) as f:
            committed = json.load(f).get("builds", {})
    except (OSError, ValueError):
        committed = {}
    builds = dict(rows)
    ok = True
    for label in sorted(set(committed) | set(rows)):
        if label not in rows:
            builds[label] = committed[label]
            print("gen-offsets: %s: kept (build not on this machine)" % label)
        elif label not in committed:
            print("gen-offsets: %s: on this machine but not in the table (a new patch release?);"
                  " pyebpf validates such builds against the live process; run tools/gen-offsets"
                  " to add its own row" % label)
        elif rows[label] != committed[label]:
            print("gen-offsets: %s: %s" % (label, "the committed row differs from its DWARF"
                                                 if check else "updated"))
            ok = False
    if check:
        builds = {k: v for k, v in builds.items() if k in committed}
    return {"schema": 2, "generated_by": "tools/gen-offsets", "builds": builds}, ok


def main(env):
    with open(env["GEN_OFFSETS_BUILDS"]) as f:
        builds = json.load(f)
    rows = {}
    for build in builds:
        if not build["python"]:
            # Debian builds: the version the interpreter itself says it is.
            load(build)
            build["python"] = py_version_string(int(gdb.parse_and_eval("Py_Version")))
        rows[build["label"]] = row_for(build)
    check = env.get("GEN_OFFSETS_MODE") == "check"
    table, ok = merge(rows, env["GEN_OFFSETS_TABLE"], check)
    with open(env["GEN_OFFSETS_OUT"], "w") as f:
        json.dump(table, f, indent=2, sort_keys=True)
        f.write("\n")
    if check and not ok:
        raise SystemExit("gen-offsets: offsets/cpython.json differs from what the DWARF says;"
                         " run tools/gen-offsets")


try:
    main(os.environ)
except SystemExit as e:
    sys.stderr.write("%s\n" % e)
    sys.stderr.flush()
    os._exit(1)
except BaseException:
    import traceback
    traceback.print_exc()
    sys.stderr.flush()
    os._exit(1)
os._exit(0)
