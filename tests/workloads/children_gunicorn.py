"""Runs Debian's gunicorn with workers recycled by --max-requests, loaded by wrk.

usage: children_gunicorn.py WORKER_CLASS WORKERS MAX_REQUESTS DURATION_S [upgrade]

Starts `gunicorn -k WORKER_CLASS -w WORKERS --max-requests MAX_REQUESTS` (gthread:
2 threads per worker) on a socket bound here to 127.0.0.1:0, serving children_app,
with an access log recording the pid of the worker that served each request.
READY reports the arbiter's pid (the process to profile: its workers are forked
later). On GO, runs `wrk -t2 -c4 -d DURATION_S` against it; RESULT has wrk's
request count and, from the access log, the requests each worker served.

With `upgrade`, the server is upgraded in place under load, as a deploy does:
SIGUSR2 at 30% of the run makes the arbiter fork and re-exec gunicorn (a new
master on the same socket, which starts its own workers), and SIGTERM at 60%
stops the old arbiter and its workers. RESULT then also has the new master's
pid and every worker pid it was seen to start.
"""
import collections
import ctypes
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
PR_SET_PDEATHSIG = 1


def children_of(pid):
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            found.add(int(entry))
    return found


def upgrade_under_load(arbiter, pidfile, duration):
    """USR2, then TERM to the old arbiter; returns the new master and its workers."""
    time.sleep(duration * 0.3)
    os.kill(arbiter, signal.SIGUSR2)
    deadline = time.monotonic() + 15
    while not os.path.exists(pidfile + ".2"):
        if time.monotonic() > deadline:
            sys.exit("gunicorn did not re-exec on SIGUSR2")
        time.sleep(0.05)
    time.sleep(0.1)  # the pid is written after the file is created
    with open(pidfile + ".2") as f:
        master = int(f.read())
    workers = set()
    stop_old = time.monotonic() + duration * 0.3
    end = time.monotonic() + duration * 0.7
    while time.monotonic() < end:
        workers |= children_of(master)
        if stop_old and time.monotonic() > stop_old:
            os.kill(arbiter, signal.SIGTERM)
            stop_old = None
        time.sleep(0.05)
    return master, workers


def main():
    worker_class, workers, max_requests, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    upgrade = sys.argv[5:] == ["upgrade"]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    log = tempfile.NamedTemporaryFile(prefix="pyebpf-gunicorn-", suffix=".log", delete=False).name
    pidfile = log[:-len(".log")] + ".pid"
    bind = "fd://%d" % listener.fileno()
    if upgrade:
        # gunicorn 20.1 cannot hand an fd:// listener to its re-exec'd self
        # (the fd it passes on is a non-inheritable dup): bind by address, as
        # a deployment does, on the port just found free.
        listener.close()
        bind = "127.0.0.1:%d" % port
    args = ["/usr/bin/gunicorn", "--chdir", HERE, "-k", worker_class, "-w", str(workers),
            "--max-requests", str(max_requests), "--access-logfile", log, "--access-logformat", "%(p)s %(s)s",
            "--pid", pidfile, "-b", bind, "children_app:app"]
    if worker_class == "gthread":
        args[5:5] = ["--threads", "2"]
    env = dict(os.environ, PYTHONPATH=HERE)
    server = subprocess.Popen(args, pass_fds=[] if upgrade else [listener.fileno()], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                              preexec_fn=stop_with_parent)
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
        wrk = subprocess.Popen(["wrk", "-t2", "-c4", "-d%ds" % duration, "http://127.0.0.1:%d/" % port],
                               stdout=subprocess.PIPE, text=True)
        upgraded = {}
        if upgrade:
            master, new_workers = upgrade_under_load(server.pid, pidfile, duration)
            upgraded = {"new_master": master, "new_workers": sorted(new_workers)}
        out = wrk.communicate()[0]
        if wrk.returncode:
            sys.exit("wrk failed")
        wrk_requests = int(re.search(r"(\d+) requests in", out).group(1))
        time.sleep(1)  # the access log is written after the response
        served = collections.Counter()
        with open(log) as f:
            for line in f.readlines()[before:]:
                pid, status = line.split()
                if status == "200":
                    served[int(pid.strip("<>"))] += 1
        if upgrade:
            stop_server(server)  # the re-exec'd master would outlive this process if it were killed
        wl_common.result(wrk_requests=wrk_requests, served={str(p): n for p, n in served.items()},
                         requests=sum(served.values()), **upgraded)
        wl_common.linger()
    finally:
        stop_server(server)
        for path in (log, pidfile, pidfile + ".2"):
            if os.path.exists(path):
                os.unlink(path)


def stop_with_parent():
    """The arbiter gets SIGTERM when this process dies, even by SIGKILL (the
    test harness's way), so no server outlives its test."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_server(server):
    """Stops the arbiter, its workers and a re-exec'd master: one process group."""
    stop_group(server, signal.SIGTERM)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(0.5)
    stop_group(server, signal.SIGKILL)


def stop_group(server, sig):
    try:
        os.killpg(server.pid, sig)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    main()
