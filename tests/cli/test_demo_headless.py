"""Run the demo headless, `probetui demo --no-ui --output jsonl --duration 40`, end to end.

Real time on purpose (40 s, the one long test of the suite): the demo's services are real
processes on loopback and the point is that every behaviour shows up within the duration.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_demo_headless_shows_every_handler_a_readiness_flip_and_a_liveness_kill() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "probetui",
            "demo",
            "--no-ui",
            "--output",
            "jsonl",
            "--duration",
            "40",
        ],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    handlers = Counter(e["handler"] for e in lines if e["type"] == "ProbeAttempt")
    assert set(handlers) == {"http", "tcp", "grpc", "exec"}, handlers
    assert any(e["type"] == "ResultChanged" and e["probe"] == "readiness" for e in lines)
    kills = [
        e
        for e in lines
        if e["type"] == "Killing" and "failed liveness probe" in e.get("message", "")
    ]
    assert kills and kills[0]["pod"] == "slow-unguarded"
    # (the BackOff that follows depends on where the second kill falls against the first
    # 10 s window; tests/runtime/test_runtime.py pins back-off on its own)
    assert any(e["type"] == "ProbeWarning" and e["pod"] == "http-redirect" for e in lines)
    for e in lines:
        assert {"type", "ts", "pod", "container", "probe", "source"} <= set(e)
    # every container process it started is gone (ContainerStarted carries the PID)
    pids = {e["pid"] for e in lines if e["type"] == "ContainerStarted" and "pid" in e}
    assert pids
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
