"""`ProbeType`: a member is its lower-case key as a string, `.value` the kubelet's name."""

from __future__ import annotations

import json
import pickle

from probetui.simulate import SimKubelet, parse_scenario
from probetui.spec.model import ProbeType
from probetui.timeline.events import EventType
from tests.simulate.fixtures import HTTP, pod


def test_a_member_equals_and_hashes_as_its_key() -> None:
    for pt, key in zip(ProbeType, ("liveness", "readiness", "startup"), strict=True):
        assert pt == key and pt.key == key and type(pt.key) is str
        assert hash(pt) == hash(key)
        assert {key: pt}[pt] is pt and {pt: key}[key] == key
        assert f"{pt}" == key and json.dumps(pt) == f'"{key}"'
    # str's hash in C: no `__hash__` of its own for Enum's Python-level one to be fought with
    assert ProbeType.__hash__ is str.__hash__


def test_the_value_is_the_kubelets_name_in_events_and_metrics() -> None:
    assert [pt.value for pt in ProbeType] == ["Liveness", "Readiness", "Startup"]
    assert ProbeType("Readiness") is ProbeType.READINESS
    assert ProbeType["STARTUP"] is ProbeType.STARTUP
    assert ProbeType.parse(" Liveness ") is ProbeType.LIVENESS
    assert ProbeType.parse(ProbeType.STARTUP) is ProbeType.STARTUP
    assert pickle.loads(pickle.dumps(ProbeType.LIVENESS)) is ProbeType.LIVENESS


def test_the_kubelet_models_events_carry_a_probe_type() -> None:
    """`PodKubelet`'s Killing and its prober's Unhealthy, as `runtime_event` builds them."""
    container = {"livenessProbe": {**HTTP, "periodSeconds": 10}}
    scenario = parse_scenario({"pod": pod(container), "duration": 60, "app": {"ready_after": 45}})
    sim = SimKubelet(scenario)
    sim.run()
    kubelet = [e for e in sim.events if e.type in (EventType.KILLING, EventType.UNHEALTHY)]
    attempts = [e for e in sim.events if e.type == EventType.PROBE_ATTEMPT]
    assert {e.type for e in kubelet} == {EventType.KILLING, EventType.UNHEALTHY}
    assert attempts
    for e in kubelet + attempts:
        assert type(e.probe) is ProbeType and e.probe is ProbeType.LIVENESS
