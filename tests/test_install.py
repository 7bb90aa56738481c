"""probetui installs as a tool: the wheel built from the checkout, into a clean venv, runs.

The README tells users to install with `pipx` or `uv tool install` from a checkout or a wheel;
both put the wheel into an environment of its own, which is what this test does by hand. What
the wheel must carry (styles, the demo's manifest) shows only when the checkout is not on the
path, so the installed command runs from a directory outside it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [p for p in out.split("\0") if p]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The `bin` directory of a fresh venv holding only the built wheel and its dependencies."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to build the wheel from its tracked files")
    tmp = tmp_path_factory.mktemp("install")
    # a copy of the tracked files, so the build leaves nothing in the checkout
    src = tmp / "src"
    for rel in _tracked_files():
        dest = src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / rel).is_file():
            shutil.copy2(ROOT / rel, dest)
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)],
        check=True,
        timeout=300,
    )
    (wheel,) = dist.glob("probetui-*.whl")
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        timeout=600,
    )
    return env_dir / "bin"


def _run(bin_dir: Path, *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [str(bin_dir / "probetui"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_the_installed_check_probes_a_real_tcp_port(installed: Path, tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        done = _run(installed, "check", "--tcp", f"127.0.0.1:{port}", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "success"


def test_the_installed_demo_runs_headless(installed: Path, tmp_path: Path) -> None:
    done = _run(installed, "demo", "--no-ui", "--output", "jsonl", "--duration", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert any(line["type"] == "ProbeAttempt" for line in lines)
    assert "Traceback" not in done.stderr


def test_the_installed_package_is_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    python = installed / "python"
    where = subprocess.run(
        [str(python), "-c", "import probetui; print(probetui.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    ).stdout.strip()
    assert not where.startswith(str(ROOT)), where
