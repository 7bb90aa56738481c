"""The live engine joins one runtime, one prober manager, and the sinks that record what happens.

The engine is the `RuntimeHost` a runtime drives. It owns the clock, the prober's `Manager`
and the handler runner (which asks the runtime how to reach a container), keeps the latest
snapshot of every pod (the status the workers read), and turns worker records, results
changes and kubelet events into `Event`s for its sinks: the timeline store behind the UI, the
headless JSONL writer, the recorder, tests.

Every sink receives only redacted data (`probetui.redact`, the runtime's `redaction`): each
pod's masked copy, made once per spec, its statuses, and every record and kubelet event with
the pod's secrets masked. The workers keep the real pod: what they send is unchanged.

User commands (probe now, pause) go through here to the manager, never to a handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Protocol

from probetui import memory
from probetui.keys import ProbeKey
from probetui.kubelet.profile import profile_of_node
from probetui.probe.base import DEFAULT_KUBE_VERSION
from probetui.prober.clock import Clock, LoopClock
from probetui.prober.handlers import HandlerRunner
from probetui.prober.lateness import Lateness
from probetui.prober.manager import Done, Manager
from probetui.prober.results import Update
from probetui.prober.status import PodSnapshot, PodStatus
from probetui.prober.worker import ProbeRecord, Worker
from probetui.redact import Redactor, Shown
from probetui.runtime.base import Runtime, RuntimeEvent
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import (
    KUBELET,
    SHADOW,
    Event,
    not_probed_event,
    record_event,
    result_changed_event,
    runtime_event,
    worker_state_event,
)
from probetui.timeline.history import BODY_EXCERPT

log = logging.getLogger(__name__)


class Sink(Protocol):
    def event(self, event: Event) -> None: ...

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        """A pod's latest snapshot; status None when it is gone."""


