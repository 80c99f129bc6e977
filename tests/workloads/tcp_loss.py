"""tcp_loss ground truth, over two network namespaces joined by veth.

Client threads live in namespace C, server threads in namespace S; every
scenario runs once over IPv4 and once over IPv6, in parallel.

  transfer     S drops DROP_PERCENT% of the packets arriving at its data ports
               (nftables) while a "Sender" thread streams MEGABYTES to a
               "Receiver". When every byte is acknowledged the drops stop and
               the sender reads tcpi_total_retrans: the number of segments
               the kernel retransmitted on that connection. With
               TCP_LOSS_MIN_RETRANS=N in the environment the sender goes on
               past MEGABYTES until the kernel has retransmitted N segments
               (at most 64 times MEGABYTES), so a test that needs that many
               gets them whatever the drops' luck.
  rst          a "Resetter" accepts two connections: it closes the first with
               SO_LINGER 0 (RST sent, the client receives it) and the second
               with data still unread (RST with reason TCP_ABORT_ON_CLOSE).
  zero_window  a "Sink" accepts and never reads; a "Stuffer" fills the
               window and waits; the kernel sends zero-window probes, counted
               by namespace C's TCPWinProbe counter.
Usage: tcp_loss.py DROP_PERCENT MEGABYTES SCENARIO...
"""
import fcntl
import os
import select
import socket
import struct
import sys
import termios
import threading
import time

import wl_common
from netns import NetNs, veth_pair

PORTS = {"transfer": 5001, "rst": 5003, "zero_window": 5005}  # IPv6 uses port + 1
TCP_INFO_PROBES = 3
TCP_INFO_TOTAL_RETRANS = 100
# Threads stay alive until the result is out, like a server's worker threads:
# pyebpf reads a thread's Python name while the thread exists.
FINISH = threading.Event()
MIN_RETRANS = int(os.environ.get("TCP_LOSS_MIN_RETRANS", "0"))


def tcp_info(sock, offset, fmt="I"):
    return struct.unpack_from(fmt, sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256), offset)[0]


