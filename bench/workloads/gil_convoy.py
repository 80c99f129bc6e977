"""A GIL convoy for bench/observer: argv[1] threads (default 500), each doing
a little pure-Python work and then releasing the GIL (time.sleep(0)), so at
any moment hundreds of threads queue for it. Prints READY, waits for GO on
stdin, runs argv[2] seconds (default 3), prints RESULT {"seconds": s,
"loops_per_s": n} (work done by all threads) and exits."""
import json
import sys
import threading
import time

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 500
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0


def work(go, stop, counts, i):
    go.wait()
    loops = 0
    while not stop.is_set():
        x = 0
        for k in range(50):  # a few microseconds of bytecode
            x += k * k
        time.sleep(0)  # releases the GIL: the next waiter takes it
        loops += 1
    counts[i] = loops


print("READY", flush=True)
sys.stdin.readline()
go, stop, counts = threading.Event(), threading.Event(), [0] * THREADS
threads = [threading.Thread(target=work, args=(go, stop, counts, i)) for i in range(THREADS)]
for t in threads:  # all started before the clock starts: a start waits for the GIL too
    t.start()
start = time.perf_counter()
go.set()
time.sleep(SECONDS)
stop.set()
elapsed = time.perf_counter() - start
for t in threads:
    t.join()
print("RESULT " + json.dumps({"seconds": elapsed, "loops_per_s": sum(counts) / elapsed}), flush=True)
