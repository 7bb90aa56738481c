"""Read-only, proven by the apiserver itself: its audit log (policy: every request at Metadata
level) holds what the `view` user asked for while probetui ran with `--read-only`, exec and
port-forward probes configured. Only get, list and watch may be there, and no subresource that
reaches into a pod (exec, attach, portforward, proxy)."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from tests.e2e.cluster import VIEW_USER, Cluster
from tests.e2e.pods import HTTP_PORT, SLEEP, busybox, pod, web
from tests.e2e.run import start, stop, wait_listed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]

NS = "readonly"


def _audit(cluster: Cluster, user: str, since: float) -> list[dict]:
    out = []
    for line in cluster.paths.audit_log.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("user", {}).get("username") != user:
            continue
        # stageTimestamp: RFC 3339 with microseconds
        import datetime

        t = datetime.datetime.fromisoformat(
            entry["stageTimestamp"].replace("Z", "+00:00")
        ).timestamp()
        if t >= since:
            out.append(entry)
    return out


def test_read_only_as_the_view_user_leaves_only_get_list_watch_in_the_audit_log(
    cluster: Cluster,
) -> None:
    cluster.namespace(NS)
    cluster.apply(
        [
            pod(
                "web",
                NS,
                [
                    web(
                        readinessProbe={
                            "httpGet": {"path": "/index.html", "port": HTTP_PORT},
                            "periodSeconds": 2,
                        },
                        livenessProbe={"tcpSocket": {"port": HTTP_PORT}, "periodSeconds": 2},
                    )
                ],
            ),
            pod(
                "worker",
                NS,
                [
                    busybox(
                        "worker",
                        SLEEP,
                        readinessProbe={"exec": {"command": ["true"]}, "periodSeconds": 2},
                    )
                ],
            ),
        ]
    )
    cluster.wait_running(NS, 60)
    since = time.time()
    run = start(
        cluster,
        cluster.workdir("readonly"),
        "-n",
        NS,
        "--read-only",
        "--via",
        "port-forward",
        kubeconfig=cluster.paths.view_kubeconfig,
        name="readonly",
    )
    try:
        wait_listed(run, 60)
        time.sleep(15)
    finally:
        stop(run)
    assert run.returncode == 130, run.stderr[-2000:]
    entries = _audit(cluster, VIEW_USER, since)
    verbs = Counter(e["verb"] for e in entries)
    assert verbs["list"] >= 2 and verbs["watch"] >= 2, verbs  # pods and events, at least
    assert set(verbs) <= {"get", "list", "watch"}, verbs
    reaching = [
        e["requestURI"]
        for e in entries
        if e.get("objectRef", {}).get("subresource") in ("exec", "attach", "portforward", "proxy")
    ]
    assert reaching == []
    # nothing was even refused: the guard stopped every other request before a byte was sent
    assert not [
        e["requestURI"] for e in entries if e.get("responseStatus", {}).get("code", 200) >= 400
    ]
    # and the shadow says, per probe, why it only observes
    reasons = {(e["pod"], e["probe"]): e["reason"] for e in run.of("ProbeNotRun")}
    assert set(reasons) == {("web", "readiness"), ("web", "liveness"), ("worker", "readiness")}, (
        reasons
    )
    assert all("read-only" in r for r in reasons.values()), reasons
    assert run.of("ProbeAttempt") == []
    # the kubelet's side is still shown
    assert run.of("ContainerStarted", pod="web") and run.of("ContainerStarted", pod="worker")
