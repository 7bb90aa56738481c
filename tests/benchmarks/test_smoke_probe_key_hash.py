"""A CI-sized run of `benchmarks.probe_key_hash`, so that it cannot rot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_probe_key_hash_reports_both_lookups(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.probe_key_hash",
            "--probes",
            "30",
            "--repeat",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert set(result["lookup_ns"]) == {"identity_hash", "enum_hash"}
    assert all(ns > 0 for ns in result["lookup_ns"].values())
