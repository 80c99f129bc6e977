"""Threads recurse to known depths and spin at the bottom: Deep150 (deeper than
pyebpf keeps), Deep100, and Wide40 through a function with 100 locals: on
3.11+ each of its frames takes ~1.7 KB of the thread's data stack (locals and
as many value-stack slots), which CPython allocates in 16 KiB chunks, so the
40 frames span five chunks, a few frames per BPF block read."""
import sys
import threading

from wl_common import burn_cpu, ready, result, wait_go, linger, native_id

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
sys.setrecursionlimit(1000)
ids = {}


def bottom():
    burn_cpu(SECONDS)


def recurse(n):
    if n <= 1:
        return bottom()
    return recurse(n - 1)


WIDE_LOCALS = 100
exec(compile("def wide(n):\n    %s = range(%d)\n    if n <= 1:\n        return bottom()\n    return wide(n - 1)\n"
             % (", ".join("v%d" % i for i in range(WIDE_LOCALS)), WIDE_LOCALS), "<wide>", "exec"))


def run(function, depth):
    ids[threading.current_thread().name] = native_id()
    function(depth)


ready()
wait_go()
threads = [threading.Thread(target=run, args=(recurse, d), name="Deep%d" % d) for d in (150, 100)]
threads.append(threading.Thread(target=run, args=(wide, 40), name="Wide40"))
for t in threads:
    t.start()
for t in threads:
    t.join()
result(threads=ids)
linger()