class Engine:
    def __init__(
        self,
        runtime: Runtime,
        sinks: list[Sink] | None = None,
        *,
        kube_version: str = DEFAULT_KUBE_VERSION,
        clock_factory: Callable[[], Clock] = LoopClock,
        tick_align: float = 0.0,
    ) -> None:
        self.runtime = runtime
        self.tick_align = tick_align
        self.sinks: list[Sink] = list(sinks or [])
        self.kube_version = kube_version
        self._clock_factory = clock_factory
        self._clock: Clock | None = None
        self._manager: Manager | None = None
        self.pods: dict[str, PodSnapshot] = {}
        self._task: asyncio.Task[None] | None = None
        self._lateness = Lateness()
        self.redactor = Redactor(runtime.redaction, body_limit=BODY_EXCERPT)

    # -- RuntimeHost ----------------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        assert self._clock is not None, "the engine is not running"
        return self._clock

    @property
    def manager(self) -> Manager:
        assert self._manager is not None, "the engine is not running"
        return self._manager

    def pod_snapshot(self, pod: Pod, status: PodStatus) -> None:
        self.pods[pod.uid] = PodSnapshot(pod, status)
        shown = self.redactor.pod(pod)
        masked = self.redactor.status(shown, status)
        for sink in self.sinks:
            sink.pod(shown.pod, masked)

    def pod_deleted(self, pod_uid: str) -> None:
        entry = self.pods.pop(pod_uid, None)
        if entry is None:
            return
        shown = self.redactor.pod(entry.pod).pod
        for sink in self.sinks:
            sink.pod(shown, None)
        self.redactor.forget(pod_uid)

    def report(self, event: RuntimeEvent) -> None:
        # the kubelet's texts quote what it ran and what came back: masked as they enter
        out = runtime_event(event)
        out.fields = self.redactor.fields(self.redactor.pod(event.pod), out.fields)
        self._publish(out)

    def shadow_event(self, event: Event) -> None:
        """An event of a shadow that runs elsewhere (a node agent's): masked by this engine's
        policy over the pod as this engine knows it, as its own records are, then published.
        An attempt is built again from its record, so it says what this engine's would."""
        entry = self.pods.get(event.pod_uid)
        if entry is None and event.pod_uid:
            return  # a pod this engine does not show
        if entry is None:
            self._publish(event)  # about no pod (a gap in the stream)
            return
        self._publish(masked_elsewhere(self.redactor, entry.pod, event))

    def collect_and_freeze(self) -> None:
        """Collect once, then take what is alive out of the cyclic collector's sight, for a
        runtime to call after a large batch of pods (its first list): a full collection
        would otherwise walk every pod, container, probe and worker each time
        (`memory.freeze_after_start_up`; benchmarks.engine --gc-freeze guards it)."""
        memory.freeze_after_start_up()

    # -- running --------------------------------------------------------------------------

    async def run(self, duration: float | None = None) -> None:
        """Run the runtime until it returns, `duration` passes, or this task is cancelled."""
        self._clock = self._clock_factory()
        handlers = HandlerRunner(
            reach=self.runtime.reach,
            reach_refused=self.runtime.reach_refused,
            close_linger=self.runtime.close_linger,
            reach_lingered=self.runtime.reach_lingered,
            exec_for=self.runtime.exec_runner,
            kube_version=self.kube_version,
            kube_version_for=self.runtime.kube_version_of,
            loop=asyncio.get_running_loop(),
        )
        self._manager = Manager(
            self._clock,
            self._status_of,
            handlers.run_probe,
            launch=self._launch_or_skip,
            listener=self._on_record,
            own_started=self.runtime.observes_kubelet,
            on_exit=self._on_state,
            # the configured kubelet version's release, where a pod's node does not say its own
            profile=profile_of_node(self.kube_version),
            tick_align=self.tick_align,
        )
        for probe_type in ProbeType:
            self._manager.results_for(probe_type).subscribe(
                lambda update, pt=probe_type: self._on_update(pt, update)
            )
        self._task = asyncio.current_task()
        # the runtime runs beside the engine, not inside its await: on the way out the workers
        # stop first, then the runtime closes what they reach through (its API clients, its
        # processes). The other order fails the attempts in flight ("Session is closed").
        runtime = asyncio.ensure_future(self.runtime.run(self))
        try:
            await asyncio.wait({runtime}, timeout=duration)
            if runtime.done():
                runtime.result()  # its own end, or its failure
        finally:
            await self._manager.shutdown()
            if not runtime.done():
                runtime.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await runtime

    def _status_of(self, pod_uid: str) -> PodStatus | None:
        entry = self.pods.get(pod_uid)
        return entry.status if entry is not None else None

    def _launch_or_skip(self, worker: Worker, status: PodStatus, done: Done) -> None:
        reason = self.runtime.not_probed(worker.pod, worker.container, worker.probe_type)
        if reason is None:
            self.manager.launch_task(worker, status, done)
            return
        # observe-only: nothing dialled or run; the worker counts nothing (as a blown-up probe)
        self._publish(not_probed_event(worker.pod, worker.state(), self.clock.now(), reason))
        done(None)

    # -- what the workers do --------------------------------------------------------------

    def lateness(self) -> float:
        """How far behind its ticks the prober ran over the last seconds (`prober.lateness`)."""
        if self._clock is None:
            return 0.0
        return self._lateness.worst(self._clock.now())

    def _on_record(self, record: ProbeRecord) -> None:
        if record.steady.probed:
            # filed under when it ended, the order records arrive in
            ended = record.finished_at if record.finished_at is not None else record.t
            self._lateness.add(ended, record.t - record.scheduled_at)
        key = record.key
        entry = self.pods.get(key.pod_uid)
        if entry is None:
            return
        pod = entry.pod
        via: str | None = None
        if record.steady.probed:
            container = pod.container(key.container)
            via = (
                self.runtime.attempt_via(container, key.probe_type)
                if container is not None
                else self.runtime.via
            )
        shown = self.redactor.pod(pod)
        self._publish(record_event(shown.pod, masked_record(self.redactor, shown, record), via))

    def _on_state(self, worker: Worker) -> None:
        """A worker's state changed without a record (paused, resumed, exited): tell the sinks,
        so that what the UI shows of a worker comes from the store alone."""
        entry = self.pods.get(worker.key.pod_uid)
        pod = entry.pod if entry is not None else worker.pod
        self._publish(worker_state_event(pod, worker.state(), self.clock.now()))

    def _on_update(self, probe_type: ProbeType, update: Update) -> None:
        entry = self.pods.get(update.pod_uid)
        if entry is None:
            return
        name = self._container_of(entry, update.container_id)
        container = entry.pod.container(name) if name is not None else None
        if container is not None and self.runtime.not_probed(entry.pod, container, probe_type):
            return  # only the worker's initial value: nothing was probed, nothing to show
        self._publish(
            result_changed_event(
                entry.pod, name, probe_type, update.result, update.container_id, self.clock.now()
            )
        )

    @staticmethod
    def _container_of(entry: PodSnapshot, container_id: str) -> str | None:
        cs = entry.status.by_container_id(container_id)
        return cs.name if cs is not None else None

    def _publish(self, event: Event) -> None:
        for sink in self.sinks:
            try:
                sink.event(event)
            except Exception:  # a broken sink must not stop the prober
                log.exception("sink %r failed on %s", sink, event.type)

    # -- user commands ----------------------------------------------------------------------

    def probe_now(self, key: ProbeKey) -> bool:
        """Run this probe once now, counted like a tick ("t")."""
        elsewhere = self.runtime.probe_elsewhere(key)
        if elsewhere is not None:
            return elsewhere
        if self._manager is None or (self.runtime.read_only and self._would_change(key)):
            return False
        return self._manager.probe_now(key)

    def probe_container(self, pod_uid: str, container: str) -> int:
        """Probe every probe type of a container now ("T"); how many were triggered."""
        return sum(self.probe_now(ProbeKey(pod_uid, container, pt)) for pt in ProbeType)

    def set_paused(self, key: ProbeKey, paused: bool) -> bool:
        if self._manager is None or not self._manager.set_paused(key, paused):
            return False
        worker = self._manager.workers.get(key)
        if worker is not None:
            self._on_state(worker)
        return True

    def worker(self, key: ProbeKey) -> Worker | None:
        return self._manager.workers.get(key) if self._manager is not None else None

    @property
    def workers(self) -> Mapping[ProbeKey, Worker]:
        """Every worker by its key (none before the engine runs)."""
        return self._manager.workers if self._manager is not None else {}

    def _would_change(self, key: ProbeKey) -> bool:
        # in read-only mode a probe the runtime will not run is not offered either
        entry = self.pods.get(key.pod_uid)
        if entry is None:
            return True
        container = entry.pod.container(key.container)
        if container is None:
            return True
        return self.runtime.not_probed(entry.pod, container, key.probe_type) is not None


