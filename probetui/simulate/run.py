"""`probetui simulate` plays the kubelet's probe decisions for a scenario, in virtual time.

The real `Manager` and `Worker` run on `SimClock`, a synchronous timer heap; a probe "runs" by
asking the scenario how the app answers at that instant and completes after the answer's
latency (or the probe's timeout). Around the workers, `PodKubelet` (`kubelet/pod.py`, shared with
the local runtime) plays the parts of the kubelet that react to containers and published
results: start order of init containers and sidecars, status generation (Started, Ready and
the readiness manual trigger), kills with their grace period, restarts with CrashLoopBackOff.
`SimKubelet` runs it on `SimClock` with a simulated container backend and records the events.

Time model: workers are created at t=0 and probe at once (no start-up jitter,
the kubelet is long up); every container start takes `start_after`, and init containers start
one after another as the kubelet orders them (a plain init container other than the scenario's
exits 0 as soon as it runs); a container has no status until it runs; ticks stay on the grid
k * periodSeconds unless the readiness manual trigger resets it; a status generation happens
when a container starts or exits and whenever a probe result of the pod changes, except a
liveness result that is not Failure (the kubelet syncs on none of those); there is no periodic
resync. StartedAt and FinishedAt in the status are whole seconds, as the status manager keeps
them, while the app's own timing (ready_after, exit_after) runs from the exact start. The
kubelet's own latencies (PLEG relist up to 1 s, pod-worker queueing) are taken as zero: a kill
follows the published Failure at the same instant, a restart follows the exit at once unless
back-off delays it, and a delayed restart happens exactly when the back-off window ends (v1.35
requeues the pod for that moment; see `kubelet/backoff.py`).

What a scenario scripts beyond that (docs/simulate.md): HTTP answers go through the handlers'
own `exchange` (redirects as the kubelet's client takes them), exec answers carry their exit
code and output; exits come at their times; a kill runs the preStop hook before SIGTERM
(`kill_timing`); a deletion is `PodKubelet.delete` and a kubelet restart a new `Manager`
(`PodKubelet.kubelet_restarted`), both instantaneous, its workers' random start offsets drawn
from the scenario's `seed`. Pod-level events (`PodDeleted`, `KubeletRestarted`) name no
container; the kubelet's log line "Failed to trigger a manual run" is listed as `KubeletLog`.
"""

from __future__ import annotations

import bisect
import itertools
import math
import random
from collections.abc import Callable, Iterator
from errno import ECONNREFUSED
from typing import Any, ClassVar

from probetui.kubelet import kuberuntime as kr
from probetui.kubelet.pod import PodKubelet
from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile
from probetui.probe import gotext
from probetui.probe.base import MAX_OUTPUT_BYTES, Attempt, Result, decode
from probetui.prober.clock import SimClock, _Timer
from probetui.prober.handlers import exec_timeout_as_played
from probetui.prober.manager import Manager
from probetui.prober.prober import ProbeOutcome, retry_on_error, run_to_completion
from probetui.prober.results import ResultValue, Update
from probetui.prober.status import PodStatus
from probetui.prober.worker import ProbeRecord, Worker
from probetui.runtime.base import RuntimeEvent
from probetui.simulate.report import Summary
from probetui.simulate.scenario import SIGTERM_EXIT, App, ExecAnswer, HttpAnswer, Scenario
from probetui.spec.model import (
    Container,
    ContainerKind,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Probe,
    ProbeType,
    TCPSocketAction,
)
from probetui.timeline.events import (
    Event,
    EventType,
    record_event,
    result_changed_event,
    runtime_event,
)

# how much virtual time `SimKubelet.stream` runs between handing out the events made final
STREAM_STEP = 60.0
# UpdatePodStatus's log line when a readiness worker's trigger channel is already full
MANUAL_TRIGGER_DROPPED = "Failed to trigger a manual run"
SIM_POD_IP = "10.0.0.10"  # only ever printed: a simulation dials nothing
SIGKILL_EXIT = 137  # 128 + SIGKILL: the grace period ran out


# -- the kubelet around the workers -----------------------------------------------------


