"""A short-lived Python program for the children tests: burns CPU_S (default 1.5) of
CPU in child_work, then prints CHILD {pid, version, cpu_s}. Extra arguments are
ignored (the --name test marks its command line with one)."""
import json
import os
import sys
import time


def child_work(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def main():
    seconds = float(os.environ.get("CPU_S", "1.5"))
    child_work(seconds)
    print("CHILD " + json.dumps({"pid": os.getpid(), "version": "%d.%d.%d" % sys.version_info[:3], "cpu_s": seconds}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
