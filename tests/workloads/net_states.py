"""TCP sockets in known states inside a network namespace of its own.

usage: net_states.py TIME_WAIT CLOSE_WAIT ESTABLISHED SYN_SENT

Unshares a new network namespace (gone when this process exits, nothing to
clean up), brings lo up, adds a veth pair hnh0/hnh1 (both ends here) with the
default route on hnh0 (no address: nothing is ever sent through it), then
creates, over loopback only:
  - TIME_WAIT outbound TIME_WAIT sockets to one IPv4 listener (client closes
    first) plus a few to an IPv6 one, when ::1 exists;
  - CLOSE_WAIT server-side sockets whose peer closed (the peers sit in FIN_WAIT2);
  - ESTABLISHED connected pairs;
  - SYN_SENT clients of a listener with a full accept queue (backlog 0, never
    accepting: the kernel drops their SYNs).
It also starts two children with the comm hnh<pid>, different fd limits and
fd counts, for per-process fd usage. READY reports what exists, measured here.
On GO it sends BYTES over an established loopback pair and reports RESULT.
"""
import ctypes
import os
import resource
import socket
import subprocess
import sys
import time

import wl_common

CLONE_NEWNET = 0x40000000
PR_SET_NAME = 15
BYTES = 1 << 20

CHILD = r"""
import ctypes, os, resource, sys
name, limit, want = sys.argv[1].encode(), int(sys.argv[2]), int(sys.argv[3])
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(name), 0, 0, 0)
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
while len(os.listdir("/proc/self/fd")) - 1 < want:
    held.append(os.open("/dev/null", os.O_RDONLY))
print(len(os.listdir("/proc/self/fd")) - 1, flush=True)
sys.stdin.read()
"""


def sh(*argv):
    subprocess.run(argv, check=True)


def pair(listener, family, addr):
    c = socket.socket(family, socket.SOCK_STREAM)
    c.connect(addr)
    s, _ = listener.accept()
    return c, s


def main():
    n_tw, n_cw, n_est, n_syn = (int(a) for a in sys.argv[1:5])
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        sys.exit("unshare(CLONE_NEWNET): %s" % os.strerror(ctypes.get_errno()))
    sh("ip", "link", "set", "lo", "up")
    sh("ip", "link", "add", "hnh0", "type", "veth", "peer", "name", "hnh1")
    sh("ip", "link", "set", "hnh0", "up")
    sh("ip", "link", "set", "hnh1", "up")
    sh("ip", "route", "add", "default", "dev", "hnh0")

    keep = []
    l4 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    l4.bind(("127.0.0.1", 0))
    l4.listen(1024)
    keep.append(l4)
    port4 = l4.getsockname()[1]
    listeners = 1

    # TIME_WAIT on the client side: the client closes first, then the server.
    for _ in range(n_tw):
        c, s = pair(l4, socket.AF_INET, ("127.0.0.1", port4))
        c.close()
        time.sleep(0.002)
        s.close()
    n_tw6, port6 = 0, 0
    try:
        l6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        l6.bind(("::1", 0))
        l6.listen(64)
        keep.append(l6)
        port6 = l6.getsockname()[1]
        listeners += 1
        for _ in range(3):
            c, s = pair(l6, socket.AF_INET6, ("::1", port6))
            c.close()
            time.sleep(0.002)
            s.close()
            n_tw6 += 1
    except OSError:
        pass

    # CLOSE_WAIT on the server side: the client closes, the server never does.
    for _ in range(n_cw):
        c, s = pair(l4, socket.AF_INET, ("127.0.0.1", port4))
        c.close()
        keep.append(s)

    for _ in range(n_est):
        keep.extend(pair(l4, socket.AF_INET, ("127.0.0.1", port4)))

    # SYN_SENT: a listener whose accept queue (backlog 0: one connection) is full.
    lb = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lb.bind(("127.0.0.1", 0))
    lb.listen(0)
    keep.append(lb)
    listeners += 1
    clients = []
    for _ in range(n_syn + 1):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.setblocking(False)
        c.connect_ex(("127.0.0.1", lb.getsockname()[1]))
        clients.append(c)
        time.sleep(0.05)  # one at a time: each finds the queue as the previous one left it
    keep.extend(clients)
    time.sleep(0.2)
    connected = 0
    for c in clients:
        try:
            c.getpeername()
            connected += 1
        except OSError:
            pass

    # Processes for fd usage: same comm, their own limits.
    name = "hnh%d" % os.getpid()
    children = []
    fds = []
    for limit, want in ((1000, 100), (100, 60)):
        p = subprocess.Popen([sys.executable, "-c", CHILD, name, str(limit), str(want)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        fds.append({"pid": p.pid, "fd_limit": limit, "fd_count": int(p.stdout.readline())})
        children.append(p)

    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        lo, hi = (int(x) for x in f.read().split())
    time.sleep(0.2)  # FIN/ACK exchanges settle
    wl_common.ready(netns=os.stat("/proc/self/ns/net").st_ino, port4=port4, port6=port6,
                    time_wait4=n_tw, time_wait6=n_tw6, close_wait=n_cw, established=n_est,
                    backlog_connected=connected, syn_sent=len(clients) - connected, listen=listeners,
                    ephemeral_ports=hi - lo + 1, proc_name=name, fds=fds)
    wl_common.wait_go()

    a, b = pair(l4, socket.AF_INET, ("127.0.0.1", port4))
    a.sendall(b"x" * BYTES)
    got = 0
    while got < BYTES:
        got += len(b.recv(65536))
    wl_common.result(bytes=BYTES)
    wl_common.linger()
    for p in children:
        p.stdin.close()


if __name__ == "__main__":
    main()
