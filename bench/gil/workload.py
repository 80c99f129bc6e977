"""GIL-heavy workload for bench/gil/run: threads doing I/O and CPU, with many
GIL switches per second.

Two ping-pong pairs exchange small messages over socketpairs (every send and
recv releases and re-takes the GIL, and the peer usually wakes while another
thread holds it), while one thread burns CPU in pure Python (so waiters also
hit the forced switch every sys.getswitchinterval()). Prints "READY <pid>",
waits for a line on stdin, runs for the given seconds and prints
"RESULT {json}" with the work done. Runs on CPython 3.8+.
"""
import json
import os
import socket
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
MESSAGE = b"x" * 64


def compute(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def pinger(sock, stop, counts, key):
    cpu0 = time.thread_time()
    done = 0
    while not stop.is_set():
        sock.sendall(MESSAGE)
        sock.recv(64)
        compute(20)
        done += 1
    sock.shutdown(socket.SHUT_WR)  # the peer's recv returns b"": it ends
    counts[key] = done
    counts[key + "_cpu"] = time.thread_time() - cpu0


def ponger(sock, counts, key):
    cpu0 = time.thread_time()
    while True:
        data = sock.recv(64)
        if not data:
            counts[key + "_cpu"] = time.thread_time() - cpu0
            return
        compute(20)
        sock.sendall(data)


def burner(stop, counts):
    cpu0 = time.thread_time()
    loops = 0
    while not stop.is_set():
        compute(1000)
        loops += 1
    counts["cpu_loops"] = loops
    counts["burner_cpu"] = time.thread_time() - cpu0


def main():
    sys.stdout.write("READY %d\n" % os.getpid())
    sys.stdout.flush()
    sys.stdin.readline()
    stop = threading.Event()
    counts = {}
    threads = []
    socks = []
    for pair in range(2):
        a, b = socket.socketpair()
        socks += [a, b]
        threads.append(threading.Thread(target=pinger, args=(a, stop, counts, "pair%d" % pair), name="Ping%d" % pair))
        threads.append(threading.Thread(target=ponger, args=(b, counts, "pong%d" % pair), name="Pong%d" % pair))
    threads.append(threading.Thread(target=burner, args=(stop, counts), name="Burner"))
    start = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(SECONDS)
    stop.set()
    elapsed = time.perf_counter() - start
    for t in threads:
        t.join()
    for s in socks:
        s.close()
    roundtrips = counts["pair0"] + counts["pair1"]
    io_cpu = sum(counts[k + "_cpu"] for k in ("pair0", "pair1", "pong0", "pong1"))
    sys.stdout.write("RESULT " + json.dumps({
        "seconds": elapsed,
        "roundtrips_per_s": roundtrips / elapsed,
        "cpu_loops_per_s": counts["cpu_loops"] / elapsed,
        # CPU time (user + system, so probe traps included) per unit of work:
        # what the profiler costs, whatever share of the CPUs the machine gave.
        "cpu_us_per_roundtrip": io_cpu * 1e6 / roundtrips,
        "cpu_us_per_loop": counts["burner_cpu"] * 1e6 / counts["cpu_loops"],
    }) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
