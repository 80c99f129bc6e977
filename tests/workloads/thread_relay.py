"""Threads run one after another, each started once the previous one has
exited, all burning CPU under their own names. glibc gives a new thread the
stack, and so the pthread_t (= threading ident), of one that has finished:
the threads share one ident and only their tids tell them apart. The result
lists each thread's name, tid and ident, so the test can check that the reuse
it is about really happened. argv: seconds per thread, number of threads."""
import sys
import threading

from wl_common import burn_cpu, native_id, ready, result, wait_go, linger

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 0.5
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 3
ran = []


def relay_leg():
    ran.append({"name": threading.current_thread().name, "native_id": native_id(), "ident": threading.get_ident()})
    burn_cpu(SECONDS)


ready(tid=native_id())
wait_go()
for i in range(COUNT):
    t = threading.Thread(target=relay_leg, name="Relay-%d" % (i + 1))
    t.start()
    t.join()
result(threads=ran)
linger()
