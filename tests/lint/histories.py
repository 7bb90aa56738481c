"""Histories for the evidence rules: a pod run through `simulate`'s kubelet model (synthetic),
edited where a test needs answers the model's app cannot give (latencies, errors), and written
to a real recording file with the recorder's API when a test reads one back."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from probetui.lint import LintObject, run, select
from probetui.lint.model import Finding
from probetui.lint.observed import Observed, PodHistory, recorded_objects
from probetui.prober.status import PodStatus
from probetui.simulate.recorded import recorded_pod
from probetui.simulate.run import SimKubelet
from probetui.simulate.scenario import App, Scenario
from probetui.spec.model import Container, ExecAction, Pod, Probe
from probetui.timeline.events import Event


def probe(period: int = 10, failure: int = 3, timeout: int = 1, delay: int = 0) -> Probe:
    return Probe(
        exec=ExecAction(("check",)),
        period_seconds=period,
        failure_threshold=failure,
        timeout_seconds=timeout,
        initial_delay_seconds=delay,
    )


def web(**probes: Probe) -> Pod:
    """Pod default/web, one container `app` with the probes given by keyword."""
    fields = {f"{k}_probe": v for k, v in probes.items()}
    return Pod("web", uid="u-web", containers=(Container(name="app", command=("x",), **fields),))


def simulate(pod: Pod, app: App, duration: float) -> list[Event]:
    sim = SimKubelet(Scenario(pod=pod, container="app", duration=duration, app=app))
    sim.run()
    return sim.events


def edit_attempts(
    events: Iterable[Event], probe_key: str, every: int, fields: dict[str, object]
) -> list[Event]:
    """Every `every`-th attempt of the probe (the 1st, the every+1th ...) with `fields` set."""
    out, n = [], 0
    for e in events:
        if e.type == "ProbeAttempt" and e.probe == probe_key:
            if n % every == 0:
                e = replace(e, fields=dict(e.fields, **fields))
            n += 1
        out.append(e)
    return out


def divergence(t: float, probe_key: str = "readiness", via: str = "port-forward") -> Event:
    return Event(
        "Divergence",
        t,
        "u-web",
        "default",
        "web",
        "app",
        probe_key,
        "shadow",
        {
            "shadow": "ready",
            "kubelet": "not ready",
            "since": t - 12.0,
            "via": via,
            "likely": [
                "network path: the shadow reaches localhost inside the pod through the API "
                "server; the kubelet dials the pod IP from its node",
                "timing: the two workers probe at different instants of each period",
                "flakiness: failureThreshold 1 turns one slow answer into a flip",
            ],
            "message": "kubelet says not ready, shadow says ready for 12s",
        },
    )


def observed(pod: Pod, events: list[Event], duration: float) -> Observed:
    rec = recorded_pod(pod, events, 0.0, duration)
    divs = [e for e in events if e.type == "Divergence"]
    return Observed([PodHistory(pod, rec, divs, events)], "test")


def findings(
    pod: Pod, events: list[Event], duration: float, rule_id: str
) -> tuple[list[Finding], LintObject]:
    obs = observed(pod, events, duration)
    (obj,) = recorded_objects(obs, "history")
    return [f for f in run([obj], select(), obs) if f.rule.id == rule_id], obj


def write_recording(
    path: Path, pod: Pod, events: list[Event], edit: Callable[[Pod], Pod] | None = None
) -> float:
    """A recording file of the pod and its events, after the pod's first snapshot (stamped
    with the wall clock when recorded); returns the time the events were shifted by."""
    from probetui.record.recorder import Recorder
    from probetui.record.schema import SessionMeta

    base = float(int(time.time())) + 5.0
    rec = Recorder(path, SessionMeta(base, "test", "1.35", "test", "default"))
    rec.start()
    try:
        rec.pod(edit(pod) if edit else pod, PodStatus(phase="Pending"))
        for e in events:
            rec.event(e.shifted(base))
    finally:
        rec.close()
    return base
