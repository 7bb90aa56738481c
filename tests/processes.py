"""Process checks shared by the tests that start real processes."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """A zombie counts as dead: PID 1 here may not reap the orphans it inherits."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
