"""GIL waits of varied length, for threshold tests: a holder alternates
pure-Python spins of random length (0-8 ms) with a short sleep that lets a
waiter in early, so waiters wait anywhere from microseconds to a few switch
intervals. argv: seconds, waiters."""
import random
import sys
import threading
import time

from wl_common import burn_cpu, linger, native_id, ready, result, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
WAITERS = int(sys.argv[2]) if len(sys.argv) > 2 else 2

stop = threading.Event()
ids = {}


def holder():
    ids["MixedHolder"] = native_id()
    rng = random.Random(3)
    while not stop.is_set():
        burn_cpu(rng.uniform(0.0, 0.008))
        time.sleep(0.0002)


def waiter(name):
    ids[name] = native_id()
    while not stop.is_set():
        time.sleep(0.001)


ready(tid=native_id())
wait_go()
threads = [threading.Thread(target=holder, name="MixedHolder")]
threads += [threading.Thread(target=waiter, args=("Waiter-%d" % i,), name="Waiter-%d" % i) for i in range(WAITERS)]
for t in threads:
    t.start()
time.sleep(SECONDS)
stop.set()
for t in threads:
    t.join()
result(ids=ids)
linger()
