"""A busy multi-threaded service for bench/soak, exercising every tracker at
once for as long as it runs: CPU-bound threads, GIL contention, cyclic garbage
(collections of every generation), sleeps and blocking I/O, a local TCP server
with clients that connect, send, and sometimes reset, short-lived threads
(thread state churn) and freshly compiled functions (new code objects and
strings for pyebpf's caches). Prints READY, runs until killed."""
import random
import socket
import sys
import threading
import time

rng = random.Random(7)


def cpu_burner():
    while True:
        total = 0
        for i in range(50000):
            total += i * i % 7


class Node:
    def __init__(self, parent):
        self.parent = parent
        self.children = [self]  # a cycle: only the collector frees it


def garbage_maker():
    kept = []
    while True:
        tree = [Node(None) for _ in range(2000)]
        kept.append(tree)
        if len(kept) > 20:
            kept.pop(0)
        time.sleep(0.01)


def sleeper():
    while True:
        time.sleep(rng.uniform(0.005, 0.05))


def tcp_server(listener):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def serve(conn):
    with conn:
        try:
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                conn.sendall(data.upper())
        except ConnectionResetError:  # the clients' deliberate resets
            return


def tcp_client(port):
    while True:
        with socket.create_connection(("127.0.0.1", port)) as s:
            for _ in range(rng.randint(1, 20)):
                s.sendall(b"hello" * 50)
                s.recv(4096)
            if rng.random() < 0.2:  # a reset instead of a clean close
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        time.sleep(0.01)


def thread_churn():
    n = 0
    while True:
        t = threading.Thread(target=lambda: sum(range(20000)), name="worker-%d" % n)
        t.start()
        t.join()
        n += 1
        time.sleep(0.005)


def code_churn():
    n = 0
    while True:
        source = "def generated_%d(x):\n    return sum(i * x for i in range(2000))\n" % n
        scope = {}
        exec(compile(source, "<generated-%d>" % n, "exec"), scope)
        scope["generated_%d" % n](n)
        n += 1
        time.sleep(0.002)


def main():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    targets = [cpu_burner, cpu_burner, garbage_maker, sleeper, sleeper, thread_churn, code_churn,
               lambda: tcp_server(listener)] + [lambda: tcp_client(port)] * 4
    for i, target in enumerate(targets):
        threading.Thread(target=target, name="soak-%d" % i, daemon=True).start()
    print("READY", flush=True)
    sys.stdin.read()  # until the bench closes stdin or kills us


if __name__ == "__main__":
    main()
