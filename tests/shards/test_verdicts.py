"""The shards' verdict frames, read back as the divergence check reads the manager
(`probetui.shards.verdicts`): the same `divergence.verdicts` answers from frames as from workers."""

from __future__ import annotations

import time

from probetui.keys import ProbeKey
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, Running
from probetui.runtime.kubernetes import divergence
from probetui.shards.fed import ManagerProxy
from probetui.shards.verdicts import Verdicts, gone_frame, verdict_frame
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType

PROBE = Probe(http_get=HTTPGetAction(path="/", port=80), period_seconds=1)
POD = Pod("web", namespace="ns", uid="u1", containers=(Container("app", readiness_probe=PROBE),))
KEY = ProbeKey("u1", "app", ProbeType.READINESS)


def _cs(cid: str, ready: bool) -> ContainerStatus:
    return ContainerStatus("app", cid, Running(time.time()), ready=ready, started=True)


def _read(verdicts: Verdicts, cid: str, ready: bool) -> list[tuple[ProbeType, object, object]]:
    proxy = ManagerProxy(lambda pod, frame: None, verdicts)
    return divergence.verdicts(proxy, POD, POD.containers[0], _cs(cid, ready))


def test_no_verdict_before_an_attempt_was_counted() -> None:
    v = Verdicts()
    assert _read(v, "c://1", False) == [(ProbeType.READINESS, None, False)]
    # the worker's initial value, no attempt yet: still no opinion
    v.apply(verdict_frame(KEY, "c://1", 0, ResultValue.FAILURE))
    assert _read(v, "c://1", False) == [(ProbeType.READINESS, None, False)]


def test_a_counted_success_is_the_shadows_ready() -> None:
    v = Verdicts()
    v.apply(verdict_frame(KEY, "c://1", 3, ResultValue.SUCCESS))
    assert _read(v, "c://1", False) == [(ProbeType.READINESS, True, False)]
    v.apply(verdict_frame(KEY, "c://1", 4, ResultValue.FAILURE))
    assert _read(v, "c://1", False) == [(ProbeType.READINESS, False, False)]


def test_another_container_instance_has_no_verdict_yet() -> None:
    v = Verdicts()
    v.apply(verdict_frame(KEY, "c://1", 3, ResultValue.SUCCESS))
    assert _read(v, "c://2", True) == [(ProbeType.READINESS, None, True)]
    # the worker follows the new one: the old container's result is dropped with it
    v.apply(verdict_frame(KEY, "c://2", 4, ResultValue.FAILURE))
    assert v.readiness.get("c://1") is None
    assert _read(v, "c://2", True) == [(ProbeType.READINESS, False, True)]


def test_gone_and_forgotten_workers_have_no_verdict() -> None:
    v = Verdicts()
    v.apply(verdict_frame(KEY, "c://1", 3, ResultValue.SUCCESS))
    v.apply(gone_frame(KEY))
    assert _read(v, "c://1", False) == [(ProbeType.READINESS, None, False)]
    v.apply(verdict_frame(KEY, "c://1", 3, ResultValue.SUCCESS))
    v.forget_pod("u1")
    assert v.readiness.get("c://1") is None


def test_a_frame_it_cannot_read_is_ignored() -> None:
    v = Verdicts()
    v.apply({"k": "verdict", "uid": "u1", "c": "app", "probe": "someday"})
    v.apply({**verdict_frame(KEY, "c://1", 1, None), "pub": 7})
    liveness = ProbeKey("u1", "app", ProbeType.LIVENESS)
    v.apply(verdict_frame(liveness, "c://1", 1, ResultValue.SUCCESS))  # no verdict in the API
    assert v.workers == {}


def test_a_restarted_shards_last_verdict_stands_until_its_new_worker_counts() -> None:
    v = Verdicts()
    v.apply(verdict_frame(KEY, "c://1", 3, ResultValue.SUCCESS))
    v.hold_where(lambda uid: uid == "u1")  # its shard started again
    # the new worker's initial value: no opinion, so the last one's stands
    v.apply(verdict_frame(KEY, "c://1", 0, ResultValue.FAILURE))
    assert _read(v, "c://1", False) == [(ProbeType.READINESS, True, False)]
    v.apply(verdict_frame(KEY, "c://1", 1, ResultValue.FAILURE))
    assert _read(v, "c://1", False) == [(ProbeType.READINESS, False, False)]
    # held, but the container changed meanwhile: the old verdict was about another instance
    v.hold_where(lambda uid: uid == "u1")
    v.apply(verdict_frame(KEY, "c://2", 0, ResultValue.FAILURE))
    assert _read(v, "c://2", False) == [(ProbeType.READINESS, None, False)]
