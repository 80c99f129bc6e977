"""Short sleeps at a high rate for bench/observer's offcpu burst row:
argv[1] threads (default 4), each sleeping argv[3] seconds (default 0.0001)
in a loop, so the host switches them out and in tens of thousands of times a
second. Prints READY, waits for GO on stdin, runs argv[2] seconds (default 4),
prints RESULT {"seconds": s, "sleeps_per_s": n} (sleeps of all threads) and
exits."""
import json
import sys
import threading
import time

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
SLEEP_S = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0001


def work(end, counts, i):
    sleeps = 0
    while time.perf_counter() < end:
        time.sleep(SLEEP_S)
        sleeps += 1
    counts[i] = sleeps


print("READY", flush=True)
sys.stdin.readline()
counts = [0] * THREADS
start = time.perf_counter()
threads = [threading.Thread(target=work, args=(start + SECONDS, counts, i)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
elapsed = time.perf_counter() - start
print("RESULT " + json.dumps({"seconds": elapsed, "sleeps_per_s": sum(counts) / elapsed}), flush=True)
