"""Faults of a real server, survived with nothing lost or duplicated.

One shadow runs through three faults in turn: the apiserver restarted mid-watch; etcd compacted
and the apiserver restarted on top of it, so the watch cache starts past the shadow's resource
version and its resume gets a real 410 Gone; the kubelet restarted. Pods are created and
deleted around each fault. Afterwards what probetui showed is compared with a fresh list: every
pod and every kubelet event it should have, none twice, and the shadow workers on the container
instances the status names.
"""

from __future__ import annotations

import datetime
import json
import time
from collections import Counter
from typing import Any

import pytest

from tests.e2e.cluster import NODE_NS, Cluster, in_ns
from tests.e2e.pods import FLAP_SECONDS, HTTP_PORT, pod, web
from tests.e2e.run import Run, start, stop, wait_listed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]

NS = "faults"


def _web(name: str) -> dict[str, Any]:
    return pod(
        name,
        NS,
        [
            web(
                readinessProbe={
                    "httpGet": {"path": "/cgi-bin/flap", "port": HTTP_PORT},
                    "periodSeconds": 2,
                    "failureThreshold": 1,
                }
            )
        ],
    )


def _etcd(cluster: Cluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    import subprocess

    out = subprocess.run(
        in_ns(
            NODE_NS,
            "curl",
            "-sf",
            "-X",
            "POST",
            f"http://127.0.0.1:2379{path}",
            "-d",
            json.dumps(body),
        ),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def _after_a_flip(seconds: float) -> None:
    """Sleep until `seconds` past the flap endpoint's next turn."""
    time.sleep((seconds - time.time() % FLAP_SECONDS) % FLAP_SECONDS)


def _t(e: dict[str, Any]) -> float:
    return datetime.datetime.fromisoformat(e["ts"]).timestamp()


@pytest.fixture(scope="module")
def faulted(cluster: Cluster) -> tuple[Run, dict[str, Any]]:
    cluster.namespace(NS)
    cluster.apply([_web("a"), _web("b")])
    cluster.wait_running(NS, 60)
    run = start(cluster, cluster.workdir("faults"), "-n", NS, "--via", "direct", name="faults")
    marks: dict[str, float] = {}
    try:
        wait_listed(run, 60)
        time.sleep(8)

        marks["apiserver"] = time.time()
        cluster.restart("kube-apiserver")
        cluster.apply(_web("c"))
        time.sleep(8)

        # the apiserver's watch cache serves resumes; restarted on a compacted etcd, it starts
        # at the newest revision, and the shadow's older resourceVersion is Gone
        marks["compaction"] = time.time()
        cluster.kubectl("-n", NS, "delete", "pod", "a", "--grace-period=0", "--force")
        cluster.apply(_web("d"))
        revision = int(_etcd(cluster, "/v3/kv/range", {"key": "Lw=="})["header"]["revision"])
        _etcd(cluster, "/v3/kv/compaction", {"revision": revision, "physical": True})
        cluster.restart("kube-apiserver")
        time.sleep(10)

        # a restarted kubelet leaves Ready as it was until its first result, a start and up to
        # a period later: a flip in that time is a disagreement of its own making, not one
        # of state kept or lost, so the restart comes just after both sides have seen a flip
        _after_a_flip(3.0)
        marks["kubelet"] = time.time()
        cluster.restart("kubelet")
        time.sleep(15)
    finally:
        stop(run)
    fresh = {
        "pods": json.loads(cluster.kubectl("-n", NS, "get", "pods", "-o", "json"))["items"],
        "events": json.loads(cluster.kubectl("-n", NS, "get", "events", "-o", "json"))["items"],
        "marks": marks,
    }
    return run, fresh


def test_the_shadow_ran_through_every_fault(faulted: tuple[Run, dict[str, Any]]) -> None:
    run, _ = faulted
    assert run.returncode == 130, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    # it said when it lost the API server and when it had it again
    assert "connected again" in run.stderr, run.stderr[-3000:]


def test_a_real_410_made_it_list_again(
    cluster: Cluster, faulted: tuple[Run, dict[str, Any]]
) -> None:
    """The apiserver's own audit log has the shadow's relist after the compaction."""
    _, fresh = faulted
    after = fresh["marks"]["compaction"]
    lists = []
    for line in cluster.paths.audit_log.read_text().splitlines():
        e = json.loads(line)
        t = datetime.datetime.fromisoformat(e["stageTimestamp"].replace("Z", "+00:00")).timestamp()
        ref = e.get("objectRef", {})
        if (
            t >= after
            and e["verb"] == "list"
            and ref.get("resource") == "pods"
            and ref.get("namespace") == NS
            and e["user"]["username"] == "probetui-e2e-admin"
        ):
            lists.append(e["requestURI"])
    assert lists, "no list of pods after the compaction: the resume was not refused"


def test_every_pod_of_a_fresh_list_is_shown_on_its_container_instance(
    faulted: tuple[Run, dict[str, Any]],
) -> None:
    run, fresh = faulted
    for p in fresh["pods"]:
        name = p["metadata"]["name"]
        (status,) = p["status"]["containerStatuses"]
        started = run.of("ContainerStarted", pod=name)
        assert started and started[-1]["containerID"] == status["containerID"], name
        # the shadow's worker probes that very instance, after the last fault too
        results = run.of("ResultChanged", pod=name, probe="readiness")
        assert results and results[-1]["containerID"] == status["containerID"], name
        late = [
            a for a in run.of("ProbeAttempt", pod=name) if _t(a) > fresh["marks"]["kubelet"] + 5
        ]
        assert late, f"{name}: no attempt after the kubelet came back"
    assert {p["metadata"]["name"] for p in fresh["pods"]} == {"b", "c", "d"}


def test_no_kubelet_event_is_lost_or_shown_twice(faulted: tuple[Run, dict[str, Any]]) -> None:
    run, fresh = faulted
    shown = [e for e in run.events if e.get("eventUid")]
    # each (event, count) once: a relist must not replay what was shown
    twice = [k for k, n in Counter((e["eventUid"], e["count"]) for e in shown).items() if n > 1]
    assert twice == []
    by_uid: dict[str, int] = {}
    for e in shown:
        by_uid[e["eventUid"]] = max(by_uid.get(e["eventUid"], 0), e["count"])
    relevant = {"Unhealthy", "ProbeWarning", "Killing", "BackOff", "Started", "Created", "Pulled"}
    for ev in fresh["events"]:
        if ev["reason"] not in relevant or ev["involvedObject"].get("kind") != "Pod":
            continue
        uid = ev["metadata"]["uid"]
        assert uid in by_uid, (ev["reason"], ev["involvedObject"]["name"], ev["message"])
        # a count that rose after the shadow stopped is no loss
        assert by_uid[uid] <= (ev.get("count") or 1)


def test_no_divergence_through_the_faults(faulted: tuple[Run, dict[str, Any]]) -> None:
    """The kubelet restart keeps readiness as it was until the first result (kubelet-restart
    state preservation); the shadow, following the same instances, agrees throughout."""
    run, _ = faulted
    assert [(e["pod"], e.get("message")) for e in run.of("Divergence")] == []
