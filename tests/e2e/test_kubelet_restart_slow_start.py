"""A kubelet restart in the middle of a slow start, as `probetui simulate` predicts it.

The v1.35 kubelet's first SyncPod after a restart generates the pod's status before it creates
the probe workers (`generateAPIPodStatus`, then `probeManager.AddPod`): with no startup worker
and no cached result, `isContainerStarted` calls a running container started. Its new startup
worker then adopts it without an initial value (started more than kubeletRestartGracePeriod
before) and skips it as started, so liveness probes an app still starting, and kills it. The
simulation says so (docs/simulate.md, "Restarting the kubelet"); this runs the same manifest on
the real kubelet and checks both.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from probetui.simulate import parse_scenario, simulate
from tests.e2e.cluster import Cluster
from tests.e2e.pods import HTTP_PORT, pod, web, web_script

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

NS = "kubeletrestart"
# /cgi-bin/healthz answers 500 while /tmp/sick exists: the first 150 s of the container
SLOW = "touch /tmp/sick\n(sleep 150; rm -f /tmp/sick) &\n" + web_script()


def _manifest() -> dict[str, Any]:
    healthz = {"httpGet": {"path": "/cgi-bin/healthz", "port": HTTP_PORT}}
    return pod(
        "slowstart",
        NS,
        [
            web(
                script=SLOW,
                startupProbe={**healthz, "periodSeconds": 5, "failureThreshold": 60},
                livenessProbe={**healthz, "periodSeconds": 5, "failureThreshold": 2},
            )
        ],
    )


def _status(cluster: Cluster) -> dict[str, Any]:
    got = json.loads(cluster.kubectl("-n", NS, "get", "pod", "slowstart", "-o", "json"))
    return got["status"]["containerStatuses"][0]


def test_a_kubelet_restart_during_a_slow_start_lets_liveness_kill_it(cluster: Cluster) -> None:
    manifest = _manifest()
    predicted = simulate(
        parse_scenario(
            {
                "pod": manifest,
                "duration": 120,
                "app": {"ready_after": 150},
                "kubelet_restarts": [30],
            }
        )
    )
    assert predicted["summary"]["kills"]["liveness"] >= 1
    assert any(e["type"] == "StartedChanged" and e["t"] == 30.0 for e in predicted["events"])

    cluster.namespace(NS)
    cluster.apply(manifest)
    cluster.wait_running(NS, 60)
    started_at = time.time()
    # well past kubeletRestartGracePeriod (10 s) and still starting
    time.sleep(30)
    before = _status(cluster)
    assert before.get("started") is False and before["restartCount"] == 0
    cluster.restart("kubelet")
    restarted = time.time()

    started, killed = None, None
    deadline = restarted + 90
    while time.time() < deadline and killed is None:
        status = _status(cluster)
        if started is None and status.get("started"):
            started = time.time()
        events = json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json"))["items"]
        for e in events:
            if e.get("reason") == "Killing" and "failed liveness probe" in e.get("message", ""):
                killed = time.time()
        time.sleep(1)
    # Started while /tmp/sick still made the app answer 500, then a liveness kill
    assert started is not None and started - started_at < 150, (started, started_at)
    assert killed is not None, "no liveness kill after the kubelet restart"
    assert killed - started_at < 150
    cluster.kubectl("-n", NS, "delete", "pod", "slowstart", "--wait=false")
