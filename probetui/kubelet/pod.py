"""Play the kubelet around one pod: start order, kills, restarts with back-off, status generation.

`PodKubelet` plays the parts of the kubelet's pod worker and `kuberuntime` that react to a pod's
containers and to its published probe results. It runs on any `Clock`: `probetui simulate` drives
it on `SimClock` with a simulated container backend, the local runtime on the event loop with
real processes. The decisions come from the shared model (`kuberuntime.py`, `backoff.py`); this
module only puts them in order.

What it covers, and the upstream code each part follows (v1.35, SidecarContainers on; where
another release differs, the manager's `KubeletProfile` says so, docs/kubelet-versions.md):

- Start order, `computeInitContainerActions`: init containers start one at a time in spec order.
  A plain init container must exit 0 before the next one starts; a failed one is started again
  (with back-off) unless the pod restartPolicy is Never, which fails the pod (`KillPod`). A
  restartable init container (sidecar) lets the next one start once it runs and, if it has a
  startup probe, once its cached startup result is Success (`init_container_blocks_next`). Only
  the newest started init container gates: a sidecar that restarts later blocks nothing
  (`isPreviouslyInitialized`). Regular containers start together once initialization is done.
- Which result updates sync the pod, `syncLoopIteration`: every readiness and startup update,
  but a liveness update only when it is Failure. A liveness Success (the initial value of a new
  container, or a recovery) changes nothing, so it fires no readiness manual trigger.
- Kills, `computePodActions` / `computeInitContainerActions`: a running container whose cached
  liveness (else startup) result is Failure is killed with the probe's grace period and, as the
  restart policy says, queued to start again (`container_probe_action`). When that leaves no
  regular container running and none to start (`keepCount == 0`, restartPolicy Never), the
  whole pod is killed instead (`KillPod`, `killPodWithSyncResult`): every running container
  gets "Stopping container X" and the pod's grace period, and nothing starts again. In such a
  whole-pod kill, and in the teardown below, the sidecars stop last, in reverse spec order,
  each once the containers before it have exited or its grace period is used up
  (`newTerminationOrdering`, `waitForTurn`).
- Restarts, `ContainerShouldRestart` after an exit, and `doBackOff` before every start; a start
  in back-off leaves the container Waiting in CrashLoopBackOff, with a BackOff event, and is
  retried when the window ends (v1.35 requeues the pod for that moment). Every sync of an
  exited container asks `ShouldContainerBeRestarted` again with its newest exit code, the one
  after a probe kill (PLEG) and the one when the window ends included.
- Status generation, `UpdatePodStatus` plus `getPhase`, after every change of a container or of
  a probe result that syncs the pod; the readiness manual trigger is its side effect. The status
  holds StartedAt and FinishedAt in whole seconds, as the status manager's copy does
  (`normalizeStatus`), so the initial delay is measured from the truncated start.
- The end of the pod: when no regular container runs or will start again, the pod is done
  (`keepCount == 0`, `KillPod`): liveness and startup workers stop first (`SyncTerminatingPod`),
  the sidecars still running are stopped, and once nothing runs every worker is removed
  (`RemovePod`).
- With RestartAllContainersOnContainerExits (1.36 on), an exit matching a RestartAllContainers
  rule kills and removes every container and starts the pod over from its first init container.
- Deletion, `delete`: `SyncTerminatingPod` with the pod's deletionGracePeriodSeconds
  (`calculateEffectiveGracePeriod`); readiness goes on until nothing runs.
- A kubelet restart, `kubelet_restarted`: a new probe manager, no back-off entries, the first
  status generated before `AddPod` (`SyncPod`), the running containers adopted by new workers.

`PodKubelet` is one state machine, the pod worker's: its steps (start, exit, kill, result,
teardown) read and change the same instance table and call one another in causal order within
one instant. The decisions live in `kuberuntime.py` and `backoff.py`; the instance table in
`instance.py`, the sidecars' termination order in `termination.py`, the phase in `pod_status.py`.

Time model: the kubelet's own latencies (PLEG relist, pod-worker queueing) are zero; a reaction
happens at the instant of its cause. The pod sync is event driven rather than a periodic
recomputation, so the order of reactions within one instant is causal order.

The container runtime is a `ContainerBackend`: it starts an instance and reports back
`started` or `start_failed`, kills one with a grace period, and reports every exit with
`exited`. Events go to an `Emit` callback in `probetui simulate`'s vocabulary: the kubelet's
own (starts, exits, kills, back-offs, Ready and Started changes) and its prober's (Unhealthy,
ProbeWarning), for whichever runtime plays the kubelet. `PodKubelet` subscribes to the
manager's results and records itself, so neither the local runtime nor `simulate` does the
kubelet's part of reacting to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any

from probetui.keys import EventType
from probetui.kubelet import backoff as bo
from probetui.kubelet import kuberuntime as kr
from probetui.kubelet.instance import (
    REASON_FAILED,
    RESET_KILL_MESSAGE,
    RESET_STATUS_MESSAGE,
    RESTARTING_ALL_CONTAINERS,
    START_ERROR_EXIT_CODE,
    START_ERROR_REASON,
    ContainerBackend,
    Emit,
    Instance,
    keeps_another,
)
from probetui.kubelet.pod_status import containers_ready, pod_phase, with_containers
from probetui.kubelet.termination import TerminationTurns
from probetui.prober.clock import Clock
from probetui.prober.manager import Manager
from probetui.prober.results import ResultValue, Update
from probetui.prober.status import (
    ContainerStatus,
    PodStatus,
    Running,
    Terminated,
    Waiting,
    whole_seconds,
)
from probetui.prober.worker import ProbeRecord
from probetui.spec.model import Pod, ProbeType


class PodKubelet:
    def __init__(
        self,
        pod: Pod,
        clock: Clock,
        manager: Manager,
        backend: ContainerBackend,
        emit: Emit,
        *,
        pod_ip: str,
        backoff: bo.Backoff | None = None,
        on_status: Callable[[PodStatus], None] | None = None,
        on_finished: Callable[[], None] | None = None,
        lifecycle_events: bool = False,
        prober_events: bool = True,
    ) -> None:
        self.pod = pod
        self.clock = clock
        self.manager = manager
        self.backend = backend
        self._emit_to = emit
        # the release played is the prober's: one profile for the workers and the kubelet
        self.profile = manager.profile
        self.backoff = (
            backoff
            if backoff is not None
            else bo.crash_loop_backoff(reduce_default_decay=self.profile.reduced_backoff)
        )
        self.on_status = on_status
        self.on_finished = on_finished
        # the kubelet's Created / Started / Failed events, which `probetui simulate` leaves out
        self.lifecycle_events = lifecycle_events
        self.instances = {c.name: Instance(c) for c in (*pod.init_containers, *pod.containers)}
        self.status = PodStatus(phase="Pending", pod_ip=pod_ip)
        self._shown: dict[str, tuple[bool, bool]] = {}
        # index of the newest init container started; it gates the next one
        self._gate = -1
        self.initialized = False  # every init container done, the regular ones started
        self.init_failed = False
        self.done = False  # no regular container runs or will start again
        # computePodActions chose KillPod: every container is being stopped, none starts again
        self.killing_pod = False
        self.terminating = False  # probetui is stopping every container
        self.removed = False  # every worker of the pod removed, nothing runs
        # a whole-pod kill in progress: the sidecars still waiting for their turn to stop
        self._turns = TerminationTurns(clock, self.instances, self._kill_now)
        # RestartAllContainers in progress: the running containers still to kill, in order
        self._resetting: list[Instance] | None = None
        # this is the kubelet, not an observer of one: it reacts to its pod's published results
        # (`syncLoopIteration`) and its prober records the probe events (`recordContainerEvent`)
        self._subscriptions = [
            (manager.results_for(pt), partial(self._result_published, pt)) for pt in ProbeType
        ]
        for results, fn in self._subscriptions:
            results.subscribe(fn)
        # its prober's Unhealthy / ProbeWarning events; a caller that reads none of them (the
        # counterfactual's model runs) leaves them out: they decide nothing
        self.prober_events = prober_events
        if prober_events:
            manager.add_listener(self._probe_recorded)

    # -- bookkeeping --------------------------------------------------------------------------

    def _emit(self, type_: str, container: str, **fields: Any) -> None:
        self._emit_to(type_, container, self.clock.now(), fields)

    def _unsubscribe(self) -> None:
        # the record listener stays: a removed worker's probe in flight runs to completion and
        # its prober still records the event (§3.5); a runtime has a fixed set of pods
        for results, fn in self._subscriptions:
            results.unsubscribe(fn)
        self._subscriptions = []

    def container_by_id(self, container_id: str) -> Instance | None:
        # the one lookup by container ID, the status's, over the instances' own statuses
        cs = self._statuses().by_container_id(container_id)
        return self.instances[cs.name] if cs is not None else None

    def _statuses(self) -> PodStatus:
        return with_containers(self.status, self.pod, self.instances)

    def _phase(self) -> str:
        if self._resetting is not None:
            return self.status.phase  # one sync kills and removes: no status in between
        return pod_phase(
            self.pod, self.instances, initialized=self.initialized, init_failed=self.init_failed
        )

    def generate_status(self) -> None:
        """Status generation: UpdatePodStatus (Started, Ready, readiness trigger) and phase."""
        # convertToAPIContainerStatuses builds each status anew, Ready false until
        # UpdatePodStatus sets it: a container that is not started is not Ready
        fresh = self._statuses()
        fresh = replace(
            fresh,
            container_statuses=tuple(replace(c, ready=False) for c in fresh.container_statuses),
            init_container_statuses=tuple(
                replace(c, ready=False) for c in fresh.init_container_statuses
            ),
        )
        status = self.manager.update_pod_status(self.pod, fresh)
        self.status = replace(status, phase=self._phase())
        if self.status.ready_condition is not None:
            # after a kubelet restart the API pod's Ready condition is read (§8.5); it
            # follows what this kubelet publishes, at once in this model
            self.status = replace(
                self.status, ready_condition=containers_ready(self.pod, self.status)
            )
        for cs in (*self.status.container_statuses, *self.status.init_container_statuses):
            self.instances[cs.name].status = cs
            before = self._shown.get(cs.name, (False, False))
            now = (bool(cs.started), cs.ready)
            if now[0] != before[0]:
                self._emit(EventType.STARTED_CHANGED, cs.name, started=now[0])
            if now[1] != before[1]:
                self._emit(EventType.READY_CHANGED, cs.name, ready=now[1])
            self._shown[cs.name] = now
        if self.on_status is not None:
            self.on_status(self.status)

    # -- the pod's life -----------------------------------------------------------------------

    def start(self) -> None:
        """The first sync: publish the pod, create its workers, start the first containers."""
        if self.on_status is not None:
            self.on_status(self.status)
        self.manager.add_pod(self.pod)
        self._advance()

    def _advance(self) -> None:
        """Start what initialization allows next (`computeInitContainerActions`)."""
        if self.initialized or self.done or self.terminating:
            return
        inits = self.pod.init_containers
        while self._gate < len(inits):
            if self._gate >= 0 and not self._init_done(self.instances[inits[self._gate].name]):
                return
            self._gate += 1
            if self._gate < len(inits):
                self._try_start(self.instances[inits[self._gate].name], None)
        self.initialized = True
        for container in self.pod.containers:
            self._try_start(self.instances[container.name], None)
        if self.pod.init_containers:
            # initialization just ended: the phase moves on (and ends a pod with no container
            # left to run, e.g. when `-c` picked init containers only)
            self.generate_status()
            self._check_done()

    def _init_done(self, inst: Instance) -> bool:
        cs = inst.status
        if cs is None:
            return False
        terminated = cs.terminated
        return not kr.init_container_blocks_next(
            inst.spec,
            running=cs.running is not None,
            startup=self.manager.startup.get(cs.container_id),
            exit_code=terminated.exit_code if terminated is not None else None,
        )

    def _try_start(self, inst: Instance, last_exit: float | None) -> None:
        """SyncPod's start step: doBackOff, then ask the backend for a new instance."""
        inst.retry = None
        if self.terminating or self.done or self.killing_pod:
            inst.restart_pending = False
            return
        now = self.clock.now()
        inst.restart_pending = True
        self.backoff.gc(now)
        key = bo.backoff_key(self.pod, inst.spec)
        check = bo.do_back_off(self.backoff, key, last_exit_finished_at=last_exit, now=now)
        if check.in_backoff:
            assert check.retry_at is not None and inst.status is not None
            name = inst.spec.name
            self._emit(
                EventType.BACK_OFF,
                name,
                delay=check.delay,
                message=kr.backoff_event_message(name, self.pod),
            )
            waiting = Waiting(
                kr.CRASH_LOOP_BACK_OFF, kr.crash_loop_message(check.delay, name, self.pod)
            )
            inst.status = replace(
                inst.status,
                state=waiting,
                last_state=inst.status.terminated or inst.status.last_state,
            )
            self.generate_status()
            # the retry is a new sync: it looks at the newest exited instance, the one that just
            # ended. A hair past the window, so float rounding cannot keep it inside forever.
            # Before 1.35 the pod worker retries a failed sync after its error back-off instead
            # (jitter left out), and a retry still inside the window fails again.
            retry = max(check.retry_at, now) + 1e-9
            if not self.profile.backoff_requeue_at_expiry:
                retry = now + bo.POD_WORKER_ERROR_BACK_OFF
            inst.retry = self.clock.call_at(retry, lambda: self._sync_exited(inst))
            return
        inst.starting = True
        self.backend.start(self, inst.spec, inst.n)

    # -- reports from the backend -----------------------------------------------------------

    def started(self, name: str, container_id: str, **details: Any) -> None:
        """The backend's new instance runs. `details` (e.g. pid) go into ContainerStarted."""
        inst = self.instances[name]
        now = self.clock.now()
        inst.starting = False
        inst.restart_pending = False
        restarts = inst.n
        inst.n += 1
        inst.started_at = now
        inst.killing = False
        inst.kill_reason = None
        previous = inst.status
        started, inst.keep_started = inst.keep_started, False
        inst.status = ContainerStatus(
            name=name,
            container_id=container_id,
            state=Running(whole_seconds(now)),
            last_state=(previous.terminated or previous.last_state) if previous else None,
            started=started,
            restart_count=restarts,
        )
        if self.lifecycle_events:
            self._emit(kr.REASON_CREATED, name, message=kr.created_message(name, self.profile))
            self._emit(kr.REASON_STARTED, name, message=kr.started_message(name, self.profile))
        self._emit(EventType.CONTAINER_STARTED, name, restartCount=restarts, **details)
        self.generate_status()
        if self.terminating or self.done or self.killing_pod:
            self._stop(inst)  # it was being created when the pod was torn down
            return
        self._advance()

    def start_failed(self, name: str, container_id: str, message: str) -> None:
        """The instance was created but could not start: exit 128, StartError (containerd)."""
        inst = self.instances[name]
        now = self.clock.now()
        inst.starting = False
        restarts = inst.n
        inst.n += 1
        previous = inst.status
        inst.status = ContainerStatus(
            name=name,
            container_id=container_id,
            state=Running(whole_seconds(now)),  # for an instant: the exit below ends it
            last_state=(previous.terminated or previous.last_state) if previous else None,
            started=False,
            restart_count=restarts,
        )
        inst.started_at = now
        inst.killing = False
        inst.kill_reason = None
        if self.lifecycle_events:
            self._emit(kr.REASON_CREATED, name, message=kr.created_message(name, self.profile))
            self._emit(REASON_FAILED, name, message=f"Error: {message}")
        self._ended(
            inst, START_ERROR_EXIT_CODE, START_ERROR_REASON, message=message, never_ran=True
        )

    def exited(self, name: str, container_id: str, exit_code: int) -> None:
        """An instance exited (by itself or killed); a report about an older instance is ignored."""
        inst = self.instances[name]
        cs = inst.status
        if cs is None or cs.container_id != container_id or cs.running is None:
            return
        self._ended(inst, exit_code, "Completed" if exit_code == 0 else "Error")

    def _ended(
        self,
        inst: Instance,
        exit_code: int,
        reason: str,
        *,
        message: str = "",
        never_ran: bool = False,
    ) -> None:
        now = self.clock.now()
        assert inst.status is not None
        started_at = None if never_ran else whole_seconds(inst.started_at)
        term = Terminated(exit_code, reason, started_at=started_at, finished_at=whole_seconds(now))
        previous_exit = inst.last_finished
        inst.last_finished = now
        inst.last_exit, inst.exit_before = term, inst.status.last_state
        inst.status = replace(inst.status, state=term, ready=False)
        fields: dict[str, Any] = {"exitCode": exit_code, "reason": reason}
        if message:
            fields["message"] = message
        self._emit(EventType.CONTAINER_EXITED, inst.spec.name, **fields)
        killed_by = inst.kill_reason
        inst.killing = False
        inst.kill_reason = None
        if self._turns:
            self._turns.exited()
        if self.terminating or self.done:
            self.generate_status()
            self._maybe_removed()
            return
        if self.killing_pod:
            # KillPod started nothing again: the phase is terminal once the regular containers
            # are down, and the pod is torn down as after any end
            self.generate_status()
            self._check_done()
            return
        if self._resetting is not None:
            self.generate_status()
            self._reset_next()
            return
        if (
            killed_by is None
            and self.profile.restart_all_containers
            and kr.restarts_all_containers(inst.spec, exit_code)
        ):
            self.generate_status()
            self._restart_all()
            return
        if killed_by is not None:
            # killed for a probe: the restart was decided in the same sync as the kill, against
            # a snapshot in which this instance still ran (see backoff.py)
            restart = kr.restart_after_probe_kill(inst.spec, self.pod, self.profile)
            self.generate_status()
            if not restart:
                self._check_done()
                return
            self._try_start(inst, previous_exit)
            if inst.retry is not None:
                # a status is generated before the next start: nothing carries Started over
                inst.keep_started = False
                # the start met an open window. The exit is news to the next sync (PLEG's
                # ContainerDied, at once here), which asks ShouldContainerBeRestarted with this
                # exit code: OnFailure and exit 0 end the container there
                inst.retry.cancel()
                self._sync_exited(inst)
            return
        if kr.restarts_after_exit(inst.spec, self.pod, exit_code, self.profile):
            inst.restart_pending = True
            self.generate_status()
            self._try_start(inst, now)
            return
        if inst.is_plain_init and exit_code != 0:
            # restartPolicy Never: initialization failed for good (`KillPod`)
            self.init_failed = True
        self.generate_status()
        self._advance()
        self._check_done()

    def _sync_exited(self, inst: Instance) -> None:
        """A sync of a container that exited and has not started again
        (docs/kubelet-behaviour.md §11.6).

        `computePodActions` queues it to start only if `ShouldContainerBeRestarted` says so for
        its newest exit; if not, the CrashLoopBackOff overlay goes and the status shows that
        exit again (convertToAPIContainerStatuses keeps Waiting only for a container to restart).
        """
        inst.retry = None
        term = inst.last_exit
        if self.terminating or self.done or self.killing_pod or term is None or inst.running:
            inst.restart_pending = False
            return
        if kr.restarts_after_exit(inst.spec, self.pod, term.exit_code, self.profile):
            self._try_start(inst, inst.last_finished)
            return
        inst.restart_pending = False
        assert inst.status is not None
        inst.status = replace(inst.status, state=term, last_state=inst.exit_before)
        self.generate_status()
        self._advance()
        self._check_done()

    # -- RestartAllContainers (RestartAllContainersOnContainerExits) ------------------------

    def _restart_all(self) -> None:
        """An exit matched a `RestartAllContainers` rule: the pod restarts in place.

        `computePodActions` lists every container in ContainersToReset, the regular ones first,
        then the init containers, and SyncPod kills the running ones one after another with a
        grace period of 0 (killContainer raises it to the 2 s minimum, runs no preStop hook,
        orders nothing) and removes them all. The pod is then synced again at once and, its
        containers gone, starts over from its first init container, with no back-off (no
        exited instance is left for `doBackOff` to find).
        """
        for inst in self.instances.values():
            if inst.retry is not None:
                inst.retry.cancel()
                inst.retry = None
            inst.restart_pending = False
        order = [*self.pod.containers, *self.pod.init_containers]
        self._resetting = [self.instances[c.name] for c in order]
        self._reset_next()

    def _reset_next(self) -> None:
        """Kill the next running container of the reset; with none left, start the pod over."""
        assert self._resetting is not None
        if any(i.killing for i in self._resetting):
            return  # SyncPod waits for this kill before the next
        while self._resetting:
            inst = self._resetting.pop(0)
            cs = inst.status
            if cs is None or cs.running is None:
                continue
            inst.killing = True
            self._emit(EventType.KILLING, inst.spec.name, message=RESET_KILL_MESSAGE)
            self.backend.kill(self, inst.spec, cs.container_id, kr.grace_after_turn(0, 0.0))
            return
        self._resetting = None
        for inst in self.instances.values():
            if inst.status is None:
                continue
            # convertToAPIContainerStatuses: a container the reset removed is Waiting
            removed = Terminated(137, RESTARTING_ALL_CONTAINERS)
            waiting = Waiting(RESTARTING_ALL_CONTAINERS, RESET_STATUS_MESSAGE)
            inst.status = replace(inst.status, state=waiting, last_state=removed, ready=False)
            inst.last_finished = None  # removed from the runtime: doBackOff finds nothing
        self._gate = -1
        self.initialized = False
        self.generate_status()
        self._advance()

    # -- probe results ------------------------------------------------------------------------

    def _result_published(self, probe_type: ProbeType, update: Update) -> None:
        # the kubelet reads the update channel in its own sync loop: after the worker that
        # published it has finished its doProbe, never inside it
        if update.pod_uid == self.pod.uid:
            self.clock.call_at(
                self.clock.now(),
                lambda: self.on_result(probe_type, update.container_id, update.result),
            )

    def _probe_recorded(self, record: ProbeRecord) -> None:
        """The prober's `recordContainerEvent`: Unhealthy or ProbeWarning for an attempt."""
        outcome = record.outcome
        if outcome is None or outcome.event is None or record.key.pod_uid != self.pod.uid:
            return
        event = outcome.event
        self._emit_to(
            event.reason,
            record.key.container,
            record.finished_at if record.finished_at is not None else record.t,
            {"probe": record.key.probe_type, "message": event.message, "eventType": event.type},
        )

    def on_result(self, probe_type: ProbeType, container_id: str, result: ResultValue) -> None:
        """A published result changed: `syncLoopIteration`'s reaction to the update.

        Readiness and startup updates always sync the pod. A liveness update syncs it only when
        it is Failure (`handleProbeSync` sits behind `update.Result == Failure`), so a liveness
        Success, e.g. the initial value of a new container, neither kills nor generates status,
        and so fires no readiness manual trigger.
        """
        if probe_type is ProbeType.LIVENESS and result is not ResultValue.FAILURE:
            return
        inst = self.container_by_id(container_id)
        if inst is None:
            return
        if probe_type is not ProbeType.READINESS:
            self._kill_if_needed(inst)
        self.generate_status()
        self._advance()

    def _kill_if_needed(self, inst: Instance) -> None:
        cs = inst.status
        if cs is None or cs.running is None or inst.killing or self.terminating:
            return
        if self.done or self.killing_pod:
            return
        decision = kr.container_probe_action(
            inst.spec,
            self.pod,
            running=True,
            liveness=self.manager.liveness.get(cs.container_id),
            startup=self.manager.startup.get(cs.container_id),
            profile=self.profile,
        )
        if not decision.kill:
            return
        if not decision.restart and not keeps_another(self.pod, self.instances, inst):
            self._kill_pod(inst, decision.reason)
            return
        inst.killing = True
        inst.kill_reason = decision.reason
        # the kill and the restart are one sync, so no status is generated in between
        inst.keep_started = (
            decision.restart and self.profile.started_kept_across_restart and bool(cs.started)
        )
        self._emit(
            EventType.KILLING, inst.spec.name, probe=decision.reason, message=decision.message
        )
        grace = self._grace(inst, decision.reason)
        if decision.restart:
            inst.restart_pending = True
        self.backend.kill(self, inst.spec, cs.container_id, grace)

    def _kill_pod(self, cause: Instance, reason: kr.KillReason | None) -> None:
        """KillPod: `killPodWithSyncResult` stops every running container of the pod.

        Each goes through killContainer with no message and reason Unknown, so the event says
        "Stopping container X" and the grace period is the pod's, never the probe's. The
        container whose probe caused it comes first and keeps `probe` for the timeline.
        """
        self.killing_pod = True
        for inst in self.instances.values():
            if inst.retry is not None:
                inst.retry.cancel()
                inst.retry = None
            inst.restart_pending = False
        self._kill_running(cause, reason)

    def _kill_running(
        self, cause: Instance | None = None, reason: kr.KillReason | None = None
    ) -> None:
        """`killContainersWithSyncResult`: every running container at once, but the sidecars
        in termination order (`newTerminationOrdering`): each waits for the regular containers
        and the sidecar after it to exit, at most its grace period, then gets what is left."""
        self._turns.order(self.pod)
        if cause is not None:
            self._stop(cause, probe=reason)
        for inst in self.instances.values():
            self._stop(inst)

    def _grace(self, inst: Instance, reason: kr.KillReason | None) -> float:
        return kr.kill_grace_period(
            self.pod,
            inst.spec,
            reason,
            deletion_grace_period=self.pod.deletion_grace_period_seconds,
        )

    # -- the end ------------------------------------------------------------------------------

    def _check_done(self) -> None:
        """Once the phase is terminal, tear the pod down as SyncTerminatingPod does."""
        if self.done or self.status.phase not in ("Succeeded", "Failed"):
            return
        self.done = True
        self._stop_all()

    def terminate(self) -> None:
        """probetui is ending: stop every container, start nothing again.

        For the kubelet this is the pod's deletion: the pod worker cancels the pod's sync
        context (which the workers share before 1.37), then SyncTerminatingPod runs."""
        if self.terminating:
            return
        self.terminating = True
        self.manager.pod_terminating(self.pod)
        self._stop_all()

    def delete(self, grace_period: int) -> None:
        """The pod's deletion reaches the kubelet, with `grace_period` its
        deletionGracePeriodSeconds: `SyncTerminatingPod`.

        `calculateEffectiveGracePeriod` gives at least 1 s. The status is generated once, then
        liveness and startup workers stop (`StopLivenessAndStartup`) while readiness goes on;
        every running container is killed with "Stopping container X" and the grace period
        (`killPod` with the override; `killContainer` still raises it to 2 s), one already
        stopping after a probe kill again, nothing starts again, and once nothing runs every worker goes (`RemovePod`). The phase is then
        terminal: Succeeded if every regular container exited 0, else Failed
        (`getPhase` with podIsTerminal).
        """
        if self.terminating or self.removed:
            return
        effective = max(grace_period, 1)
        self.pod = replace(
            self.pod,
            deletion_timestamp=self.clock.now(),
            deletion_grace_period_seconds=effective,
        )
        self.generate_status()
        stopping = [i for i in self.instances.values() if i.running and i.killing]
        self.terminate()
        for inst in stopping:
            # killPod stops every running container, one still stopping after a probe kill
            # too: killContainer again, with the pod's grace period (whichever ends it first)
            assert inst.status is not None
            inst.kill_reason = None
            self._emit(
                EventType.KILLING, inst.spec.name, message=kr.stopping_message(inst.spec.name)
            )
            grace = self._grace(inst, None)
            self.backend.kill(self, inst.spec, inst.status.container_id, grace)

    def kubelet_restarted(self, manager: Manager) -> None:
        """A new kubelet process takes the pod over with its own probe manager `manager`.

        What lived in the old process is gone: its workers (a probe in flight reports to no
        one), its results caches, its CrashLoopBackOff entries (`klet.backOff` is in memory).
        The containers run on. The new kubelet's first `SyncPod` generates the status before
        `AddPod`, from the API pod's (Started carried over for running containers, §8.6; the
        API's Ready condition kept for survivors, §8.5); then the new workers start, each after
        a random part of its period (`worker.run`, the manager being young), and adopt the
        containers: one started more than `kubeletRestartGracePeriod` before gets no initial
        value (§8.2). An exited container due to start again starts now: no back-off entry.
        """
        old = self.manager
        self._unsubscribe()
        old.remove_listener(self._probe_recorded)
        for worker in list(old.workers.values()):
            # the process is gone: no stop between probes, no record of a probe in flight
            worker._exit()
        self.manager = manager
        self.backoff = bo.crash_loop_backoff()
        self._subscriptions = [
            (manager.results_for(pt), partial(self._result_published, pt)) for pt in ProbeType
        ]
        for results, fn in self._subscriptions:
            results.subscribe(fn)
        if self.prober_events:
            manager.add_listener(self._probe_recorded)
        if self.removed:
            return
        api = self._statuses()
        self.status = replace(self.status, ready_condition=containers_ready(self.pod, api))
        waiting = []
        for inst in self.instances.values():
            # the new kubelet does not know why a container is being stopped
            inst.kill_reason = None
            if inst.retry is not None:
                inst.retry.cancel()
                inst.retry = None
                waiting.append(inst)
        self.generate_status()
        if self.terminating:
            return
        manager.add_pod(self.pod, api_status=api)
        for inst in waiting:
            self._sync_exited(inst)

    def _stop_all(self) -> None:
        """SyncTerminatingPod: liveness and startup workers stop first, then every running
        container is killed (`killPod`), the sidecars in termination order."""
        self.manager.stop_liveness_and_startup(self.pod)
        for inst in self.instances.values():
            if inst.retry is not None:
                inst.retry.cancel()
                inst.retry = None
            inst.restart_pending = False
        self._kill_running()
        self._maybe_removed()

    def _stop(self, inst: Instance, *, probe: kr.KillReason | None = None) -> None:
        """killContainer without a reason: "Stopping container X", the pod's grace period.

        `probe` names the probe whose failure led to it; upstream's event does not say. The
        Killing event is recorded at once; a sidecar that has to wait for its turn
        (`waitForTurn`) is sent SIGTERM only when its turn comes (`TerminationTurns`).
        """
        cs = inst.status
        if cs is None or cs.running is None or inst.killing:
            return
        inst.killing = True
        name = inst.spec.name
        fields: dict[str, Any] = {"probe": probe} if probe is not None else {}
        grace = kr.grace_before_minimum(
            self.pod, inst.spec, None, deletion_grace_period=self.pod.deletion_grace_period_seconds
        )
        waits = self._turns.waits_for(name)
        if grace > 0 and waits:
            # probetui's note of whom its SIGTERM waits for; upstream's event does not say
            fields["waitsFor"] = waits
        self._emit(EventType.KILLING, name, **fields, message=kr.stopping_message(name))
        if grace > 0 and waits:
            # waitForTurn: until the containers before it have exited, at most `grace` s
            self._turns.wait(name, grace)
            return
        self.backend.kill(self, inst.spec, cs.container_id, kr.grace_after_turn(grace, 0.0))

    def _kill_now(self, inst: Instance, grace: float) -> None:
        assert inst.status is not None
        self.backend.kill(self, inst.spec, inst.status.container_id, grace)

    def _maybe_removed(self) -> None:
        """SyncTerminatedPod: once nothing runs, every worker of the pod goes (RemovePod)."""
        if self.removed or any(i.running or i.starting for i in self.instances.values()):
            return
        self.removed = True
        self.manager.remove_pod(self.pod)
        self._unsubscribe()
        if self.on_finished is not None:
            self.on_finished()

    @property
    def finished(self) -> bool:
        """Nothing runs and nothing will run again."""
        return self.removed


__all__ = ["PodKubelet"]
