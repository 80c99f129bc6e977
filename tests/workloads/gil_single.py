"""One thread only: CPU work and short sleeps that release and re-take the GIL
thousands of times. No other thread ever holds the GIL, so no acquisition can
wait for it. argv: seconds."""
import sys
import time

from wl_common import linger, native_id, ready, result, wait_go

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5


def work():
    x = 0
    for i in range(3000):
        x += i
    return x


ready(tid=native_id())
wait_go()
end = time.perf_counter() + SECONDS
releases = 0
while time.perf_counter() < end:
    work()
    time.sleep(0.0002)
    releases += 1
result(releases=releases)
linger()
