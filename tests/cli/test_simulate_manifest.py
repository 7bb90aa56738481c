"""`probetui simulate MANIFEST`: the natural first try runs the manifest with a default app model
and says which; `--ready-after`, `--fail-between` and `--latency` change the model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from probetui.cli import main

ROOT = Path(__file__).resolve().parents[2]
SLOW = ROOT / "examples" / "slow-start-pod.yaml"


def test_a_plain_manifest_runs_with_the_default_app_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", str(SLOW)]) == 0
    out = capsys.readouterr().out
    assert "app model (no scenario file): runs 1s after each start, answers at once" in out
    assert "restarts           0" in out and "first ready at     1" in out


def test_a_slow_start_by_flag_is_killed_as_the_scenario_file_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # examples/slow-start.yaml is this manifest with ready_after 45 s and latency 20 ms
    assert main(["simulate", str(ROOT / "examples" / "slow-start.yaml"), "-o", "json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    argv = ["simulate", str(SLOW), "--ready-after", "45s", "--latency", "20ms", "--duration", "10m"]
    assert main([*argv, "-o", "json"]) == 0
    from_flags = json.loads(capsys.readouterr().out)
    assert from_flags["summary"] == from_file["summary"]
    assert from_flags["summary"]["kills"]["liveness"] > 0
    assert "fails every probe for 45s" in from_flags["app"]["words"]


def test_a_failure_window_by_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", str(SLOW), "--fail-between", "2m-3m", "--duration", "5m", "-o", "json"]
    assert main(argv) == 0
    events = json.loads(capsys.readouterr().out)["events"]
    kills = [e for e in events if e["type"] == "Killing"]
    assert kills and all(120 <= e["t"] < 200 for e in kills)


def test_a_workload_of_several_pods_is_picked_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = tmp_path / "both.yaml"
    text = SLOW.read_text()
    both.write_text(text + "---\n" + text.replace("name: slow", "name: other", 1))
    assert main(["simulate", str(both)]) == 2
    assert "pick one with --pod NAME" in capsys.readouterr().err
    assert main(["simulate", str(both), "--pod", "other"]) == 0
    assert "of pod other" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--fail-between", "3m"], "expected START-END"),
        (["--fail-between", "3m-2m"], "end is before its start"),
        (["-c", "nope"], "no container 'nope'"),
        (["--ready-after", "soon"], "not a duration"),
    ],
)
def test_bad_flags_are_one_line(
    extra: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", str(SLOW), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
