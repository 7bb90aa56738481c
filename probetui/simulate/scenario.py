"""Load and validate the scenario `probetui simulate` runs, and its `--set` overrides.

Its model is `Scenario`, `App`, `Behaviour` and what they script: HTTP and exec answers per
window, exits, the preStop hook, the pod's deletion and kubelet restarts. Each error in a file
is one line naming the key; `--set` overrides of the scenario container's probes are
defaulted and validated as the API server treats a manifest. docs/simulate.md is the
language's reference.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from probetui.durations import DurationError, parse_duration
from probetui.spec.model import Container, ExecAction, HTTPGetAction, Pod, ProbeType

# 128 + SIGTERM: an app that dies of the signal, as most do
SIGTERM_EXIT = 143


class ScenarioError(Exception):
    """Signals a bad scenario; `str()` is one line naming the key."""


@dataclass(frozen=True, slots=True)
class HttpAnswer:
    """Says what the app answers an HTTP probe's request in [start, end) of virtual time: a status,
    a body and, for a redirect, the Location the kubelet's client reads."""

    start: float
    end: float
    status: int
    body: str = ""
    location: str | None = None


@dataclass(frozen=True, slots=True)
class ExecAnswer:
    """Says how an exec probe's command ends in [start, end): its exit code and its output."""

    start: float
    end: float
    exit_code: int = 1
    output: str = ""


@dataclass(frozen=True, slots=True)
class Exit:
    """Says the container's process exits by itself at `at` with `exit_code`, if it runs then."""

    at: float
    exit_code: int = 1


@dataclass(frozen=True, slots=True)
class Behaviour:
    """Says how the app answers one probe type (or all of them)."""

    ready_after: float = 0.0
    fail_between: tuple[tuple[float, float], ...] = ()
    latency_ms: float = 0.0
    # scripted answers, each in its window; outside them the app answers healthy or failing
    http: tuple[HttpAnswer, ...] = ()
    exec: tuple[ExecAnswer, ...] = ()

    def fails(self, t: float, since_start: float) -> bool:
        if since_start < self.ready_after:
            return True
        return any(a <= t < b for a, b in self.fail_between)

    def http_answer(self, t: float) -> HttpAnswer | None:
        """Return the scripted HTTP answer at t: the first window that holds it."""
        for a in self.http:
            if a.start <= t < a.end:
                return a
        return None

    def exec_answer(self, t: float) -> ExecAnswer | None:
        """Return the scripted exec answer at t: the first window that holds it."""
        for a in self.exec:
            if a.start <= t < a.end:
                return a
        return None


@dataclass(frozen=True, slots=True)
class App:
    start_after: float = 1.0
    exit_after: float | None = None
    exit_code: int = 1
    stop_seconds: float = 0.0
    default: Behaviour = field(default_factory=Behaviour)
    probes: dict[ProbeType, Behaviour] = field(default_factory=dict)
    exits: tuple[Exit, ...] = ()
    # how long the container's preStop hook runs before the kubelet sends SIGTERM
    pre_stop_seconds: float = 0.0
    # the exit code when the app stops on SIGTERM within the grace period (0: a clean exit)
    stop_exit_code: int = SIGTERM_EXIT

    def behaviour(self, probe_type: ProbeType) -> Behaviour:
        return self.probes.get(probe_type, self.default)


@dataclass(frozen=True, slots=True)
class Deletion:
    """Says the pod is deleted at `at`. `grace_period` is the delete's gracePeriodSeconds; None
    takes the pod's terminationGracePeriodSeconds, as the API server does."""

    at: float
    grace_period: int | None = None

    def deletion_grace_period(self, pod: Pod) -> int:
        """Return the pod's deletionGracePeriodSeconds as `CheckGracefulDelete` (pod strategy) sets
        it: the delete's value, else the pod's terminationGracePeriodSeconds, else 0."""
        if self.grace_period is not None:
            return self.grace_period
        return pod.termination_grace_period_seconds or 0


@dataclass(frozen=True, slots=True)
class Scenario:
    pod: Pod
    container: str
    duration: float = 600.0
    app: App = field(default_factory=App)
    # the other containers' apps, by name; a container in neither runs healthy and never exits
    apps: dict[str, App] = field(default_factory=dict)
    deletion: Deletion | None = None
    # the kubelet process restarts at each of these times; the containers go on running
    kubelet_restarts: tuple[float, ...] = ()
    # seeds the restarted kubelet's random start offsets of its workers
    seed: int = 0

    def app_of(self, name: str) -> App | None:
        """Return the app that container `name` runs: `app` for the scenario's, else its `apps`
        entry, else None (healthy at once, never exiting by itself)."""
        return self.app if name == self.container else self.apps.get(name)