class _SimBackend:
    """Runs container instances in virtual time: each starts its app's `start_after` s after it is
    asked for and exits by itself `exit_after` s after each start or at each of its `exits`; a
    kill ends it as `killContainer` would: SIGTERM once the preStop hook has run, then the app's
    `stop_seconds` (`stop_exit_code`, 143 unless scripted) or SIGKILL at the end of the grace
    period (137). A container with no app of its own starts after the scenario app's
    `start_after` and stops at once on SIGTERM; a plain init container that is given no
    `exit_after` exits 0 as soon as it runs."""

    def __init__(self, sim: SimKubelet) -> None:
        self.sim = sim
        self.clock = sim.clock
        self.app = sim.app
        self.started_at: dict[str, float] = {}  # per container name: the newest instance's start
        self._exit_timers: dict[str, _Timer] = {}
        self._kill_timers: dict[str, _Timer] = {}

    def _app(self, name: str) -> App | None:
        return self.sim.scenario.app_of(name)

    def start(self, kubelet: PodKubelet, container: Container, restart_count: int) -> None:
        container_id = f"sim://{container.name}-{restart_count + 1}"
        app = self._app(container.name) or self.app
        self.clock.call_at(
            self.clock.now() + app.start_after,
            lambda: self._run(kubelet, container, container_id),
        )

    def _run(self, kubelet: PodKubelet, container: Container, container_id: str) -> None:
        now = self.clock.now()
        name = container.name
        self.started_at[name] = now
        app = self._app(name)
        if app is not None and app.exit_after is not None:
            code = app.exit_code
            self._exit_timers[container_id] = self.clock.call_at(
                now + app.exit_after, lambda: self._exit(kubelet, name, container_id, code)
            )
        elif container.kind is ContainerKind.INIT and not container.is_restartable_init:
            self._exit_timers[container_id] = self.clock.call_at(
                now, lambda: self._exit(kubelet, name, container_id, 0)
            )
        kubelet.started(name, container_id)

    def exit_now(self, kubelet: PodKubelet, name: str, code: int) -> None:
        """A scripted exit: the instance running now, if any, ends with `code`."""
        status = kubelet.instances[name].status
        if status is not None and status.running is not None:
            self._exit(kubelet, name, status.container_id, code)

    def _exit(self, kubelet: PodKubelet, name: str, container_id: str, code: int) -> None:
        # whichever comes first, the app's own exit or the kill's, ends the instance
        for timers in (self._exit_timers, self._kill_timers):
            timer = timers.pop(container_id, None)
            if timer is not None:
                timer.cancel()
        kubelet.exited(name, container_id, code)

    def kill(
        self, kubelet: PodKubelet, container: Container, container_id: str, grace: float
    ) -> None:
        name = container.name
        app = self._app(name)
        hook = 0.0
        if app is not None and container.has_pre_stop:
            # killContainer: the preStop hook first, within the grace period, then
            # StopContainer with what is left (`executePreStopHook`)
            timing = kr.kill_timing(
                kubelet.pod,
                container,
                kubelet.instances[name].kill_reason,
                deletion_grace_period=kubelet.pod.deletion_grace_period_seconds,
                pre_stop_seconds=app.pre_stop_seconds,
            )
            hook, grace = timing.pre_stop, timing.grace
        stop = app.stop_seconds if app is not None else 0.0
        stopped = app.stop_exit_code if app is not None else SIGTERM_EXIT
        code, after = (stopped, stop) if stop < grace else (SIGKILL_EXIT, grace)
        self._kill_timers[container_id] = self.clock.call_at(
            self.clock.now() + hook + after, lambda: self._exit(kubelet, name, container_id, code)
        )


