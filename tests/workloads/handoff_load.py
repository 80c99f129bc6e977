"""Runs Debian's gunicorn (gthread worker) and loads it from loopback clients.

usage: handoff_load.py THREADS SLEEP_S REQUESTS_PER_CLIENT CONCURRENCY [CONCURRENCY ...]

Starts `gunicorn -k gthread -w 1 --threads THREADS` on a socket bound here to
127.0.0.1:0 (handed over as fd://), serving handoff_app (each request sleeps
SLEEP_S). READY reports the worker's pid (the process to profile, not the
arbiter). On GO, runs one phase per CONCURRENCY: that many client threads, each
making REQUESTS_PER_CLIENT keep-alive requests on its own connection, and
measures for every request its latency minus the service time: the time the
request queued in the server. RESULT has per phase the wall-clock window
(epoch us) and the measured queueing.
"""
import ctypes
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

import wl_common

HERE = os.path.dirname(os.path.abspath(__file__))


def die_with_parent():
    """Runs in the forked child before exec: gunicorn's arbiter gets SIGINT (quick
    shutdown, workers included) when this workload dies, even by SIGKILL."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGINT)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def get(conn):
    conn.request("GET", "/")
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200 or body != b"ok":
        raise RuntimeError("bad response %d %r" % (resp.status, body))


def client(port, n, sleep_s, out, lock):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    waits = []
    for _ in range(n):
        t0 = time.monotonic()
        get(conn)
        waits.append(time.monotonic() - t0 - sleep_s)
    conn.close()
    with lock:
        out.extend(waits)


def main():
    threads, sleep_s, per_client = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
    phases = [int(c) for c in sys.argv[4:]]

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    env = dict(os.environ, HANDOFF_SLEEP_S=str(sleep_s))
    server = subprocess.Popen(
        ["/usr/bin/gunicorn", "--chdir", HERE, "-k", "gthread", "-w", "1", "--threads", str(threads),
         "--keep-alive", "30", "-b", "fd://%d" % listener.fileno(), "handoff_app:app"],
        pass_fds=[listener.fileno()], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=die_with_parent)
    listener.close()
    try:
        deadline = time.monotonic() + 30
        workers = []
        while not workers and time.monotonic() < deadline:
            time.sleep(0.05)
            workers = children(server.pid)
        if not workers:
            sys.exit("gunicorn started no worker")
        # One request proves the worker serves (and loads the app) before profiling starts.
        warm = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        get(warm)
        warm.close()
        wl_common.ready(pid=workers[0], arbiter=server.pid, port=port, threads=threads, sleep_s=sleep_s)
        wl_common.wait_go()

        results = []
        for concurrency in phases:
            waits, lock = [], threading.Lock()
            start_us = int(time.time() * 1e6)
            clients = [threading.Thread(target=client, args=(port, per_client, sleep_s, waits, lock))
                       for _ in range(concurrency)]
            for c in clients:
                c.start()
            for c in clients:
                c.join()
            end_us = int(time.time() * 1e6)
            if len(waits) != concurrency * per_client:
                sys.exit("a client failed")
            results.append({"concurrency": concurrency, "start_us": start_us, "end_us": end_us,
                            "requests": len(waits), "queue_median_ms": statistics.median(waits) * 1000,
                            "queue_max_ms": max(waits) * 1000})
            time.sleep(0.3)  # lets the server settle: phases do not overlap in its queue
        wl_common.result(phases=results, requests=sum(p["requests"] for p in results))
        wl_common.linger()
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
