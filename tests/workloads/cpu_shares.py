"""Three functions burn CPU in known proportions (50/30/20) on the main
thread; the workload measures the CPU time each one really got."""
import sys
import time

from wl_common import burn_cpu, jitter, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0


def func_a(budget):
    return burn_cpu(budget)


def func_b(budget):
    return burn_cpu(budget)


def func_c(budget):
    return burn_cpu(budget)


PLAN = [(func_a, 0.005), (func_b, 0.003), (func_c, 0.002)]

ready(tid=native_id())
wait_go()
spent = {f.__name__: 0.0 for f, _ in PLAN}
deadline = time.monotonic() + SECONDS
while time.monotonic() < deadline:
    for func, budget in PLAN:
        t0 = time.thread_time()
        func(budget * jitter())
        spent[func.__name__] += time.thread_time() - t0
total = sum(spent.values())
result(tid=native_id(), shares={name: value / total for name, value in spent.items()}, cpu_seconds=total)
linger()