class SimKubelet:
    """Runs `PodKubelet` on virtual time with a simulated backend, plus the event list
    simulate prints: each attempt, each published result change, and what the played kubelet said
    (its starts, kills and probe events), as the engine's `Event`s built by the same encoder."""

    # whether the run lists what the probes did (each attempt, each published result change,
    # the prober's Unhealthy and ProbeWarning events) beside what the kubelet did: simulate
    # prints them; a run read only for its kills, starts and Ready changes (the
    # counterfactual's) builds none of them, which changes no decision (none is read back)
    lists_probes: ClassVar[bool] = True

    def __init__(self, scenario: Scenario, profile: KubeletProfile = DEFAULT_PROFILE) -> None:
        self.scenario = scenario
        self.pod = scenario.pod
        self.app = scenario.app
        self.profile = profile
        self.clock = SimClock()
        self.events: list[Event] = []
        self._attempts = itertools.count()
        self._in_flight: dict[int, float] = {}  # attempts under way: their start
        # liveness or readiness attempts on an instance whose startup probe had not passed:
        # (t, container, probe), the first of each instance (1.35-1.37 only, see `notes`)
        self.early: list[tuple[float, str, str]] = []
        self._early_seen: set[str] = set()
        # the random start offsets of a restarted kubelet's workers, the same on every run
        self.rng = random.Random(scenario.seed)
        # up for long: no jitter (docs/kubelet-behaviour.md §4.2) and no restart grace (§8.1)
        self.manager = self._new_manager(start=-86400.0)
        self.backend = _SimBackend(self)
        self.kubelet = PodKubelet(
            self.pod,
            self.clock,
            self.manager,
            self.backend,
            self._on_event,
            pod_ip=SIM_POD_IP,
            prober_events=self.lists_probes,
        )

    def _new_manager(self, start: float) -> Manager:
        """Return a probe manager as a kubelet process makes one when it starts, at `start`."""
        manager = Manager(
            self.clock,
            self._status_of,
            launch=self._launch,
            start=start,
            listener=self._on_record if self.lists_probes else None,
            rng=self.rng,
            profile=self.profile,
        )
        manager.on_dropped_trigger = self._dropped_trigger
        # before the kubelet's own subscription: a result change is listed before what the
        # kubelet does about it at the same instant
        if self.lists_probes:
            for pt in ProbeType:
                results = manager.results_for(pt)
                results.subscribe(
                    lambda u, pt=pt: self.clock.call_soon(lambda: self._on_update(pt, u))
                )
        return manager

    # -- what the scenario does to the pod -------------------------------------------------

    def _begin(self) -> None:
        """The pod's first sync, and the scenario's exits, deletion and kubelet restarts put
        on the clock (those past the end never come)."""
        end = self.scenario.duration
        for c in (*self.pod.init_containers, *self.pod.containers):
            app = self.scenario.app_of(c.name)
            for ex in app.exits if app is not None else ():
                if ex.at <= end:
                    self.clock.call_at(
                        ex.at,
                        lambda n=c.name, code=ex.exit_code: self.backend.exit_now(
                            self.kubelet, n, code
                        ),
                    )
        for t in self.scenario.kubelet_restarts:
            if t <= end:
                self.clock.call_at(t, self._restart_kubelet)
        deletion = self.scenario.deletion
        if deletion is not None and deletion.at <= end:
            self.clock.call_at(deletion.at, self._delete)
        self.kubelet.start()

    def _restart_kubelet(self) -> None:
        self._on_event("KubeletRestarted", "", self.clock.now(), {})
        self.manager = self._new_manager(start=self.clock.now())
        self.kubelet.kubelet_restarted(self.manager)

    def _delete(self) -> None:
        assert self.scenario.deletion is not None
        grace = self.scenario.deletion.deletion_grace_period(self.pod)
        if self.kubelet.status.phase in ("Succeeded", "Failed"):
            grace = 0  # CheckGracefulDelete: a pod already terminal goes at once
        self._on_event(EventType.POD_DELETED, "", self.clock.now(), {"gracePeriod": grace})
        self.kubelet.delete(grace)

    def _dropped_trigger(self, worker: Worker) -> None:
        # UpdatePodStatus logs it (klog Info) when the worker's trigger channel is full: a
        # kubelet log line, not an event. The channel stays full only while the worker is
        # not in its select: probing, or asleep before its loop (a restarted kubelet's
        # offset). A worker idle in its select takes a trigger as it is sent; that two syncs
        # of one instant leave it queued here is this model's, so that drop is not listed.
        if not worker.in_flight and worker.next_tick is not None:
            return
        self._on_event(
            "KubeletLog",
            worker.container.name,
            self.clock.now(),
            {"probe": worker.probe_type, "message": MANUAL_TRIGGER_DROPPED},
        )

    # -- bookkeeping ------------------------------------------------------------------

    def _on_event(self, type_: str, container: str, t: float, fields: dict[str, Any]) -> None:
        self.events.append(
            runtime_event(RuntimeEvent.played(self.pod, type_, container, t, fields))
        )

    def _status_of(self, uid: str) -> PodStatus | None:
        return self.kubelet.status if uid == self.pod.uid else None

    @property
    def status(self) -> PodStatus:
        return self.kubelet.status

    # -- results and probes --------------------------------------------------------------

    def _on_update(self, probe_type: ProbeType, update: Update) -> None:
        inst = self.kubelet.container_by_id(update.container_id)
        if inst is None:
            return
        self.events.append(
            result_changed_event(
                self.pod,
                inst.spec.name,
                probe_type,
                update.result,
                update.container_id,
                self.clock.now(),
            )
        )

    def _on_record(self, record: ProbeRecord) -> None:
        if record.outcome is not None:  # skipped ticks are not part of the event list
            self.events.append(record_event(self.pod, record))
            self._before_startup(record)

    def _before_startup(self, record: ProbeRecord) -> None:
        """Note a liveness or readiness attempt on an instance whose startup probe has not
        passed: the kubelet's worker never runs one (§5.10) unless the status said Started
        from the start, which 1.35-1.37 do after a probe kill (`started_kept_across_restart`)."""
        key = record.key
        if key.probe_type is ProbeType.STARTUP or record.container_id in self._early_seen:
            return
        spec = self.pod.container(key.container)
        if spec is None or spec.startup_probe is None:
            return
        if self.manager.startup.get(record.container_id) is ResultValue.SUCCESS:
            return
        self._early_seen.add(record.container_id)
        self.early.append((record.t, key.container, key.probe_type.key))

    def notes(self) -> list[str]:
        """Tell what the output should say about the release played where it decided something."""
        out = []
        for t, container, _ in self.early:
            out.append(
                f"{self.profile.describe()}: from {t:g}s the liveness and readiness probes of "
                f"{container} ran before its startup probe had passed, because a container "
                "restarted in the sync that killed it for a probe keeps Started from the old "
                "one (1.35 to 1.37; 1.38 keeps it only for the same container ID; "
                "docs/kubelet-versions.md)"
            )
        return out

    def _launch(
        self, worker: Worker, status: PodStatus, done: Callable[[ProbeOutcome | None], None]
    ) -> None:
        now = self.clock.now()
        elapsed = 0.0

        async def once() -> Attempt:
            # a retry meets the app as it is once the tries before it have taken their time
            nonlocal elapsed
            attempt = exec_timeout_as_played(
                self.answer(worker, status, now + elapsed), self.profile
            )
            elapsed += attempt.latency
            return attempt

        outcome = run_to_completion(retry_on_error(worker.probe_type, once))
        # the attempt's record comes when it ends, stamped with its start: until then no
        # event from `now` on is final (`stream`)
        token = next(self._attempts)
        self._in_flight[token] = now

        def end() -> None:
            del self._in_flight[token]
            done(outcome)

        self.clock.call_at(now + elapsed, end)

    def answer(self, worker: Worker, status: PodStatus, t: float) -> Attempt:
        """Tell what the probe's handler would meet from the app at time t."""
        probe, container = worker.spec, worker.container
        app = self.scenario.app_of(container.name)
        if app is None:
            return synthetic_attempt(
                probe, container, status.pod_ip, fails=False, latency=0.0, profile=self.profile
            )
        behaviour = app.behaviour(worker.probe_type)
        started_at = self.backend.started_at.get(container.name, 0.0)
        return synthetic_attempt(
            probe,
            container,
            status.pod_ip,
            fails=behaviour.fails(t, t - started_at),
            latency=behaviour.latency_ms / 1000.0,
            http=behaviour.http_answer(t),
            exec_answer=behaviour.exec_answer(t),
            profile=self.profile,
        )

    def run(self) -> None:
        self._begin()
        self.clock.run_until(self.scenario.duration)
        self.events.sort(key=lambda e: e.t)  # stable: same-instant order is causal order

    def stream(self, step: float = STREAM_STEP) -> Iterator[Event]:
        """`run`, yielding the events in the order `run` leaves them as soon as no event still
        to come can sort before them, and keeping none: what the run holds is what is in
        flight, however long the scenario. Virtual time advances as the iterator is read."""
        self._begin()
        end = self.scenario.duration
        t = self.clock.now()
        while True:
            t = min(end, t + step)
            self.clock.run_until(t)
            # every event still to come is stamped at or after the start of an attempt in
            # flight, or now (the kubelet's, result changes, an attempt's end)
            horizon = math.inf if t >= end else min(self._in_flight.values(), default=t)
            self.events.sort(key=lambda e: e.t)  # stable, as `run`'s
            final = bisect.bisect_left(self.events, horizon, key=lambda e: e.t)
            yield from self.events[:final]
            del self.events[:final]
            if t >= end:
                return

    def listed(self) -> list[dict[str, Any]]:
        """Return the event list as `probetui simulate` prints it."""
        return [simulated_view(e) for e in self.events]


