"""CI-sized runs of the ui, history, simulate and blackbox benchmarks, so they cannot rot.

Each is the real benchmark at a tiny N for about a second of measuring: the real app on the
null terminal, the real store, the real simulator, and (where the Debian package is installed;
CI does not install it) the real blackbox_exporter. The figures are not held to their budgets
here (the full runs are for that); the tests check that every figure is there and that nothing
went wrong on the way: every key repainted, every probe answered.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import blackbox, history, simulate, ui

pytestmark = pytest.mark.timeout(120)


def _bench(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )


# -- ui ---------------------------------------------------------------------------------------


def _assert_ui_clean(result: dict) -> None:
    assert result["keys_pressed"] >= 3
    assert result["keys_without_repaint"] == []
    assert result["key_to_repaint"]["n"] == result["keys_pressed"]
    assert result["key_to_repaint"]["p99_ms"] > 0
    assert result["frames_per_s"] > 0
    assert result["store_poll"]["n"] > 0
    assert result["process_cores"] > 0


def test_ui_store_feed_every_key_repaints() -> None:
    """The app under the store feed: each key the benchmark knows gets its repaint measured."""
    result = ui.run(
        ui.Config(
            containers=20,
            duration=1.0,
            warmup=0.2,
            prefill=10,
            feed="store",
            keys=("j", "t", "f", "enter", "enter", "k"),  # every key early, j/k outside details
            pause=(0.05, 0.1),
        )
    )
    _assert_ui_clean(result)
    assert set(result["key_to_repaint_by_key"]) == set(ui.KNOWN_KEYS)
    assert result["flood"]["attempts_per_s"] > 0
    assert "key -> repaint ms" in ui.table(result)


@pytest.mark.slow
def test_ui_engine_feed_through_the_cli(tmp_path: Path) -> None:
    """The command line end to end with the real engine probing a loopback target over TCP:
    the table on stdout, the JSON in the file named by --json."""
    out = tmp_path / "ui.json"
    done = _bench(
        "ui", "--containers", "20", "--duration", "1", "--warmup", "1", "--prefill", "5",
        "--keys", "j,t,k", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "key -> repaint ms" in done.stdout
    result = json.loads(out.read_text())
    _assert_ui_clean(result)
    # started containers: liveness and readiness probe, startup skips
    assert result["flood"]["attempts_per_s"] > 0
    assert result["flood"]["skips_per_s"] > 0


# -- history ----------------------------------------------------------------------------------


def test_history_counts_what_the_ring_holds() -> None:
    """More doProbes than the ring holds: it wraps, and the figures rest on what it holds."""
    result = history.run(history.Config(workers=30, attempts=25, period=10, capacity=20))
    assert result["entries_held"] == 30 * 20
    assert result["events"] == 30 * 25
    assert result["bytes_per_attempt"]["ring_payload"] == 20
    assert result["bytes_per_attempt"]["ring_arrays"] >= 20
    assert result["ingest_us_per_event"] > 0
    assert result["rss_mb"]["end"] > 0
    assert result["distinct_texts"] > 1
    assert "bytes/attempt" in history.table(result)


# -- simulate ---------------------------------------------------------------------------------


def test_simulate_steady_and_example() -> None:
    result = simulate.run(["steady", "example"], hours=1.0, repeat=1)
    steady, example = result["results"]
    assert steady["attempts"] > 700  # liveness + readiness every 10 s, startup until started
    assert steady["summary"]["restarts"] == 0
    assert example["summary"]["restarts"] > 0  # the shipped example kills its slow app
    assert steady["virtual_s_per_wall_s"] > 0
    assert "virtual s per wall s" in simulate.table(result)


def test_simulate_bad_scenario_is_one_line_and_status_2(tmp_path: Path) -> None:
    done = _bench("simulate", "--hours", "0.1", "--scenario", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing.yaml" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("module", "argv", "message"),
    [
        ("ui", ["--containers", "0"], "--containers: must be more than 0"),
        ("ui", ["--keys", "j,x"], "--keys"),
        ("history", ["--failing", "2"], "--failing"),
        ("blackbox", ["--rate", "-5"], "--rate: must be more than 0"),
    ],
    ids=["ui-containers", "ui-keys", "history-share", "blackbox-rate"],
)
def test_bad_flags_are_one_line_and_status_2(module: str, argv: list[str], message: str) -> None:
    done = _bench(module, *argv)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


# -- blackbox ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(blackbox.find_exporter() is None, reason="blackbox_exporter not installed")
def test_blackbox_side_by_side_http() -> None:
    """Both sides probe the same target at the same rate; both CPU figures and the ratio."""
    result = blackbox.run(
        blackbox.Config(
            rate=100,
            duration=1.0,
            handlers=("http",),
            period=1,
            engine_warmup=1.0,
            blackbox_warmup=0.3,
            install=False,
        )
    )
    assert "skipped" not in result
    (row,) = result["results"]
    mine, theirs = row["probetui"], row["blackbox"]
    assert mine["probes"] > 0 and mine["errors"] == 0
    assert theirs["probes"] > 0 and theirs["errors"] == 0 and theirs["failed"] == 0
    assert mine["cpu_s_per_1000"] > 0 and theirs["cpu_s_per_1000"] > 0
    assert row["ratio"] == pytest.approx(mine["cpu_s_per_1000"] / theirs["cpu_s_per_1000"], 0.01)
    assert row["next_goal_met"] == (row["median_ratio"] <= blackbox.NEXT_GOAL_RATIO)
    assert "http ratio" in blackbox.table(result) and "next goal" in blackbox.table(result)


def test_blackbox_skips_in_one_line_without_the_exporter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--no-install and no exporter: a skip that says why, nothing started."""
    monkeypatch.setattr(blackbox, "find_exporter", lambda: None)
    result = blackbox.run(blackbox.Config(install=False))
    assert "not installed" in result["skipped"]
    assert "SKIPPED" in blackbox.table(result)
