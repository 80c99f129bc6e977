"""Makes a new function, burns CPU in it, drops it, and again: the allocator
hands each function's code object the address the previous one freed
(pymalloc reuses the freed block first), so a profiler that remembers code
objects by address would name the new function after the old one. Each code
object is a copy of one template with its own name and first line (so its
code header, and pyebpf's code tag, differ from the one before), made by
code.replace(), which allocates little else that could take the freed block.
The result lists every function's name, its code object's address, and when
it ran (time.time(), microseconds), so the test can check each sample against
the function running at its time, and that addresses really were reused.
argv: functions, seconds each."""
import sys
import time
import types

from wl_common import burn_cpu, native_id, ready, result, wait_go, linger

COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 40
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.05
ran = []


def template(seconds):
    return burn_cpu(seconds)


def run(i):
    name = "churn_%04d" % i
    names = {"co_name": name, "co_firstlineno": 1000 + i}
    if sys.version_info >= (3, 11):
        names["co_qualname"] = name
    function = types.FunctionType(template.__code__.replace(**names), globals(), name)
    start = time.time()
    function(SECONDS)
    ran.append({"name": name, "code": id(function.__code__), "start_us": start * 1e6, "end_us": time.time() * 1e6})


ready(tid=native_id())
wait_go()
for i in range(COUNT):
    run(i)
result(functions=ran)
linger()
