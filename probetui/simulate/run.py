"""`probetui simulate`: the kubelet's probe decisions for a scenario, in virtual time.

The real `Manager` and `Worker` run on `SimClock`, a synchronous timer heap; a probe "runs" by
asking the scenario how the app answers at that instant and completes after the answer's
latency (or the probe's timeout). Around the workers, `PodKubelet` (`kubelet/pod.py`, shared with
the local runtime) plays the parts of the kubelet that react to containers and published
results: start order of init containers and sidecars, status generation (Started, Ready and
the readiness manual trigger), kills with their grace period, restarts with CrashLoopBackOff.
`SimKubelet` runs it on `SimClock` with a simulated container backend and records the events.

Time model (from the issue): workers are created at t=0 and probe at once (no start-up jitter,
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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from errno import ECONNREFUSED
from pathlib import Path
from typing import Any

from probetui.kubelet.pod import PodKubelet
from probetui.probe import gotext
from probetui.probe.base import Attempt, Result
from probetui.prober.clock import SimClock, _Timer
from probetui.prober.manager import Manager
from probetui.prober.prober import (
    ProbeOutcome,
    outcome_label,
    retry_on_error,
    run_to_completion,
)
from probetui.prober.results import Update
from probetui.prober.status import PodStatus
from probetui.prober.worker import ProbeRecord, Worker
from probetui.spec.model import (
    Container,
    ContainerKind,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)

SIM_POD_IP = "10.0.0.10"  # only ever printed: a simulation dials nothing
SIGTERM_EXIT = 143  # 128 + SIGTERM: the app died of the signal
SIGKILL_EXIT = 137  # 128 + SIGKILL: the grace period ran out


class ScenarioError(Exception):
    """A bad scenario; `str()` is one line naming the key."""


# -- the scenario -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Behaviour:
    """How the app answers one probe type (or all of them)."""

    ready_after: float = 0.0
    fail_between: tuple[tuple[float, float], ...] = ()
    latency_ms: float = 0.0

    def fails(self, t: float, since_start: float) -> bool:
        if since_start < self.ready_after:
            return True
        return any(a <= t < b for a, b in self.fail_between)


@dataclass(frozen=True, slots=True)
class App:
    start_after: float = 1.0
    exit_after: float | None = None
    exit_code: int = 1
    stop_seconds: float = 0.0
    default: Behaviour = field(default_factory=Behaviour)
    probes: dict[ProbeType, Behaviour] = field(default_factory=dict)

    def behaviour(self, probe_type: ProbeType) -> Behaviour:
        return self.probes.get(probe_type, self.default)


@dataclass(frozen=True, slots=True)
class Scenario:
    pod: Pod
    container: str
    duration: float = 600.0
    app: App = field(default_factory=App)


_APP_KEYS = {
    "start_after",
    "ready_after",
    "fail_between",
    "latency_ms",
    "exit_after",
    "exit_code",
    "stop_seconds",
    "probes",
}
_BEHAVIOUR_KEYS = {"ready_after", "fail_between", "latency_ms"}
_TOP_KEYS = {"pod", "container", "duration", "app"}


def _number(value: object, key: str, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{key}: expected a number of seconds, got {value!r}")
    if value < minimum or math.isnan(value):
        raise ScenarioError(f"{key}: must be >= {minimum:g}, got {value!r}")
    return float(value)


def _windows(value: object, key: str) -> tuple[tuple[float, float], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ScenarioError(f"{key}: expected a list of [start, end] windows, e.g. [[120, 180]]")
    out = []
    for i, w in enumerate(value):
        if not (isinstance(w, list) and len(w) == 2):
            raise ScenarioError(f"{key}[{i}]: expected [start, end], got {w!r}")
        a = _number(w[0], f"{key}[{i}][0]")
        b = _number(w[1], f"{key}[{i}][1]")
        if b < a:
            raise ScenarioError(f"{key}[{i}]: end {b:g} is before start {a:g}")
        out.append((a, b))
    return tuple(out)


def _behaviour(raw: dict[str, Any], key: str, base: Behaviour | None = None) -> Behaviour:
    base = base or Behaviour()
    return Behaviour(
        ready_after=_number(raw["ready_after"], f"{key}.ready_after")
        if "ready_after" in raw
        else base.ready_after,
        fail_between=_windows(raw["fail_between"], f"{key}.fail_between")
        if "fail_between" in raw
        else base.fail_between,
        latency_ms=_number(raw["latency_ms"], f"{key}.latency_ms")
        if "latency_ms" in raw
        else base.latency_ms,
    )


def _unknown_keys(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise ScenarioError(
            f"{where}{extra[0]}: unknown key (allowed: {', '.join(sorted(allowed))})"
        )


def _app(raw: object) -> App:
    if raw is None:
        return App()
    if not isinstance(raw, dict):
        raise ScenarioError("app: expected a mapping")
    _unknown_keys(raw, _APP_KEYS, "app.")
    default = _behaviour(raw, "app")
    probes: dict[ProbeType, Behaviour] = {}
    per = raw.get("probes") or {}
    if not isinstance(per, dict):
        raise ScenarioError("app.probes: expected a mapping of liveness/readiness/startup")
    for name, body in per.items():
        try:
            pt = ProbeType.parse(str(name))
        except KeyError:
            raise ScenarioError(
                f"app.probes.{name}: unknown probe type (use liveness, readiness or startup)"
            ) from None
        if not isinstance(body, dict):
            raise ScenarioError(f"app.probes.{name}: expected a mapping")
        _unknown_keys(body, _BEHAVIOUR_KEYS, f"app.probes.{name}.")
        probes[pt] = _behaviour(body, f"app.probes.{name}", default)
    exit_after = raw.get("exit_after")
    exit_code = raw.get("exit_code", 1)
    if isinstance(exit_code, bool) or not isinstance(exit_code, int) or not 0 <= exit_code <= 255:
        raise ScenarioError(f"app.exit_code: expected an integer 0-255, got {exit_code!r}")
    return App(
        start_after=_number(raw.get("start_after", 1.0), "app.start_after"),
        exit_after=None if exit_after is None else _number(exit_after, "app.exit_after"),
        exit_code=exit_code,
        stop_seconds=_number(raw.get("stop_seconds", 0.0), "app.stop_seconds"),
        default=default,
        probes=probes,
    )


def load_scenario(path: str | Path) -> Scenario:
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise ScenarioError(f"{path}: cannot read the scenario file ({e.strerror})") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise ScenarioError(f"{path}:{where} not valid YAML") from None
    return parse_scenario(raw, base_dir=path.parent, source=str(path))


def parse_scenario(
    raw: object, *, base_dir: Path = Path("."), source: str = "<scenario>"
) -> Scenario:
    from probetui.spec.errors import ManifestError
    from probetui.spec.parse import load_pods, parse_pods

    if not isinstance(raw, dict):
        raise ScenarioError(f"{source}: expected a mapping with pod, container, duration, app")
    _unknown_keys(raw, _TOP_KEYS, "")
    pod_ref = raw.get("pod")
    try:
        if isinstance(pod_ref, str):
            pods = load_pods(base_dir / pod_ref)
        elif isinstance(pod_ref, dict):
            import json

            pods = parse_pods(json.dumps(pod_ref), source=f"{source} (inline pod)")
        else:
            raise ScenarioError("pod: expected a manifest path or an inline manifest")
    except ManifestError as e:
        raise ScenarioError(f"pod: {e}") from None
    pod = pods[0]
    name = raw.get("container")
    if name is None:
        if not pod.containers:
            raise ScenarioError("pod: the manifest has no containers")
        name = pod.containers[0].name
    if pod.container(str(name)) is None:
        names = ", ".join(c.name for c in pod.probed_containers())
        raise ScenarioError(f"container: no container {name!r} in pod {pod.name} (has: {names})")
    duration = _number(raw.get("duration", 600), "duration")
    if not pod.uid:
        pod = replace(pod, uid=f"sim-{pod.name}")
    return Scenario(pod=pod, container=str(name), duration=duration, app=_app(raw.get("app")))


_SETTABLE = {
    "initialDelaySeconds": "initial_delay_seconds",
    "timeoutSeconds": "timeout_seconds",
    "periodSeconds": "period_seconds",
    "successThreshold": "success_threshold",
    "failureThreshold": "failure_threshold",
    "terminationGracePeriodSeconds": "termination_grace_period_seconds",
}


def apply_overrides(scenario: Scenario, overrides: Iterable[str]) -> Scenario:
    """`--set liveness.failureThreshold=6` on the scenario's container, defaulted and validated
    as the API server treats the field in a manifest: a 0 takes SetDefaults_Probe's value (so
    `failureThreshold=0` is 3, `periodSeconds=0` is 10), then validation refuses what is left
    with the manifest's own messages."""
    from probetui.spec.errors import ManifestError
    from probetui.spec.parse import set_probe_defaults
    from probetui.spec.validate import check_pod

    container = scenario.pod.container(scenario.container)
    assert container is not None
    for item in overrides:
        lhs, sep, value = item.partition("=")
        probe_name, dot, fld = lhs.strip().partition(".")
        if not sep or not dot:
            raise ScenarioError(
                f"--set {item}: expected PROBE.FIELD=VALUE, e.g. liveness.failureThreshold=6"
            )
        try:
            pt = ProbeType.parse(probe_name)
        except KeyError:
            raise ScenarioError(
                f"--set {item}: unknown probe {probe_name!r} (liveness, readiness, startup)"
            ) from None
        attr = _SETTABLE.get(fld)
        if attr is None:
            raise ScenarioError(
                f"--set {item}: unknown field {fld!r} (one of {', '.join(_SETTABLE)})"
            )
        try:
            number = int(value)
        except ValueError:
            raise ScenarioError(f"--set {item}: {value!r} is not an integer") from None
        probe = container.probe(pt)
        if probe is None:
            raise ScenarioError(f"--set {item}: container {container.name!r} has no {pt.key} probe")
        new_probe = set_probe_defaults(replace(probe, **{attr: number}))
        container = replace(container, **{f"{pt.key}_probe": new_probe})
    pod = scenario.pod
    pod = replace(
        pod,
        containers=tuple(container if c.name == container.name else c for c in pod.containers),
        init_containers=tuple(
            container if c.name == container.name else c for c in pod.init_containers
        ),
    )
    try:
        check_pod(pod)
    except ManifestError as e:
        raise ScenarioError(f"--set: {e}") from None
    return replace(scenario, pod=pod)


