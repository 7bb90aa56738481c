"""CI-sized runs of `benchmarks.engine`, so the benchmark cannot rot.

Each run is the real thing at a small N: real manager, workers, results caches and handlers
against a real loopback target process (nginx when installed, else `benchmarks.target`), with
a one-period (1 s) warm-up and a half-second window: about 1.6 s of real time each. The figures
are not held to any budget here (that is the full run's job); the test checks that they are
there and that nothing went wrong: no errors, no missed ticks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import engine

pytestmark = pytest.mark.timeout(60)


def _config(**changes: object) -> engine.Config:
    base = {
        "workers": 40,
        "period": 1,
        "handler": "http",
        "impl": "lean",
        "duration": 0.5,
        "warmup": 1.0,
        "timeout": 1,
        "probe_type": "readiness",
        "uvloop": False,
        "driver": "manager",
        "target": None,
    }
    base.update(changes)
    return engine.Config(**base)  # type: ignore[arg-type]


def _assert_clean(result: engine.BenchResult) -> None:
    assert result.attempts > 0
    assert result.errors == 0, result.top_errors
    assert result.raised == 0
    # counted, not judged: whether every tick ran depends on the machine's load (the figures
    # belong to the full runs, not to a smoke test)
    assert 0 <= result.missed_ticks <= result.ticks_expected
    assert result.ticks_expected > 0 and result.ticks_run > 0
    assert result.tick_lateness["p99_ms"] is not None
    assert result.engine_cpu_s > 0
    assert result.cpu_s_per_1000_attempts is not None
    assert result.peak_rss_mb > 0


def test_cli_json_run_of_lean_http(capsys: pytest.CaptureFixture[str]) -> None:
    """The command line end to end: flags in, one JSON object out with every figure."""
    code = engine.main(
        [
            "--workers", "40", "--period", "1", "--warmup", "1", "--duration", "0.5",
            "--handler", "http", "--impl", "lean", "--json",
        ]
    )  # fmt: skip
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    for key in (
        "attempts_per_s",
        "tick_lateness",
        "missed_ticks",
        "cpu_s_per_1000_attempts",
        "peak_rss_mb",
        "errors",
        "target_cores",
    ):
        assert key in payload
    assert payload["errors"] == 0
    assert payload["missed_ticks"] == 0
    assert payload["config"]["impl"] == "lean"


@pytest.mark.parametrize(
    "changes",
    [
        {"handler": "tcp", "impl": "httpx"},
        {"handler": "http", "impl": "httpx", "driver": "engine"},
    ],
    ids=["tcp", "httpx-through-engine"],
)
def test_run_is_clean(changes: dict[str, object]) -> None:
    """The TCP handler, and the reference HTTP handler through probetui.engine.Engine."""
    result = engine.run(_config(**changes))
    _assert_clean(result)
    assert "attempts/s" in engine.format_table(result)


def test_uvloop_run_is_clean() -> None:
    pytest.importorskip("uvloop")
    _assert_clean(engine.run(_config(uvloop=True)))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("callgrind_control") is None, reason="valgrind not installed")
def test_callgrind_counts_instructions_per_attempt(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """--callgrind: the run again under valgrind, the window's instructions an attempt."""
    out = tmp_path / "engine.cg"
    result = tmp_path / "result.json"
    code = engine.main(
        [
            "--workers", "10", "--period", "1", "--warmup", "1", "--duration", "1",
            "--handler", "http", "--callgrind", str(out), "--out", str(result),
        ]
    )  # fmt: skip
    assert code == 0
    payload = json.loads(result.read_text())
    assert payload["instructions"] > 0
    assert payload["instructions_per_attempt"] > 0
    assert payload["attempts"] > 0
    assert "(callgrind)" in capfd.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "0"], "--workers must be at least 1"),
        (
            ["--workers", "5", "--handler", "tcp", "--impl", "lean"],
            "--impl applies to --handler http only",
        ),
        (["--workers", "5", "--target", "10.1.2.3:80"], "not a loopback address"),
        (["--workers", "5", "--target", "nonsense"], "expected HOST:PORT"),
    ],
    ids=["no-workers", "impl-without-http", "remote-target", "bad-target"],
)
def test_bad_input_is_one_line_and_status_2(argv: list[str], message: str) -> None:
    """Bad input: one line naming the problem and the fix, exit status 2, no traceback, and
    nothing started or dialled."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.engine", *argv],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr
