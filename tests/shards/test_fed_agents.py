"""Fed mode with a node agent's shadow: the parent's sinks get the agent's events, masked by
the parent's policy as the shards mask their own, about the pods the source snapshotted."""

from __future__ import annotations

import dataclasses

from probetui.keys import ProbeKey
from probetui.prober.worker import Trigger
from probetui.redact import MASK
from probetui.shards.pool import ShardPool
from probetui.spec.model import Container, HTTPGetAction, HTTPHeader, Pod, Probe, ProbeType
from probetui.timeline.events import Event
from tests.record.helpers import attempt
from tests.shards.test_fed import Sink, Source, pod

TOKEN = "Bearer s3cr3t-t0ken-value"


async def test_the_pool_hands_an_agents_events_to_its_sinks_masked() -> None:
    probe = Probe(
        http_get=HTTPGetAction(
            port=8080, path="/healthz", http_headers=(HTTPHeader("Authorization", TOKEN),)
        )
    )
    p = Pod(
        "p0", namespace="ns", uid="uid-0", containers=(Container("app", readiness_probe=probe),)
    )
    _, status = pod(0, 8080)
    sink = Sink()
    pool = ShardPool(Source([]), [sink], shards=1, mode="fed")
    host = pool._router()
    host.pod_snapshot(p, status)
    e = attempt(p, 1000.0, 1, output=f"echoed {TOKEN}")
    assert e.record is not None
    e.fields = {**e.fields, "via": "agent", "node": "node-1"}
    host.shadow_event(e)
    # a pod the source does not show: not the sinks' business
    stray = dataclasses.replace(e, pod_uid="uid-9")
    host.shadow_event(stray)
    note = Event(
        "ResultChanged",
        1001.0,
        p.uid,
        "ns",
        "p0",
        "app",
        "readiness",
        "shadow",
        {"result": "Success", "containerID": "c://0", "node": "node-1"},
    )
    host.shadow_event(note)
    (got, changed) = sink.events
    assert got.type == "ProbeAttempt" and got.pod_uid == "uid-0"
    assert got.fields["via"] == "agent" and got.fields["node"] == "node-1"
    assert TOKEN not in got.fields["output"] and MASK in got.fields["output"]
    assert got.record is not None and got.record.key == ProbeKey(
        "uid-0", "app", ProbeType.READINESS
    )
    assert got.record.trigger is Trigger.TICK
    assert changed.type == "ResultChanged" and changed.fields["node"] == "node-1"
