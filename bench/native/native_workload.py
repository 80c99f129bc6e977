"""CPU-bound workload for the --native measurements: pure-Python recursion
(DEPTH frames) whose leaf calls back into Python through C (sorted(key=...)),
so stacks have several eval-loop entries. usage: python native_workload.py SECONDS DEPTH"""
import sys, time
def key(x):
    s = 0
    for i in range(50):
        s += i * x
    return s
def rec(n):
    if n == 0:
        return sorted(range(200), key=key)
    return rec(n - 1)
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    rec(int(sys.argv[2]))
