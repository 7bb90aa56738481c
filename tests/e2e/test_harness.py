"""The harness itself: what a cluster killed without its `down` leaves must not reach the next.

A CI run that follows a killed one found the old node namespace, reused it, and kept the dead
sandboxes on its bridge: the fresh IPAM gave the new pods the same addresses, so a dial to a pod
IP met an old sandbox (connection refused) while port-forward reached the pod. These tests build
such leftovers from real namespaces under names of their own, never the cluster's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.e2e.cluster import Busy, clear_stale_network, netns_exists

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None,
    reason="network namespaces need root and iproute2",
)


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


@pytest.fixture
def names() -> Iterator[dict[str, str]]:
    tag = uuid.uuid4().hex[:6]
    n = {"node": f"ptt{tag}-node", "client": f"ptt{tag}-client", "sbx": f"ptt{tag}-sbx"}
    n |= {"node2": f"ptt{tag}-node2", "sbx2": f"ptt{tag}-sbx2"}
    yield n
    for ns in n.values():
        if netns_exists(ns):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


def _in_netns(ns: str) -> subprocess.Popen:
    """A process inside the namespace, returned once it is there (nsenter enters, then execs)."""
    proc = subprocess.Popen(["nsenter", f"--net=/run/netns/{ns}", "--", "sleep", "30"])
    want = os.stat(f"/run/netns/{ns}").st_ino
    deadline = time.monotonic() + 5
    while os.stat(f"/proc/{proc.pid}/ns/net").st_ino != want:
        assert time.monotonic() < deadline, "nsenter did not enter the namespace"
        time.sleep(0.01)
    return proc


def _killed_cluster(n: dict[str, str], nodes: tuple[str, ...] = ("node",)) -> None:
    """Node namespaces each with a bridge and a sandbox whose veth is on it with a pod address,
    and a client namespace: what remains after every process of a cluster is gone."""
    for i, node in enumerate(nodes, start=1):
        sbx = "sbx" if node == "node" else f"sbx{i}"
        for ns in (n[node], n[sbx]):
            _ip("netns", "add", ns)
        _ip("-n", n[node], "link", "add", "br0", "type", "bridge")
        _ip("-n", n[node], "link", "set", "br0", "up")
        _ip("-n", n[sbx], "link", "add", "eth0", "type", "veth", "peer", "name", "vethx")
        _ip("-n", n[sbx], "link", "set", "vethx", "netns", n[node])
        _ip("-n", n[node], "link", "set", "vethx", "master", "br0")
        _ip("-n", n[sbx], "addr", "add", f"10.123.{i}.7/24", "dev", "eth0")
    _ip("netns", "add", n["client"])


def test_a_killed_clusters_namespaces_and_sandboxes_are_removed(names: dict[str, str]) -> None:
    _killed_cluster(names)
    removed = clear_stale_network((names["node"], names["client"]), f"{names['sbx']}*", min_age=0)
    made = {names[k] for k in ("node", "client", "sbx")}
    assert set(removed) == made
    assert not any(netns_exists(ns) for ns in made)


def test_both_nodes_namespaces_and_their_sandboxes_are_removed(names: dict[str, str]) -> None:
    """Two nodes, each with its bridge and a sandbox on it: every namespace goes."""
    _killed_cluster(names, nodes=("node", "node2"))
    namespaces = (names["node"], names["node2"], names["client"])
    removed = clear_stale_network(namespaces, f"{names['sbx']}*", min_age=0)
    assert set(removed) == set(names.values())
    assert not any(netns_exists(ns) for ns in names.values())


def test_a_sandbox_of_no_cluster_of_ours_is_left_alone(names: dict[str, str]) -> None:
    """Only the stale node namespace's sandboxes go: one whose veth leads elsewhere stays."""
    _ip("netns", "add", names["node"])
    _ip("netns", "add", names["sbx"])
    _ip("-n", names["sbx"], "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
    clear_stale_network((names["node"], names["client"]), f"{names['sbx']}*", min_age=0)
    assert netns_exists(names["sbx"])
    assert not netns_exists(names["node"])


def test_namespaces_processes_run_in_are_another_clusters(names: dict[str, str]) -> None:
    _killed_cluster(names)
    holder = _in_netns(names["node"])
    try:
        with pytest.raises(Busy, match=str(holder.pid)):
            clear_stale_network((names["node"], names["client"]), f"{names['sbx']}*", min_age=0)
        assert netns_exists(names["node"]) and netns_exists(names["sbx"])
    finally:
        holder.kill()
        holder.wait()


def test_a_containers_process_left_in_its_sandbox_is_ended(names: dict[str, str]) -> None:
    _killed_cluster(names)
    orphan = _in_netns(names["sbx"])
    try:
        clear_stale_network((names["node"], names["client"]), f"{names['sbx']}*", min_age=0)
        assert orphan.wait(5) == -9
        assert not netns_exists(names["sbx"])
    finally:
        orphan.kill()
        orphan.wait()


def test_nothing_left_is_nothing_to_do(names: dict[str, str]) -> None:
    assert clear_stale_network((names["node"], names["client"]), f"{names['sbx']}*") == []