# -- the kubelet around the workers -----------------------------------------------------


class _SimBackend:
    """Container instances in virtual time: each starts `start_after` s after it is asked for,
    the scenario's container exits by itself after `exit_after`, a kill ends it after the app's
    `stop_seconds` (143) or at the end of the grace period (137). A plain init container that
    is not the scenario's exits 0 as soon as it runs."""

    def __init__(self, sim: SimKubelet) -> None:
        self.sim = sim
        self.clock = sim.clock
        self.app = sim.app
        self.started_at: dict[str, float] = {}  # per container name: the newest instance's start
        self._exit_timers: dict[str, _Timer] = {}
        self._kill_timers: dict[str, _Timer] = {}

    def start(self, kubelet: PodKubelet, container: Container, restart_count: int) -> None:
        container_id = f"sim://{container.name}-{restart_count + 1}"
        self.clock.call_at(
            self.clock.now() + self.app.start_after,
            lambda: self._run(kubelet, container, container_id),
        )

    def _run(self, kubelet: PodKubelet, container: Container, container_id: str) -> None:
        now = self.clock.now()
        name = container.name
        self.started_at[name] = now
        if name == self.sim.scenario.container and self.app.exit_after is not None:
            code = self.app.exit_code
            self._exit_timers[container_id] = self.clock.call_at(
                now + self.app.exit_after, lambda: self._exit(kubelet, name, container_id, code)
            )
        elif container.kind is ContainerKind.INIT and not container.is_restartable_init:
            self._exit_timers[container_id] = self.clock.call_at(
                now, lambda: self._exit(kubelet, name, container_id, 0)
            )
        kubelet.started(name, container_id)

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
        stop = self.app.stop_seconds if name == self.sim.scenario.container else 0.0
        code, after = (SIGTERM_EXIT, stop) if stop < grace else (SIGKILL_EXIT, grace)
        self._kill_timers[container_id] = self.clock.call_at(
            self.clock.now() + after, lambda: self._exit(kubelet, name, container_id, code)
        )


class SimKubelet:
    """`PodKubelet` on virtual time with a simulated backend, plus the event list simulate prints:
    each attempt, each published result change and the probe events."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.pod = scenario.pod
        self.app = scenario.app
        self.clock = SimClock()
        self.events: list[dict[str, Any]] = []
        self.manager = Manager(
            self.clock,
            self._status_of,
            launch=self._launch,
            # up for long: no jitter (docs/kubelet-behaviour.md §4.2) and no restart grace (§8.1)
            start=-86400.0,
            listener=self._on_record,
        )
        self.backend = _SimBackend(self)
        self.kubelet = PodKubelet(
            self.pod, self.clock, self.manager, self.backend, self._on_event, pod_ip=SIM_POD_IP
        )
        for pt in ProbeType:
            results = self.manager.results_for(pt)
            results.subscribe(lambda u, pt=pt: self.clock.call_soon(lambda: self._on_update(pt, u)))

    # -- bookkeeping ------------------------------------------------------------------

    def _emit(self, type_: str, container: str, t: float | None = None, **fields: Any) -> None:
        self._on_event(type_, container, self.clock.now() if t is None else t, fields)

    def _on_event(self, type_: str, container: str, t: float, fields: dict[str, Any]) -> None:
        self.events.append({"t": round(t, 6), "type": type_, "container": container, **fields})

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
        self._emit(
            "ResultChanged", inst.spec.name, probe=probe_type.key, result=update.result.label
        )
        self.kubelet.on_result(probe_type, update.container_id, update.result)

    def _on_record(self, record: ProbeRecord) -> None:
        outcome = record.outcome
        if outcome is None:
            return  # skipped ticks are not part of the event list
        attempt = outcome.attempt
        assert attempt is not None
        kind = outcome_label(outcome)
        fields: dict[str, Any] = {
            "probe": record.key.probe_type.key,
            "outcome": kind,
            "latency_ms": attempt.latency_ms,
            "resultRun": record.result_run,
            "manual": record.manual,
            "trigger": record.trigger.value,
        }
        if attempt.timed_out:
            fields["timedOut"] = True
        self._emit("ProbeAttempt", record.key.container, t=record.t, **fields)
        if outcome.event is not None:
            self._emit(
                outcome.event.reason,
                record.key.container,
                t=record.finished_at,
                probe=record.key.probe_type.key,
                message=outcome.event.message,
            )

    def _launch(
        self, worker: Worker, status: PodStatus, done: Callable[[ProbeOutcome | None], None]
    ) -> None:
        now = self.clock.now()
        elapsed = 0.0

        async def once() -> Attempt:
            # a retry meets the app as it is once the tries before it have taken their time
            nonlocal elapsed
            attempt = self.answer(worker, status, now + elapsed)
            elapsed += attempt.latency
            return attempt

        outcome = run_to_completion(retry_on_error(worker.probe_type, once))
        self.clock.call_at(now + elapsed, lambda: done(outcome))

    def answer(self, worker: Worker, status: PodStatus, t: float) -> Attempt:
        """What the probe's handler would meet from the app at time t."""
        probe, container = worker.spec, worker.container
        if container.name == self.scenario.container:
            behaviour = self.app.behaviour(worker.probe_type)
            started_at = self.backend.started_at.get(container.name, 0.0)
            fails = behaviour.fails(t, t - started_at)
            latency = behaviour.latency_ms / 1000.0
        else:
            fails, latency = False, 0.0
        return synthetic_attempt(probe, container, status.pod_ip, fails=fails, latency=latency)

    def run(self) -> None:
        self.kubelet.start()
        self.clock.run_until(self.scenario.duration)
        self.events.sort(key=lambda e: e["t"])  # stable: same-instant order is causal order


