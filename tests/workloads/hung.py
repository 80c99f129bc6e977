"""Threads stuck in known places, for pyebpf dump and offcpu's blocked-now
report. argv[1] picks the scene; READY carries its ground truth (each
thread's tid and the line it is stuck on, the objects it waits on), set up
before READY and still in place while the test dumps; the process exits when
stdin closes.

  locks   "Deadlock-A"/"Deadlock-B" each hold a threading.Lock and wait for
          the other's; "RDeadlock-A"/"RDeadlock-B" the same with RLocks (whose
          owner the interpreter records); "Reader" blocks in recv on a TCP
          connection to this process; "Sleeper" in time.sleep(1000);
          "Waiter-1"/"Waiter-2" both wait on one Lock that MainThread holds
  gil     "Spinner" runs pure Python, "GilWaiter-1"/"-2" sleep 1 ms in a loop
          and so mostly wait for the GIL it holds
  gc      "Collector" calls gc.collect() on a large heap in a loop: it is
          nearly always inside a collection
  many    300 threads "Idle-<i>" in time.sleep: more than the 256 entries
          an unrolled thread-list walk reaches
"""
import gc
import os
import socket
import sys
import threading
import time

from wl_common import line_of, native_id, ready

SCENE = sys.argv[1] if len(sys.argv) > 1 else "locks"
truth = {"threads": {}, "lines": {}, "objects": {}}
started = threading.Event()


def me(name, **facts):
    truth["threads"][name] = dict(tid=native_id(), ident=threading.get_ident(), **facts)


def deadlock(name, first, second, other_ready):
    me(name, holds=hex(id(first)), waits_on=hex(id(second)))
    with first:
        other_ready.wait()
        with second:  # LINE:deadlock
            pass


def reader(name, server):
    conn, peer = server.accept()
    me(name, local="%s:%d" % conn.getsockname(), peer="%s:%d" % peer)
    started.set()
    conn.recv(1)  # LINE:recv


def sleeper(name):
    me(name, seconds=1000)
    time.sleep(1000)  # LINE:sleep


def waiter(name, lock):
    me(name, waits_on=hex(id(lock)))
    with lock:  # LINE:shared
        pass


def spinner(name):
    me(name)
    x = 0
    while True:
        x += 1  # LINE:spin


def gil_waiter(name):
    me(name)
    while True:
        time.sleep(0.001)  # LINE:gil_wait


def collector(name):
    heap = []
    for i in range(400000):
        a, b = [i], [i]
        a.append(b)
        b.append(a)
        heap.append(a)
    me(name)
    started.set()
    while True:
        gc.collect()  # LINE:collect


def start(target, name, *args):
    """Every target takes its thread's name first, for its ground truth."""
    threading.Thread(target=target, name=name, args=(name,) + args, daemon=True).start()


me("MainThread")
if SCENE == "locks":
    a, b = threading.Lock(), threading.Lock()
    ra, rb = threading.RLock(), threading.RLock()
    both, rboth = threading.Barrier(2), threading.Barrier(2)
    start(deadlock, "Deadlock-A", a, b, both)
    start(deadlock, "Deadlock-B", b, a, both)
    start(deadlock, "RDeadlock-A", ra, rb, rboth)
    start(deadlock, "RDeadlock-B", rb, ra, rboth)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    start(reader, "Reader", server)
    client = socket.create_connection(server.getsockname())
    start(sleeper, "Sleeper")
    shared = threading.Lock()
    shared.acquire()
    truth["objects"]["shared"] = hex(id(shared))
    start(waiter, "Waiter-1", shared)
    start(waiter, "Waiter-2", shared)
    started.wait()
    while len(truth["threads"]) < 9:
        time.sleep(0.01)
    time.sleep(0.3)  # every thread reaches its wait
    lines = ("deadlock", "recv", "sleep", "shared")
elif SCENE == "gil":
    start(spinner, "Spinner")
    start(gil_waiter, "GilWaiter-1")
    start(gil_waiter, "GilWaiter-2")
    while len(truth["threads"]) < 4:
        time.sleep(0.01)
    lines = ("spin", "gil_wait")
elif SCENE == "many":
    for i in range(300):
        start(sleeper, "Idle-%d" % i)
    while len(truth["threads"]) < 301:
        time.sleep(0.01)
    lines = ("sleep",)
else:
    start(collector, "Collector")
    started.wait()
    lines = ("collect",)
truth["lines"] = {m: line_of(m) for m in lines}
ready(file=__file__, **truth)
sys.stdin.read()
os._exit(0)
