"""A thread that spends its time in C code with the GIL released
(zlib.compress of a large buffer) next to a thread spinning in pure Python.
On 3.12+ the thread-local _Py_tss_tstate is NULL while the GIL is released,
so a profiler keyed on it loses the first thread; pyebpf uses the thread's
bound state and must not."""
import os
import sys
import threading
import time
import zlib

from wl_common import native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0  # CPU seconds to spend in zlib
DATA = os.urandom(1 << 20) * 4
stats = {}
done = threading.Event()


def compress_loop():
    ident = native_id()
    in_c = 0.0
    while in_c < SECONDS:
        t0 = time.thread_time()
        zlib.compress(DATA, 9)  # LINE:compress
        in_c += time.thread_time() - t0
    stats["compressor"] = {"tid": ident, "cpu_in_compress": in_c}
    done.set()


def spin():
    while not done.is_set():
        pass


ready()
wait_go()
threads = [threading.Thread(target=compress_loop, name="Compressor"), threading.Thread(target=spin, name="Spinner")]
for t in threads:
    t.start()
for t in threads:
    t.join()
result(**stats)
linger()
