"""Manage the probe workers as `prober_manager.go` does (docs/kubelet-behaviour.md §3, §7, §8, §10).

It owns the worker map and the three results caches, starts and stops workers, and computes
the Started / Ready fields of a pod status the way `UpdatePodStatus` does, sending the
readiness manual trigger as a side effect. It never probes.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Iterable
from dataclasses import replace

from probetui.keys import ProbeKey
from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile
from probetui.prober.clock import Clock
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultsManager, ResultValue
from probetui.prober.status import ContainerStatus, PodStatus
from probetui.prober.worker import (
    KUBELET_RESTART_GRACE,
    Launch,
    Listener,
    ProbeRecord,
    RunProbe,
    Worker,
    can_inherit_probe_state,
)
from probetui.spec.model import Container, Pod, ProbeType

Done = Callable[[ProbeOutcome | None], None]
log = logging.getLogger(__name__)

# AddPod creates workers in this order for each container (§3.1)
ADD_ORDER = (ProbeType.STARTUP, ProbeType.READINESS, ProbeType.LIVENESS)


class Manager:
    def __init__(
        self,
        clock: Clock,
        status_of: Callable[[str], PodStatus | None],
        run_probe: RunProbe | None = None,
        *,
        launch: Launch | None = None,
        start: float | None = None,
        listener: Listener | None = None,
        rng: random.Random | None = None,
        own_started: bool = False,
        on_exit: Callable[[Worker], None] | None = None,
        profile: KubeletProfile = DEFAULT_PROFILE,
        tick_align: float = 0.0,
    ) -> None:
        self.clock = clock
        # the grid the workers' ticks are rounded up to (`worker.tick_grid`; 0: none)
        self.tick_align = tick_align
        # the kubelet release and gates played, for the workers and for status generation; a
        # pod added with a profile of its own (its node's kubelet) keeps that one
        self.profile = profile
        self._pod_profiles: dict[str, KubeletProfile] = {}
        # told when a worker has exited and left the map (the engine tells the UI's store)
        self.on_exit = on_exit
        # beside a real kubelet: startup workers go by their own verdict (Worker.own_started)
        self.own_started = own_started
        self.status_of = status_of
        self.run_probe = run_probe
        # how a probe is started: an asyncio task live, a scheduled callback in simulation
        self.launch: Launch = launch or self.launch_task
        # told of every doProbe record: the engine's sinks, and a played kubelet's prober events
        self._listeners: list[Listener] = [listener] if listener is not None else []
        self.rng = rng
        # when "the kubelet" started: drives start-up jitter (§4.2) and restart grace (§8.1)
        self.start = clock.now() if start is None else start
        self.liveness = ResultsManager()
        self.readiness = ResultsManager()
        self.startup = ResultsManager()
        self.workers: dict[ProbeKey, Worker] = {}
        # in-flight probes; a stopped worker's probe runs to completion (§3.5)
        # (a worker has one at most; a stopped worker's is still here until it ends)
        self._tasks: dict[Worker, asyncio.Task[None]] = {}
        # the loop the probes run on, looked up once: on Python 3.11 each get_running_loop() is
        # a getpid() system call, which cost 2 % of the engine's CPU at 1,500 attempts/s
        self._loop: asyncio.AbstractEventLoop | None = None
        # which trigger was dropped because one was already queued: "Failed to trigger a manual run"
        self.dropped_triggers = 0
        # told of each such drop, with the worker whose trigger was already queued
        self.on_dropped_trigger: Callable[[Worker], None] | None = None

    def add_listener(self, fn: Listener) -> None:
        self._listeners.append(fn)
        # workers started while no one listened build no records (`_records`): now they must
        for worker in self.workers.values():
            worker._listener = self._publish_record

    @property
    def _records(self) -> Listener | None:
        # a record no one is told of is not built: a model run read only for what the kubelet
        # did (the counterfactual's) has no listener and should not pay for records
        return self._publish_record if self._listeners else None

    def remove_listener(self, fn: Listener) -> None:
        # a new list: a record being delivered goes on to the listeners it started with
        self._listeners = [f for f in self._listeners if f != fn]

    def _publish_record(self, record: ProbeRecord) -> None:
        for fn in self._listeners:
            fn(record)

    def results_for(self, probe_type: ProbeType) -> ResultsManager:
        return {
            ProbeType.LIVENESS: self.liveness,
            ProbeType.READINESS: self.readiness,
            ProbeType.STARTUP: self.startup,
        }[probe_type]

    # -- lifecycle -----------------------------------------------------------------------

    def profile_of(self, pod_uid: str) -> KubeletProfile:
        """The kubelet release the pod's workers play: its own if `add_pod` gave one."""
        return self._pod_profiles.get(pod_uid, self.profile)

    def set_profile(self, pod_uid: str, profile: KubeletProfile) -> None:
        """The pod's node turned out to run another release than the one its workers play
        (the node's version was read after the pod was added): they play that one from now."""
        if self.profile_of(pod_uid) == profile:
            return
        self._pod_profiles[pod_uid] = profile
        for key, worker in self.workers.items():
            if key.pod_uid == pod_uid:
                worker.profile = profile

    def add_pod(
        self,
        pod: Pod,
        api_status: PodStatus | None = None,
        profile: KubeletProfile | None = None,
    ) -> list[Worker]:
        """Create the workers a pod needs that do not exist yet; never update existing ones.

        `profile` is the release of the kubelet that runs the pod (its node's), kept for the
        pod's later calls; without it the manager's own applies."""
        if profile is not None:
            self._pod_profiles[pod.uid] = profile
        profile = self.profile_of(pod.uid)
        created: list[Worker] = []
        for container in pod.probed_containers():
            for probe_type in ADD_ORDER:
                if container.probe(probe_type) is None:
                    continue
                key = ProbeKey(pod.uid, container.name, probe_type)
                if key in self.workers:
                    if not profile.add_pod_continues:
                        # before 1.37 AddPod returned here: no later container of this
                        # sync gets a new worker
                        return created
                    continue
                worker = Worker(
                    pod,
                    container,
                    probe_type,
                    self.results_for(probe_type),
                    manager_start=self.start,
                    api_status=api_status,
                    profile=profile,
                )
                worker.own_started = self.own_started
                worker.tick_align = self.tick_align
                self.workers[key] = worker
                worker.start(
                    self.clock,
                    self.status_of,
                    self.launch,
                    self._records,
                    on_exit=self._remove_worker,
                    rng=self.rng,
                )
                created.append(worker)
        return created

    def _stop(self, pod: Pod, types: Iterable[ProbeType]) -> None:
        types = tuple(types)
        for container in pod.probed_containers():
            for probe_type in types:
                worker = self.workers.get(ProbeKey(pod.uid, container.name, probe_type))
                if worker is not None:
                    worker.stop()

    def stop_liveness_and_startup(self, pod: Pod) -> None:
        """Before a pod's containers are killed; readiness keeps running (§3.3)."""
        self._stop(pod, (ProbeType.LIVENESS, ProbeType.STARTUP))

    def pod_terminating(self, pod: Pod) -> None:
        """The pod worker cancels the pod's sync context as the pod begins terminating.

        Before 1.37 the workers run under that context, so from here on their exec probes
        error (the cancelled CRI call); since 1.37 they run under a context cut loose from it
        (`context.WithoutCancel` in `AddPod`) and readiness keeps probing to the end.
        """
        if self.profile_of(pod.uid).workers_detached:
            return
        for key, worker in self.workers.items():
            if key.pod_uid == pod.uid:
                worker.sync_cancelled = True

    def remove_pod(self, pod: Pod) -> None:
        self._stop(pod, (ProbeType.READINESS, ProbeType.LIVENESS, ProbeType.STARTUP))
        self._pod_profiles.pop(pod.uid, None)

    def cleanup_pods(self, desired: Iterable[str]) -> None:
        keep = set(desired)
        for uid in [u for u in self._pod_profiles if u not in keep]:
            del self._pod_profiles[uid]
        for key, worker in list(self.workers.items()):
            if key.pod_uid not in keep:
                worker.stop()

    def in_flight(self) -> int:
        """Tell how many probes launched as tasks are running now."""
        return len(self._tasks)

    def launch_task(self, worker: Worker, status: PodStatus, done: Done) -> None:
        """Run one probe as a task; its completion resumes the worker's loop."""
        assert self.run_probe is not None, "a live manager needs run_probe"
        loop = self._loop
        if loop is None or loop.is_closed():
            loop = self._loop = asyncio.get_running_loop()
        self._tasks[worker] = loop.create_task(self._probe(worker, status, done))

    async def _probe(self, worker: Worker, status: PodStatus, done: Done) -> None:
        """The probe, then the worker's `done` in the same step of the task: a done callback
        would cost a callback and a turn of the event loop per attempt (benchmarks.blackbox
        guards it). A cancelled probe (shutdown) calls nothing back."""
        assert self.run_probe is not None
        try:
            outcome: ProbeOutcome | None = await self.run_probe(worker, status)
        except Exception as exc:
            log.error("probe of %s raised", worker.key, exc_info=exc)
            outcome = None
        finally:
            # before `done`, which may start this worker's next probe
            self._tasks.pop(worker, None)
        done(outcome)

    def _remove_worker(self, worker: Worker) -> None:
        if self.workers.get(worker.key) is worker:
            del self.workers[worker.key]
        if self.on_exit is not None:
            self.on_exit(worker)

    async def shutdown(self) -> None:
        """Stop everything now, in-flight probes included (probetui is exiting)."""
        for worker in list(self.workers.values()):
            worker.stop()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for worker in list(self.workers.values()):
            worker._exit()

    # -- user actions (not kubelet behaviour) ----------------------------------------------

    def probe_now(self, key: ProbeKey) -> bool:
        worker = self.workers.get(key)
        return worker.user_trigger() if worker is not None else False

    def set_paused(self, key: ProbeKey, paused: bool) -> bool:
        worker = self.workers.get(key)
        if worker is None:
            return False
        worker.paused = paused
        return True

    def get_worker(self, pod_uid: str, container: str, probe_type: ProbeType) -> Worker | None:
        return self.workers.get(ProbeKey(pod_uid, container, probe_type))

    # -- status generation ---------------------------------------------------------------

    def is_container_started(self, pod: Pod, c: ContainerStatus) -> bool:
        return is_container_started(
            c,
            self.startup.get(c.container_id),
            self.get_worker(pod.uid, c.name, ProbeType.STARTUP),
            keeps_state=self.profile_of(pod.uid).keeps_state_on_kubelet_restart,
        )

    def update_pod_status(self, pod: Pod, status: PodStatus) -> PodStatus:
        """`UpdatePodStatus`: fill Started and Ready; trigger readiness where not ready (§10.3)."""
        regular = tuple(self._update_container(pod, status, c) for c in status.container_statuses)
        init: list[ContainerStatus] = []
        for c in status.init_container_statuses:
            spec = pod.container(c.name)
            if spec is not None and spec.is_restartable_init:
                init.append(self._update_container(pod, status, c))
                continue
            # plain init containers: Ready only through a zero exit, never set false here (§10.5)
            started = self.is_container_started(pod, c)
            term = c.terminated
            ready = True if term is not None and term.exit_code == 0 else c.ready
            init.append(replace(c, started=started, ready=ready))
        return replace(status, container_statuses=regular, init_container_statuses=tuple(init))

    def _update_container(self, pod: Pod, status: PodStatus, c: ContainerStatus) -> ContainerStatus:
        started = self.is_container_started(pod, c)
        if not started:
            return replace(c, started=False)
        worker = self.get_worker(pod.uid, c.name, ProbeType.READINESS)
        if c.running is None:
            ready = False
        elif self.readiness.get(c.container_id) is ResultValue.SUCCESS:
            ready = True
        else:
            # no worker: no readiness probe, or none yet (a restarted kubelet's first sync
            # generates the status before AddPod)
            ready = worker is None
            if worker is not None and not worker.manual_trigger():
                self.dropped_triggers += 1
                if self.on_dropped_trigger is not None:
                    self.on_dropped_trigger(worker)
            ready = self._ready_on_kubelet_restart(pod, status, c, ready)
        return replace(c, started=True, ready=ready)

    def _ready_on_kubelet_restart(
        self, pod: Pod, status: PodStatus, c: ContainerStatus, ready: bool = False
    ) -> bool:
        """`setReadyStateOnKubeletRestart` (§8.5): keep a Ready container Ready, and hold a
        container with a readiness probe to the API pod's Ready condition (since 1.35, where
        ChangeContainerStatusOnKubeletRestart is off; since 1.38 only the container instance
        the API server last listed)."""
        profile = self.profile_of(pod.uid)
        if not profile.keeps_state_on_kubelet_restart:
            return ready
        spec: Container | None = pod.container(c.name)
        if profile.inherit_by_container_id:
            worker = self.get_worker(pod.uid, c.name, ProbeType.READINESS)
            api = worker.api_status if worker is not None else None
            if not can_inherit_probe_state(api, c.name, c.container_id):
                return ready
        running = c.running
        if running is None or not running.started_at:
            return ready
        if not running.started_at < self.start - KUBELET_RESTART_GRACE:
            return ready
        if not ready and self.readiness.get(c.container_id) is None:
            ready = True
        if (
            spec is not None
            and spec.readiness_probe is not None
            and status.ready_condition is not True
        ):
            ready = False
        return ready


def is_container_started(
    c: ContainerStatus,
    startup_result: ResultValue | None,
    startup_worker: Worker | None,
    *,
    keeps_state: bool = True,
) -> bool:
    """`isContainerStarted` (§10.2); with `keeps_state` (1.35 on, ChangeContainerStatus-
    OnKubeletRestart off) a status already Started counts before any result (§8.6)."""
    if c.running is None:
        return False
    if startup_result is not None:
        return startup_result is ResultValue.SUCCESS
    if keeps_state and c.started:
        return True
    return startup_worker is None
