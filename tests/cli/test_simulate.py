"""`probetui simulate` on the command line: --json, --set beside the baseline, bad scenarios.

What the simulation decides is tested in tests/simulate/; these are its output
and exit codes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probetui.cli import main
from tests.simulate.fixtures import HTTP, pod


def test_json_schema_and_overrides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CLI: --json gives events + summary; --set adds the baseline summary."""
    (tmp_path / "pod.json").write_text(
        json.dumps(pod({"livenessProbe": {**HTTP, "periodSeconds": 10}}))
    )
    (tmp_path / "s.yaml").write_text("pod: pod.json\nduration: 120\napp: {ready_after: 45}\n")
    assert (
        main(
            ["simulate", str(tmp_path / "s.yaml"), "--json", "--set", "liveness.failureThreshold=6"]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"events", "summary", "baseline"}
    assert set(doc["summary"]) == {
        "restarts",
        "kills",
        "first_ready_at",
        "ready_seconds",
        "unhealthy_events",
        "final_ready",
        "phase",
    }
    assert doc["summary"]["phase"] == doc["baseline"]["phase"] == "Running"
    assert doc["baseline"]["kills"]["liveness"] > 0
    assert doc["summary"]["kills"]["liveness"] == 0
    for e in doc["events"]:
        assert {"t", "type", "container"} <= set(e)
    attempt = next(e for e in doc["events"] if e["type"] == "ProbeAttempt")
    assert {"probe", "outcome", "latency_ms", "resultRun", "manual"} <= set(attempt)
    assert main(["simulate", str(tmp_path / "s.yaml")]) == 0
    assert "summary:" in capsys.readouterr().out


def test_cli_bad_scenario_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.yaml").write_text("pod: missing.yaml\n")
    assert main(["simulate", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing.yaml" in err


def test_set_period_seconds_0_runs_at_the_default_10_s(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`periodSeconds=0` is 10 s once defaulted, through the CLI too (it used to divide by 0)."""
    (tmp_path / "pod.json").write_text(
        json.dumps(pod({"livenessProbe": {**HTTP, "periodSeconds": 3}}))
    )
    (tmp_path / "s.yaml").write_text("pod: pod.json\nduration: 35\n")
    args = ["simulate", str(tmp_path / "s.yaml"), "--json", "--set", "liveness.periodSeconds=0"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    ticks = [e["t"] for e in doc["events"] if e["type"] == "ProbeAttempt"]
    # the container runs from t=1, so the tick at 0 finds nothing to probe
    assert ticks == [10.0, 20.0, 30.0]
