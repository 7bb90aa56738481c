"""`probetui simulate MANIFEST` simulates a plain manifest (a Pod or any workload), no scenario.

Its app answers as a default model that a few flags change.

The default app runs a second after each start and answers every probe at once, healthy: what
the probes' settings alone do. `--ready-after`, `--fail-between` and `--latency` cover what a
scenario's `app` says most often; `describe_app` says in words which model ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from probetui.durations import DurationError, parse_duration
from probetui.simulate.scenario import App, Behaviour, Scenario, ScenarioError

DEFAULT_DURATION = 600.0


def looks_like_manifest(path: str | Path) -> bool:
    """Tell whether a YAML file holds Kubernetes objects rather than a scenario: its first document
    names a `kind` or `apiVersion` and no scenario `pod`. Only the first document's top-level
    keys are looked at, from its node graph (no alias is expanded); a file that cannot be read
    or parsed is left to the scenario reader to report."""
    import yaml

    try:
        with open(path, encoding="utf-8-sig") as f:
            node = next(yaml.compose_all(f), None)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return False
    if not isinstance(node, yaml.MappingNode):
        return False
    keys = {k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
    return "pod" not in keys and bool(keys & {"kind", "apiVersion"})


def fail_window(text: str) -> tuple[float, float]:
    """`2m-3m` or `120-180`: the [start, end) seconds of a window in which probes fail."""
    start, sep, end = text.partition("-")
    try:
        if not sep:
            raise DurationError(text)
        a = parse_duration(start, allow_zero=True)
        b = parse_duration(end, allow_zero=True)
    except DurationError:
        raise ScenarioError(
            f"--fail-between {text}: expected START-END, e.g. 2m-3m or 120-180"
        ) from None
    if b < a:
        raise ScenarioError(f"--fail-between {text}: its end is before its start")
    return a, b


def app_model(
    base: App,
    *,
    ready_after: float | None = None,
    fail_between: Sequence[tuple[float, float]] = (),
    latency: float | None = None,
) -> App:
    """`base` with the flags' changes to how every probe is answered."""
    default = base.default
    if ready_after is not None:
        default = replace(default, ready_after=ready_after)
    if fail_between:
        default = replace(default, fail_between=tuple(fail_between))
    if latency is not None:
        default = replace(default, latency_ms=latency * 1000.0)
    probes = {pt: _override(b, base.default, default) for pt, b in base.probes.items()}
    return replace(base, default=default, probes=probes)


def _override(probe: Behaviour, old_default: Behaviour, new_default: Behaviour) -> Behaviour:
    """A probe's own behaviour keeps what it set itself and takes the flags' changes."""
    changed = {
        name: getattr(new_default, name)
        for name in ("ready_after", "fail_between", "latency_ms")
        if getattr(new_default, name) != getattr(old_default, name)
    }
    return replace(probe, **changed)


def manifest_scenario(
    path: str | Path,
    *,
    pod: str | None = None,
    container: str | None = None,
    duration: float | None = None,
    app: App | None = None,
) -> Scenario:
    """Return the scenario for a plain manifest: its pod (`pod` names one where it holds several),
    its first probed container unless `container` names one, and the default app model."""
    from probetui.spec.errors import ManifestError
    from probetui.spec.parse import load_pods

    try:
        pods = load_pods(path)
    except ManifestError as e:
        raise ScenarioError(str(e)) from None
    if pod is not None:
        pods = [p for p in pods if p.name == pod]
        if not pods:
            raise ScenarioError(f"{path}: no pod or workload named {pod!r}")
    elif len(pods) > 1:
        names = ", ".join(p.name for p in pods)
        raise ScenarioError(f"{path} holds several pods ({names}): pick one with --pod NAME")
    chosen = pods[0]
    if container is None:
        probed = chosen.probed_containers() or chosen.containers
        if not probed:
            raise ScenarioError(f"{path}: pod {chosen.name} has no containers")
        container = probed[0].name
    elif chosen.container(container) is None:
        names = ", ".join(c.name for c in chosen.containers)
        raise ScenarioError(f"{path}: pod {chosen.name} has no container {container!r} ({names})")
    if not chosen.uid:
        chosen = replace(chosen, uid=f"sim-{chosen.name}")
    return Scenario(
        pod=chosen,
        container=container,
        duration=DEFAULT_DURATION if duration is None else duration,
        app=app or App(),
    )


def describe_app(app: App) -> str:
    """Return the app model in words, for the first lines of the output."""
    b = app.default
    parts = [f"runs {app.start_after:g}s after each start"]
    if b.ready_after:
        parts.append(f"fails every probe for {b.ready_after:g}s after it")
    if b.fail_between:
        spans = ", ".join(f"{a:g}-{z:g}s" for a, z in b.fail_between)
        parts.append(f"fails in {spans}")
    parts.append(f"answers in {b.latency_ms:g} ms" if b.latency_ms else "answers at once")
    if not b.ready_after and not b.fail_between:
        parts.append("always healthy")
    return ", ".join(parts)


__all__ = [
    "DEFAULT_DURATION",
    "app_model",
    "describe_app",
    "fail_window",
    "looks_like_manifest",
    "manifest_scenario",
]
