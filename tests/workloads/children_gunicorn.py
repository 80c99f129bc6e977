"""Runs Debian's gunicorn with workers recycled by --max-requests, loaded by wrk.

usage: children_gunicorn.py WORKER_CLASS WORKERS MAX_REQUESTS DURATION_S

Starts `gunicorn -k WORKER_CLASS -w WORKERS --max-requests MAX_REQUESTS` (gthread:
2 threads per worker) on a socket bound here to 127.0.0.1:0, serving children_app,
with an access log recording the pid of the worker that served each request.
READY reports the arbiter's pid (the process to profile: its workers are forked
later). On GO, runs `wrk -t2 -c4 -d DURATION_S` against it; RESULT has wrk's
request count and, from the access log, the requests each worker served.
"""
import collections
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import wl_common

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    worker_class, workers, max_requests, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    log = tempfile.NamedTemporaryFile(prefix="pyebpf-gunicorn-", suffix=".log", delete=False).name
    args = ["/usr/bin/gunicorn", "--chdir", HERE, "-k", worker_class, "-w", str(workers),
            "--max-requests", str(max_requests), "--access-logfile", log, "--access-logformat", "%(p)s %(s)s",
            "-b", "fd://%d" % listener.fileno(), "children_app:app"]
    if worker_class == "gthread":
        args[5:5] = ["--threads", "2"]
    env = dict(os.environ, PYTHONPATH=HERE)
    server = subprocess.Popen(args, pass_fds=[listener.fileno()], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    listener.close()
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    sys.exit("gunicorn does not serve")
                time.sleep(0.05)
        wl_common.ready(pid=server.pid, port=port, log=log)
        wl_common.wait_go()
        with open(log) as f:
            before = len(f.readlines())
        out = subprocess.run(["wrk", "-t2", "-c4", "-d%ds" % duration, "http://127.0.0.1:%d/" % port],
                             capture_output=True, text=True, check=True).stdout
        wrk_requests = int(re.search(r"(\d+) requests in", out).group(1))
        time.sleep(1)  # the access log is written after the response
        served = collections.Counter()
        with open(log) as f:
            for line in f.readlines()[before:]:
                pid, status = line.split()
                if status == "200":
                    served[int(pid.strip("<>"))] += 1
        wl_common.result(wrk_requests=wrk_requests, served={str(p): n for p, n in served.items()},
                         requests=sum(served.values()))
        wl_common.linger()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
        os.unlink(log)


if __name__ == "__main__":
    main()