_APP_KEYS = {
    "start_after",
    "ready_after",
    "fail_between",
    "latency_ms",
    "exit_after",
    "exit_code",
    "stop_seconds",
    "probes",
    "http",
    "exec",
    "exits",
    "pre_stop_seconds",
    "stop_exit_code",
}
_BEHAVIOUR_KEYS = {"ready_after", "fail_between", "latency_ms", "http", "exec"}
_TOP_KEYS = {
    "pod",
    "container",
    "duration",
    "app",
    "apps",
    "deletion",
    "kubelet_restarts",
    "seed",
}
_HTTP_KEYS = {"between", "status", "body", "location"}
_EXEC_KEYS = {"between", "exit_code", "output"}
_EXIT_KEYS = {"at", "exit_code"}
_DELETION_KEYS = {"at", "grace_period"}


def _number(value: object, key: str, *, minimum: float = 0.0, unit: float = 1.0) -> float:
    """Seconds (or `unit`s of a second: 1000 for a `_ms` key) from a bare number, or from a
    duration as Go writes it (`90s`, `1h30m`, `20ms`), as the command line's flags take it."""
    raw = value
    if isinstance(value, str):
        try:
            return parse_duration(value, allow_zero=True) * unit
        except DurationError:
            value = None  # refused below, in the words every key uses
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(
            f"{key}: expected a number of seconds or a duration such as 90s, got {raw!r}"
        )
    if value != value or value < minimum:
        raise ScenarioError(f"{key}: must be >= {minimum:g}, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        # an integer past a float's range: seconds no run reaches, as inf is
        return math.inf


# the longest scenario: a run's memory does not grow with it (the events are written as they
# come), its time does, and past a month the question is better asked of a shorter window
MAX_DURATION = 30 * 86400.0


def checked_duration(value: object, key: str = "duration") -> float:
    """Return a scenario's length in seconds, within what a run may take."""
    seconds = _number(value, key)
    if not math.isfinite(seconds) or seconds > MAX_DURATION:
        raise ScenarioError(
            f"{key}: at most {MAX_DURATION:.0f} s ({MAX_DURATION / 86400:g} days) of "
            f"virtual time, got {value!r}"
        )
    return seconds


def _window(w: object, key: str) -> tuple[float, float]:
    if not (isinstance(w, list) and len(w) == 2):
        raise ScenarioError(f"{key}: expected [start, end], got {w!r}")
    a = _number(w[0], f"{key}[0]")
    b = _number(w[1], f"{key}[1]")
    if b < a:
        raise ScenarioError(f"{key}: end {b:g} is before start {a:g}")
    return a, b


def _windows(value: object, key: str) -> tuple[tuple[float, float], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ScenarioError(f"{key}: expected a list of [start, end] windows, e.g. [[120, 180]]")
    return tuple(_window(w, f"{key}[{i}]") for i, w in enumerate(value))


def _integer(value: object, key: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ScenarioError(f"{key}: expected an integer {low}-{high}, got {value!r}")
    return value


def _text(value: object, key: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ScenarioError(f"{key}: expected a string, got {value!r}")
    return str(value)


def _entries(value: object, key: str, allowed: set[str], example: str) -> list[dict[str, Any]]:
    """Return a list of mappings with only `allowed` keys, each checked to name its index."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScenarioError(f"{key}: expected a list of mappings, e.g. {example}")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise ScenarioError(f"{key}[{i}]: expected a mapping, e.g. {example}")
        _unknown_keys(entry, allowed, f"{key}[{i}].")
    return value


def _http_answers(value: object, key: str) -> tuple[HttpAnswer, ...]:
    example = "[{between: [0, 60], status: 503, body: warming up}]"
    out = []
    for i, raw in enumerate(_entries(value, key, _HTTP_KEYS, example)):
        at = f"{key}[{i}]"
        if "between" not in raw or "status" not in raw:
            raise ScenarioError(f"{at}: needs between: [start, end] and status, e.g. {example}")
        start, end = _window(raw["between"], f"{at}.between")
        # a final response is 200-599: 1xx heads are interim, never an answer (net/http)
        status = _integer(raw["status"], f"{at}.status", 200, 599)
        location = raw.get("location")
        if location is not None:
            if not isinstance(location, str) or not location:
                raise ScenarioError(f"{at}.location: expected a URL or a path, got {location!r}")
            if not 300 <= status <= 399:
                raise ScenarioError(
                    f"{at}.location: goes with a 3xx status (the client reads a Location only "
                    f"on a redirect), got status {status}"
                )
        body = _text(raw.get("body"), f"{at}.body")
        out.append(HttpAnswer(start, end, status, body, location))
    return tuple(out)


def _exec_answers(value: object, key: str) -> tuple[ExecAnswer, ...]:
    example = "[{between: [0, 60], exit_code: 1, output: not ready}]"
    out = []
    for i, raw in enumerate(_entries(value, key, _EXEC_KEYS, example)):
        at = f"{key}[{i}]"
        if "between" not in raw:
            raise ScenarioError(f"{at}: needs between: [start, end], e.g. {example}")
        start, end = _window(raw["between"], f"{at}.between")
        code = _integer(raw.get("exit_code", 1), f"{at}.exit_code", 0, 255)
        out.append(ExecAnswer(start, end, code, _text(raw.get("output"), f"{at}.output")))
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
        latency_ms=_number(raw["latency_ms"], f"{key}.latency_ms", unit=1000.0)
        if "latency_ms" in raw
        else base.latency_ms,
        http=_http_answers(raw["http"], f"{key}.http") if "http" in raw else base.http,
        exec=_exec_answers(raw["exec"], f"{key}.exec") if "exec" in raw else base.exec,
    )


def _unknown_keys(raw: dict[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(raw) - allowed)
    if extra:
        raise ScenarioError(
            f"{where}{extra[0]}: unknown key (allowed: {', '.join(sorted(allowed))})"
        )


def _check_handlers(raw: dict[str, Any], key: str, container: Container, probes: list[Any]) -> None:
    """A scripted answer must meet a probe that asks for it: `http` an httpGet probe, `exec`
    an exec probe, among `probes` (the container's, or the one probe the key is under)."""
    for name, action, what in (("http", HTTPGetAction, "httpGet"), ("exec", ExecAction, "exec")):
        if name in raw and not any(isinstance(p.handler, action) for p in probes if p):
            raise ScenarioError(
                f"{key}.{name}: container {container.name!r} has no {what} probe here to "
                f"answer; script the handler its probe uses"
            )


def _exits(value: object, key: str, default_code: int) -> tuple[Exit, ...]:
    example = "[{at: 2m, exit_code: 0}]"
    out = []
    for i, raw in enumerate(_entries(value, key, _EXIT_KEYS, example)):
        if "at" not in raw:
            raise ScenarioError(f"{key}[{i}]: needs at: a time, e.g. {example}")
        at = _number(raw["at"], f"{key}[{i}].at")
        code = _integer(raw.get("exit_code", default_code), f"{key}[{i}].exit_code", 0, 255)
        out.append(Exit(at, code))
    return tuple(out)


def _app(raw: object, container: Container, where: str = "app", start_after: float = 1.0) -> App:
    if raw is None:
        return App(start_after=start_after)
    if not isinstance(raw, dict):
        raise ScenarioError(f"{where}: expected a mapping")
    _unknown_keys(raw, _APP_KEYS, f"{where}.")
    _check_handlers(raw, where, container, [container.probe(pt) for pt in ProbeType])
    default = _behaviour(raw, where)
    probes: dict[ProbeType, Behaviour] = {}
    per = raw.get("probes") or {}
    if not isinstance(per, dict):
        raise ScenarioError(f"{where}.probes: expected a mapping of liveness/readiness/startup")
    for name, body in per.items():
        try:
            pt = ProbeType.parse(str(name))
        except KeyError:
            raise ScenarioError(
                f"{where}.probes.{name}: unknown probe type (use liveness, readiness or startup)"
            ) from None
        if not isinstance(body, dict):
            raise ScenarioError(f"{where}.probes.{name}: expected a mapping")
        _unknown_keys(body, _BEHAVIOUR_KEYS, f"{where}.probes.{name}.")
        _check_handlers(body, f"{where}.probes.{name}", container, [container.probe(pt)])
        probes[pt] = _behaviour(body, f"{where}.probes.{name}", default)
    exit_after = raw.get("exit_after")
    exit_code = raw.get("exit_code", 1)
    if isinstance(exit_code, bool) or not isinstance(exit_code, int) or not 0 <= exit_code <= 255:
        raise ScenarioError(f"{where}.exit_code: expected an integer 0-255, got {exit_code!r}")
    pre_stop = _number(raw.get("pre_stop_seconds", 0.0), f"{where}.pre_stop_seconds")
    if "pre_stop_seconds" in raw and not container.has_pre_stop:
        raise ScenarioError(
            f"{where}.pre_stop_seconds: container {container.name!r} has no lifecycle.preStop "
            "hook, so the kubelet runs none; add one to the manifest or drop the key"
        )
    return App(
        start_after=_number(raw.get("start_after", start_after), f"{where}.start_after"),
        exit_after=None if exit_after is None else _number(exit_after, f"{where}.exit_after"),
        exit_code=exit_code,
        stop_seconds=_number(raw.get("stop_seconds", 0.0), f"{where}.stop_seconds"),
        default=default,
        probes=probes,
        exits=_exits(raw.get("exits"), f"{where}.exits", exit_code),
        pre_stop_seconds=pre_stop,
        stop_exit_code=_integer(
            raw.get("stop_exit_code", SIGTERM_EXIT), f"{where}.stop_exit_code", 0, 255
        ),
    )


def _apps(raw: object, pod: Pod, start_after: float) -> dict[str, App]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScenarioError("apps: expected a mapping of container name to app")
    out = {}
    for name, body in raw.items():
        container = pod.container(str(name))
        if container is None:
            names = ", ".join(c.name for c in (*pod.init_containers, *pod.containers))
            raise ScenarioError(f"apps.{name}: no container {name!r} in pod {pod.name} ({names})")
        out[str(name)] = _app(body, container, f"apps.{name}", start_after)
    return out


def _deletion(raw: object) -> Deletion | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        # `deletion: 5m` is the time alone
        return Deletion(_number(raw, "deletion"))
    _unknown_keys(raw, _DELETION_KEYS, "deletion.")
    if "at" not in raw:
        raise ScenarioError("deletion: needs at: a time, e.g. {at: 5m, grace_period: 30}")
    grace = None
    if raw.get("grace_period") is not None:
        seconds = _number(raw["grace_period"], "deletion.grace_period")
        # deletionGracePeriodSeconds is an integer of the API
        if seconds != int(seconds) or seconds > 2**31:
            raise ScenarioError(
                f"deletion.grace_period: whole seconds, as gracePeriodSeconds, got {seconds:g}"
            )
        grace = int(seconds)
    return Deletion(_number(raw["at"], "deletion.at"), grace)


def _restarts(raw: object, deletion: Deletion | None) -> tuple[float, ...]:
    if raw is None:
        return ()
    values = raw if isinstance(raw, list) else [raw]
    out = []
    for i, value in enumerate(values):
        t = _number(value, f"kubelet_restarts[{i}]")
        if deletion is not None and t >= deletion.at:
            # a kubelet that comes back to a pod being deleted goes straight to its
            # termination; that path is not played
            raise ScenarioError(
                f"kubelet_restarts[{i}]: {t:g} s is not before the deletion at "
                f"{deletion.at:g} s; a restart while the pod terminates is not simulated"
            )
        out.append(t)
    return tuple(sorted(out))


def load_scenario(path: str | Path) -> Scenario:
    import yaml

    from probetui.spec import yaml_safe

    # the command line names the file before each of these
    path = Path(path)
    try:
        text = yaml_safe.read_text(path)
    except OSError as e:
        raise ScenarioError(f"cannot read the scenario file ({e.strerror})") from None
    except yaml_safe.TextError as e:
        raise ScenarioError(str(e)) from None
    try:
        raw = yaml_safe.load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or e
        raise ScenarioError(f"{where}not valid YAML: {' '.join(str(problem).split())}") from None
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
    container = pod.container(str(name))
    if container is None:
        names = ", ".join(c.name for c in pod.probed_containers())
        raise ScenarioError(f"container: no container {name!r} in pod {pod.name} (has: {names})")
    duration = checked_duration(raw.get("duration", 600))
    if not pod.uid:
        pod = replace(pod, uid=f"sim-{pod.name}")
    apps_raw = raw.get("apps")
    app_raw = raw.get("app")
    if isinstance(apps_raw, dict) and container.name in apps_raw:
        if app_raw is not None:
            raise ScenarioError(
                f"apps.{container.name}: the scenario's container is scripted by app; give it "
                "in one place"
            )
        # the scenario's container scripted among the others: the same as `app`
        apps_raw = dict(apps_raw)
        app_raw = apps_raw.pop(container.name)
        app = _app(app_raw, container, f"apps.{container.name}")
    else:
        app = _app(app_raw, container)
    deletion = _deletion(raw.get("deletion"))
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ScenarioError(f"seed: expected an integer, got {seed!r}")
    apps = _apps(apps_raw, pod, app.start_after)
    restarts = _restarts(raw.get("kubelet_restarts"), deletion)
    if restarts and min(a.start_after for a in (app, *apps.values())) < 1.0:
        # StartedAt is kept in whole seconds and virtual time starts at 0: a start in the
        # first second has StartedAt 0, which the kubelet's restart checks read as unset
        raise ScenarioError(
            "kubelet_restarts: a container that starts within the first second has StartedAt "
            "0, which a restarted kubelet reads as never set; give start_after 1s or more"
        )
    return Scenario(
        pod=pod,
        container=str(name),
        duration=duration,
        app=app,
        apps=apps,
        deletion=deletion,
        kubelet_restarts=restarts,
        seed=seed,
    )


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
