"""A shell locked read-only starts no process: `probetui demo`, `probetui local --no-ui` and
`probetui check` with an exec probe (`--exec`, or a manifest's) are refused in one line, exit 2,
before anything runs. The lock is `PROBETUI_READ_ONLY=locked` or a system file that locks its
top level; a system file that locks only some contexts by name holds none of these (they have no
context). Each case is a real `probetui` subprocess whose command, had it run, would have
created a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _probetui(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "probetui.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        check=False,
    )
    return proc.returncode, proc.stdout, proc.stderr


def _touching_pod(path: Path, marker: Path) -> Path:
    """A pod whose container and whose liveness probe would each create `marker`."""
    touch = ["sh", "-c", f'touch "{marker}"; sleep 5']
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "command": touch,
                    "livenessProbe": {"exec": {"command": ["touch", str(marker)]}},
                }
            ]
        },
    }
    path.write_text(json.dumps(doc))
    return path


def _system_lock(tmp_path: Path, body: dict[str, object]) -> dict[str, str]:
    system = tmp_path / "system.yaml"
    system.write_text(yaml.safe_dump(body))
    return {"PROBETUI_SYSTEM_CONFIG": str(system)}


LOCKS = {
    "environment": lambda tmp: {"PROBETUI_READ_ONLY": "locked"},
    "system-file": lambda tmp: _system_lock(tmp, {"lock": True, "readOnly": True}),
}
WHO = {"environment": "PROBETUI_READ_ONLY", "system-file": "system file"}


def _refused(code: int, out: str, err: str, what: str, who: str) -> None:
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"probetui: error: {what}: read-only is locked by {who}"), err
    assert "starts no process" in err


@pytest.mark.parametrize("lock", list(LOCKS))
def test_check_exec_is_refused_under_a_lock(tmp_path: Path, lock: str) -> None:
    marker = tmp_path / "ran"
    env = LOCKS[lock](tmp_path)
    code, out, err = _probetui("check", "--exec", "--", "touch", str(marker), env=env)
    _refused(code, out, err, "check --exec", WHO[lock])
    manifest = _touching_pod(tmp_path / "pod.json", marker)
    code, out, err = _probetui("check", "-f", str(manifest), env=env)
    _refused(code, out, err, f"check -f {manifest}: an exec probe", WHO[lock])
    assert not marker.exists()
    # the control: unlocked, the same command runs
    assert _probetui("check", "--exec", "--", "touch", str(marker))[0] == 0
    assert marker.exists()


def test_check_s_other_handlers_run_under_a_lock(tmp_path: Path) -> None:
    """A TCP, HTTP or gRPC probe starts no process: the lock leaves it alone."""
    code, out, _ = _probetui("check", "--tcp", "127.0.0.1:1", env={"PROBETUI_READ_ONLY": "locked"})
    assert code == 1 and out.startswith("failure")


@pytest.mark.parametrize("lock", list(LOCKS))
def test_demo_is_refused_under_a_lock(tmp_path: Path, lock: str) -> None:
    code, out, err = _probetui(
        "demo", "--no-ui", "--output", "jsonl", "--duration", "5", env=LOCKS[lock](tmp_path)
    )
    _refused(code, out, err, "demo", WHO[lock])
    # the manifest starts nothing: still shown
    code, out, _ = _probetui("demo", "--print-manifest", env=LOCKS[lock](tmp_path))
    assert code == 0 and "kind: Pod" in out


@pytest.mark.parametrize("lock", list(LOCKS))
def test_local_starts_no_process_under_a_lock(tmp_path: Path, lock: str) -> None:
    marker = tmp_path / "ran"
    manifest = _touching_pod(tmp_path / "pod.json", marker)
    code, out, err = _probetui(
        "local", str(manifest), "--no-ui", "--duration", "2", env=LOCKS[lock](tmp_path)
    )
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "would start no process" in err and "nothing lifts a locked read-only" in err
    assert not marker.exists()


def test_a_lock_of_some_contexts_holds_none_of_what_has_no_context(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    env = _system_lock(tmp_path, {"lock": True, "contexts": {"prod-*": {"readOnly": True}}})
    assert _probetui("check", "--exec", "--", "touch", str(marker), env=env)[0] == 0
    assert marker.exists()
