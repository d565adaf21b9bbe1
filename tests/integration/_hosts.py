"""Test hosts for the distributed tests: network namespaces that this test run makes and removes.

``make_hosts(n)`` yields ``n`` hosts, each a network namespace of its own with one address in a
private range (10.77.0.1, 10.77.0.2, ...), joined by a bridge in a further namespace: programs
started on different hosts reach each other only by those addresses, traffic never leaves the
namespaces, and every namespace is deleted on exit (which removes their links too). The names
carry this process's pid, so suites running side by side (`make test`) make separate sets.

Where namespaces cannot be made (not root, no `ip`, a sandbox that refuses them) the hosts are
the loopback address of this one, and ``hosts.kind`` is "loopback": a test still runs and says
so in its output. With HEATLINE_REQUIRE_NETNS=1 (.ci/run sets it) that fails the test instead.
"""

import contextlib
import os
import shutil
import subprocess
import sys

import pytest

SUBNET = "10.77.0"


class Host:
    """One test host: its address, and ``command(argv)``, the argv that runs there."""

    def __init__(self, name, address, netns):
        self.name = name
        self.address = address
        self.netns = netns

    def command(self, argv):
        if self.netns is None:
            return list(argv)
        return ["ip", "netns", "exec", self.netns, *argv]


class Hosts(list):
    def __init__(self, hosts, kind, why=""):
        super().__init__(hosts)
        self.kind = kind  # "netns" or "loopback"
        self.why = why

    def describe(self):
        if self.kind == "netns":
            return f"{len(self)} hosts in network namespaces: " + ", ".join(
                f"{host.name} {host.address}" for host in self)
        return f"loopback only ({self.why}): {len(self)} hosts share 127.0.0.1"


def _ip(*args):
    result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        raise OSError(f"ip {' '.join(args)}: {result.stderr.strip() or result.returncode}")


def _make(n, tag):
    switch = f"hl-{tag}-sw"
    made = [switch]
    _ip("netns", "add", switch)
    _ip("-n", switch, "link", "add", "br0", "type", "bridge")
    _ip("-n", switch, "link", "set", "br0", "up")
    hosts = []
    for index in range(n):
        netns = f"hl-{tag}-h{index}"
        _ip("netns", "add", netns)
        made.append(netns)
        _ip("link", "add", "eth0", "netns", netns, "type", "veth", "peer", "name",
            f"port{index}", "netns", switch)
        address = f"{SUBNET}.{index + 1}"
        _ip("-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
        _ip("-n", netns, "link", "set", "lo", "up")
        _ip("-n", netns, "link", "set", "eth0", "up")
        _ip("-n", switch, "link", "set", f"port{index}", "master", "br0")
        _ip("-n", switch, "link", "set", f"port{index}", "up")
        hosts.append(Host(f"host{index}", address, netns))
    return hosts, made


def _remove(names):
    for name in reversed(names):
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=30)


def _refusal():
    if not sys.platform.startswith("linux"):
        return "not Linux"
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "no ip command (iproute2)"
    return None


@contextlib.contextmanager
def make_hosts(n=2):
    """``n`` hosts (see the module's doc); deleted again on exit."""
    why = _refusal()
    made = []
    hosts = None
    if why is None:
        tag = f"{os.getpid()}-{id(made) % 10000}"
        try:
            hosts, made = _make(n, tag)
        except (OSError, subprocess.SubprocessError) as e:
            _remove([f"hl-{tag}-sw", *(f"hl-{tag}-h{i}" for i in range(n))])
            why = str(e)
    if hosts is None:
        if os.environ.get("HEATLINE_REQUIRE_NETNS") == "1":
            pytest.fail(f"network namespaces required (HEATLINE_REQUIRE_NETNS=1) but: {why}")
        hosts = [Host(f"host{index}", "127.0.0.1", None) for index in range(n)]
        result = Hosts(hosts, "loopback", why)
        print(f"heatline tests: {result.describe()}", file=sys.stderr)
        yield result
        return
    try:
        yield Hosts(hosts, "netns")
    finally:
        _remove(made)
