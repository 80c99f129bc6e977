"""Helpers shared by pyebpf's benchmarks (bench/*): start and stop pyebpf,
read CPU time and peak memory of a process, read BPF program run times.
Benchmarks print ratios; they are not timed tests."""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYEBPF = os.path.join(ROOT, "build", "pyebpf")
WORKLOADS = os.path.join(ROOT, "bench", "workloads")


def cpu_seconds(pid):
    """CPU time of a process so far (all its threads, ended ones too), to the
    nanosecond: its process CPU clock (Linux's clock_getcpuclockid(pid) id),
    not /proc/PID/stat's 10 ms ticks, which round a profiler's few ms of CPU
    per second of a short run to 0 or 1 tick (the `top` row divided by 0)."""
    return time.clock_gettime((~pid << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)


def peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def start_pyebpf(args, out, binary=PYEBPF):
    """Starts pyebpf with `args` and returns once it is tracing. The process
    object gets .cpu_at_start: attach cost is not per-event overhead. Its
    stderr from then on is read by a thread (a run that logs a line per
    target must not fill the pipe and stall) and returned by stop_pyebpf."""
    p = subprocess.Popen([binary] + args, stdout=out, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        if "info: tracing" in line:
            p.cpu_at_start = cpu_seconds(p.pid)
            p.stderr_lines = []
            p.stderr_reader = threading.Thread(target=lambda: p.stderr_lines.extend(p.stderr), daemon=True)
            p.stderr_reader.start()
            return p
    sys.exit("pyebpf did not start: " + p.stderr.read())


def stop_pyebpf(p):
    """SIGINT; returns (CPU seconds used since tracing began, peak RSS KiB,
    stderr since tracing began: the log lines and the summary)."""
    cpu = cpu_seconds(p.pid) - p.cpu_at_start
    rss = peak_rss_kib(p.pid)
    p.send_signal(signal.SIGINT)
    p.wait(30)
    p.stderr_reader.join()
    return cpu, rss, "".join(p.stderr_lines)


def prog_run_totals(prefix):
    """{name: (run_time_ns, run_cnt)} of the loaded BPF programs whose name
    starts with `prefix` (needs kernel.bpf_stats_enabled=1, see bpf_stats())."""
    try:
        progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout)
    except (OSError, ValueError):
        return {}
    return {p["name"]: (p["run_time_ns"], p["run_cnt"]) for p in progs
            if p.get("name", "").startswith(prefix) and p.get("run_cnt")}


def prog_ns_per_run(prefix):
    """Mean run time per call of the BPF programs prog_run_totals() lists."""
    return {name: ns / cnt for name, (ns, cnt) in prog_run_totals(prefix).items()}


@contextlib.contextmanager
def bpf_stats():
    """kernel.bpf_stats_enabled=1 for the duration, restored afterwards (it
    adds two clock reads per BPF program run, so it must not stay on)."""
    path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(path) as f:
        before = f.read().strip()
    with open(path, "w") as f:
        f.write("1")
    try:
        yield
    finally:
        with open(path, "w") as f:
            f.write(before)


def lost_events(summary):
    """Events pyebpf's end-of-run summary counts as lost because a ring buffer
    was full, summed over every tracker ("N lost (ring buffer full)",
    offcpu's "lost: N ring buffer full")."""
    pattern = r"(\d+) lost \(ring buffer|lost: (\d+) ring buffer full"
    return sum(int(a or b) for a, b in re.findall(pattern, summary))


def start_workload(python, name, *args, root=None):
    """bench/workloads/<name> started with `args`, once it printed READY; it
    waits for workload_result() to let it run. With `root`, `python` is a path
    inside that root directory and runs chrooted there (a distro build with
    its own libraries, as in a container); the script is copied in, to a
    directory removed once the workload has started."""
    script = os.path.join(WORKLOADS, name)
    command = [python, script]
    copy = None
    if root:
        copy = tempfile.mkdtemp(prefix="pyebpf-bench-", dir=os.path.join(root, "tmp"))
        shutil.copy(script, copy)
        command = ["chroot", root, python, os.path.join("/", os.path.relpath(copy, root), name)]
    try:
        w = subprocess.Popen(command + [str(a) for a in args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
        if w.stdout.readline().strip() != "READY":
            sys.exit("%s: %s did not start" % (python, name))
    finally:
        if copy:
            shutil.rmtree(copy)
    return w


def workload_result(w):
    """Sends GO to a start_workload() process and returns the JSON of its
    RESULT line once it is done (and has exited)."""
    w.stdin.write("GO\n")
    w.stdin.flush()
    result = json.loads(w.stdout.readline().split(" ", 1)[1])
    w.stdin.close()
    w.wait(60)
    return result


def report_ratio(label, without, with_):
    b, t = statistics.median(without), statistics.median(with_)
    print("%s: median without %.4g, with %.4g, ratio %.4f (%+.2f%%)" % (label, b, t, t / b, 100 * (t / b - 1)))
    return t / b


# --- HTTP load on loopback (bench/handoff, bench/net) -------------------------

def start_gunicorn(threads, sleep_s=0.0):
    """Debian's gunicorn, 1 gthread worker with `threads` threads, serving
    tests/workloads/handoff_app.py on 127.0.0.1. Returns (server, worker pid, port)."""
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
    """One wrk run against 127.0.0.1:port: (requests/s, requests, wrk's CPU seconds).
    close=True sends `Connection: close`: a new TCP connection per request."""
    # A 10 s timeout: on a busy shared machine the default 2 s fails runs for nothing.
    cmd = ["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds, "--timeout", "10s"]
    if close:
        cmd += ["-H", "Connection: close"]
    before = os.times()
    out = subprocess.run(cmd + ["http://127.0.0.1:%d/" % port], check=True, capture_output=True, text=True).stdout
    after = os.times()
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    requests = re.search(r"(\d+) requests in", out)
    # With Connection: close wrk counts the server's closes as read errors; anything else is a failure.
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    bad = errors and (int(errors.group(1)) or int(errors.group(3)) or int(errors.group(4)) or
                      (int(errors.group(2)) and not close))
    if not rate or not requests or "Non-2xx" in out or bad:
        sys.exit("wrk failed:\n" + out)
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return float(rate.group(1)), int(requests.group(1)), cpu


def wrk(port, seconds, connections, close=False):
    """Requests/s of one wrk run."""
    return wrk_run(port, seconds, connections, close)[0]


def dd_seconds(n):
    """Wall time of n 1-byte read+write syscall pairs by a process that is not a target."""
    t0 = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=%d" % n], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0
