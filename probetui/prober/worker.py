"""Run one probe worker, as the kubelet's `worker.go` / `worker_legacy.go` does.

See docs/kubelet-behaviour.md §4-7.

The decision procedure is split at the one place it waits, the probe itself:
`Worker.begin(status, now)` is doProbe up to the handler call (§5.2-5.10) and returns a `Step`;
`Worker.finish(outcome)` is the rest (§5.11-5.16). Both are synchronous and read nothing but
their arguments, the worker's own state and its results cache. The run loop around them is a
set of clock callbacks, so the same worker runs live and in `probetui simulate`'s virtual time.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from probetui.keys import ProbeKey
from probetui.kubelet.kuberuntime import (
    all_containers_restarting,
    container_restartable,
    should_restart,
)
from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile
from probetui.probe.base import Attempt, Result
from probetui.prober.clock import Cancellable, Clock, tick_grid
from probetui.prober.probe_record import ProbeRecord, Skip, Trigger
from probetui.prober.prober import ProbeOutcome, retry_on_error, run_to_completion
from probetui.prober.results import ResultsManager, ResultValue
from probetui.prober.status import PHASE_TERMINAL, PodStatus
from probetui.prober.steady import SteadyPart
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType

if TYPE_CHECKING:
    from probetui.prober.status import ContainerStatus

# prober_manager.go kubeletRestartGracePeriod: containers started this long before the manager
# count as survivors of a kubelet restart (§8.1)
KUBELET_RESTART_GRACE = 10.0
# what CRI ExecSync answers on a cancelled context: gRPC's status text for codes.Canceled
EXEC_CONTEXT_CANCELED = "rpc error: code = Canceled desc = context canceled"

INITIAL_VALUE = {
    ProbeType.READINESS: ResultValue.FAILURE,  # not ready until proven ready
    ProbeType.LIVENESS: ResultValue.SUCCESS,  # alive until proven dead
    ProbeType.STARTUP: ResultValue.UNKNOWN,  # not started
}


@dataclass(frozen=True, slots=True)
class Step:
    """Names the outcome of `begin`: go on without probing, exit, or run the handler now."""

    keep_going: bool
    probe: bool = False
    skip: Skip | None = None
    status: PodStatus | None = None  # what the handler dials (pod IP) when probing


@dataclass(frozen=True, slots=True)
class WorkerState:
    """Records a worker's state where it changes without a doProbe record: paused or resumed by the
    user, stopped, or an attempt the runtime does not run. Travels with the engine's events to
    the store, so the UI needs no worker to draw the published value and the next attempt."""

    key: ProbeKey
    running: bool  # False once the worker exited: no next tick, no pause
    paused: bool = False
    next_tick: float | None = None
    published: ResultValue | None = None


Listener = Callable[[ProbeRecord], None]
RunProbe = Callable[["Worker", PodStatus], Awaitable[ProbeOutcome]]
# starts one probe and calls back with its outcome (None: the attempt blew up, nothing to count)
Launch = Callable[["Worker", PodStatus, Callable[[ProbeOutcome | None], None]], None]

log = logging.getLogger(__name__)


class Worker:
    """Holds the state and decisions of one (pod, container, probe type) worker."""

    def __init__(
        self,
        pod: Pod,
        container: Container,
        probe_type: ProbeType,
        results: ResultsManager,
        *,
        manager_start: float = float("-inf"),
        api_status: PodStatus | None = None,
        profile: KubeletProfile = DEFAULT_PROFILE,
    ) -> None:
        probe = container.probe(probe_type)
        if probe is None:
            raise ValueError(f"container {container.name!r} has no {probe_type.key} probe")
        self.pod = pod
        self.container = container
        self.probe_type = probe_type
        self.spec: Probe = probe
        self.results = results
        self.initial_value = INITIAL_VALUE[probe_type]
        self.key = ProbeKey(pod.uid, container.name, probe_type)
        # the pod object the worker was created with; never refreshed (§5.8, §8.3)
        self.api_status = api_status
        self.manager_start = manager_start
        # the kubelet release and gates whose worker this is (docs/kubelet-versions.md)
        self.profile = profile
        # the pod sync's context, which the worker runs under before 1.37, was cancelled: the
        # pod began terminating (`Manager.pod_terminating`)
        self.sync_cancelled = False

        self.container_id = ""
        # Go's zero value for results.Result is Success (§5.13)
        self.last_result = ResultValue.SUCCESS
        self.result_run = 0
        self.on_hold = False
        # the current container's cached result is one this worker reached (a threshold), not
        # its initial value or an inherited one: only then is it an opinion of the container
        self.result_is_own = False
        # prober_probe_total by result: successful / failed / unknown (§12.1)
        self.probe_total = {"successful": 0, "failed": 0, "unknown": 0}

        # run-loop state (live driver only)
        self.paused = False
        self.in_flight = False
        self.exited = False
        self.next_tick: float | None = None
        self._stop = False
        self._tick_pending = False
        self._tick_due = 0.0
        self._manual_pending = False
        self._user_pending = False
        self._timer: Cancellable | None = None
        # ticks rounded up to a multiple of this many seconds (0: as the kubelet arms them),
        # so that a node's workers share their wake-ups (`tick_grid`)
        self.tick_align = 0.0
        self._clock: Clock
        self._status_of: Callable[[str], PodStatus | None]
        self._launch: Launch
        self._listener: Listener | None = None
        self._on_exit: Callable[[Worker], None] | None = None
        # beside a real kubelet: Started comes from this worker's own results (`_started`)
        self.own_started = False
        # the steady part of the last record, which the next shares where it says the same
        self._steady: SteadyPart | None = None

    # -- decisions ------------------------------------------------------------------------

    @property
    def published(self) -> ResultValue | None:
        return self.results.get(self.container_id) if self.container_id else None

    def state(self) -> WorkerState:
        """What the UI shows of this worker between records (`WorkerState`)."""
        if self.exited:
            return WorkerState(self.key, False, published=self.published)
        return WorkerState(self.key, True, self.paused, self.next_tick, self.published)

    def _is_kubelet_restart(self, c: ContainerStatus) -> bool:
        """§8.2-8.3: a container already running before the manager started keeps state
        (since 1.35; since 1.38 only the container instance the API server last listed).

        Only a worker made with the API server's view of the pod (`api_status`) is made at a
        restart: the shadow passes it for the pods it finds running when it starts, as the
        kubelet finds them after its own restart. A worker made without it (the played
        kubelet's, which starts every container itself) never inherits."""
        running = c.running
        if running is None or not running.started_at or self.api_status is None:
            return False
        if self.profile.inherit_by_container_id and not can_inherit_probe_state(
            self.api_status, self.container.name, c.container_id
        ):
            return False
        return running.started_at < self.manager_start - KUBELET_RESTART_GRACE

    def _adopt(self, c: ContainerStatus) -> None:
        """§5.5 with the kubelet-restart exceptions of §8.2-8.4."""
        if self.container_id:
            self.results.remove(self.container_id)
        self.container_id = c.container_id
        if not self.profile.keeps_state_on_kubelet_restart:
            # before 1.35, or ChangeContainerStatusOnKubeletRestart on: no survivors
            self.results.set(self.container_id, self.initial_value, self.pod.uid)
            self.on_hold = False
            self.result_is_own = False
            return
        is_restart = self._is_kubelet_restart(c)
        if (
            self.container.is_restartable_init
            and self.probe_type is ProbeType.STARTUP
            and c.started
            # since 1.38 Started is trusted only for a survivor of the kubelet restart
            and (is_restart or not self.profile.inherit_by_container_id)
        ):
            self.results.set(self.container_id, ResultValue.SUCCESS, self.pod.uid)
        if not is_restart:
            self.results.set(self.container_id, self.initial_value, self.pod.uid)
        # a new container: resume probing. resultRun and lastResult carry over (§6.6)
        self.on_hold = False
        self.result_is_own = False

    def _started(self, c: ContainerStatus) -> bool:
        """Started, as this startup worker must read it.

        The kubelet's workers read Started from its status manager, which `SetContainerStartup`
        sets from their own startup results. Beside a real kubelet (`own_started`) the status
        here is the kubelet's: followed, this worker would stop right before its own Success
        whenever the kubelet's tick came first. So it goes by its own result, and by the
        status only where it has none (a kubelet-restart adoption, §8.6)."""
        if not self.own_started:
            return c.started
        own = self.published
        return c.started if own is None else own is ResultValue.SUCCESS

    def _keeps_going_when_not_running(self, c: ContainerStatus, status: PodStatus) -> bool:
        """§5.7: whether a worker of a container that is not running goes on."""
        terminated = c.terminated
        profile = self.profile
        if profile.restart_rules_worker_quirk:
            # 1.34 with the alpha gate on: the terminated test is inverted
            return terminated is not None or container_restartable(self.container, self.pod)
        if not profile.container_restart_rules:
            return (
                terminated is None
                or self.pod.restart_policy != "Never"
                or self.container.is_restartable_init
            )
        if terminated is None:
            return True
        if should_restart(self.container, self.pod, terminated.exit_code, profile):
            return True
        return profile.restart_all_containers and all_containers_restarting(self.pod, status)

    def begin(self, status: PodStatus | None, now: float) -> Step:
        """doProbe up to the handler call (§5.2-5.10)."""
        if status is None:
            return Step(True, skip=Skip.NO_STATUS)
        if status.phase in PHASE_TERMINAL:
            return Step(False, skip=Skip.POD_TERMINATED)
        c = status.find(self.container.name)
        if c is None:
            return Step(True, skip=Skip.NOT_CREATED)
        if self.container_id != c.container_id:
            self._adopt(c)
        if self.on_hold:
            return Step(True, skip=Skip.ON_HOLD)
        running = c.running
        if running is None:
            self.results.set(self.container_id, ResultValue.FAILURE, self.pod.uid)
            return Step(self._keeps_going_when_not_running(c, status), skip=Skip.NOT_RUNNING)
        if self.pod.deletion_timestamp is not None and self.probe_type in (
            ProbeType.LIVENESS,
            ProbeType.STARTUP,
        ):
            # a last Success for a quiet shutdown, then stop (§5.8)
            self.results.set(self.container_id, ResultValue.SUCCESS, self.pod.uid)
            return Step(False, skip=Skip.DELETING)
        # whole seconds, truncated like Go's int32(duration.Seconds()) (§5.9)
        if int(now - running.started_at) < self.spec.initial_delay_seconds:
            return Step(True, skip=Skip.INITIAL_DELAY)
        if self.probe_type is ProbeType.STARTUP:
            if self._started(c):
                return Step(True, skip=Skip.STARTED)
        elif not c.started:
            return Step(True, skip=Skip.NOT_STARTED)
        return Step(True, probe=True, status=status)

    def finish(self, outcome: ProbeOutcome) -> bool:
        """doProbe after the handler call (§5.11-5.16). Returns True if the cache changed."""
        if outcome.error is not None:
            return False  # prober error: thrown away, nothing counted (§5.11, §6.4)
        result = outcome.result
        if result is ResultValue.SUCCESS:
            self.probe_total["successful"] += 1
        elif result is ResultValue.FAILURE:
            self.probe_total["failed"] += 1
        else:
            self.probe_total["unknown"] += 1

        if self.last_result is result:
            self.result_run += 1
        else:
            self.last_result = result
            self.result_run = 1

        if (result is ResultValue.FAILURE and self.result_run < self.spec.failure_threshold) or (
            result is ResultValue.SUCCESS and self.result_run < self.spec.success_threshold
        ):
            return False  # below threshold: the published value stays as it is (§5.14)

        changed = self.results.set(self.container_id, result, self.pod.uid, own=self.result_is_own)
        self.result_is_own = True
        if (
            self.probe_type is ProbeType.LIVENESS and result is ResultValue.FAILURE
        ) or self.probe_type is ProbeType.STARTUP:
            # hold until a new container ID: the kill is pending, or startup is decided (§5.16)
            self.on_hold = True
            self.result_run = 0
        return changed

    # -- scheduling: the run loop as events ----------------------------------------------
    #
    # `worker.run` is a goroutine that blocks in a select on stop, ticker and manual trigger.
    # Here the same loop is a set of callbacks on a clock, so one timer heap serves thousands of
    # workers live and the same code runs in virtual time for `probetui simulate`.

    def start(
        self,
        clock: Clock,
        status_of: Callable[[str], PodStatus | None],
        launch: Launch,
        listener: Listener | None = None,
        on_exit: Callable[[Worker], None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        period = float(self.spec.period_seconds)
        if not period > 0:
            # a ticker with no positive period fires again at once, for ever; the API server
            # refuses such a probe and defaulting turns 0 into 10, so only a bypass gets here
            raise ValueError(
                f"{self.key.container} {self.key.probe_type.key} probe: periodSeconds "
                f"{self.spec.period_seconds}: a worker needs a period of at least 1 s"
            )
        self._clock = clock
        self._status_of = status_of
        self._launch = launch
        self._listener = listener
        self._on_exit = on_exit
        now = clock.now()
        delay = 0.0
        if period > now - self.manager_start:
            # kubelet started recently: spread the first probes over a period (§4.2)
            delay = (rng or random).random() * period
        self._timer = clock.call_at(tick_grid(now + delay, self.tick_align), self._first)

    def _first(self) -> None:
        now = self._clock.now()
        self._arm_ticker(tick_grid(now + float(self.spec.period_seconds), self.tick_align))
        self._do_probe(Trigger.FIRST, now)

    def stop(self) -> None:
        """Non-blocking and idempotent; seen between probes only (§3.5)."""
        if self._stop or self.exited:
            return
        self._stop = True
        if not self.in_flight:
            self._exit()

    def manual_trigger(self) -> bool:
        """The kubelet's readiness trigger (§4.5). False when one is already queued."""
        if self._manual_pending:
            return False
        self._manual_pending = True
        self._wake_soon()
        return True

    def user_trigger(self) -> bool:
        """probetui's "probe now": one attempt, counted like a tick, the ticker untouched."""
        if self._user_pending:
            return False
        self._user_pending = True
        self._wake_soon()
        return True

    def _arm_ticker(self, first: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.next_tick = first
        self._timer = self._clock.call_at(first, self._on_tick)

    def _on_tick(self) -> None:
        # Go's ticker: one pending tick at most, later ones dropped, the grid kept (§4.4)
        self._tick_pending = True
        period = float(self.spec.period_seconds)
        assert self.next_tick is not None
        self._tick_due = self.next_tick
        nxt = self.next_tick + period
        now = self._clock.now()
        if nxt <= now:
            nxt += period * (1 + int((now - nxt) // period))
        self._timer = None  # the timer that fired: spent, nothing to cancel
        self._arm_ticker(nxt)
        self._wake()

    def _wake_soon(self) -> None:
        # a channel send: the worker takes it when it next runs, not inside the sender's call,
        # so e.g. status generation finishes writing the status the triggered probe reads
        if self.next_tick is not None and not self.exited:
            self._clock.call_at(self._clock.now(), self._wake)

    def _wake(self) -> None:
        """The select: take the next pending wake-up unless a probe is running (or not started)."""
        if self.in_flight or self.exited or self.next_tick is None:
            return
        if self._stop:
            self._exit()
        elif self._manual_pending:
            self._manual_pending = False
            # a manual run restarts the period from now; no stale tick follows (§4.5)
            self._tick_pending = False
            now = self._clock.now()
            self._arm_ticker(tick_grid(now + float(self.spec.period_seconds), self.tick_align))
            self._do_probe(Trigger.KUBELET, now)
        elif self._user_pending:
            self._user_pending = False
            self._do_probe(Trigger.USER, self._clock.now())
        elif self._tick_pending:
            self._tick_pending = False
            self._do_probe(Trigger.TICK, self._tick_due)

    def _do_probe(self, trigger: Trigger, scheduled: float) -> None:
        now = self._clock.now()
        if self.paused and trigger is not Trigger.USER:
            self._emit(now, scheduled, trigger, skip=Skip.PAUSED)
            return
        try:
            step = self.begin(self._status_of(self.pod.uid), now)
        except Exception:  # a panic in doProbe is recovered; the worker goes on (§5.1)
            log.exception("doProbe failed for %s", self.key)
            return
        if not step.probe:
            self._emit(now, scheduled, trigger, skip=step.skip)
            if step.keep_going:
                self._wake()
            else:
                self._exit()
            return
        assert step.status is not None
        self.in_flight = True

        def done(outcome: ProbeOutcome | None) -> None:
            self.in_flight = False
            if self.exited:
                return
            if outcome is not None:
                try:
                    self.finish(outcome)
                except Exception:
                    log.exception("doProbe failed for %s", self.key)
                self._emit(now, scheduled, trigger, outcome=outcome)
            self._wake()

        if self.sync_cancelled and isinstance(self.spec.handler, ExecAction):
            # before 1.37 the worker probes under the pod sync's context, which the pod worker
            # cancels when the pod begins terminating: CRI ExecSync then fails at once
            cancelled = _cancelled_exec(self)
            self._clock.call_at(now, lambda: done(cancelled))
            return
        self._launch(self, step.status, done)

    def _exit(self) -> None:
        """Deferred clean-up of `run`: ticker, cached result, worker map (§3.6)."""
        if self.exited:
            return
        self.exited = True
        if self._timer is not None:
            self._timer.cancel()
            # the timer holds a bound method of this worker: drop the cycle, so a removed
            # worker is freed by reference counting, also when the collector is frozen
            self._timer = None
        if self.container_id:
            self.results.remove(self.container_id)
        if self._on_exit is not None:
            self._on_exit(self)

    def _emit(
        self,
        t: float,
        scheduled: float,
        trigger: Trigger,
        *,
        skip: Skip | None = None,
        outcome: ProbeOutcome | None = None,
    ) -> None:
        # a record no one is told of is not made, nor its finish read off the clock (a model
        # run without listener, the counterfactual's); an attempt's record is made as it ends
        if self._listener is None:
            return
        finished = self._clock.now() if outcome is not None else None
        # the probe's last part, reused where this record's steady values are the same
        record = ProbeRecord(
            key=self.key,
            t=t,
            scheduled_at=scheduled,
            trigger=trigger,
            container_id=self.container_id,
            skip=skip,
            outcome=outcome,
            finished_at=finished,
            result_run=self.result_run,
            last_result=self.last_result,
            published=self.published,
            on_hold=self.on_hold,
            next_tick=self.next_tick,
            paused=self.paused,
            steady=self._steady,
        )
        self._steady = record.steady
        self._listener(record)


def can_inherit_probe_state(api_status: PodStatus | None, name: str, container_id: str) -> bool:
    """`canInheritProbeState` (1.38): the container the API server last listed under this name
    is the one being probed. No listing, or no ID on either side, does not stop it."""
    seen = api_status.lookup(name) if api_status is not None else None
    if seen is None or not seen.container_id or not container_id:
        return True
    return seen.container_id == container_id


def _cancelled_exec(worker: Worker) -> ProbeOutcome:
    """An exec probe run under a cancelled context: every try errors, the outcome is thrown
    away (§5.11) after the "errored" event."""
    from probetui.prober.handlers import exec_argv

    handler = worker.spec.handler
    assert isinstance(handler, ExecAction)
    target = " ".join(exec_argv(handler, worker.container))

    async def once() -> Attempt:
        return Attempt("exec", target, Result.UNKNOWN, "", error=EXEC_CONTEXT_CANCELED)

    return run_to_completion(retry_on_error(worker.probe_type, once))