def masked_record(redactor: Redactor, shown: Shown, record: ProbeRecord) -> ProbeRecord:
    """Return `record` masked for `shown`'s pod, with the steady part of its masked values.

    Masking reads only the texts of a record's steady part, so a part masked once for a pod's
    copy is masked alike for every record that carries it: a part found clean hands its
    records on as they are, and a part that needed masking gives its masked records one masked
    part, kept on it (`SteadyPart.masked`, and `masked_for` the pod's copy it was masked for)."""
    part = record.steady
    if part.masked_for is shown:
        mpart = part.masked
        # clean for this copy of the pod: what the redactor would hand back
        return record if mpart is None else record.with_part(mpart)
    masked = redactor.record(shown, record)
    part.masked_for, part.masked = shown, None if masked is record else masked.steady
    return masked


def masked_elsewhere(redactor: Redactor, pod: Pod, event: Event) -> Event:
    """An event of a shadow that ran elsewhere, about `pod` as this process knows it, masked by
    `redactor` as this process's own events are: an attempt built again from its masked record
    (its `via` and `node` kept), any other event's texts masked."""
    shown = redactor.pod(pod)
    record = event.record
    if record is not None and event.state is None:
        out = record_event(
            shown.pod, masked_record(redactor, shown, record), event.fields.get("via")
        )
        if "node" in event.fields:
            out.fields["node"] = event.fields["node"]
        return out
    event.namespace, event.pod = shown.pod.namespace, shown.pod.name
    event.fields = redactor.fields(shown, event.fields)
    return event


__all__ = ["KUBELET", "SHADOW", "Engine", "Sink", "masked_elsewhere", "masked_record"]
