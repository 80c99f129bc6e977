"""tcp_connect ground truth: outbound connects that succeed, are refused, time
out in the kernel, or are given up by the application.

Targets: loopback listeners (IPv4, IPv6, and IPv4 through an AF_INET6 socket as
::ffff:127.0.0.1), ports bound but not listening (refused by RST), and a
second network namespace joined by veth whose nftables drop every SYN to
port 9 (a kernel timeout with TCP_SYNCNT=1: SYN, one retransmit, ETIMEDOUT
after ~3 s; and an application timeout of 0.3 s). Each attempt records what
the application saw: addresses, errno, thread, and how long connect() took.
A child process that is not a target connects too (it must not be reported
unless the whole host is traced).
Usage: tcp_connects.py
"""
import errno
import json
import os
import socket
import subprocess
import sys
import threading
import time

import wl_common
from netns import NetNs, veth_pair

CHILD = r"""
import json, os, socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
print(json.dumps({"pid": os.getpid(), "src_port": s.getsockname()[1]}))
s.close()
"""


def serve(listener):
    while True:
        conn, _ = listener.accept()
        conn.close()


def listen(family, host):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, 0))
    s.listen(64)
    threading.Thread(target=serve, args=(s,), name="Acceptor", daemon=True).start()
    return s.getsockname()[1]


def closed_port(family, host):
    """A port bound by nobody listening: the kernel answers SYNs with RST."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, 0))
    return s, s.getsockname()[1]


def attempt(family, host, port, expect, ns=None, syncnt=None, timeout=None):
    """One connect from the calling thread; returns its ground truth."""
    rec = {"family": "AF_INET6" if family == socket.AF_INET6 else "AF_INET", "dst_ip": host, "dst_port": port,
           "expect": expect, "tid": wl_common.native_id(), "thread": threading.current_thread().name}
    if ns:
        with ns.entered():
            s = socket.socket(family, socket.SOCK_STREAM)
    else:
        s = socket.socket(family, socket.SOCK_STREAM)
    if syncnt is not None:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_SYNCNT, syncnt)
    if timeout is not None:
        s.settimeout(timeout)
    t0 = time.monotonic()
    try:
        s.connect((host, port))
        rec["errno"] = None
        rec["src_ip"], rec["src_port"] = s.getsockname()[:2]
    except OSError as e:  # socket.timeout (the application's own timeout) has no errno
        rec["errno"] = errno.errorcode.get(e.errno, str(e.errno)) if e.errno else "app-timeout"
    rec["duration_us"] = int((time.monotonic() - t0) * 1e6)
    s.close()
    return rec


def main():
    v4_port = listen(socket.AF_INET, "127.0.0.1")
    v6_port = listen(socket.AF_INET6, "::1")
    closed4, closed4_port = closed_port(socket.AF_INET, "127.0.0.1")
    closed6, closed6_port = closed_port(socket.AF_INET6, "::1")
    client_ns, server_ns = NetNs(), NetNs()
    _, (far4, far6) = veth_pair(client_ns, server_ns, "10.201.0", "fd00:201")
    server_ns.nft("table inet pyebpf_tcp {\n chain input {\n  type filter hook input priority 0;\n"
                  "  tcp dport 9 drop\n }\n}\n")
    wl_common.ready()
    wl_common.wait_go()

    attempts = []

    def connector():
        attempts.append(attempt(socket.AF_INET, "127.0.0.1", v4_port, "success"))
        attempts.append(attempt(socket.AF_INET6, "::1", v6_port, "success"))
        attempts.append(attempt(socket.AF_INET6, "::ffff:127.0.0.1", v4_port, "success"))
        attempts.append(attempt(socket.AF_INET, "127.0.0.1", closed4_port, "refused"))
        attempts.append(attempt(socket.AF_INET6, "::1", closed6_port, "refused"))
        attempts.append(attempt(socket.AF_INET, far4, 9, "aborted", ns=client_ns, timeout=0.3))

    def timing_out(family, host):
        attempts.append(attempt(family, host, 9, "timeout", ns=client_ns, syncnt=1))

    threads = [threading.Thread(target=connector, name="Connector"),
               threading.Thread(target=timing_out, args=(socket.AF_INET, far4), name="Timeout4"),
               threading.Thread(target=timing_out, args=(socket.AF_INET6, far6), name="Timeout6")]
    for t in threads:
        t.start()
    child = subprocess.run([sys.executable, "-c", CHILD, "127.0.0.1", str(v4_port)],
                           capture_output=True, text=True, check=True)
    for t in threads:
        t.join()
    closed4.close()
    closed6.close()
    wl_common.result(pid=os.getpid(), attempts=attempts, child=json.loads(child.stdout))
    wl_common.linger()


if __name__ == "__main__":
    main()
