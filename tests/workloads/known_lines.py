"""A three-level call chain spinning on a known line: checks stack order
(root -> leaf) and that each frame reports its executing line."""
import sys
import time

from wl_common import line_of, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0


def inner(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end: pass  # LINE:spin


def middle(seconds):
    x = 1
    inner(seconds)  # LINE:call_inner
    return x


def outer(seconds):
    middle(seconds)  # LINE:call_middle


ready(tid=native_id(), first_lines={f.__name__: f.__code__.co_firstlineno for f in (inner, middle, outer)})
wait_go()
outer(SECONDS)  # LINE:call_outer
result(tid=native_id(), file=__file__,
       lines={m: line_of(m) for m in ("spin", "call_inner", "call_middle", "call_outer")},
       first_lines={f.__name__: f.__code__.co_firstlineno for f in (inner, middle, outer)})
linger()
