"""Pin the evidence rules: a hit and a near miss each, on synthetic histories
(`simulate`'s kubelet model, edited where the model's app cannot answer that way) and on real
recording files read back through `probetui lint --recording`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probetui.cli import main
from probetui.lint import RULES, run, select
from probetui.lint.observed import from_recording, recorded_objects
from probetui.record.reader import open_recording
from probetui.simulate.scenario import App, Behaviour
from probetui.spec.model import ProbeType
from tests.lint.histories import (
    divergence,
    edit_attempts,
    findings,
    probe,
    simulate,
    web,
    write_recording,
)

EVIDENCE = sorted(r.id for r in RULES.values() if r.needs_evidence)
TIMED_OUT = {"outcome": "failure", "timedOut": True, "latency_ms": 1000.0}


def test_the_evidence_rules_and_their_explanations() -> None:
    assert EVIDENCE == [
        "observed-latency-near-timeout",
        "observed-start-near-budget",
        "probe-errors-dropped",
        "readiness-flapping",
        "shadow-diverges",
    ]
    for rule_id in EVIDENCE:
        rule = RULES[rule_id]
        assert "--recording" in rule.explain and rule.credit


def test_without_evidence_the_evidence_rules_do_not_run() -> None:
    pod = web(readiness=probe(period=5))
    events = edit_attempts(simulate(pod, App(), 600), "readiness", 10, TIMED_OUT)
    found, obj = findings(pod, events, 600, "observed-latency-near-timeout")
    assert found
    assert [f for f in run([obj], select()) if f.rule.needs_evidence] == []


# -- latency -----------------------------------------------------------------------------------


def test_latency_hit_counts_the_attempts_that_time_out_and_proposes_a_timeout() -> None:
    """Every 20th readiness attempt (5%) timed out at 1 s: the message says the share, the
    proposal is timeoutSeconds 2, and the counterfactual replays it (a longer timeout cannot
    say how long a timed-out answer would have taken, so those answers are inferred)."""
    pod = web(readiness=probe(period=5, failure=3))
    events = edit_attempts(simulate(pod, App(), 600), "readiness", 20, TIMED_OUT)
    (f,), _ = findings(pod, events, 600, "observed-latency-near-timeout")
    assert "5.8% of 121 attempts would time out at 1 s" in f.hit.message
    assert f.hit.overrides == ("readiness.timeoutSeconds=2",)
    assert f.fix.startswith("timeoutSeconds: 2")
    # replayed over the 4 min up to a minute past the last timeout (lint's bounded replay)
    assert "counterfactual (pod web, 4 min) with readiness.timeoutSeconds=2" in f.hit.message
    assert f.hit.path.endswith("readinessProbe.timeoutSeconds")


def test_latency_hit_on_a_p99_near_the_timeout_without_timeouts() -> None:
    pod = web(liveness=probe(period=5, timeout=1))
    app = App(probes={ProbeType.LIVENESS: Behaviour(latency_ms=900.0)})
    (f,), _ = findings(pod, simulate(pod, app, 600), 600, "observed-latency-near-timeout")
    assert "p99 latency 900 ms of 119 attempts is 90% of timeoutSeconds 1" in f.hit.message


def test_latency_near_miss_half_the_timeout_and_too_few_attempts() -> None:
    pod = web(readiness=probe(period=5))
    app = App(probes={ProbeType.READINESS: Behaviour(latency_ms=700.0)})
    assert findings(pod, simulate(pod, app, 600), 600, "observed-latency-near-timeout")[0] == []
    # 16 attempts, all timed out: too few to speak of a p99
    events = edit_attempts(simulate(pod, App(), 80), "readiness", 1, TIMED_OUT)
    assert findings(pod, events, 80, "observed-latency-near-timeout")[0] == []


# -- start-up ----------------------------------------------------------------------------------


def test_start_hit_measures_the_start_and_proposes_a_budget() -> None:
    """A startup budget of 50 s (5 s x 10) and an app that answers 42 s after it starts: the
    first success is at 45 s, 90% of the budget; proposed failureThreshold 14 (1.5 x 45 s)."""
    pod = web(startup=probe(period=5, failure=10), readiness=probe(period=5))
    app = App(start_after=0.0, default=Behaviour(ready_after=42.0))
    (f,), _ = findings(pod, simulate(pod, app, 300), 300, "observed-start-near-budget")
    assert "took up to 45 s to start (1 start seen) against a budget of 50 s" in f.hit.message
    assert f.hit.overrides == ("startup.failureThreshold=14",)
    assert "counterfactual (pod web" in f.hit.message


def test_start_hit_when_starts_are_killed_before_they_end() -> None:
    """Every start is killed at 20 s (startup 4 x 5 s), none finishes: all the kills prove is
    that a start takes longer than 20 s. The proposal is a guess above that, said to be one
    (twice it, and at least 30 s more: 50 s, failureThreshold 10), and no replay is offered:
    the recording has no answer past 20 s into any start."""
    pod = web(startup=probe(period=5, failure=4), readiness=probe(period=5))
    app = App(start_after=0.0, default=Behaviour(ready_after=60.0))
    (f,), _ = findings(pod, simulate(pod, app, 300), 300, "observed-start-near-budget")
    assert "'app' is killed before it has started, against a budget of 20 s" in f.hit.message
    assert "no start has finished yet" in f.hit.message
    assert "the longest survived 20 s before its kill" in f.hit.message
    assert "a budget of 50 s (failureThreshold 10) is a guess above it" in f.hit.message
    assert f.hit.overrides == ("startup.failureThreshold=10",)
    assert f.fix == "startupProbe.failureThreshold: 10"
    assert "no counterfactual: no start killed before it finished" in f.hit.message


def test_start_near_miss_at_half_the_budget() -> None:
    pod = web(startup=probe(period=5, failure=10), readiness=probe(period=5))
    app = App(start_after=0.0, default=Behaviour(ready_after=20.0))
    assert findings(pod, simulate(pod, app, 300), 300, "observed-start-near-budget")[0] == []


# -- flapping ----------------------------------------------------------------------------------


def _flapping(windows: int, latency_ms: float = 0.0) -> App:
    fails = tuple((100.0 + 150.0 * i, 108.0 + 150.0 * i) for i in range(windows))
    return App(probes={ProbeType.READINESS: Behaviour(fail_between=fails, latency_ms=latency_ms)})


def test_flapping_hit_counts_ready_losses_and_proposes_a_threshold() -> None:
    pod = web(readiness=probe(period=5, failure=1))
    (f,), _ = findings(pod, simulate(pod, _flapping(10), 1800), 1800, "readiness-flapping")
    assert "lost Ready 10 times (20 an hour, 1 pod over 30 min)" in f.hit.message
    assert f.hit.overrides == ("readiness.failureThreshold=3",)
    # two failures in a row at most: with three needed, no loss at all (the last 4 min of it:
    # two losses of 10 s each)
    assert "not ready 20 s -> 0 s" in f.hit.message, f.hit.message


def test_flapping_proposal_is_tried_and_says_when_it_does_not_end_the_losses() -> None:
    """Ten 8 s blips and then a 100 s outage (ending 100 s before the history does): in the
    replay of the 4 min around the last loss, no failureThreshold from 3 to 6 (15 to 30 s)
    rides out the outage, so the losses do not end; 3 leaves the fewest (the blip's goes) and
    is proposed, saying it does not end them."""
    pod = web(readiness=probe(period=5, failure=1))
    fails = (*((100.0 + 150.0 * i, 108.0 + 150.0 * i) for i in range(10)), (1600.0, 1700.0))
    app = App(probes={ProbeType.READINESS: Behaviour(fail_between=fails)})
    (f,), _ = findings(pod, simulate(pod, app, 1800), 1800, "readiness-flapping")
    assert f.hit.overrides == ("readiness.failureThreshold=3",)
    assert "none of readiness.failureThreshold=3 to 6 ends the Ready losses" in f.hit.message
    # riding the outage out would take a threshold of 21: an outage to see, not a flap
    assert "the longest run of failures behind a loss was 20 (100 s)" in f.hit.message


def test_flapping_threshold_rides_out_the_longest_run_of_failures() -> None:
    """8 s blips under a 1 s period: eight failures in a row behind each loss (the kubelet's
    own re-probe after the Ready change not counted), so failureThreshold 3 would still lose
    Ready at each; 9 rides them out, and the replay shows the losses end."""
    pod = web(readiness=probe(period=1, failure=1))
    (f,), _ = findings(pod, simulate(pod, _flapping(6), 1200), 1200, "readiness-flapping")
    assert f.hit.overrides == ("readiness.failureThreshold=9",)
    assert "with readiness.failureThreshold=9:" in f.hit.message
    assert "not ready 16 s -> 0 s" in f.hit.message, f.hit.message


def test_flapping_that_no_threshold_helps_proposes_none() -> None:
    """Four 100 s outages: Ready is lost at each whatever the threshold (3 to 6 periods of 5 s
    are all shorter): nothing is proposed, and the finding says no such setting fixes it."""
    pod = web(readiness=probe(period=5, failure=1))
    fails = tuple((100.0 + 400.0 * i, 200.0 + 400.0 * i) for i in range(4))
    app = App(probes={ProbeType.READINESS: Behaviour(fail_between=fails)})
    (f,), _ = findings(pod, simulate(pod, app, 1800), 1800, "readiness-flapping")
    assert f.hit.overrides == ()
    assert "changes the Ready losses in the replay (1 -> 1): no such setting fixes it" in (
        f.hit.message
    )
    assert f.fix.startswith("find what makes readiness fail")


def test_flapping_near_miss_two_losses() -> None:
    pod = web(readiness=probe(period=5, failure=1))
    assert findings(pod, simulate(pod, _flapping(2), 1800), 1800, "readiness-flapping")[0] == []


# -- errors ------------------------------------------------------------------------------------


def test_errors_hit_says_the_kubelet_drops_them() -> None:
    pod = web(liveness=probe(period=5))
    error = {"outcome": "error", "error": "exec: no such file"}
    events = edit_attempts(simulate(pod, App(), 600), "liveness", 10, error)
    (f,), _ = findings(pod, events, 600, "probe-errors-dropped")
    assert "12 of 120 attempts errored (10.0%; 'exec: no such file'" in f.hit.message
    assert "§5.11" in f.hit.message and "exec: no such file" in f.fix


def test_errors_near_miss_two_errors() -> None:
    pod = web(liveness=probe(period=5))
    error = {"outcome": "error", "error": "exec: no such file"}
    events = edit_attempts(simulate(pod, App(), 600), "liveness", 60, error)
    assert findings(pod, events, 600, "probe-errors-dropped")[0] == []


# -- divergence --------------------------------------------------------------------------------


def test_divergence_hit_names_the_reasons_and_proposes_a_threshold() -> None:
    pod = web(readiness=probe(period=5, failure=1))
    events = [*simulate(pod, App(), 300), divergence(120.0), divergence(200.0)]
    (f,), _ = findings(pod, events, 300, "shadow-diverges")
    assert "diverged from the kubelet 2 times" in f.hit.message
    assert "network path" in f.hit.message and "flakiness" in f.hit.message
    assert f.hit.overrides == ("readiness.failureThreshold=3",)


def test_divergence_through_port_forward_proposes_the_direct_path() -> None:
    pod = web(readiness=probe(period=5, failure=3))
    events = [*simulate(pod, App(), 300), divergence(120.0)]
    (f,), _ = findings(pod, events, 300, "shadow-diverges")
    assert "--via direct" in f.fix and f.hit.overrides == ()


def test_divergence_near_miss_none_reported() -> None:
    pod = web(readiness=probe(period=5, failure=1))
    assert findings(pod, simulate(pod, App(), 300), 300, "shadow-diverges")[0] == []


# -- from a recording file -----------------------------------------------------------------------


def _recorded(tmp_path: Path) -> Path:
    pod = web(readiness=probe(period=5, failure=1))
    # the recorder keeps what the attempts' records say (edited fields would not survive), so
    # the slowness comes from the model's app: 900 ms against timeoutSeconds 1
    events = simulate(pod, _flapping(10, latency_ms=900.0), 1800)
    events.append(divergence(300.0))
    path = tmp_path / "night.db"
    write_recording(path, pod, events)
    return path


def test_recording_evidence_matches_the_synthetic_one(tmp_path: Path) -> None:
    path = _recorded(tmp_path)
    with open_recording(path) as recording:
        obs = from_recording(recording)
    assert len(obs) == 1 and obs.source == "recording night.db"
    (seen,) = obs.histories
    rc = seen.rec.containers["app"]
    assert sum(1 for _, ready in rc.ready if not ready) >= 10
    assert len(seen.divergences) == 1


def test_lint_recording_alone_lints_the_recorded_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _recorded(tmp_path)
    code = main(["lint", "--recording", str(path), "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0  # warnings only
    assert doc["summary"]["objects"] == 1
    by_rule = {f["rule"]: f for f in doc["findings"]}
    assert {"readiness-flapping", "observed-latency-near-timeout", "shadow-diverges"} <= set(
        by_rule
    )
    flaps = by_rule["readiness-flapping"]
    assert flaps["object"] == {"kind": "Pod", "namespace": "default", "name": "web"}
    assert flaps["proposed"] == ["readiness.failureThreshold=3"]
    assert "counterfactual (pod web, 4 min) with readiness.failureThreshold=3" in flaps["message"]
    assert "s -> 0 s" in flaps["message"]


def test_lint_recording_with_manifests_matches_the_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Deployment manifest is linted with the evidence of the pods the recording holds
    for that Deployment (the owner as the cluster resolved it)."""
    from dataclasses import replace

    pod = web(readiness=probe(period=5, failure=1))
    events = simulate(pod, _flapping(10), 1800)
    path = tmp_path / "deploy.db"
    write_recording(
        path, pod, events, lambda p: replace(p, owner_kind="Deployment", owner_name="web")
    )
    manifest = tmp_path / "web.yaml"
    manifest.write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: app\n        image: x\n"
        "        readinessProbe:\n          exec: {command: [check]}\n"
        "          periodSeconds: 5\n          failureThreshold: 1\n"
    )
    code = main(["lint", "--recording", str(path), str(manifest), "-o", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    (f,) = [f for f in doc["findings"] if f["rule"] == "readiness-flapping"]
    assert f["object"]["kind"] == "Deployment" and f["line"] == 13


def test_lint_recording_bad_input_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", "--recording", str(tmp_path / "gone.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gone.db: no such file" in err[0]
    text = tmp_path / "notes.txt"
    text.write_text("not a recording\n")
    assert main(["lint", "--recording", str(text)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "notes.txt" in err[0] and "Traceback" not in err[0]
    assert main(["lint", "-n", "default"]) == 2
    assert "-n: only with --cluster" in capsys.readouterr().err


def test_lint_recording_sarif_validates_and_human_names_the_pod(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from tests.lint.test_cli import SARIF_SCHEMA

    path = _recorded(tmp_path)
    assert main(["lint", "--recording", str(path), "-o", "sarif"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.Draft4Validator(json.loads(SARIF_SCHEMA.read_text())).validate(doc)
    rules = doc["runs"][0]["tool"]["driver"]["rules"]
    ids = {rules[r["ruleIndex"]]["id"] for r in doc["runs"][0]["results"]}
    assert {"readiness-flapping", "shadow-diverges"} <= ids
    assert main(["lint", "--recording", str(path), "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{path}: Pod default/web (spec of pod default/web)"
    assert main(["lint", "--explain", "shadow-diverges"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("shadow-diverges (warning)") and "--recording" in out


# -- from a timeline store (the UI, lint --cluster) ----------------------------------------------


def _store(pod: Any, events: list[Any]) -> Any:
    from probetui.prober.status import PodStatus
    from probetui.timeline.store import Store

    store = Store()
    store.pod(pod, PodStatus(phase="Running"))  # no container statuses: the marks must do
    for e in events:
        store.event(e)
    return store


def test_store_evidence_gives_the_recordings_findings() -> None:
    """The same history fed to a timeline store and read back as evidence: the same flaps
    and the same share of timeouts as read from the events themselves."""
    from probetui.lint.observed import from_store

    pod = web(readiness=probe(period=5, failure=1))
    events = simulate(pod, _flapping(10, latency_ms=900.0), 1800)
    obs = from_store(_store(pod, events), 1800.0)
    (obj,) = recorded_objects(obs, "live")
    found = {f.rule.id: f for f in run([obj], select(), obs) if f.rule.needs_evidence}
    synthetic, _ = findings(pod, events, 1800, "readiness-flapping")
    assert found["readiness-flapping"].hit.message == synthetic[0].hit.message
    assert "p99 latency 900 ms" in found["observed-latency-near-timeout"].hit.message


def test_the_live_advisor_reads_the_last_attempts_only() -> None:
    """A probe at period 1 s for an hour: the advisor reads its last ATTEMPTS, and the history
    starts there (before it, that probe's answers would be missing)."""
    from probetui.keys import ContainerKey
    from probetui.lint.live import ATTEMPTS, Advisor

    pod = web(readiness=probe(period=1, failure=1))
    events = simulate(pod, _flapping(24), 3600)
    advisor = Advisor(_store(pod, events), lambda: 3600.0)
    advice = advisor.advice(ContainerKey("u-web", "app"))
    assert advice is not None
    (history,) = advice.observed.histories
    # the last 900 attempts at one a second, the last few seconds of the run unattempted
    assert history.seconds == pytest.approx(ATTEMPTS, abs=10.0)
    assert history.rec.attempts == ATTEMPTS
    assert advice.findings[0].rule.id == "readiness-flapping"


def _lint_recorded(path: Path, pod: Any, events: list[Any]) -> dict[str, Any]:
    write_recording(path, pod, events)
    with open_recording(path) as recording:
        obs = from_recording(recording)
    (obj,) = recorded_objects(obs, "recording")
    return {f.rule.id: f for f in run([obj], select(), obs) if f.rule.needs_evidence}


def test_recorded_slow_start_and_errored_attempts_hit_and_near_miss(tmp_path: Path) -> None:
    """Read back from recording files: a start at 90% of its budget and a liveness probe on a
    port name no container declares (every attempt errors, §16.4) fire; a quick start on a
    declared port fires neither. The errors come from the model's own prober, so the recorder
    keeps them as it would a live run's."""
    from probetui.spec.model import Container, HTTPGetAction, Pod, Probe

    bad = Probe(http_get=HTTPGetAction(path="/h", port="metrics"), period_seconds=5)
    pod = Pod(
        "web",
        uid="u-web",
        containers=(
            Container(
                name="app",
                command=("x",),
                liveness_probe=bad,
                startup_probe=probe(period=5, failure=10),
            ),
        ),
    )
    slow = App(start_after=0.0, default=Behaviour(ready_after=42.0))
    found = _lint_recorded(tmp_path / "bad.db", pod, simulate(pod, slow, 300))
    assert "took up to 45 s to start" in found["observed-start-near-budget"].hit.message
    errors = found["probe-errors-dropped"].hit.message
    assert "51 of 51 attempts errored (100.0%" in errors and "metrics" in errors

    good = web(liveness=probe(period=5), startup=probe(period=5, failure=10))
    quick = App(start_after=0.0, default=Behaviour(ready_after=10.0))
    found = _lint_recorded(tmp_path / "good.db", good, simulate(good, quick, 300))
    assert "observed-start-near-budget" not in found and "probe-errors-dropped" not in found
