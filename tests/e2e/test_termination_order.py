"""Sidecars stop last in a whole-pod kill, on the real v1.35.4 kubelet and in the model.

A pod under restartPolicy Never whose main container fails its liveness probe is killed whole
(`computePodActions` KillPod, `killPodWithSyncResult`). Upstream's `newTerminationOrdering` makes
the sidecar wait for the main container (`waitForTurn`): the main container takes about 4 s to
stop after its SIGTERM, so the sidecar, which exits at once on SIGTERM, finishes about 4 s after
both Killing events, right after the main container. `probetui simulate` of the same pod says
the same (docs/kubelet-behaviour.md §11.8).
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

import pytest

from probetui.kubelet.profile import DEFAULT_PROFILE
from probetui.simulate import parse_scenario, simulate
from tests.e2e.cluster import Cluster
from tests.e2e.pods import busybox, pod

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

NS = "order"
# SIGTERM ends the main container only after 4 s; the sidecar at once
MAIN = ["sh", "-c", 'trap "sleep 4; exit 0" TERM; while true; do sleep 1; done']
SIDECAR = ["sh", "-c", 'trap "exit 0" TERM; while true; do sleep 1; done']


def _spec() -> dict[str, Any]:
    liveness = {
        "exec": {"command": ["false"]},
        "initialDelaySeconds": 3,
        "periodSeconds": 2,
        "failureThreshold": 1,
    }
    sidecar = {**busybox("proxy", SIDECAR), "restartPolicy": "Always"}
    return pod(
        "ordered",
        NS,
        [busybox("main", MAIN, livenessProbe=liveness)],
        restartPolicy="Never",
        initContainers=[sidecar],
        terminationGracePeriodSeconds=30,
    )


def _when(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _finished(status: dict[str, Any], group: str, name: str) -> float:
    for cs in status.get(group) or []:
        if cs["name"] == name:
            return _when(cs["state"]["terminated"]["finishedAt"])
    raise KeyError(name)


def test_the_sidecar_stops_after_the_main_container(cluster: Cluster) -> None:
    cluster.namespace(NS)
    cluster.apply(_spec())
    deadline = time.monotonic() + 120
    doc: dict[str, Any] = {}
    while time.monotonic() < deadline:
        doc = json.loads(cluster.kubectl("get", "pod", "-n", NS, "ordered", "-o", "json"))
        if doc.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            break
        time.sleep(1)
    status = doc["status"]
    assert status["phase"] in ("Succeeded", "Failed"), status
    main = _finished(status, "containerStatuses", "main")
    proxy = _finished(status, "initContainerStatuses", "proxy")
    events = json.loads(
        cluster.kubectl(
            "get", "events", "-n", NS, "--field-selector", "reason=Killing", "-o", "json"
        )
    )["items"]
    killing = {e["involvedObject"]["fieldPath"]: _when(e["lastTimestamp"]) for e in events}
    killed = killing["spec.containers{main}"]
    assert abs(killing["spec.initContainers{proxy}"] - killed) <= 1
    # whole seconds in the API: the sidecar finishes with or after main, ~4 s after the kill
    assert proxy >= main
    assert proxy - killed >= 3

    # the model: the same pod, the main container 4 s slow to stop
    manifest = _spec()
    scenario = parse_scenario(
        {
            "pod": manifest,
            "container": "main",
            "duration": 60,
            "app": {
                "start_after": 0,
                "stop_seconds": 4.0,
                "probes": {"liveness": {"ready_after": 1e9}},
            },
        }
    )
    played = simulate(scenario, DEFAULT_PROFILE)["events"]
    exits = {e["container"]: e["t"] for e in played if e["type"] == "ContainerExited"}
    assert exits["proxy"] == exits["main"]
