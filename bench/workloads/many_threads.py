"""A service of N threads, all blocked (bench/dump): a quarter each in
time.sleep, on a Lock the main thread holds, in Condition.wait and in recv on
a socket pair; plus one "ticker" thread that sleeps 1 ms in a loop and notes
every iteration that took more than 3 ms longer (a stall of the process: a
dumper that stops the target shows here).

READY once every thread waits; GO ends it: RESULT {"threads": N + 2,
"stalls": [[start, end], ...] (CLOCK_MONOTONIC seconds)}.
usage: many_threads.py [N]
"""
import json
import socket
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 500
held = threading.Lock()
held.acquire()
cond = threading.Condition()
pairs = []
waiting = threading.Semaphore(0)
stalls = []
done = False


def sleeper():
    waiting.release()
    time.sleep(3600)


def locker():
    waiting.release()
    with held:
        pass


def condition_waiter():
    with cond:
        waiting.release()
        cond.wait()


def reader(sock):
    waiting.release()
    sock.recv(1)


def ticker():
    last = time.monotonic()
    while not done:
        time.sleep(0.001)
        now = time.monotonic()
        if now - last > 0.004:
            stalls.append([last, now])
        last = now


for i in range(N):
    kind = i % 4
    if kind == 3:
        a, b = socket.socketpair()
        pairs.append((a, b))
        args = (a,)
    else:
        args = ()
    target = (sleeper, locker, condition_waiter, reader)[kind]
    threading.Thread(target=target, args=args, name="%s-%d" % (target.__name__, i), daemon=True).start()
for _ in range(N):
    waiting.acquire()
time.sleep(0.2)  # the last ones reach their wait
tick = threading.Thread(target=ticker, name="ticker", daemon=True)
tick.start()
threads = threading.active_count()
print("READY", flush=True)
sys.stdin.readline()
done = True
tick.join()
print("RESULT " + json.dumps({"threads": threads, "stalls": stalls}), flush=True)
