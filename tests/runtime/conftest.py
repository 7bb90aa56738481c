"""Fixtures of the runtime tests that start real processes."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from tests.processes import alive


@pytest.fixture
def reaper() -> Iterator[set[int]]:
    """PIDs the test saw; whatever of them is still alive at the end is SIGKILLed (a test that
    fails, or the code before its fix, must not leave them running)."""
    pids: set[int] = set()
    try:
        yield pids
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
