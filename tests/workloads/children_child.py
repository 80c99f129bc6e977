"""A short-lived Python program for the children tests: burns CPU_S (default 1.5) of
CPU in child_work, then prints CHILD {pid, version, cpu_s}. Extra arguments are
ignored (the --name test marks its command line with one).

With FORK_FIRST=1 it forks first thing, as a server master starts its workers,
before a profiler can have read the new interpreter; the forked copy burns the
CPU and its pid is reported as "forked"."""
import json
import os
import sys
import time


def child_work(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def main():
    forked = os.fork() if os.environ.get("FORK_FIRST") == "1" else None
    seconds = float(os.environ.get("CPU_S", "1.5"))
    if forked:
        os.waitpid(forked, 0)
    else:
        child_work(seconds)
        if forked == 0:
            os._exit(0)
    report = {"pid": os.getpid(), "version": "%d.%d.%d" % sys.version_info[:3], "cpu_s": seconds}
    if forked:
        report["forked"] = forked
    print("CHILD " + json.dumps(report))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