def synthetic_attempt(
    probe: Probe, container: Container, pod_ip: str, *, fails: bool, latency: float
) -> Attempt:
    """An Attempt as each handler reports a healthy or broken app, texts as the kubelet's: the
    handlers' own, from `gotext`, so a synthetic attempt reads exactly as a real one."""
    from probetui.probe.util import PortResolutionError
    from probetui.prober.handlers import dial_address, exec_argv

    handler = probe.handler
    timeout = float(probe.timeout_seconds)
    timed_out = latency > timeout
    took = timeout if timed_out else latency
    try:
        if isinstance(handler, HTTPGetAction):
            url = _url(handler, *dial_address(handler, container, pod_ip))
            if timed_out:
                out = gotext.url_error(url, gotext.TIMEOUT_AWAITING_HEADERS)
                return Attempt("http", url, Result.FAILURE, out, latency=took, timed_out=True)
            if fails:
                out = gotext.http_status_failed(503)
                return Attempt("http", url, Result.FAILURE, out, latency=took, status_code=503)
            return Attempt(
                "http", url, Result.SUCCESS, "ok", latency=took, status_code=200, body="ok"
            )
        if isinstance(handler, TCPSocketAction):
            target = gotext.join_host_port(*dial_address(handler, container, pod_ip))
            if timed_out:
                out = gotext.op_error("dial", target, gotext.IO_TIMEOUT)
                return Attempt("tcp", target, Result.FAILURE, out, latency=took, timed_out=True)
            if fails:
                out = gotext.op_error("dial", target, gotext.syscall_error("connect", ECONNREFUSED))
                return Attempt("tcp", target, Result.FAILURE, out, latency=took)
            return Attempt("tcp", target, Result.SUCCESS, "", latency=took)
        if isinstance(handler, GRPCAction):
            target = gotext.join_host_port(*dial_address(handler, container, pod_ip))
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
            if fails:
                return Attempt("exec", target, Result.FAILURE, "", latency=took)
            return Attempt("exec", target, Result.SUCCESS, "", latency=took)
    except PortResolutionError as e:
        return Attempt(probe.handler_name or "none", "", Result.UNKNOWN, "", error=str(e))
    return Attempt("none", "", Result.UNKNOWN, error="missing probe handler")