# what simulate lists of the shadow's events: what the scenario's answers decide (the handler's
# target and texts are synthetic in a simulation, and its containers' IDs made up)
_LISTED = {
    EventType.PROBE_ATTEMPT: (
        "outcome",
        "latency_ms",
        "resultRun",
        "manual",
        "trigger",
        "timedOut",
    ),
    EventType.RESULT_CHANGED: ("result",),
    EventType.UNHEALTHY: ("message",),
    EventType.PROBE_WARNING: ("message",),
}


def simulated_view(event: Event) -> dict[str, Any]:
    """Return one event as `probetui simulate` lists it: time, type, container, probe, then
    fields."""
    out: dict[str, Any] = {"t": round(event.t, 6), "type": event.type, "container": event.container}
    if event.probe is not None:
        out["probe"] = event.probe
    keys = _LISTED.get(event.type)
    fields = event.fields
    out.update(fields if keys is None else {k: fields[k] for k in keys if k in fields})
    return out


def synthetic_attempt(
    probe: Probe,
    container: Container,
    pod_ip: str,
    *,
    fails: bool,
    latency: float,
    http: HttpAnswer | None = None,
    exec_answer: ExecAnswer | None = None,
    profile: KubeletProfile = DEFAULT_PROFILE,
) -> Attempt:
    """Return an Attempt as each handler reports a healthy or broken app, texts as the kubelet's:
    the handlers' own, from `gotext`, so a synthetic attempt reads exactly as a real one. A scripted
    `http` or `exec_answer` is what the app answers instead, unless the attempt times out first; an
    HTTP answer goes through the handlers' own `exchange` (redirects followed or not as the
    kubelet's client does)."""
    from probetui.probe.util import PortResolutionError
    from probetui.prober.handlers import dial_address, exec_argv

    handler = probe.handler
    timeout = float(probe.timeout_seconds)
    timed_out = latency > timeout
    took = timeout if timed_out else latency
    try:
        if isinstance(handler, HTTPGetAction):
            url = _url(handler, *dial_address(handler, container, pod_ip, profile))
            if timed_out:
                out = gotext.url_error(url, gotext.TIMEOUT_AWAITING_HEADERS)
                return Attempt("http", url, Result.FAILURE, out, latency=took, timed_out=True)
            if http is not None:
                return scripted_http(url, http, fails=fails, latency=took)
            if fails:
                out = gotext.http_status_failed(503)
                return Attempt("http", url, Result.FAILURE, out, latency=took, status_code=503)
            return Attempt(
                "http", url, Result.SUCCESS, "ok", latency=took, status_code=200, body="ok"
            )
        if isinstance(handler, TCPSocketAction):
            target = gotext.join_host_port(*dial_address(handler, container, pod_ip, profile))
            if timed_out:
                out = gotext.op_error("dial", target, gotext.IO_TIMEOUT)
                return Attempt("tcp", target, Result.FAILURE, out, latency=took, timed_out=True)
            if fails:
                out = gotext.op_error("dial", target, gotext.syscall_error("connect", ECONNREFUSED))
                return Attempt("tcp", target, Result.FAILURE, out, latency=took)
            return Attempt("tcp", target, Result.SUCCESS, "", latency=took)
        if isinstance(handler, GRPCAction):
            target = gotext.join_host_port(*dial_address(handler, container, pod_ip, profile))
            if timed_out:
                out = gotext.grpc_rpc_timeout(timeout)
                return Attempt("grpc", target, Result.FAILURE, out, latency=took, timed_out=True)
            if fails:
                out = gotext.grpc_unhealthy("NOT_SERVING")
                return Attempt("grpc", target, Result.FAILURE, out, latency=took)
            return Attempt("grpc", target, Result.SUCCESS, gotext.GRPC_HEALTHY, latency=took)
        if isinstance(handler, ExecAction):
            argv = exec_argv(handler, container)
            target = " ".join(argv)
            if timed_out:
                out = gotext.exec_timed_out(argv, timeout)
                return Attempt("exec", target, Result.FAILURE, out, latency=took, timed_out=True)
            if exec_answer is not None:
                # pkg/probe/exec: exit 0 is Success, any other code Failure, the output (at
                # most 10 KiB, stdout then stderr) both times
                code = exec_answer.exit_code
                result = Result.SUCCESS if code == 0 else Result.FAILURE
                out = decode(exec_answer.output.encode()[:MAX_OUTPUT_BYTES])
                return Attempt("exec", target, result, out, latency=took)
            if fails:
                return Attempt("exec", target, Result.FAILURE, "", latency=took)
            return Attempt("exec", target, Result.SUCCESS, "", latency=took)
    except PortResolutionError as e:
        return Attempt(probe.handler_name or "none", "", Result.UNKNOWN, "", error=str(e))
    return Attempt("none", "", Result.UNKNOWN, error="missing probe handler")