def unacknowledged_bytes(sock):
    """Bytes written and not yet acknowledged, sent or not (SIOCOUTQ).

    Not tcpi_unacked: that counts only segments in flight, and is 0 while the
    rest of the data still waits in the write queue (pacing, TSQ)."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0" * 4))[0]


def netstat(ns, field):
    """A TcpExt counter of namespace ns (read by a thread inside it)."""
    with ns.entered():
        with open("/proc/thread-self/net/netstat") as f:
            lines = f.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split()[1:], values.split()[1:]))[field])
    raise LookupError(field)


def flow(sock):
    local, peer = sock.getsockname(), sock.getpeername()
    return {"src_ip": local[0], "src_port": local[1], "dst_ip": peer[0], "dst_port": peer[1]}


class Lab:
    def __init__(self, drop_percent):
        self.client, self.server = NetNs(), NetNs()
        (c4, c6), (s4, s6) = veth_pair(self.client, self.server, "10.203.0", "fd00:203")
        self.addrs = {socket.AF_INET: (c4, s4), socket.AF_INET6: (c6, s6)}
        ports = "%d, %d" % (PORTS["transfer"], PORTS["transfer"] + 1)
        if drop_percent:
            self.server.nft("table inet pyebpf_tcp {\n chain input {\n  type filter hook input priority 0;\n"
                            "  tcp dport { %s } numgen random mod 100 < %d drop\n }\n}\n" % (ports, drop_percent))

    def listen(self, family, scenario):
        port = PORTS[scenario] + (1 if family == socket.AF_INET6 else 0)
        with self.server.entered():
            s = socket.socket(family, socket.SOCK_STREAM)
        s.bind((self.addrs[family][1], port))
        s.listen(8)
        return s, port

    def connect(self, family, port):
        with self.client.entered():
            s = socket.socket(family, socket.SOCK_STREAM)
        s.connect((self.addrs[family][1], port))
        return s


def name(base, family):
    return base + ("6" if family == socket.AF_INET6 else "4")


def transfer(lab, family, size, acked, stop_dropping, out):
    listener, port = lab.listen(family, "transfer")
    received = []

    def receiver():
        conn, _ = listener.accept()
        n = 0
        while True:
            data = conn.recv(1 << 16)
            if not data:
                break
            n += len(data)
        received.append(n)
        conn.close()

    r = threading.Thread(target=receiver, name=name("Receiver", family))
    r.start()
    s = lab.connect(family, port)
    rec = flow(s)
    chunk = b"x" * (1 << 16)
    sent = 0
    while sent < size or (tcp_info(s, TCP_INFO_TOTAL_RETRANS) < MIN_RETRANS and sent < 64 * size):
        s.sendall(chunk)
        sent += len(chunk)
    while unacknowledged_bytes(s):
        time.sleep(0.01)
    acked.wait()
    stop_dropping.wait()
    rec["total_retrans"] = tcp_info(s, TCP_INFO_TOTAL_RETRANS)
    rec.update(tid=wl_common.native_id(), thread=threading.current_thread().name)
    s.close()
    r.join()
    rec["received"] = received[0]
    out.append(rec)
    FINISH.wait()


def rst(lab, family, out):
    resetter = {}
    listening, recorded, served = threading.Event(), threading.Event(), threading.Event()

    def serve():
        # A server thread that listens and accepts: it owns the connections.
        resetter["tid"] = wl_common.native_id()
        listener, resetter["port"] = lab.listen(family, "rst")
        listening.set()
        conn, _ = listener.accept()
        resetter["linger"] = flow(conn)
        recorded.wait()  # the victim has its addresses before the reset
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
        conn, _ = listener.accept()
        while len(conn.recv(1, socket.MSG_PEEK)) == 0:
            pass
        resetter["unread"] = flow(conn)
        conn.close()  # 100 bytes unread
        served.set()
        FINISH.wait()

    r = threading.Thread(target=serve, name=name("Resetter", family))
    r.start()
    listening.wait()
    port = resetter["port"]
    victim = lab.connect(family, port)
    victim_flow = flow(victim)
    recorded.set()
    try:
        victim.recv(1)
        error = None
    except ConnectionResetError:
        error = "ECONNRESET"
    second = lab.connect(family, port)
    second.sendall(b"y" * 100)
    served.wait()
    out.append({"victim": dict(victim_flow, tid=wl_common.native_id(), thread=threading.current_thread().name,
                               error=error),
                "resetter": dict(resetter, thread=r.name)})
    victim.close()
    second.close()
    FINISH.wait()
    r.join()


def zero_window(lab, family, filled, out):
    listener, port = lab.listen(family, "zero_window")

    def sink():
        conn, _ = listener.accept()
        filled.wait()  # never reads; keeps the connection open
        conn.close()

    k = threading.Thread(target=sink, name=name("Sink", family))
    k.start()
    s = lab.connect(family, port)
    s.setblocking(False)
    sent = 0
    # Until the receiver's window and our send buffer are both full. Waiting
    # for writability (poll takes no socket lock) instead of retrying send():
    # a probe timer firing while send() holds the lock is deferred to
    # release_sock(), where pyebpf does not see it (see bpf/tcp.bpf.c).
    while True:
        try:
            while True:
                sent += s.send(b"z" * 65536)
        except BlockingIOError:
            pass
        if not select.select([], [s], [], 0.5)[1]:
            break
    out.append(dict(flow(s), tid=wl_common.native_id(), thread=threading.current_thread().name, sent=sent, sock=s))
    FINISH.wait()
    k.join()


def main():
    drop, megabytes, scenarios = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    lab = Lab(drop)
    wl_common.ready()
    wl_common.wait_go()
    results = {"pid": os.getpid(), "transfer": [], "rst": [], "zero_window": []}
    families = (socket.AF_INET, socket.AF_INET6)
    threads = []
    acked, stop_dropping = threading.Barrier(len(families) + 1), threading.Event()
    filled = threading.Event()
    probes_before = netstat(lab.client, "TCPWinProbe")
    for family in families:
        if "transfer" in scenarios:
            threads.append(threading.Thread(target=transfer, name=name("Sender", family),
                                            args=(lab, family, megabytes << 20, acked, stop_dropping,
                                                  results["transfer"])))
        if "rst" in scenarios:
            threads.append(threading.Thread(target=rst, name=name("Victim", family), args=(lab, family, results["rst"])))
        if "zero_window" in scenarios:
            threads.append(threading.Thread(target=zero_window, name=name("Stuffer", family),
                                            args=(lab, family, filled, results["zero_window"])))
    for t in threads:
        t.start()
    if "transfer" in scenarios:
        acked.wait()  # every byte of both transfers acknowledged
        lab.server.run("nft", "flush", "ruleset")
        stop_dropping.set()
    if "zero_window" in scenarios:
        while len(results["zero_window"]) < len(families):
            time.sleep(0.05)
        time.sleep(2.5)  # probes back off: ~0.2 s, 0.4 s, 0.8 s, 1.6 s
        results["win_probes"] = netstat(lab.client, "TCPWinProbe") - probes_before
        for z in results["zero_window"]:
            z["probes_now"] = tcp_info(z.pop("sock"), TCP_INFO_PROBES, "B")
        filled.set()
    for scenario in ("transfer", "rst"):
        while scenario in scenarios and len(results[scenario]) < len(families):
            time.sleep(0.05)
    wl_common.result(**results)
    FINISH.set()
    for t in threads:
        t.join()
    wl_common.linger()


if __name__ == "__main__":
    main()
