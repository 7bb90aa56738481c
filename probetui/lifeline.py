"""Die with the parent: a child process of probetui ends when probetui ends, however it ends.

    from probetui.lifeline import die_with_parent
    die_with_parent(parent_pid)   # first thing in the child's main()

`die_with_parent` asks the kernel (Linux `prctl(PR_SET_PDEATHSIG)`) to send this process `sig`
(SIGKILL unless told otherwise) as soon as its parent dies, by SIGKILL and the OOM killer too,
when no handler of the parent's can run. It then re-checks `getppid()` against `parent_pid`, the
PID the parent had (pass it from the parent, e.g. `str(os.getpid())` in argv or the environment):
a parent that died between the fork and the prctl would never send the signal, so the child sends
it to itself. Without `parent_pid` that race stays open.

Limits, said once here for every user:
- "Parent" is the thread that forked the child, not the process: if that thread ends while the
  rest of probetui lives on, the signal is sent then. Spawn long-lived children from a thread
  that lives as long as probetui (the event loop's).
- The setting is kept across exec (so a supervisor can hand it to what it execs), cleared when a
  set-user-ID program is exec'd, and not inherited by the child's own children: each of them must
  watch its own parent, or sit in a process group that someone takes down (what
  `probetui.runtime.local.supervisor` does for containers).
- Linux only; elsewhere it does nothing and returns False.
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def set_parent_death_signal(sig: int) -> bool:
    """`prctl(PR_SET_PDEATHSIG, sig)`; False where there is no such call (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return True


def die_with_parent(parent_pid: int | None = None, sig: int = signal.SIGKILL) -> bool:
    """From now on this process gets `sig` when its parent dies; True when that is in force.

    With `parent_pid`, a parent that is already gone (this process was reparented before the call)
    sends `sig` to this process at once, which with the default SIGKILL does not return.
    """
    if not set_parent_death_signal(sig):
        return False
    if parent_pid is not None and os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)
    return True


__all__ = ["die_with_parent", "set_parent_death_signal"]
