"""Read-only, proven by the apiserver itself: its audit log (policy: every request at Metadata
level) holds what the `view` user asked for while probetui ran with `--read-only`, exec and
port-forward probes configured, and while a system file's lock held the same cluster under a
context of another name. Only get, list and watch may be there, and no subresource that
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


def _only_get_list_watch(entries: list[dict]) -> None:
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


def _pods(cluster: Cluster) -> None:
    """A web pod (HTTP readiness, TCP liveness) and a worker (exec readiness), running."""
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


def test_read_only_as_the_view_user_leaves_only_get_list_watch_in_the_audit_log(
    cluster: Cluster,
) -> None:
    _pods(cluster)
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
    _only_get_list_watch(_audit(cluster, VIEW_USER, since))
    # and the shadow says, per probe, why it only observes
    reasons = {(e["pod"], e["probe"]): e["reason"] for e in run.of("ProbeNotRun")}
    assert set(reasons) == {("web", "readiness"), ("web", "liveness"), ("worker", "readiness")}, (
        reasons
    )
    assert all("read-only" in r for r in reasons.values()), reasons
    assert run.of("ProbeAttempt") == []
    # the kubelet's side is still shown
    assert run.of("ContainerStarted", pod="web") and run.of("ContainerStarted", pod="worker")


def test_a_system_lock_holds_the_cluster_under_a_renamed_context(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The system file locks the view user's context by name; the same cluster and
    credentials under a context called dev-laptop, run without --read-only and with
    port-forward probes, still leave only get, list and watch in the audit log."""
    _pods(cluster)
    work = cluster.workdir("readonly-renamed")
    doc = json.loads(cluster.paths.view_kubeconfig.read_text())
    (locked,) = doc["contexts"]
    renamed = {"name": "dev-laptop", "context": {**locked["context"], "namespace": NS}}
    doc["contexts"].append(renamed)
    doc["current-context"] = "dev-laptop"
    kubeconfig = work / "renamed.kubeconfig"
    kubeconfig.write_text(json.dumps(doc))
    system = work / "system.yaml"
    system.write_text(json.dumps({"lock": True, "contexts": {locked["name"]: {"readOnly": True}}}))
    monkeypatch.setenv("PROBETUI_SYSTEM_CONFIG", str(system))
    since = time.time()
    run = start(cluster, work, "--via", "port-forward", kubeconfig=kubeconfig, name="renamed")
    try:
        wait_listed(run, 60)
        time.sleep(15)
    finally:
        stop(run)
    assert run.returncode == 130, run.stderr[-2000:]
    assert f"the cluster of {locked['name']}" in run.stderr
    _only_get_list_watch(_audit(cluster, VIEW_USER, since))
    assert run.of("ProbeAttempt") == []
