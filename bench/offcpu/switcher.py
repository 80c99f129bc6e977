"""offcpu benchmark workload: pairs of threads ping-ponging one byte over
pipes, each doing a fixed amount of Python work per message, so the process
context-switches at a steady rate (bench/offcpu/run calibrates WORK for
about 20k switches per second). Both threads block in os.read under a few
Python frames, as a server thread blocks in recv.

Usage: switcher.py MESSAGES WORK [PAIRS]
Prints "READY <pid>", waits for "GO" on stdin, runs, prints
"RESULT {wall_s, cpu_s, switches}" (switches: voluntary + involuntary, all
threads, from getrusage), then exits.
"""
import json
import os
import resource
import sys
import threading
import time

MESSAGES = int(sys.argv[1])
WORK = int(sys.argv[2])
PAIRS = int(sys.argv[3]) if len(sys.argv) > 3 else 1


def work(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def handler(depth, fn):
    # A few frames between the thread's root and the blocking call.
    return handler(depth - 1, fn) if depth else fn()


def serve(rfd, wfd, messages):
    def loop():
        for _ in range(messages):
            os.read(rfd, 1)
            work(WORK)
            os.write(wfd, b"x")
    handler(8, loop)


def client(rfd, wfd, messages):
    def loop():
        for _ in range(messages):
            work(WORK)
            os.write(wfd, b"x")
            os.read(rfd, 1)
    handler(8, loop)


threads = []
for _ in range(PAIRS):
    to_server, to_client = os.pipe(), os.pipe()
    threads.append(threading.Thread(target=serve, args=(to_server[0], to_client[1], MESSAGES), name="Server"))
    threads.append(threading.Thread(target=client, args=(to_client[0], to_server[1], MESSAGES), name="Client"))

print("READY", os.getpid(), flush=True)
if sys.stdin.readline().strip() != "GO":
    sys.exit("expected GO")
usage0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
for t in threads:
    t.start()
for t in threads:
    t.join()
t1, usage1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
switches = (usage1.ru_nvcsw - usage0.ru_nvcsw) + (usage1.ru_nivcsw - usage0.ru_nivcsw)
print("RESULT " + json.dumps({"wall_s": t1 - t0, "cpu_s": cpu, "switches": switches}), flush=True)
