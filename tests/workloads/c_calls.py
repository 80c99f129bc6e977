"""Python called back from C (sorted(key=...), map): 3.11 marks such frames
as entry frames, 3.12 puts a shim frame (owner FRAME_OWNED_BY_CSTACK) under
them, 3.13 may leave f_executable None. The profiler must show the Python
caller directly above the Python callee, with nothing invented between."""
import sys
import time

from wl_common import line_of, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0


def key_func(x):
    end = time.perf_counter() + 0.001
    while time.perf_counter() < end: pass  # LINE:spin
    return -x


def caller(n):
    return sorted(range(n), key=key_func)  # LINE:call_sorted


ready(tid=native_id())
wait_go()
deadline = time.monotonic() + SECONDS
while time.monotonic() < deadline:
    caller(100)
result(tid=native_id(), file=__file__, lines={m: line_of(m) for m in ("spin", "call_sorted")})
linger()
