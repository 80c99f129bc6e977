"""Two threads recurse to known depths (150: deeper than pyebpf keeps, and
100) and spin at the bottom."""
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


def run(depth):
    ids[threading.current_thread().name] = native_id()
    recurse(depth)


ready()
wait_go()
threads = [threading.Thread(target=run, args=(d,), name="Deep%d" % d) for d in (150, 100)]
for t in threads:
    t.start()
for t in threads:
    t.join()
result(threads=ids)
linger()
