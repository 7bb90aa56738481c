"""Which workload a pod belongs to, from its own metadata (issue 16): no extra request."""

from __future__ import annotations

from typing import Any

import pytest

from probetui.runtime.kubernetes.observed import PodSpecCache, observe_pod, owner_of
from tests.kube.emulator.objects import make_pod


def ref(kind: str, name: str, controller: bool | None = True) -> dict[str, Any]:
    r: dict[str, Any] = {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "u"}
    if controller is not None:
        r["controller"] = controller
    return r


@pytest.mark.parametrize(
    ("refs", "labels", "owner"),
    [
        (
            [ref("ReplicaSet", "payments-7d9f8b6c4")],
            {"pod-template-hash": "7d9f8b6c4"},
            ("Deployment", "payments"),
        ),
        # a ReplicaSet of its own (or whose hash label is gone) stays a ReplicaSet
        ([ref("ReplicaSet", "legacy")], {}, ("ReplicaSet", "legacy")),
        ([ref("ReplicaSet", "web-abc")], {"pod-template-hash": "xyz"}, ("ReplicaSet", "web-abc")),
        ([ref("StatefulSet", "cache")], {}, ("StatefulSet", "cache")),
        ([ref("DaemonSet", "node-agent")], {}, ("DaemonSet", "node-agent")),
        ([ref("Job", "migrate")], {}, ("Job", "migrate")),
        ([ref("Job", "report-29384756")], {}, ("CronJob", "report")),
        # the managing controller wins over other owners
        ([ref("ConfigMap", "x", False), ref("StatefulSet", "db")], {}, ("StatefulSet", "db")),
        ([ref("Widget", "w", None)], {}, ("Widget", "w")),
        ([], {}, ("", "")),
        (None, {}, ("", "")),
    ],
)
def test_owner_of_each_controller_kind(
    refs: list[dict[str, Any]] | None, labels: dict[str, str], owner: tuple[str, str]
) -> None:
    meta: dict[str, Any] = {"name": "p", "labels": labels}
    if refs is not None:
        meta["ownerReferences"] = refs
    assert owner_of(meta) == owner


def test_observed_pods_carry_their_owner_and_follow_a_change() -> None:
    obj = make_pod("payments-7d9f8b6c4-a1b2c", labels={"pod-template-hash": "7d9f8b6c4"})
    obj["metadata"]["ownerReferences"] = [ref("ReplicaSet", "payments-7d9f8b6c4")]
    obj["metadata"]["uid"] = "uid-1"  # the cache keys by uid (the emulator's add_pod sets one)
    cache = PodSpecCache()
    pod = observe_pod(obj, cache).pod
    assert (pod.owner_kind, pod.owner_name) == ("Deployment", "payments")
    assert observe_pod(obj, cache).pod is pod  # unchanged metadata: the same Pod
    del obj["metadata"]["ownerReferences"]  # orphaned
    orphan = observe_pod(obj, cache).pod
    assert (orphan.owner_kind, orphan.owner_name) == ("", "")
    assert observe_pod(obj).pod.owner_kind == ""  # without a cache too
