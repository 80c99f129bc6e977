"""Private network namespaces for the TCP workloads.

A namespace here is anonymous: created by unshare(CLONE_NEWNET) in a helper
thread and held by a file descriptor, so it disappears with the workload, even
when the workload is killed; nothing global is named, so concurrent test runs
cannot collide. Threads enter one with setns() for as long as they create
sockets there; commands (ip, nft) run inside one the same way, since a child
process starts in the netns of the thread that forked it.
Runs on CPython 3.8+ (ctypes, no os.setns needed).
"""
import contextlib
import ctypes
import os
import subprocess
import threading
import time

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL("libc.so.6", use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _setns(fd):
    _check(_libc.setns(fd, CLONE_NEWNET), "setns")


class NetNs:
    """An anonymous network namespace with its loopback up."""

    def __init__(self):
        box = {}

        def create():
            try:
                _check(_libc.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
                box["fd"] = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            except OSError as e:  # reported by the creating thread
                box["error"] = e

        t = threading.Thread(target=create, name="netns-create")
        t.start()
        t.join()
        if "error" in box:
            raise box["error"]
        self.fd = box["fd"]
        self.run("ip", "link", "set", "lo", "up")

    @property
    def path(self):
        return "/proc/%d/fd/%d" % (os.getpid(), self.fd)

    @contextlib.contextmanager
    def entered(self):
        """The calling thread is in this namespace inside the block."""
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(self.fd)
            try:
                yield self
            finally:
                _setns(home)
        finally:
            os.close(home)

    def run(self, *cmd, stdin=None):
        with self.entered():
            proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(cmd), proc.stderr.strip()))
        return proc.stdout

    def nft(self, ruleset):
        self.run("nft", "-f", "-", stdin=ruleset)


def veth_pair(a, b, prefix4, prefix6):
    """Joins namespaces a and b: a gets prefix4.1 / prefix6::1, b gets .2 / prefix6::2 (prefix6 like "fd00:1").

    IPv6 addresses skip duplicate address detection so they are usable at once.
    Returns ((a_v4, a_v6), (b_v4, b_v6)).
    """
    a.run("ip", "link", "add", "veth0", "type", "veth", "peer", "name", "veth0", "netns", b.path)
    addrs = []
    for ns, host in ((a, 1), (b, 2)):
        # No duplicate address detection at all (the link-local address too):
        # a tentative address would delay the first packets by about a second.
        ns.run("sysctl", "-qw", "net.ipv6.conf.veth0.accept_dad=0")
        v4, v6 = "%s.%d" % (prefix4, host), "%s::%d" % (prefix6, host)
        ns.run("ip", "addr", "add", v4 + "/24", "dev", "veth0")
        ns.run("ip", "addr", "add", v6 + "/64", "dev", "veth0", "nodad")
        ns.run("ip", "link", "set", "veth0", "up")
        addrs.append((v4, v6))
    # Packets sent before the kernel's link watcher marks the carrier up (up
    # to a second later) are dropped by the not yet activated queue.
    deadline = time.monotonic() + 5
    while not all("state UP" in ns.run("ip", "-o", "link", "show", "veth0") for ns in (a, b)):
        if time.monotonic() > deadline:
            raise RuntimeError("veth0 did not come up")
        time.sleep(0.02)
    return tuple(addrs)
