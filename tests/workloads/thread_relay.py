"""Threads run one after another, each started once the previous one has
exited, all burning CPU under their own names. glibc gives a new thread the
stack, and so the pthread_t (= threading ident), of one that has finished:
the threads share one ident and only their tids tell them apart. Each Thread
object is dropped before the next is made, so the allocator may hand the
next thread the same addresses for its Thread and its ident int too: then
only _active's insertion order tells the registrations apart. The result lists
each thread's name, tid, ident and the addresses of its Thread object and its
key in _active, so the test can check that the ident reuse it is about
really happened, and show which addresses were reused. argv: seconds per
thread, number of threads."""
import sys
import threading

from wl_common import burn_cpu, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ran = []


def relay_leg():
    ident = threading.get_ident()
    key = next(k for k in list(threading._active) if k == ident)
    ran.append({"name": threading.current_thread().name, "native_id": native_id(), "ident": ident,
                "object": id(threading.current_thread()), "key": id(key)})
    del key
    burn_cpu(SECONDS)


ready(tid=native_id())
wait_go()
for i in range(COUNT):
    t = threading.Thread(target=relay_leg, name="Relay-%d" % (i + 1))
    t.start()
    t.join()
    del t
result(threads=ran)
linger()
