"""Long simulations (simulate/run.py, report.py, scenario.py): the duration is bounded and must
be a finite number, and a run hands its events out as they become final instead of holding
them, in exactly the order and with exactly the output a whole run gives."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from probetui.kubelet.profile import DEFAULT_PROFILE
from probetui.simulate import (
    JsonWriter,
    ScenarioError,
    SimKubelet,
    Timeline,
    kubelet_json,
    parse_scenario,
    render_timeline,
    simulate,
    simulate_stream,
    to_json,
)
from probetui.simulate.scenario import MAX_DURATION
from tests.simulate.fixtures import HTTP, pod

WEEK = 604800


@pytest.mark.parametrize(
    "duration", [31536000, 1.0e308, 10**400, float("inf"), float("-inf"), float("nan"), -5, -0.5]
)
def test_a_duration_past_the_limit_or_not_a_number_is_one_line(duration: float) -> None:
    """A year of virtual time took 1.33 GB in 30 s and 1e308 never ended."""
    with pytest.raises(ScenarioError) as err:
        parse_scenario({"pod": pod({"livenessProbe": HTTP}), "duration": duration})
    text = str(err.value)
    assert text.startswith("duration: ") and "\n" not in text
    if duration == duration and duration > 0:
        assert "at most 2592000 s (30 days)" in text


def test_a_month_is_the_longest_scenario() -> None:
    assert MAX_DURATION == 30 * 86400
    assert parse_scenario({"pod": pod({}), "duration": MAX_DURATION}).duration == MAX_DURATION


def _scenario(duration: float) -> Any:
    """Attempts that outlast the stream's steps (latency near the timeout, a retried error
    on a sidecar's unresolved port), kills, restarts, back-off and an exit."""
    container = {
        "startupProbe": {**HTTP, "periodSeconds": 7, "failureThreshold": 4, "timeoutSeconds": 9},
        "readinessProbe": {**HTTP, "periodSeconds": 3, "timeoutSeconds": 5},
        "livenessProbe": {**HTTP, "periodSeconds": 11, "timeoutSeconds": 13},
    }
    doc = pod(container)
    doc["spec"]["initContainers"] = [
        {
            "name": "side",
            "image": "x",
            "restartPolicy": "Always",
            "readinessProbe": {"tcpSocket": {"port": "nope"}, "periodSeconds": 2},
        }
    ]
    app = {
        "start_after": 2,
        "ready_after": 12,
        "latency_ms": 8500,
        "exit_after": 700,
        "probes": {
            "readiness": {"latency_ms": 4900, "fail_between": [[40, 50], [300, 320]]},
            "liveness": {"fail_between": [[100, 160]]},
        },
    }
    return parse_scenario({"pod": doc, "container": "app", "duration": duration, "app": app})


@pytest.mark.parametrize("step", [1.0, 7.3, 60.0])
def test_a_streamed_run_gives_the_events_of_a_whole_run(step: float) -> None:
    scenario = _scenario(900)
    whole = SimKubelet(scenario)
    whole.run()
    streamed = list(SimKubelet(scenario).stream(step))
    assert [(e.t, e.type, e.container, e.probe, e.fields) for e in streamed] == [
        (e.t, e.type, e.container, e.probe, e.fields) for e in whole.events
    ]
    assert len(streamed) > 500


def test_the_events_held_do_not_grow_with_the_duration() -> None:
    """Only what is not yet final is held: a minute's events and the attempts in flight."""
    for duration in (3600, 6 * 3600):
        sim = SimKubelet(_scenario(duration))
        held = seen = 0
        for _ in sim.stream():
            held = max(held, len(sim.events))
            seen += 1
        assert held < 200 < seen


def test_the_streamed_outputs_are_the_whole_run_s() -> None:
    scenario = _scenario(900)
    result = simulate(scenario)
    timeline, lines = Timeline(), []
    out = io.StringIO()
    writer = JsonWriter(out)

    def sink(e: dict[str, Any]) -> None:
        lines.extend(timeline.add(e))
        writer.add(e)

    notes: list[str] = []
    summary = simulate_stream(scenario, sink, notes=notes)
    extra = {"kubelet": kubelet_json(DEFAULT_PROFILE), "notes": notes}
    writer.close(summary, {"restarts": 1}, ["liveness.failureThreshold=6"], extra=extra)
    assert summary == result["summary"]
    assert lines + timeline.close() == render_timeline(result["events"])
    expected = to_json(dict(result), {"restarts": 1}, ["liveness.failureThreshold=6"]) + "\n"
    assert out.getvalue() == expected
    empty = io.StringIO()
    JsonWriter(empty).close(summary)
    assert json.loads(empty.getvalue()) == {"events": [], "summary": summary}


def test_a_week_of_virtual_time_runs(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    """A week still runs, through the command line (slow periods keep it quick here; the
    figures for a 1 s period are in the report of the change)."""
    from probetui.cli import main

    container = {
        "livenessProbe": {**HTTP, "periodSeconds": 300},
        "readinessProbe": {**HTTP, "periodSeconds": 120},
    }
    (tmp_path / "pod.json").write_text(json.dumps(pod(container)))
    (tmp_path / "s.yaml").write_text(
        f"pod: pod.json\nduration: {WEEK}\napp: {{fail_between: [[86400, 88000]]}}\n"
    )
    assert main(["simulate", str(tmp_path / "s.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"simulated {WEEK}s of pod demo")
    assert "  kills (liveness)   2\n" in out  # 1600 s of failures at 300 s x 3
    assert main(["simulate", "--json", str(tmp_path / "s.yaml")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["events"][-1]["t"] > WEEK - 300
