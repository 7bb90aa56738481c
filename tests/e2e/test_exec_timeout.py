"""What a timed-out exec probe leaves behind in the container, on each side.

The kubelet runs exec probes through CRI ExecSync with the probe's timeout, and containerd kills
the command when it runs out (CRI `execSync`: the exec process is killed on the timeout), so at
most the attempt in flight is ever running. The shadow can only use `pods/exec`: a streaming
session with no timeout of its own, whose end closes the streams and nothing else. Nothing in
that API stops the remote process (no signal, no kill, no deadline), so a timed-out shadow
attempt leaves its command running until it ends by itself. This pins both facts on the real
cluster; probetui says so where it runs exec probes through pods/exec (README).
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.pods import SLEEP, busybox, pod
from tests.e2e.run import start, stop, wait_listed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]

NS = "exectimeout"


def _running(cluster: Cluster) -> int:
    out = cluster.kubectl("-n", NS, "exec", "slow", "--", "ps", "-o", "args", check=False)
    return sum(1 for line in out.splitlines() if line.strip() == "sleep 30")


def test_a_timed_out_exec_probe_is_killed_by_the_kubelet_not_through_pods_exec(
    cluster: Cluster,
) -> None:
    cluster.namespace(NS)
    probe = {"exec": {"command": ["sleep", "30"]}, "periodSeconds": 2, "timeoutSeconds": 1}
    cluster.apply(pod("slow", NS, [busybox("worker", SLEEP, readinessProbe=probe)]))
    cluster.wait_running(NS, 60)
    kubelet_only = []
    for _ in range(6):
        kubelet_only.append(_running(cluster))
        time.sleep(0.7)
    assert max(kubelet_only) <= 1, kubelet_only  # ExecSync's timeout killed each one
    run = start(
        cluster, cluster.workdir("exectimeout"), "-n", NS, "--via", "direct", name="exectimeout"
    )
    try:
        wait_listed(run, 60)
        time.sleep(8)
    finally:
        stop(run)
    attempts = run.of("ProbeAttempt", pod="slow")
    assert attempts and all(
        a["output"] == 'command timed out: "sleep 30" timed out after 1s' for a in attempts
    )
    # each of the shadow's timed-out attempts is still running in the container
    assert _running(cluster) >= len(attempts) - 1 >= 2
