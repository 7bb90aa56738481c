"""Hold probetui free of dead code: vulture, with `vulture_whitelist.py`, finds nothing at 80%."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_vulture_finds_no_dead_code() -> None:
    pytest.importorskip("vulture", reason="vulture is not installed (the test extras bring it)")
    command = [sys.executable, "-m", "vulture", "probetui", "vulture_whitelist.py"]
    found = subprocess.run(
        [*command, "--min-confidence", "80"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert found.returncode == 0, (
        "dead code (delete it, or name who reads it in vulture_whitelist.py):\n"
        + found.stdout
        + found.stderr
    )
