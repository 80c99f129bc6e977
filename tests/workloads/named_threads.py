"""Named threads burning CPU, each in its own function, started before READY
so every sample carries the thread's name. argv: seconds, then thread names.
Used by the sink tests: what lands in databases and files must match stdout."""
import sys
import threading
import time

from wl_common import burn_cpu, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
NAMES = sys.argv[2:] or ["Worker-1", "Worker-2"]
go = threading.Event()
ids = {}


def spin_in_thread():
    ids[threading.current_thread().name] = native_id()
    go.wait()
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        burn_cpu(0.01)


threads = [threading.Thread(target=spin_in_thread, name=n) for n in NAMES]
for t in threads:
    t.start()
while len(ids) < len(threads):
    time.sleep(0.01)
ready(tid=native_id(), threads=ids)
wait_go()
go.set()
for t in threads:
    t.join()
result(threads=ids)
linger()
