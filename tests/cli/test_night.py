"""Record a flapping pod headless, replay it to the moment of its first kill, and ask what
`failureThreshold: 5` would have changed: the night's story in miniature.

A real container (a Python HTTP server on 127.0.0.1) answers 500 for 3 s of every 17 s of wall
time from 4 s after the launch; its liveness probe (period 1 s, failureThreshold 2) sees two failures in each such window,
so the local runtime, playing the kubelet, kills and restarts it. 17 s keeps every exit-to-exit
interval a few seconds off the back-off windows (10 s, then 20 s), where a second of model
offset would flip a restart and the self-check would rightly refuse.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from probetui.cli import main
from probetui.record.reader import open_recording
from probetui.record.timespec import parse_time
from probetui.replay.player import Player
from probetui.spec.model import ProbeType
from tests.processes import free_port

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
SECONDS = 40

APP = (
    "import http.server, sys, time\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    def do_GET(self):\n"
    "        t = time.time() - float(sys.argv[2])\n"
    "        bad = t >= 0 and t % 17 < 3\n"
    "        self.send_response(500 if bad else 200); self.end_headers()\n"
    "        self.wfile.write(b'no' if bad else b'ok')\n"
    "    def log_message(self, *a): pass\n"
    "http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n"
)


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("night")
    port = free_port()
    probe = {"httpGet": {"path": "/healthz", "port": port}, "periodSeconds": 1}
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    # the first window 4 s after the launch: the first instance starts
                    # healthy (one that never got Ready is in start-up all its life, and a
                    # what-if that keeps it answers from that start-up: see simulate/recorded.py)
                    "command": [sys.executable, "-c", APP, str(port), str(time.time() + 4.0)],
                    "livenessProbe": {**probe, "failureThreshold": 2},
                    "readinessProbe": probe,
                }
            ]
        },
    }
    (tmp / "pod.yaml").write_text(json.dumps(manifest))
    path = tmp / "night.db"
    argv = ["local", str(tmp / "pod.yaml"), "--no-ui", "--record", str(path)]
    proc = subprocess.run(
        [sys.executable, "-m", "probetui.cli", *argv, "--duration", str(SECONDS)],
        capture_output=True,
        text=True,
        timeout=SECONDS + 60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return path


def _export(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    assert main(["replay", str(path), "--no-ui", "--output", "jsonl"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_the_night_replays_to_its_first_kill(
    night: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The export names the kills; the cursor put at the first, as `--at HH:MM:SS` reads it,
    shows the kill on the container's lane and the liveness failures that caused it."""
    events = _export(night, capsys)
    kills = [e for e in events if e["type"] == "Killing" and e.get("probe") == "liveness"]
    assert len(kills) >= 2, [e["type"] for e in events]
    first = datetime.datetime.fromisoformat(kills[0]["ts"])
    with open_recording(night) as rec:
        span = rec.span()
        assert span is not None
        # to the second, in UTC, as typed after `@` or given to --at
        at = parse_time(first.astimezone(datetime.UTC).strftime("%H:%M:%S"), span, datetime.UTC)
        player = Player(rec, start=at + 1.0)
        container = next(iter(player.store.containers.values()))
        marks = [(m.type, m.probe) for m in container.marks]
        assert ("Killing", "liveness") in marks
        h = container.probes[ProbeType.LIVENESS]
        failures = [v for v in h.recent(10) if v.t <= first.timestamp() and v.status_code == 500]
        assert len(failures) >= 2


def test_the_counterfactual_says_what_failure_threshold_5_would_have_changed(
    night: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the recorded settings the model reproduces the night (the self-check); with
    failureThreshold 5 a 3 s window of failures kills nothing; the answers the what-if had to
    infer (the restarts it no longer makes) are counted."""
    argv = ["simulate", "--recording", str(night), "--pod", "default/web", "-c", "app"]
    assert main([*argv, "--set", "liveness.failureThreshold=5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    check = doc["self_check"]
    assert check["passed"] is True, check
    assert (
        check["kills"]["recorded"] >= 2 and check["kills"]["matched"] == check["kills"]["recorded"]
    )
    assert doc["recorded"]["kills"]["liveness"] >= 2
    what_if = doc["what_if"]
    assert what_if["kills"]["liveness"] == 0 and what_if["restarts"] == 0
    assert 0.0 <= what_if["inferred_share"] < 0.5
    assert main([*argv, "--set", "liveness.failureThreshold=5"]) == 0
    out = capsys.readouterr().out
    assert "passed" in out and "of the what-if's answers inferred" in out
