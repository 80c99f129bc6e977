"""Named threads that block in known ways, each wait measured by the workload.

Usage: offcpu_blocking.py ROUNDS WAIT_MS

On GO, each blocked thread below waits ROUNDS times, about WAIT_MS each, in a
function of its own (the leaf Python frame while it is blocked):

  Sleeper       blocked_in_sleep      time.sleep(WAIT)
  SocketReader  blocked_in_recv       socket.recv on a TCP loopback connection;
                                      SocketSender sends WAIT after the reader blocked
  LockWaiter    blocked_in_lock       threading.Lock().acquire(); LockHolder
                                      releases the lock WAIT after the waiter blocked
  PipeReader    blocked_in_pipe_read  os.read on a pipe; PipeWriter writes WAIT
                                      after the reader blocked

Ground truth per wait, in ms: the time between the blocked thread taking its
timestamp right before blocking and the waker taking its own right before
waking it (CLOCK_MONOTONIC, the clock BPF uses); for the sleep, WAIT and
the sleep call's own measured length as the upper bound.
Each wait also records the wall-clock time it started (epoch µs), to pair it
with the event pyebpf reports for it. Everything the threads do besides
blocking happens in other functions, so the only waits with one of those
functions as the leaf frame are the measured ones.

RESULT {"threads": {name: {"tid", "function", "waits": [{"ms", "ms_max", "at_us"}...]}}, "file"}
"""
import os
import socket
import sys
import threading
import time

from wl_common import linger, native_id, ready, result, wait_go

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
WAIT = (float(sys.argv[2]) if len(sys.argv) > 2 else 150.0) / 1000.0

truth = {}
truth_lock = threading.Lock()


def record(name, function, waits):
    with truth_lock:
        truth[name] = {"tid": native_id(), "function": function, "waits": waits}


def now_ms():
    return time.monotonic_ns() / 1e6


def mark():
    """(monotonic ms, wall-clock µs) right now."""
    return now_ms(), time.time_ns() // 1000


def blocked_in_sleep(seconds):
    time.sleep(seconds)


def sleeper_main():
    waits = []
    for _ in range(ROUNDS):
        start_ms, at = mark()
        blocked_in_sleep(WAIT)
        # A sleep lasts at least WAIT; a loaded machine can wake it later.
        waits.append({"ms": WAIT * 1000.0, "ms_max": now_ms() - start_ms, "at_us": at})
    record("Sleeper", "blocked_in_sleep", waits)


def blocked_in_recv(sock, marks):
    marks.append(mark())
    return sock.recv(1)


def blocked_in_lock(lock, marks):
    marks.append(mark())
    lock.acquire()


def blocked_in_pipe_read(fd, marks):
    marks.append(mark())
    return os.read(fd, 1)


def wait_until_blocked(thread_tid, marks, count):
    """Waits until the blocked thread took its timestamp and entered the
    kernel wait (state S in /proc), so the waker's delay is what it waits."""
    while len(marks) < count:
        time.sleep(0.001)
    path = "/proc/self/task/%d/stat" % thread_tid
    for _ in range(2000):
        with open(path) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "S":
                return
        time.sleep(0.0005)


class Pair:
    """A blocked thread and its waker, exchanging ROUNDS wake-ups."""

    def __init__(self, name, waker_name, function):
        self.name, self.waker_name, self.function = name, waker_name, function
        self.marks, self.wakes, self.woken = [], [], []
        self.tid = None
        self.tid_known = threading.Event()

    def blocked_loop(self, block, before=None):
        self.tid = native_id()
        self.tid_known.set()
        for i in range(ROUNDS):
            if before:
                before(i)
            block(self.marks)
        while len(self.woken) < ROUNDS:  # the waker's last timestamp follows the last wake-up
            time.sleep(0.001)
        # The wake-up came between the waker's two timestamps: a waker
        # preempted between its first one and its system call makes the
        # wait longer than "ms", never longer than "ms_max".
        waits = [{"ms": w - m[0], "ms_max": d - m[0], "at_us": m[1]}
                 for m, w, d in zip(self.marks, self.wakes, self.woken)]
        record(self.name, self.function, waits)

    def waker_loop(self, wake, before=None):
        self.tid_known.wait()
        for i in range(ROUNDS):
            if before:
                before(i)
            wait_until_blocked(self.tid, self.marks, i + 1)
            time.sleep(WAIT)
            self.wakes.append(now_ms())
            wake()
            self.woken.append(now_ms())


def socket_pair_threads():
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    sender = socket.create_connection(listener.getsockname())
    reader, _ = listener.accept()
    listener.close()
    pair = Pair("SocketReader", "SocketSender", "blocked_in_recv")
    return pair, [
        threading.Thread(name="SocketReader", target=pair.blocked_loop,
                         args=(lambda marks: blocked_in_recv(reader, marks),)),
        threading.Thread(name="SocketSender", target=pair.waker_loop, args=(lambda: sender.sendall(b"x"),)),
    ]


def lock_threads():
    lock = threading.Lock()
    locked = threading.Semaphore(0)  # holder -> waiter: the lock is held, go and block on it
    done = threading.Semaphore(0)    # waiter -> holder: got it and released it

    def holder_before(i):
        if i:
            done.acquire()
        lock.acquire()
        locked.release()

    def waiter_before(i):
        if i:
            lock.release()
            done.release()
        locked.acquire()

    def release():
        lock.release()

    pair = Pair("LockWaiter", "LockHolder", "blocked_in_lock")

    def waiter():
        pair.blocked_loop(lambda marks: blocked_in_lock(lock, marks), waiter_before)
        lock.release()

    return pair, [
        threading.Thread(name="LockWaiter", target=waiter),
        threading.Thread(name="LockHolder", target=pair.waker_loop, args=(release, holder_before)),
    ]


def pipe_threads():
    r, w = os.pipe()
    pair = Pair("PipeReader", "PipeWriter", "blocked_in_pipe_read")
    return pair, [
        threading.Thread(name="PipeReader", target=pair.blocked_loop,
                         args=(lambda marks: blocked_in_pipe_read(r, marks),)),
        threading.Thread(name="PipeWriter", target=pair.waker_loop, args=(lambda: os.write(w, b"x"),)),
    ]


threads = [threading.Thread(name="Sleeper", target=sleeper_main)]
for make in (socket_pair_threads, lock_threads, pipe_threads):
    threads += make()[1]

ready(tid=native_id())
wait_go()
for t in threads:
    t.start()
for t in threads:
    t.join()
result(threads=truth, file=os.path.abspath(__file__))
linger()
