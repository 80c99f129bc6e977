"""Stack depth probe for bench/native/measure.sh: recursion DEPTH deep, then a
sleep, on the main thread or a new one. usage: python depth.py DEPTH main|thread"""
import sys, time, threading
def f(n):
    if n == 0:
        time.sleep(2.5)
    else:
        f(n - 1)
depth = int(sys.argv[1])
if sys.argv[2] == "thread":
    t = threading.Thread(target=f, args=(depth,)); t.start(); t.join()
else:
    f(depth)
