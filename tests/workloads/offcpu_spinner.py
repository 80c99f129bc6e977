"""A CPU-bound thread pinned to one CPU, alone in its process (no GIL
contention), so it never sleeps: it only gets preempted by whatever else runs
on that CPU (the tests pin two of these together).

Usage: offcpu_spinner.py SECONDS CPU
RESULT {"tid": <the spinning thread>, "cpu_s": <CPU time it burned>}
"""
import os
import sys
import threading
import time

from wl_common import burn_cpu, linger, native_id, ready, result, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
CPU = int(sys.argv[2]) if len(sys.argv) > 2 else 0
os.sched_setaffinity(0, {CPU})
info = {}


def cpu_bound():
    info["tid"] = native_id()
    start = time.thread_time()
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        burn_cpu(0.01)
    info["cpu_s"] = time.thread_time() - start


ready(tid=native_id())
wait_go()
spinner = threading.Thread(target=cpu_bound, name="Spinner")
spinner.start()
spinner.join()
result(**info)
linger()
