"""A CI-sized run of `benchmarks.shards`, so the benchmark cannot rot: 40 probes a second,
the in-process engine and one shard process (fed mode, a real child), over HTTP, against the
real loopback target; a one-second warm-up and a one-second window each. The figures are not
judged (that is the full run's job, on a quiet machine): the test checks they are there and
that nothing went wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import shards

pytestmark = pytest.mark.timeout(90)


def test_cli_run_of_engine_and_one_shard_writes_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "shards.json"
    code = shards.main(
        ["--handler", "http", "--shards", "0,1", "--rates", "40", "--duration", "1",
         "--warmup", "1", "--out", str(out)]
    )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    points = result["points"]
    assert [(p["shards"], p["rate"]) for p in points] == [(0, 40), (1, 40)]
    for p in points:
        assert p["attempts"] > 0 and p["errors"] == 0, p["top_errors"]
        assert p["p99_ms"] is not None and p["delivery_p99_ms"] is not None
        assert p["cpu_s"] > 0 and p["cpu_ms_per_attempt"] is not None
        assert p["dropped"] == 0
    # the shard's CPU is counted beside this process's
    assert points[1]["cpu_s"] > points[1]["cpu_parent_s"]
    assert set(result["held_attempts_per_s"]["http"]) == {"0", "1"}


def test_bad_input_is_one_line_and_status_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.shards", "--handler", "grpc"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "handler 'grpc': http or tcp" in done.stderr and "Traceback" not in done.stderr
