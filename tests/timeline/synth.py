"""Synthetic engine output at fixed times: what a Store (or any sink) would see from a cluster.

`Synth` plays the worker's threshold arithmetic (result runs, publication, on-hold) so the
records it emits are consistent with each other; it runs no handler and reads no clock, so a
store filled by it is the same on every run (deterministic snapshots).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probetui.engine import Sink
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.outcome import outcome_label
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running, Terminated, Waiting
from probetui.prober.worker import INITIAL_VALUE, ProbeRecord, Skip, Trigger
from probetui.spec.model import HTTPGetAction, Pod, Probe, ProbeType, TCPSocketAction
from probetui.timeline.events import KUBELET, SHADOW, Event, attempt_fields

T0 = 1_760_000_000.0  # 2025-10-09 08:53:20 UTC


def target_of(probe: Probe) -> str:
    h = probe.handler
    if isinstance(h, HTTPGetAction):
        return f"{h.scheme.lower()}://127.0.0.1:{h.port}{h.path}"
    if isinstance(h, TCPSocketAction):
        return f"127.0.0.1:{h.port}"
    if probe.exec is not None:
        return " ".join(probe.exec.command)
    if probe.grpc is not None:
        return f"127.0.0.1:{probe.grpc.port}"
    return ""


@dataclass
class _WorkerState:
    result_run: int = 0
    last_result: ResultValue = ResultValue.SUCCESS
    published: ResultValue | None = None
    on_hold: bool = False
    published_for: int = -1  # the container instance (`_ContainerState.n`) it was published for


@dataclass
class _ContainerState:
    n: int = 0
    started_at: float = 0.0
    restarts: int = 0
    ready: bool = False
    started: bool = False
    state: Any = field(default_factory=Waiting)
    workers: dict[ProbeType, _WorkerState] = field(default_factory=dict)

    @property
    def container_id(self) -> str:
        return f"synth://{self.n}" if self.n else ""


class Synth:
    def __init__(self, *sinks: Sink) -> None:
        self.sinks = list(sinks)
        self.pods: dict[str, Pod] = {}
        self.containers: dict[tuple[str, str], _ContainerState] = {}
        self.ids = 0

    # -- pods and containers ------------------------------------------------------------

    def add_pod(self, pod: Pod, t: float) -> Pod:
        self.pods[pod.uid] = pod
        for c in pod.probed_containers():
            self.containers[(pod.uid, c.name)] = _ContainerState()
        self._snapshot(pod)
        return pod

    def _snapshot(self, pod: Pod) -> None:
        statuses = []
        for c in pod.probed_containers():
            st = self.containers[(pod.uid, c.name)]
            statuses.append(
                ContainerStatus(
                    name=c.name,
                    container_id=st.container_id,
                    state=st.state,
                    started=st.started,
                    ready=st.ready,
                    restart_count=st.restarts,
                )
            )
        regular = tuple(s for s in statuses if not pod.container(s.name).is_restartable_init)
        init = tuple(s for s in statuses if pod.container(s.name).is_restartable_init)
        status = PodStatus(
            phase="Running",
            pod_ip="127.0.0.1",
            container_statuses=regular,
            init_container_statuses=init,
        )
        for sink in self.sinks:
            sink.pod(pod, status)

    def start(self, pod: Pod, name: str, t: float) -> None:
        """A (new) container instance: ContainerStarted, initial values published."""
        st = self.containers[(pod.uid, name)]
        self.ids += 1
        st.n = self.ids
        st.started_at = t
        st.state = Running(t)
        st.ready = False
        st.started = pod.container(name).startup_probe is None
        restarts = st.restarts
        self.kubelet(pod, name, "ContainerStarted", t, restartCount=restarts)
        for pt in ProbeType:
            if pod.container(name).probe(pt) is None:
                continue
            w = st.workers.setdefault(pt, _WorkerState())
            w.on_hold = False
            self._publish(pod, name, pt, INITIAL_VALUE[pt], t)
        if pod.container(name).readiness_probe is None and st.started:
            self.set_ready(pod, name, True, t)  # no readiness probe: ready once started
        self._snapshot(pod)

    def exit(self, pod: Pod, name: str, t: float, code: int, reason: str = "Error") -> None:
        st = self.containers[(pod.uid, name)]
        st.state = Terminated(code, reason, st.started_at, t)
        st.restarts += 1
        self.kubelet(pod, name, "ContainerExited", t, exitCode=code, reason=reason)
        self.set_ready(pod, name, False, t)
        self.set_started(pod, name, False, t)

    def back_off(self, pod: Pod, name: str, t: float, delay: float) -> None:
        st = self.containers[(pod.uid, name)]
        st.state = Waiting(
            "CrashLoopBackOff", f"back-off {int(delay)}s restarting failed container"
        )
        self.kubelet(
            pod,
            name,
            "BackOff",
            t,
            delay=delay,
            message="Back-off restarting failed container",
        )
        self._snapshot(pod)

    def set_ready(self, pod: Pod, name: str, ready: bool, t: float) -> None:
        st = self.containers[(pod.uid, name)]
        if st.ready != ready:
            st.ready = ready
            self.kubelet(pod, name, "ReadyChanged", t, ready=ready)
        self._snapshot(pod)

    def set_started(self, pod: Pod, name: str, started: bool, t: float) -> None:
        st = self.containers[(pod.uid, name)]
        if st.started != started:
            st.started = started
            self.kubelet(pod, name, "StartedChanged", t, started=started)
        self._snapshot(pod)

    # -- events ---------------------------------------------------------------------------

    def kubelet(
        self,
        pod: Pod,
        container: str | None,
        type_: str,
        t: float,
        probe: str | None = None,
        source: str = KUBELET,
        **fields: Any,
    ) -> None:
        self._send(
            Event(type_, t, pod.uid, pod.namespace, pod.name, container, probe, source, fields)
        )

    def _send(self, event: Event) -> None:
        for sink in self.sinks:
            sink.event(event)

    def _publish(self, pod: Pod, name: str, pt: ProbeType, value: ResultValue, t: float) -> None:
        st = self.containers[(pod.uid, name)]
        w = st.workers[pt]
        if w.published is value and w.published is not None and st.n == w.published_for:
            return
        w.published = value
        w.published_for = st.n
        self._send(
            Event(
                "ResultChanged",
                t,
                pod.uid,
                pod.namespace,
                pod.name,
                name,
                pt.key,
                SHADOW,
                {"result": value.label, "containerID": st.container_id},
            )
        )
        if pt is ProbeType.READINESS:
            self.set_ready(pod, name, value is ResultValue.SUCCESS, t)
        if pt is ProbeType.STARTUP and value is ResultValue.SUCCESS:
            self.set_started(pod, name, True, t)

    def skip(self, pod: Pod, name: str, pt: ProbeType, t: float, skip: Skip) -> None:
        st = self.containers[(pod.uid, name)]
        w = st.workers.setdefault(pt, _WorkerState())
        record = ProbeRecord(
            key=ProbeKey(pod.uid, name, pt),
            t=t,
            scheduled_at=t,
            trigger=Trigger.TICK,
            container_id=st.container_id,
            skip=skip,
            result_run=w.result_run,
            last_result=w.last_result,
            published=w.published,
            on_hold=w.on_hold,
        )
        self._send(
            Event(
                "ProbeSkipped",
                t,
                pod.uid,
                pod.namespace,
                pod.name,
                name,
                pt.key,
                SHADOW,
                {"reason": skip.value, "trigger": record.trigger},
                record,
            )
        )

    def engine_skip(self, pod: Pod, name: str, pt: ProbeType, t: float, reason: str) -> None:
        """The engine's own skip: the runtime does not run this probe (no worker record)."""
        self._send(
            Event(
                "ProbeSkipped",
                t,
                pod.uid,
                pod.namespace,
                pod.name,
                name,
                pt.key,
                SHADOW,
                {"reason": reason},
            )
        )

    def attempt(
        self,
        pod: Pod,
        name: str,
        pt: ProbeType,
        t: float,
        result: Result = Result.SUCCESS,
        *,
        latency: float = 0.002,
        status_code: int | None = None,
        output: str = "",
        body: str | None = None,
        error: str | None = None,
        timed_out: bool = False,
        trigger: Trigger = Trigger.TICK,
    ) -> ProbeRecord:
        """One probe attempt with the worker's arithmetic (docs/kubelet-behaviour.md §5.11-5.16)
        applied."""
        container = pod.container(name)
        probe = container.probe(pt)
        st = self.containers[(pod.uid, name)]
        w = st.workers.setdefault(pt, _WorkerState())
        if status_code is None and probe.http_get is not None and error is None and not timed_out:
            status_code = 200 if result is Result.SUCCESS else 503
        if not output and result is Result.FAILURE and status_code:
            output = f"HTTP probe failed with statuscode: {status_code}"
        attempt = Attempt(
            handler=probe.handler_name or "none",
            target=target_of(probe),
            result=result,
            output=output,
            error=error,
            latency=latency,
            started_at=t,
            status_code=status_code,
            body=body,
            timed_out=timed_out,
        )
        if error is not None:
            outcome = ProbeOutcome(
                ResultValue.FAILURE,
                error,
                (attempt,) * 3,
                ProbeEvent("Warning", "Unhealthy", f"{pt.value} probe errored: {error}"),
            )
        elif result is Result.SUCCESS:
            outcome = ProbeOutcome(ResultValue.SUCCESS, None, (attempt,), None)
        elif result is Result.WARNING:
            event = ProbeEvent("Warning", "ProbeWarning", f"{pt.value} probe warning: {output}")
            outcome = ProbeOutcome(ResultValue.SUCCESS, None, (attempt,), event)
        else:
            event = ProbeEvent("Warning", "Unhealthy", f"{pt.value} probe failed: {output}")
            outcome = ProbeOutcome(ResultValue.FAILURE, None, (attempt,), event)

        publish: ResultValue | None = None
        if error is None:
            value = outcome.result
            if w.last_result is value:
                w.result_run += 1
            else:
                w.last_result, w.result_run = value, 1
            threshold = (
                probe.failure_threshold if value is ResultValue.FAILURE else probe.success_threshold
            )
            if w.result_run >= threshold:
                publish = value
                if (pt is ProbeType.LIVENESS and value is ResultValue.FAILURE) or (
                    pt is ProbeType.STARTUP
                ):
                    w.on_hold = True
        run = w.result_run
        if w.on_hold:
            w.result_run = 0
        finished = t + latency
        if publish is not None and publish is not w.published:
            self._publish(pod, name, pt, publish, finished)
        record = ProbeRecord(
            key=ProbeKey(pod.uid, name, pt),
            t=t,
            scheduled_at=t,
            trigger=trigger,
            container_id=st.container_id,
            outcome=outcome,
            finished_at=finished,
            result_run=w.result_run if w.on_hold else run,
            last_result=w.last_result,
            published=w.published,
            on_hold=w.on_hold,
        )
        fields = attempt_fields(record, "loopback")
        assert fields["outcome"] == outcome_label(outcome)
        self._send(
            Event(
                "ProbeAttempt",
                t,
                pod.uid,
                pod.namespace,
                pod.name,
                name,
                pt.key,
                SHADOW,
                fields,
                record,
            )
        )
        if outcome.event is not None:
            self.kubelet(
                pod,
                name,
                outcome.event.reason,
                finished,
                probe=pt.key,
                message=outcome.event.message,
            )
        return record