class _ScriptedResponse:
    """Holds one hop's response as the scenario scripts it, for `exchange`."""

    def __init__(self, status_code: int, body: str, location: str | None) -> None:
        self.status_code = status_code
        self._body = body.encode()
        self._location = location

    def header_values(self, name: bytes) -> list[str]:
        if name == b"location" and self._location is not None:
            return [self._location]
        if name == b"content-length":
            return [str(len(self._body))]
        return []

    async def read_at_most(self, limit: int, sink: bytearray) -> str | None:
        sink += self._body[:limit]
        return None

    async def close(self) -> None:
        return None


class _ScriptedHops:
    """Plays the app's answers hop by hop: the probe's own URL answers as scripted (so a Location
    back to it loops), any other URL the client follows to answers as the app's health says
    (200 "ok", or 503 while it fails)."""

    def __init__(self, url: str, answer: HttpAnswer, fails: bool) -> None:
        self.url = url
        self.answer = answer
        self.fails = fails

    async def send(self, url: str, headers: object, host: str) -> _ScriptedResponse:
        if url == self.url:
            a = self.answer
            return _ScriptedResponse(a.status, a.body, a.location)
        return (
            _ScriptedResponse(503, "", None) if self.fails else _ScriptedResponse(200, "ok", None)
        )

    def header_map(self) -> dict[str, list[str]]:
        return {}


