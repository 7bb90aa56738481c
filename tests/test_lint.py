"""The tree stays ruff-clean (lint and format), so CI fails on what a reviewer would flag."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ruff")
    cmd = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run([*cmd, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args", [("check", "."), ("format", "--check", ".")])
def test_ruff(args: tuple[str, ...]) -> None:
    result = _ruff(*args)
    assert result.returncode == 0, result.stdout + result.stderr