def _url(action: HTTPGetAction, host: str, port: int) -> str:
    from probetui.probe.http import format_url

    return format_url(action.scheme.lower(), host, port, action.path)


# -- running and reporting ------------------------------------------------------------------


def summarize(events: list[dict[str, Any]], scenario: Scenario) -> dict[str, Any]:
    name = scenario.container
    kills = {pt.key: 0 for pt in ProbeType}
    restarts = 0
    unhealthy = 0
    first_ready: float | None = None
    ready_since: float | None = None
    ready_total = 0.0
    for e in events:
        if e["container"] != name:
            continue
        if e["type"] == "Killing" and e.get("probe"):
            kills[e["probe"]] += 1
        elif e["type"] == "ContainerStarted":
            restarts = e["restartCount"]
        elif e["type"] == "Unhealthy":
            unhealthy += 1
        elif e["type"] == "ReadyChanged":
            if e["ready"]:
                ready_since = e["t"]
                if first_ready is None:
                    first_ready = e["t"]
            elif ready_since is not None:
                ready_total += e["t"] - ready_since
                ready_since = None
    if ready_since is not None:
        ready_total += scenario.duration - ready_since
    return {
        "restarts": restarts,
        "kills": kills,
        "first_ready_at": first_ready,
        "ready_seconds": round(ready_total, 3),
        "unhealthy_events": unhealthy,
        "final_ready": ready_since is not None,
    }


