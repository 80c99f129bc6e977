"""tcp_accept ground truth: a server that accepts slowly.

Clients open `count` connections at once to a listener (backlog 16); the
"SlowAcceptor" thread waits `first` seconds, accepts one, then waits `step`
seconds before each next accept. For every connection the workload measures
how long it sat in the accept queue: from the client's connect() returning
(the handshake is complete) to the server's accept() returning, and how many
connections were still queued when it was taken.

A second scenario, in a pair of network namespaces, drops the server's first
SYN-ACK with nftables so the handshake needs a retransmitted SYN-ACK; the
client measures how long its connect() took.
Usage: tcp_accepts.py FAMILY(4|6) COUNT FIRST_S STEP_S
"""
import os
import socket
import sys
import threading
import time

import wl_common
from netns import NetNs, veth_pair

BACKLOG = 16


def slow_handshake(family):
    client_ns, server_ns = NetNs(), NetNs()
    _, (far4, far6) = veth_pair(client_ns, server_ns, "10.202.0", "fd00:202")
    # Every other SYN-ACK from port 7000 is dropped, starting with the first.
    server_ns.nft("table inet pyebpf_tcp {\n chain output {\n  type filter hook output priority 0;\n"
                  "  tcp sport 7000 tcp flags & (syn | ack) == syn | ack numgen inc mod 2 == 0 drop\n }\n}\n")
    host = far4 if family == socket.AF_INET else far6
    with server_ns.entered():
        listener = socket.socket(family, socket.SOCK_STREAM)
    listener.bind((host, 7000))
    listener.listen(BACKLOG)
    return client_ns, listener, host


def main():
    family = socket.AF_INET6 if sys.argv[1] == "6" else socket.AF_INET
    host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
    count, first, step = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.bind((host, 0))
    listener.listen(BACKLOG)
    port = listener.getsockname()[1]
    client_ns, slow_listener, slow_host = slow_handshake(family)
    wl_common.ready()
    wl_common.wait_go()

    connected = {}  # client port -> monotonic time connect() returned
    clients = []
    for _ in range(count):
        c = socket.socket(family, socket.SOCK_STREAM)
        c.connect((host, port))
        connected[c.getsockname()[1]] = time.monotonic()
        clients.append(c)

    accepted = []

    def acceptor():
        time.sleep(first)
        for i in range(count):
            if i:
                time.sleep(step)
            conn, peer = listener.accept()
            now = time.monotonic()
            accepted.append({"peer_port": peer[1], "local_port": conn.getsockname()[1],
                             "dwell_us": int((now - connected[peer[1]]) * 1e6),
                             "queued_after": count - 1 - i})
            conn.close()
        # The slow handshake: accepted at once, so the dwell is short.
        conn, peer = slow_listener.accept()
        accepted.append({"peer_port": peer[1], "local_port": conn.getsockname()[1], "slow": True})
        conn.close()

    t = threading.Thread(target=acceptor, name="SlowAcceptor")
    t.start()
    with client_ns.entered():
        slow = socket.socket(family, socket.SOCK_STREAM)
    t0 = time.monotonic()
    slow.connect((slow_host, 7000))
    slow_connect_us = int((time.monotonic() - t0) * 1e6)
    slow_port = slow.getsockname()[1]
    t.join()
    for c in clients + [slow]:
        c.close()
    wl_common.result(pid=os.getpid(), acceptor_tid=t.native_id, backlog=BACKLOG, port=port, accepted=accepted,
                     slow={"peer_port": slow_port, "connect_us": slow_connect_us, "local_port": 7000})
    wl_common.linger()


if __name__ == "__main__":
    main()
