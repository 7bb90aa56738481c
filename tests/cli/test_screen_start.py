"""A run with a screen leaves the terminal as it found it: what headless says on stderr at the
start (how the prober runs, the runtime's notes) is shown on the screen instead."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.processes import in_a_terminal

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_demo_with_a_screen_says_nothing_on_stderr() -> None:
    status, err = in_a_terminal(
        [sys.executable, "-m", "probetui", "demo"], cwd=ROOT, keys=b"q", keys_after=4.0
    )
    assert status == 0, err
    assert "probetui:" not in err and "prober runs" not in err, err
