"""Signal the local runtime's process groups, and keep the registry that kills them all.

Every container and every exec probe attempt is the leader of a process group of its own, so a
stop or a kill reaches the whole group. `ProcessGroupRegistry` holds the containers' groups still
live and kills every one at once on the endings of probetui that can be caught (SIGINT, SIGTERM,
SIGHUP, a normal exit, an unhandled exception); the per-container supervisors (`supervisor.py`)
cover the endings that cannot, and the exec probe attempts, which they start and end with the
container (`execs.py`). A group is registered once
its supervisor has reported the start; a catchable ending in between misses that group here,
and its supervisor takes it down when probetui is gone. What a container's process moves to
another group or session (a daemon that calls setsid) is not in the group: the container's
supervisor kills it once the group's leader is gone.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType


def signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Signal a process group; False when it no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        # the group id now belongs to someone else's processes: ours are gone
        return False
    return True


class ProcessGroupRegistry:
    """Tracks every live child process group, so that they can all be killed when probetui ends.

    `kill_all()` is synchronous and safe to call from a signal handler or atexit.
    """

    def __init__(self) -> None:
        self._groups: set[int] = set()
        self._installed = False

    def add(self, pgid: int) -> None:
        self._groups.add(pgid)

    def discard(self, pgid: int) -> None:
        self._groups.discard(pgid)

    def groups(self) -> frozenset[int]:
        return frozenset(self._groups)

    def kill_all(self) -> int:
        """SIGKILL every registered group and forget them; returns how many were signalled."""
        groups = list(self._groups)
        self._groups.clear()
        return sum(signal_group(pgid, signal.SIGKILL) for pgid in groups)

    def install_exit_handlers(
        self,
        signals: Iterable[signal.Signals] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP),
    ) -> None:
        """Kill the children whenever probetui ends: on `signals`, at exit, on an uncaught error.

        Call it from the main thread (Python only lets that thread set signal handlers), and after
        anything else that installs handlers for these signals: the previous handler is chained,
        a later one replaces this one (asyncio's `loop.add_signal_handler` does). For each signal:
        children are killed first; then a Python handler that was there before is called (the
        default SIGINT one raises KeyboardInterrupt); with the default disposition the signal is
        re-raised so probetui dies of it, with the status a shell shows as 128+N. An ignored signal
        (SIGHUP under nohup) stays ignored and kills nothing, as it does not end probetui.
        """
        if self._installed:
            return
        self._installed = True
        atexit.register(self.kill_all)

        previous_hook = sys.excepthook

        def excepthook(
            exc_type: type[BaseException], exc: BaseException, tb: TracebackType | None
        ) -> None:
            # atexit runs only after non-daemon threads end; do not wait for them
            self.kill_all()
            previous_hook(exc_type, exc, tb)

        sys.excepthook = excepthook

        for sig in signals:
            previous = signal.getsignal(sig)
            if previous is signal.SIG_IGN:
                continue
            signal.signal(sig, self._make_handler(previous))

    def _make_handler(
        self, previous: Callable[[int, FrameType | None], object] | int | None
    ) -> Callable[[int, FrameType | None], None]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self.kill_all()
            if callable(previous):
                previous(signum, frame)
                return
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        return handler


# the registry every ContainerProcess uses unless given another one
REGISTRY = ProcessGroupRegistry()


__all__ = ["REGISTRY", "ProcessGroupRegistry", "signal_group"]
