"""Threads started after pyebpf attached, with names: a threading.Thread and
a ThreadPoolExecutor's workers, all burning CPU."""
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from wl_common import burn_cpu, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
started = []
lock = threading.Lock()


def named_work():
    with lock:
        started.append({"native_id": native_id(), "name": threading.current_thread().name})
    burn_cpu(SECONDS / 3)


ready(tid=native_id())
wait_go()
late = threading.Thread(target=named_work, name="LateStarter-1")
late.start()
with ThreadPoolExecutor(max_workers=2, thread_name_prefix="Pool") as pool:
    for f in [pool.submit(named_work) for _ in range(2)]:
        f.result()
late.join()
result(threads=started)
linger()
