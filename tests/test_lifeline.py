"""`probetui.lifeline.die_with_parent`, with real processes: a child that armed it dies with its
parent, SIGKILL of the parent included, and one whose parent was already gone dies at once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.processes import alive, wait_gone

ROOT = Path(__file__).resolve().parents[1]

# the middle process starts a child that arms die_with_parent, prints the child's PID and waits
_MIDDLE = textwrap.dedent(
    """
    import subprocess, sys, os
    child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid())])
    print(child.pid, flush=True)
    sys.stdin.readline()
    """
)
_CHILD = textwrap.dedent(
    """
    import sys, time
    from probetui.lifeline import die_with_parent
    assert die_with_parent(int(sys.argv[1]))
    print("armed", flush=True)
    time.sleep(30)
    """
)


def test_child_dies_when_its_parent_is_killed() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", _MIDDLE, _CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    ) as middle:
        assert middle.stdout is not None
        child = int(middle.stdout.readline())
        try:
            # armed before the kill: this pins the death signal, not the getppid() re-check
            assert middle.stdout.readline().strip() == "armed"
            middle.kill()
            middle.wait()
            assert not wait_gone({child}, 3.0)
        finally:
            if alive(child):
                os.kill(child, 9)


def test_child_whose_parent_is_already_gone_dies_at_once() -> None:
    """The race: the parent died before the prctl; the PID given no longer matches getppid()."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", _CHILD, "1"], env=env, timeout=10, check=False)
    assert done.returncode == -9
