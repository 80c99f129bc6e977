"""Shared by the HTTP overhead benchmarks (bench/handoff, bench/net).

A Debian gunicorn (gthread worker) on 127.0.0.1 serving tests/workloads/handoff_app.py,
wrk against it, pyebpf attached to the worker, and what each side costs.
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYEBPF = os.path.join(ROOT, "build", "pyebpf")


def start_gunicorn(threads, sleep_s=0.0):
    """Starts gunicorn (1 gthread worker); returns (server, worker pid, port)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    port = listener.getsockname()[1]
    server = subprocess.Popen(
        ["/usr/bin/gunicorn", "--chdir", os.path.join(ROOT, "tests", "workloads"), "-k", "gthread", "-w", "1",
         "--threads", str(threads), "--keep-alive", "30", "-b", "fd://%d" % listener.fileno(),
         "handoff_app:app"],
        pass_fds=[listener.fileno()], env=dict(os.environ, HANDOFF_SLEEP_S=str(sleep_s)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    listener.close()
    for _ in range(200):
        time.sleep(0.05)
        try:
            with open("/proc/%d/task/%d/children" % (server.pid, server.pid)) as f:
                kids = f.read().split()
        except OSError:
            kids = []
        if kids:
            return server, int(kids[0]), port
    stop_server(server)
    sys.exit("gunicorn started no worker")


def stop_server(server):
    server.send_signal(signal.SIGINT)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()


def wrk_run(port, seconds, connections, close=False):
    """One wrk run: (requests/s, requests, wrk's own CPU seconds). close=True sends
    `Connection: close` (a new TCP connection per request)."""
    cmd = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds, "--timeout", "10s"]
    if close:
        cmd += ["-H", "Connection: close"]
    before = os.times()
    out = subprocess.run(cmd + ["http://127.0.0.1:%d/" % port], check=True, capture_output=True, text=True).stdout
    after = os.times()
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    n = re.search(r"(\d+) requests in", out)
    # With Connection: close wrk counts the server's closes as read errors; anything else is a failure.
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    bad = errors and (int(errors.group(1)) or int(errors.group(3)) or int(errors.group(4)) or
                      (int(errors.group(2)) and not close))
    if not m or not n or "Non-2xx" in out or bad:
        sys.exit("wrk failed:\n" + out)
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return float(m.group(1)), int(n.group(1)), cpu


def wrk(port, seconds, connections, close=False):
    """Requests/s of one wrk run."""
    return wrk_run(port, seconds, connections, close)[0]


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def start_pyebpf(args, out, binary=PYEBPF):
    """pyebpf with `args` (after the binary), stdout to file object `out`; returns once it traces."""
    p = subprocess.Popen([binary] + args, stdout=out, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "info: tracing" in line:
            p.cpu_at_start = cpu_seconds(p.pid)  # attach cost is not per-request overhead
            return p
    sys.exit("pyebpf did not start: " + (p.stderr.read() if p.stderr else ""))


def stop_pyebpf(p):
    """Stops pyebpf; returns (CPU seconds it used while tracing, its stderr from then on)."""
    cpu = cpu_seconds(p.pid) - p.cpu_at_start
    p.send_signal(signal.SIGINT)
    rest = p.stderr.read()
    p.wait(30)
    return cpu, rest


def prog_ns_per_run(prefix):
    """Mean run time of pyebpf's programs named prefix*, if kernel.bpf_stats_enabled is on."""
    try:
        progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout)
    except (OSError, ValueError):
        return {}
    return {p["name"]: p["run_time_ns"] / p["run_cnt"] for p in progs
            if p.get("name", "").startswith(prefix) and p.get("run_cnt")}


def bpf_stats_enabled():
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        return f.read().strip() == "1"


def dd_seconds(n):
    """Wall time of n 1-byte read+write syscall pairs by a process that is not a target."""
    t0 = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=%d" % n], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0
