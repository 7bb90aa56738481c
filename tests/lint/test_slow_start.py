"""A container that takes 20 s to start under a liveness probe of 3 x 3 s and no startup probe:
killed at 9 s, every start, into CrashLoopBackOff. The advice for it, from what was observed
(every start killed before it finished), from a declared start, or from nothing at all, must
be a setting that, run through `probetui simulate` with the real 20 s start, ends the kills.

The observed history is the kubelet model's (virtual time): a real process that sleeps 20 s
before it serves would make this a minute-long test, and the model is what the local runtime
runs too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from probetui.cli import main
from probetui.lint import load, run, select
from probetui.simulate.scenario import App, Behaviour
from tests.lint.histories import findings, probe, simulate, web

START = 20.0  # the app answers its probes 20 s after each start
POD = web(liveness=probe(period=3, failure=3))
SLOW = App(start_after=1.0, default=Behaviour(ready_after=START))
LIVENESS_FIX = re.compile(r"^livenessProbe\.failureThreshold: (\d+)\b")
STARTUP_FIX = re.compile(r"^add a startupProbe with periodSeconds (\d+) and failureThreshold (\d+)")


def manifest(startup: dict[str, Any] | None = None, failure: int = 3) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "app",
        "image": "x",
        "livenessProbe": {
            "exec": {"command": ["check"]},
            "periodSeconds": 3,
            "failureThreshold": failure,
        },
    }
    if startup is not None:
        container["startupProbe"] = startup
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {"containers": [container]},
    }


def simulated(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    pod: dict[str, Any],
    overrides: tuple[str, ...] = (),
) -> dict[str, Any]:
    """`probetui simulate` of the pod with the real 20 s start, `--set` as given: its JSON."""
    scenario = tmp_path / "slow.yaml"
    scenario.write_text(
        json.dumps({"pod": pod, "duration": 300, "app": {"start_after": 1, "ready_after": START}})
    )
    argv = ["simulate", str(scenario), "--json"]
    for item in overrides:
        argv += ["--set", item]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_the_observed_advice_ends_the_kills_when_simulated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Observed for 2 min: every start killed at 7-9 s, none finished. The evidence rule says
    no start has finished, proposes a guess above the longest survival (9 s: twice it and at
    least 30 s more, 39 s, failureThreshold 13) and says it is one; the model rule proposes a
    startupProbe with the same budget. Each, simulated with the real 20 s start, kills no more
    (where failureThreshold 6, the 2 x budget once proposed, still killed at 18 s)."""
    events = simulate(POD, SLOW, 120)
    assert sum(1 for e in events if e.type == "Killing") >= 4
    (seen,), _ = findings(POD, events, 120, "observed-start-near-budget")
    assert "no start has finished yet (5 killed)" in seen.hit.message
    assert "the longest survived 9 s before its kill" in seen.hit.message
    assert "a budget of 39 s (failureThreshold 13) is a guess above it" in seen.hit.message
    match = LIVENESS_FIX.match(seen.fix)
    assert match is not None, seen.fix
    threshold = int(match.group(1))
    assert seen.hit.overrides == (f"liveness.failureThreshold={threshold}",)

    out = simulated(tmp_path, capsys, manifest(), seen.hit.overrides)
    assert sum(out["baseline"]["kills"].values()) >= 3  # the settings now: the crash loop
    assert out["summary"]["kills"] == {"liveness": 0, "readiness": 0, "startup": 0}
    assert out["summary"]["restarts"] == 0
    # what was proposed before: 2 x the 9 s budget, still short of the 20 s start
    short = simulated(tmp_path, capsys, manifest(), ("liveness.failureThreshold=6",))
    assert short["summary"]["kills"]["liveness"] > 0

    (model,), _ = findings(POD, events, 120, "startup-budget-too-short")
    match = STARTUP_FIX.match(model.fix)
    assert match is not None, model.fix
    period, failure = int(match.group(1)), int(match.group(2))
    startup = {"exec": {"command": ["check"]}, "periodSeconds": period, "failureThreshold": failure}
    out = simulated(tmp_path, capsys, manifest(startup))
    assert sum(out["summary"]["kills"].values()) == 0
    assert out["summary"]["first_ready_at"] is not None  # started: liveness runs from then on


def test_a_start_seen_to_finish_gets_a_budget_the_model_proves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under failureThreshold 8 (24 s) the 20 s start finishes, at 83% of the budget: the
    proposal is 1.5 x 20 s, failureThreshold 10, and the message carries the model's run of a
    20 s start with it."""
    pod = web(liveness=probe(period=3, failure=8))
    (f,), _ = findings(pod, simulate(pod, SLOW, 120), 120, "observed-start-near-budget")
    assert "took up to 20 s to start (1 start seen) against a budget of 24 s" in f.hit.message
    assert "simulate: a 20 s start: now no kill; with failureThreshold 10 no kill" in f.hit.message
    assert f.fix.startswith("livenessProbe.failureThreshold: 10")
    out = simulated(tmp_path, capsys, manifest(failure=8), f.hit.overrides)
    assert sum(out["summary"]["kills"].values()) == 0


def test_lint_without_evidence_says_how_to_declare_the_start_and_then_checks_it(
    tmp_path: Path,
) -> None:
    """The manifest alone: lint cannot know the start, and says how to declare it
    (start-time-undeclared, info). Declared, startup-budget-too-short fires with a startupProbe
    the model proved for a 20 s start."""
    bare = tmp_path / "pod.yaml"
    bare.write_text(json.dumps(manifest()))
    found = {f.rule.id: f for f in run(load([str(bare)]).objects, select())}
    assert "startup-budget-too-short" not in found
    info = found["start-time-undeclared"]
    assert "liveness kills 'app' when it has not answered 9 s after it starts" in info.hit.message
    assert 'probetui.io/start-seconds: "SECONDS"' in info.fix

    declared = manifest()
    declared["metadata"]["annotations"] = {"probetui.io/start-seconds": "20"}
    path = tmp_path / "declared.yaml"
    path.write_text(json.dumps(declared))
    found = {f.rule.id: f for f in run(load([str(path)]).objects, select())}
    assert "start-time-undeclared" not in found
    f = found["startup-budget-too-short"]
    assert "needs 20 s to start (declared in probetui.io/start-seconds)" in f.hit.message
    assert "is killed at 9 s by its liveness probe" in f.hit.message
    assert "the fix simulated: no kill, Ready at 21 s" in f.hit.message
    assert f.fix == "add a startupProbe with periodSeconds 3 and failureThreshold 8 or more"
