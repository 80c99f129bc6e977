"""A target that corrupts its own interpreter state with ctypes, the way a
buggy C extension could, while pyebpf profiles it. CPython 3.11+ (frames are
_PyInterpreterFrame structs reached through frame objects' f_frame).

Threads (each runs forever once set up; the process ends by os._exit):
  healthy     untouched: healthy_outer -> healthy_inner, spinning in Python
  loop        the caller's frame's `previous` points back at the callee: the
              frame chain is a loop
  wild        the caller's frame's `previous` points at unmapped memory
  bad_code    spins in a code object whose co_name/co_qualname point at an
              int and whose co_filename is a str claiming 2**40 characters
  lying_code  spins in a code object whose names are strs whose length does
              not end on their NUL (text and control characters) and
              whose co_filename is ASCII-flagged but holds bytes >= 0x80
  int_name    untouched frames, threading name replaced by an int
  lying_name  untouched frames, threading name a str whose length lies the same way
A thread whose frames were corrupted never returns from the corrupted frame
(the interpreter would follow the bad pointer): it loops in C calls (hashing
a large buffer with the GIL released, then usleep) and a little Python, forever.

Offsets inside CPython objects are not typed in here: each is found by
looking for a pointer the workload knows (a frame object's f_frame is the
word that leads back to it, `previous` the word that holds the caller's
frame address, a code object's name fields the words that hold its names).
READY: {"threads": {name: native_id}, ...}. argv: seconds to run after GO.
"""
import ctypes
import hashlib
import os
import sys
import threading
import time
import types

from wl_common import ready, result, wait_go, linger

WORD = 8
libc = ctypes.CDLL(None, use_errno=True)
libc.usleep.argtypes = (ctypes.c_uint,)
KEEP = []  # objects corrupted code refers to: never freed
BUFFER = memoryview(bytes(8 << 20))


def peek(addr):
    return ctypes.c_uint64.from_address(addr).value


def poke(addr, value):
    ctypes.c_uint64.from_address(addr).value = value


def word_index(base, wanted, words, mask=~0):
    for i in range(words):
        if peek(base + i * WORD) & mask == wanted:
            return i
    raise LookupError("no word equal to %#x in %d words at %#x" % (wanted, words, base))


def interpreter_frame(frame):
    """Address of the live _PyInterpreterFrame behind a frame object: the
    word of the frame object (after its header) pointing at a struct that
    points back at the frame object (frame_obj)."""
    for i in range(2, 8):
        candidate = peek(id(frame) + i * WORD)
        if candidate < 4096:
            continue
        try:
            word_index(candidate, id(frame), 12)
            word_index(candidate, id(frame.f_code), 12, ~7)  # f_code / tagged f_executable
            return candidate
        except LookupError:
            pass
    raise LookupError("no f_frame in frame object")


def spin_in_c_forever():
    """What a thread stuck in a C extension looks like: CPU in C with the GIL
    released, a sleep, and a little Python in between. Never returns.
    hashlib hashes a large buffer with the GIL released: ~5 ms of CPU per
    GIL acquisition, so the thread is sampled on CPU often although it
    queues for the GIL behind the spinning threads after every call (a
    0.3 ms memchr per acquisition left it a few samples in 3 s)."""
    while True:
        for _ in range(5):
            hashlib.sha256(BUFFER)
        libc.usleep(2000)


def corrupt_previous(new_previous):
    """Points the caller's `previous` at `new_previous(callee_frame_address)`."""
    callee = sys._getframe(1)
    caller = callee.f_back
    callee_addr, caller_addr = interpreter_frame(callee), interpreter_frame(caller)
    previous = word_index(callee_addr, caller_addr, 12)
    poke(caller_addr + previous * WORD, new_previous(callee_addr))


def loop_outer(started):
    loop_inner(started)


def loop_inner(started):
    corrupt_previous(lambda callee: callee)  # caller -> callee -> caller -> ...
    started.set()
    spin_in_c_forever()


def wild_outer(started):
    wild_inner(started)


def wild_inner(started):
    corrupt_previous(lambda callee: 0xDEAD0000)  # unmapped on x86-64 Linux user space
    started.set()
    spin_in_c_forever()


def str_header_bytes():
    return sys.getsizeof("ab") - 3  # an ASCII str: header + 2 chars + NUL


def private_str(text):
    """A str object no one else shares (not interned, not cached)."""
    s = "".join([text[:1], text[1:]])
    KEEP.append(s)
    return s


def lying_length(text, length):
    """`text` followed by control characters, claiming `length` characters:
    where that length ends there is no NUL (a str's data always ends with one)
    but a \x01, the same on every run (past the end of a shorter object
    there would be whatever the heap holds)."""
    s = private_str(text + "\x01" * min(length, 1 << 14))
    poke(id(s) + 2 * WORD, length)  # PyASCIIObject.length, right after the object header
    return s


def ascii_flagged_high_bytes(text):
    s = private_str(text)
    data = id(s) + str_header_bytes()
    assert ctypes.string_at(data, len(s)) == s.encode()
    ctypes.memmove(data, b"\xff\xfe\xc3\x28", 4)  # invalid UTF-8, and not ASCII
    return s


def corrupted_function(template, name, filename, new_name, new_filename):
    """A copy of `template` whose code object's name fields hold new_name and
    co_filename new_filename (any objects), written over the real pointers."""
    code = template.__code__.replace(co_name=private_str(name), co_qualname=private_str(name),
                                     co_filename=private_str(filename))
    names = [word_index(id(code), id(code.co_name), 32), word_index(id(code), id(code.co_qualname), 32)]
    file_at = word_index(id(code), id(code.co_filename), 32)
    KEEP.extend([code, new_name, new_filename])
    for at in names:
        poke(id(code) + at * WORD, id(new_name))
    poke(id(code) + file_at * WORD, id(new_filename))
    return types.FunctionType(code, template.__globals__)


def spinner_template(started):
    started.set()
    spin_in_c_forever()


def bad_code(started):
    corrupted_function(spinner_template, "bad_code_spinner", "bad_code.py", 10**30 + 7,
                       lying_length("huge_length.py", 1 << 40))(started)


def lying_code(started):
    corrupted_function(spinner_template, "lying_code_spinner", "lying_code.py",
                       lying_length("lying_name", 3000), ascii_flagged_high_bytes("high_bytes.py"))(started)


def healthy_outer(started):
    healthy_inner(started)


def healthy_inner(started):
    started.set()
    n = 0
    while True:
        n += sum(i * i for i in range(500))


def renamed(new_name):
    def run(started):
        threading.current_thread()._name = new_name
        healthy_outer(started)
    return run


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    scenarios = {
        "healthy": healthy_outer,
        "loop": loop_outer,
        "wild": wild_outer,
        "bad_code": bad_code,
        "lying_code": lying_code,
        "int_name": renamed(4242),
        "lying_name": renamed(lying_length("lying_thread_name", 2000)),
    }
    threads = {}
    for name, run in scenarios.items():
        started = threading.Event()
        t = threading.Thread(target=run, args=(started,), name=name, daemon=True)
        t.start()
        if not started.wait(10):
            sys.exit("thread %s did not start" % name)
        threads[name] = t.native_id
    ready(threads=threads, file=os.path.abspath(__file__))
    wait_go()
    time.sleep(seconds)
    result(seconds=seconds)
    linger()
    os._exit(0)  # corrupted threads must never unwind, nor the interpreter finalize


if __name__ == "__main__":
    main()