def simulate(scenario: Scenario) -> dict[str, Any]:
    kubelet = SimKubelet(scenario)
    kubelet.run()
    return {"events": kubelet.events, "summary": summarize(kubelet.events, scenario)}


GLYPH = {"success": "●", "warning": "◐", "failure": "✖", "error": "?"}


def render_timeline(events: list[dict[str, Any]]) -> list[str]:
    """Human timeline: runs of identical attempts (and their events) folded into one line."""
    lines: list[str] = []
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    messages: dict[tuple[str, str], str] = {}

    def flush(key: tuple[str, str]) -> None:
        run = runs.pop(key, None)
        message = messages.pop(key, "")
        if not run:
            return
        first, last = run[0], run[-1]
        span = f"{first['t']:.1f}" if len(run) == 1 else f"{first['t']:.1f}-{last['t']:.1f}"
        glyph = GLYPH.get(first["outcome"], "?")
        count = f" x{len(run)}" if len(run) > 1 else ""
        extra = " (timeout)" if first.get("timedOut") else ""
        extra += " manual" if first.get("manual") else ""
        text = (
            f"{first['probe']:<9} {glyph} {first['outcome']}{count}{extra}, run {last['resultRun']}"
        )
        if message:
            text += f"  [{message}]"
        lines.append(f"{span:>15}  {first['container']:<10} {text}")

    for e in events:
        if e["type"] == "ProbeAttempt":
            key = (e["container"], e["probe"])
            run = runs.get(key)
            if run and (
                run[-1]["outcome"] != e["outcome"] or run[-1].get("timedOut") != e.get("timedOut")
            ):
                flush(key)
            runs.setdefault(key, []).append(e)
            continue
        if e["type"] in ("Unhealthy", "ProbeWarning") and (e["container"], e["probe"]) in runs:
            messages.setdefault((e["container"], e["probe"]), e["message"])
            continue
        for key in [k for k in runs if k[0] == e["container"]]:
            flush(key)
        lines.append(f"{e['t']:>15.1f}  {e['container']:<10} {_describe(e)}")
    for key in list(runs):
        flush(key)
    return lines


def _describe(e: dict[str, Any]) -> str:
    kind = e["type"]
    if kind == "ContainerStarted":
        return f"container started (restartCount {e['restartCount']})"
    if kind == "ContainerExited":
        return f"container exited with code {e['exitCode']} ({e['reason']})"
    if kind == "ResultChanged":
        return f"{e['probe']} result -> {e['result']}"
    if kind == "ReadyChanged":
        return "Ready" if e["ready"] else "NotReady"
    if kind == "StartedChanged":
        return "Started" if e["started"] else "not Started"
    if kind == "BackOff":
        return f"BackOff {gotext.go_duration(e['delay'])}: {e['message']}"
    return f"{kind}: {e.get('message', '')}"


def render_summary(summary: dict[str, Any], baseline: dict[str, Any] | None = None) -> list[str]:
    rows = [
        ("restarts", lambda s: str(s["restarts"])),
        ("kills (liveness)", lambda s: str(s["kills"]["liveness"])),
        ("kills (startup)", lambda s: str(s["kills"]["startup"])),
        (
            "first ready at",
            lambda s: "never" if s["first_ready_at"] is None else f"{s['first_ready_at']:g}s",
        ),
        ("ready seconds", lambda s: f"{s['ready_seconds']:g}"),
        ("Unhealthy events", lambda s: str(s["unhealthy_events"])),
        ("ready at the end", lambda s: "yes" if s["final_ready"] else "no"),
    ]
    if baseline is None:
        return [f"  {label:<18} {fmt(summary)}" for label, fmt in rows]
    out = [f"  {'':<18} {'baseline':>12} {'with --set':>12}"]
    out += [f"  {label:<18} {fmt(baseline):>12} {fmt(summary):>12}" for label, fmt in rows]
    return out
