"""Simulate benchmark: virtual seconds of kubelet decisions per wall second, for one pod.

    python -m benchmarks.simulate --hours 24 [--scenario steady|example|busy|PATH ...]
        [--repeat 3] [--json [PATH]]

Runs `probetui.simulate.simulate(scenario)` (the real manager and workers on `SimClock`,
the kubelet replica around them) for `--hours` of virtual time and times it with a wall clock.
Each scenario runs `--repeat` times after an untimed one-minute run (lazy imports); the median
wall time is reported (and the best). Only `simulate()` is timed: loading and parsing the
scenario are not.

Built-in scenarios, each one pod with one container:
- `steady`: startup (period 1 s, failureThreshold 60), liveness and readiness (period 10 s,
  the default); the app is ready after 20 s and its readiness fails for one minute an hour.
  The case the goal is about: 24 h in under 1 s.
- `example`: `examples/slow-start.yaml` as shipped (a liveness probe that kills an app that
  needs 45 s to start: it crash-loops with back-off for the whole run).
- `busy`: like steady, with all three probes at period 1 s (ten times the attempts).
A PATH runs that scenario file, with its duration replaced by `--hours`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.common import (
    BenchError,
    Parser,
    add_output_args,
    environment,
    format_table,
    positive,
    report,
)
from probetui.simulate import (
    Scenario,
    ScenarioError,
    load_scenario,
    parse_scenario,
    simulate,
)

NAME = "simulate"
GOAL_WALL_S = 1.0
GOAL_HOURS = 24.0
EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "slow-start.yaml"
DEFAULT_SCENARIOS = ("steady", "example")


def _inline(period: int) -> dict[str, Any]:
    def http(path: str, **kw: int) -> dict[str, Any]:
        return {"httpGet": {"path": path, "port": 8080}, **kw}

    return {
        "pod": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "one"},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "example/app:1",
                        "startupProbe": http("/started", periodSeconds=1, failureThreshold=60),
                        "livenessProbe": http("/healthz", periodSeconds=period),
                        "readinessProbe": http("/ready", periodSeconds=period),
                    }
                ]
            },
        },
        "container": "app",
        "app": {
            "start_after": 1,
            "ready_after": 20,
            "latency_ms": 5,
            # one minute of failing readiness an hour (filled in for the run's length)
            "probes": {"readiness": {"fail_between": []}},
        },
    }


def load(name: str, seconds: float) -> Scenario:
    """A built-in scenario by name, or a scenario file, lasting `seconds` of virtual time."""
    if name in ("steady", "busy"):
        raw = _inline(10 if name == "steady" else 1)
        hours = int(seconds // 3600)
        outages = [[h * 3600 + 1800, h * 3600 + 1860] for h in range(hours)]
        raw["app"]["probes"]["readiness"]["fail_between"] = outages
        raw["duration"] = seconds
        return parse_scenario(raw, source=f"<{name}>")
    path = EXAMPLE if name == "example" else Path(name)
    try:
        scenario = load_scenario(path)
    except ScenarioError as exc:
        raise BenchError(f"--scenario {name}: {exc}") from None
    return replace(scenario, duration=seconds)


def measure(name: str, seconds: float, repeat: int) -> dict[str, Any]:
    scenario = load(name, seconds)
    # untimed: a short run first, so lazy imports and first-call set-up are not counted
    simulate(replace(scenario, duration=min(seconds, 60.0)))
    walls: list[float] = []
    result: dict[str, Any] = {}
    for _ in range(repeat):
        started = time.perf_counter()
        result = simulate(scenario)
        walls.append(time.perf_counter() - started)
    events = result["events"]
    types = Counter(e["type"] for e in events)
    attempts = types.get("ProbeAttempt", 0)
    wall = statistics.median(walls)
    return {
        "scenario": name,
        "virtual_s": seconds,
        "wall_s": round(wall, 4),
        "wall_s_best": round(min(walls), 4),
        "wall_s_all": [round(w, 4) for w in walls],
        "virtual_s_per_wall_s": round(seconds / wall) if wall > 0 else None,
        "attempts": attempts,
        "events": len(events),
        "us_per_attempt": round(wall / attempts * 1e6, 1) if attempts else None,
        "event_types": dict(types),
        "summary": result["summary"],
        "goal_met": wall < GOAL_WALL_S * seconds / (GOAL_HOURS * 3600),
    }


def run(scenarios: list[str], hours: float, repeat: int) -> dict[str, Any]:
    seconds = hours * 3600
    rows = [measure(name, seconds, repeat) for name in scenarios]
    return {
        "benchmark": NAME,
        "config": {"scenarios": scenarios, "hours": hours, "repeat": repeat},
        "environment": environment(),
        "goal": f"{GOAL_HOURS:g} h of virtual time in under {GOAL_WALL_S:g} s of wall time",
        "results": rows,
    }


def table(r: dict[str, Any]) -> str:
    rows: list[tuple[str, str]] = [("goal", r["goal"] + " (scaled to the run's length)")]
    for s in r["results"]:
        rows += [
            (
                s["scenario"],
                f"{s['virtual_s'] / 3600:g} h in {s['wall_s']:.3f} s wall (median of "
                f"{len(s['wall_s_all'])}, best {s['wall_s_best']:.3f}): "
                f"{s['virtual_s_per_wall_s']:,} virtual s per wall s; "
                f"goal {'met' if s['goal_met'] else 'NOT met'}",
            ),
            (
                "",
                f"{s['attempts']:,} attempts, {s['events']:,} events, "
                f"{s['us_per_attempt']} us/attempt, restarts {s['summary']['restarts']}",
            ),
        ]
    return format_table("probetui simulate: virtual time per wall second, one pod", rows)


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m benchmarks.simulate", description=__doc__.split("\n\n")[0])
    p.add_argument("--hours", type=positive(float, "--hours"), default=24.0)
    p.add_argument(
        "--scenario",
        action="append",
        help="steady, example, busy or a scenario file; repeatable (default: steady, example)",
    )
    p.add_argument("--repeat", type=positive(int, "--repeat"), default=3)
    add_output_args(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return report(
        NAME,
        args,
        lambda: run(args.scenario or list(DEFAULT_SCENARIOS), args.hours, args.repeat),
        table,
    )


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["load", "main", "measure", "run", "table"]