def scripted_http(url: str, answer: HttpAnswer, *, fails: bool, latency: float) -> Attempt:
    """Return an HTTP attempt against a scripted answer, through the handlers' `exchange`: the
    kubelet's CheckRedirect (`RedirectChecker(false)`: a Location on the same hostname is
    followed, another host's 3xx is the answer, a Warning), then DoHTTPProbe's verdict."""
    from probetui.probe.exchange import Progress, exchange

    progress = Progress(url)
    outcome = run_to_completion(exchange(_ScriptedHops(url, answer, fails), url, False, progress))
    return progress.attempt(url, outcome, latency, 0.0, False)


def _url(action: HTTPGetAction, host: str, port: int) -> str:
    from probetui.probe.url import format_url

    return format_url(action.scheme.lower(), host, port, action.path)


def simulate_stream(
    scenario: Scenario,
    sink: Callable[[dict[str, Any]], None],
    profile: KubeletProfile = DEFAULT_PROFILE,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """`simulate` handing each listed event to `sink` as soon as it is final, keeping none:
    memory does not grow with the duration. Returns the summary; `notes` gets what the output
    should say about the release played where it decided something."""
    summary = Summary(scenario)
    kubelet = SimKubelet(scenario, profile)
    for event in kubelet.stream():
        view = simulated_view(event)
        summary.add(view)
        sink(view)
    if notes is not None:
        notes.extend(kubelet.notes())
    return summary.result(phase=kubelet.status.phase)


def simulate(scenario: Scenario, profile: KubeletProfile = DEFAULT_PROFILE) -> dict[str, Any]:
    """Run `scenario` against the kubelet `profile` plays: the events, their summary, the
    release and gates played, and notes where the release decided something."""
    events: list[dict[str, Any]] = []
    notes: list[str] = []
    summary = simulate_stream(scenario, events.append, profile, notes)
    return {
        "events": events,
        "summary": summary,
        "kubelet": kubelet_json(profile),
        "notes": notes,
    }


def kubelet_json(profile: KubeletProfile) -> dict[str, Any]:
    """Return the release played and the gates set away from its defaults, for `--json`."""
    return {"version": profile.version, "featureGates": dict(profile.changed)}
