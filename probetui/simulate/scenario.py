"""The scenario `probetui simulate` runs: its model (`Scenario`, `App`, `Behaviour`), loading
and validating a scenario file (each error one line naming the key), and `--set` overrides of
the scenario container's probes, defaulted and validated as the API server treats a manifest.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from probetui.durations import DurationError, parse_duration
from probetui.spec.model import Pod, ProbeType


class ScenarioError(Exception):
    """A bad scenario; `str()` is one line naming the key."""


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
    """A scenario's length in seconds, within what a run may take."""
    seconds = _number(value, key)
    if not math.isfinite(seconds) or seconds > MAX_DURATION:
        raise ScenarioError(
            f"{key}: at most {MAX_DURATION:.0f} s ({MAX_DURATION / 86400:g} days) of "
            f"virtual time, got {value!r}"
        )
    return seconds


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
        latency_ms=_number(raw["latency_ms"], f"{key}.latency_ms", unit=1000.0)
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
    if pod.container(str(name)) is None:
        names = ", ".join(c.name for c in pod.probed_containers())
        raise ScenarioError(f"container: no container {name!r} in pod {pod.name} (has: {names})")
    duration = checked_duration(raw.get("duration", 600))
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
