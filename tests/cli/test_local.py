"""`probetui local` / `probetui demo` on the command line: headless JSONL, signals, bad input.

The headless runs are real `probetui` subprocesses over real containers (Python one-liners) that
write their PIDs to a file, so a test can check by PID that nothing outlives probetui.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probetui.cli import main
from tests.processes import alive

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable

# writes "<pid> <child pid>" to argv[1], then prints a line a second; a child of its own too
WORKER = (
    "import os, subprocess, sys, time\n"
    "child = subprocess.Popen(['sleep', '60'])\n"
    "open(sys.argv[1], 'a').write(f'{os.getpid()} {child.pid}' + chr(10))\n"
    "while True:\n"
    "    print('tick', flush=True); time.sleep(1)\n"
)


def write_manifest(path: Path, *containers: dict[str, Any], policy: str = "Always") -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"restartPolicy": policy, "containers": list(containers)},
    }
    path.write_text(json.dumps(doc))
    return path


def wait_for(cond: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


@pytest.fixture
def probetui() -> Iterator[Any]:
    """Start `probetui ARGS` as a subprocess; killed (by PID) at the end if still running."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(
            [PY, "-m", "probetui.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        procs.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=5)


def worker_pod(tmp_path: Path, names: tuple[str, ...] = ("a", "b")) -> tuple[Path, Path]:
    pids = tmp_path / "pids"
    containers = [
        {
            "name": name,
            "command": [PY, "-c", WORKER, str(pids)],
            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1},
        }
        for name in names
    ]
    return write_manifest(tmp_path / "pod.yaml", *containers), pids


def read_pids(pids: Path, count: int) -> list[int]:
    wait_for(lambda: pids.exists() and pids.read_text().count("\n") >= count, 5)
    return [int(p) for p in pids.read_text().split()]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_stops_probetui_and_leaves_no_child(
    probetui: Any, tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    """SIGTERM / SIGINT: the engine is cancelled, every container (and what it started) is
    stopped and reaped, what was recorded is on stdout, exit 128+N, no traceback."""
    manifest, pids = worker_pod(tmp_path)
    proc = probetui("local", str(manifest), "--no-ui")
    numbers = read_pids(pids, 2)
    assert len(numbers) == 4 and all(alive(p) for p in numbers)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=5)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    for pid in numbers:
        assert not alive(pid), pid
    lines = [json.loads(line) for line in out.splitlines()]
    types = [line["type"] for line in lines]
    assert types.count("ContainerStarted") == 2
    # the stop itself is recorded and flushed: Killing, then the exits
    assert types.count("Killing") == 2 and types.count("ContainerExited") == 2
    assert {line["exitCode"] for line in lines if line["type"] == "ContainerExited"} == {143}


def test_duration_ends_it_with_valid_jsonl(probetui: Any, tmp_path: Path) -> None:
    """--duration: stops by itself, exit 0, one JSON object per line in simulate's vocabulary."""
    manifest, pids = worker_pod(tmp_path, ("a",))
    began = time.monotonic()
    proc = probetui("local", str(manifest), "--no-ui", "--output", "jsonl", "--duration", "1.5")
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert time.monotonic() - began < 6
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines and all({"type", "ts", "pod", "container", "probe"} <= set(x) for x in lines)
    started = next(x for x in lines if x["type"] == "ContainerStarted")
    assert started["pod"] == "p" and started["restartCount"] == 0 and started["pid"] > 0
    attempts = [x for x in lines if x["type"] == "ProbeAttempt"]
    assert attempts and attempts[0]["handler"] == "exec" and "latency_ms" in attempts[0]
    assert {"target", "outcome", "output", "resultRun"} <= set(attempts[0])
    assert not alive(read_pids(pids, 1)[1])


def test_pod_that_ends_ends_the_run(probetui: Any, tmp_path: Path) -> None:
    """restartPolicy Never and a container that exits: probetui returns by itself, exit 0."""
    manifest = write_manifest(
        tmp_path / "pod.yaml",
        {"name": "job", "command": [PY, "-c", "print('done')"]},
        policy="Never",
    )
    proc = probetui("local", str(manifest), "--no-ui")
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    exited = [json.loads(x) for x in out.splitlines() if '"ContainerExited"' in x]
    assert exited[0]["exitCode"] == 0 and exited[0]["reason"] == "Completed"


def test_reader_going_away_ends_it_quietly(probetui: Any, tmp_path: Path) -> None:
    """`probetui local ... | head -2`: no traceback, exit 0, no child left."""
    manifest, pids = worker_pod(tmp_path, ("a",))
    proc = probetui("local", str(manifest), "--no-ui")
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.readline()
    numbers = read_pids(pids, 1)
    proc.stdout.close()
    proc.wait(timeout=8)
    assert proc.stderr is not None
    err = proc.stderr.read()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Exception" not in err
    assert not any(alive(p) for p in numbers)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["local", "{tmp}/missing.yaml", "--no-ui"], "missing.yaml"),
        (["local", "{tmp}/image.yaml", "--no-ui"], "the local runtime runs commands, not images"),
        (["local", "{tmp}/bad.yaml", "--no-ui"], "bad.yaml"),
        (["local", "{tmp}/ok.yaml", "--no-ui", "-c", "nope"], "-c nope: no container"),
        (["local", "{tmp}/ok.yaml", "--no-ui", "--read-only"], "--read-only"),
        (["local", "{tmp}/ok.yaml", "--no-ui", "--duration", "0"], "--duration 0"),
        (["local", "{tmp}/ok.yaml", "--output", "xml"], "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    write_manifest(tmp_path / "image.yaml", {"name": "web", "image": "nginx"})
    write_manifest(tmp_path / "ok.yaml", {"name": "web", "command": ["true"]})
    (tmp_path / "bad.yaml").write_text("kind: Pod\nspec: [\n")
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err
    assert err.startswith("probetui: error: ")


def test_value_from_is_reported_on_stderr(probetui: Any, tmp_path: Path) -> None:
    manifest = write_manifest(
        tmp_path / "pod.yaml",
        {
            "name": "job",
            "command": [PY, "-c", "pass"],
            "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
        },
        policy="Never",
    )
    proc = probetui("local", str(manifest), "--no-ui")
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert err.count("env TOKEN comes from secretKeyRef") == 1


def test_demo_print_manifest_is_a_manifest_local_can_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from probetui.spec.parse import parse_pods

    assert main(["demo", "--print-manifest"]) == 0
    text = capsys.readouterr().out
    pods = parse_pods(text, source="printed demo")
    assert {p.name for p in pods} >= {"web-flap-ft1", "web-flap-ft3", "slow-unguarded"}
    assert "{{" not in text  # every placeholder filled: ports, python, paths
