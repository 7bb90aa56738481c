"""The real kubelet's events quote what it ran and what came back: masked as they enter.

An exec probe's `$(VAR)` is expanded by the kubelet from the container's env before it runs, so
its Unhealthy events carry the env value: in the output a failing probe printed, and in the
command a timed-out probe quotes. probetui masks both where the events enter from the API
server (docs/architecture.md, Redaction): neither the JSONL nor the recording holds the value.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.pods import SLEEP, busybox, pod
from tests.e2e.run import start, stop, wait_listed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

NS = "redaction"
SECRET = "E2E-ENV-SECRET-42"
MASK = "••••••"


def test_the_kubelets_unhealthy_events_and_the_recording_hold_no_env_value(
    cluster: Cluster,
) -> None:
    cluster.namespace(NS)
    env = [{"name": "DB_PASSWORD", "value": SECRET}]
    failing = {
        "exec": {"command": ["sh", "-c", "echo db=$(DB_PASSWORD); exit 1"]},
        "periodSeconds": 2,
    }
    slow = {
        "exec": {"command": ["sh", "-c", "sleep 5; mysql -p$(DB_PASSWORD)"]},
        "periodSeconds": 3,
        "timeoutSeconds": 1,
    }
    cluster.apply(
        pod(
            "secrets",
            NS,
            [
                {**busybox("echo", SLEEP, readinessProbe=failing), "env": env},
                {**busybox("slow", SLEEP, readinessProbe=slow), "env": env},
            ],
        )
    )
    cluster.wait_running(NS, 60)
    workdir = cluster.workdir("redaction")
    record = workdir / "redaction.db"
    run = start(
        cluster, workdir, "-n", NS, "--via", "direct", "--record", str(record), name="redaction"
    )
    try:
        wait_listed(run, 60)
        time.sleep(12)
    finally:
        stop(run)
    assert SECRET not in run.out.read_text() and SECRET not in run.stderr
    messages = [
        e["message"] for e in run.of("Unhealthy", pod="secrets") if e["source"] == "kubelet"
    ]
    assert any(f"db={MASK}" in m for m in messages), messages
    assert any(f"-p{MASK}" in m for m in messages), messages
    # the shadow's own attempts, with the same expansion
    outputs = [a["output"] for a in run.of("ProbeAttempt", pod="secrets", container="echo")]
    assert outputs and all(o == f"db={MASK}\n" for o in outputs)
    files = [f for f in workdir.iterdir() if f.name.startswith("redaction.db")]
    assert files and all(SECRET.encode() not in f.read_bytes() for f in files)
