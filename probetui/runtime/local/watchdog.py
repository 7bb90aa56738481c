"""The exec probes' watchdog: one small process per probetui that kills the exec probes still
running when probetui dies by any means, SIGKILL and the OOM killer included.

    python -I -S .../watchdog.py PARENT_PID        (lines "+PGID" / "-PGID" on stdin)

Containers have a supervisor each (`supervisor.py`); an exec probe attempt is too short and too
frequent for one (an interpreter start is ~12 ms of CPU, the attempt itself ~1 ms). Instead the
local runtime tells this one process, over a pipe, of each exec probe's process group as it
starts and ends: a few bytes per attempt. When the pipe reaches EOF (probetui's end of it closes
when probetui dies, however it dies) or its death signal (PR_SET_PDEATHSIG) arrives with the
parent gone, it SIGKILLs every group still listed, then exits.

Limits: a group is listed once the spawn has returned, so a SIGKILL of probetui in the few
event-loop steps between the fork and that line misses that one attempt (the local runtime
starts the watchdog before its first exec probe, so that window is not also an interpreter's
start). A group that ended
without its "-" line reaching the pipe is checked before the kill: it must still be a session
leader under its own id (each exec probe starts a session), which a reused PID almost never is.

`Watchdog` is probetui's side: started on the first group, never blocking the event loop (a
line that does not fit in the pipe is dropped and counted).
"""

from __future__ import annotations

# os and sys only at the top: the watchdog process starts as a bare interpreter
import os
import sys

WATCHDOG_PATH = os.path.abspath(__file__)


class Watchdog:
    """probetui's end of the watchdog; satisfies `probetui.probe.exec.GroupTracker`."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._pid: int | None = None
        self._proc: object = None
        self.dropped = 0

    @property
    def pid(self) -> int | None:
        return self._pid

    def start(self) -> None:
        """Start the watchdog now if it is not running (it also starts with the first group)."""
        if self._fd is None:
            self._start()

    def _start(self) -> int:
        import subprocess

        read, write = os.pipe()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", WATCHDOG_PATH, str(os.getpid())],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env={},
            )
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        os.set_blocking(write, False)
        # kept: a dropped Popen of a running process warns; it is never waited for, it ends
        # when probetui does
        self._proc = proc
        self._fd, self._pid = write, proc.pid
        return write

    def _send(self, line: bytes) -> None:
        fd = self._fd if self._fd is not None else self._start()
        try:
            os.write(fd, line)
        except BlockingIOError:
            self.dropped += 1
        except OSError:
            # the watchdog is gone; the next line starts a new one
            os.close(fd)
            self._fd = None
            self.dropped += 1

    def add(self, pgid: int) -> None:
        self._send(b"+%d\n" % pgid)

    def discard(self, pgid: int) -> None:
        if self._fd is not None:
            self._send(b"-%d\n" % pgid)


# -- the watchdog process: standard library only, run by path ---------------------------------


def _session_leader(pgid: int) -> bool:
    try:
        with open(f"/proc/{pgid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return False
    # state, ppid, pgrp, session
    return int(fields[2]) == pgid and int(fields[3]) == pgid


def _watch(parent: int) -> int:
    import _signal as signal  # no enum module: this start stays that of a bare interpreter
    import ctypes
    import select

    groups: set[int] = set()
    pending = b""

    def take(chunk: bytes) -> None:
        nonlocal pending
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line[:1] == b"+" and line[1:].isdigit():
                groups.add(int(line[1:]))
            elif line[:1] == b"-" and line[1:].isdigit():
                groups.discard(int(line[1:]))

    # the death signal is a byte on a pipe the loop watches, beside probetui's pipe: the EOF
    # may never come if a forked process still holds probetui's end, and a handler that raised
    # could land anywhere, the kills below included
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGUSR2, lambda signum, frame: None)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGUSR2, 0, 0, 0)  # PR_SET_PDEATHSIG
    os.set_blocking(0, False)
    while os.getppid() == parent:
        ready, _, _ = select.select([0, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 512)
        if 0 in ready:
            try:
                chunk = os.read(0, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                break
            take(chunk)
    # what probetui wrote before it died is still in the pipe (this process may have been
    # orphaned before it read a line): take it all, without waiting for more
    try:
        while chunk := os.read(0, 65536):
            take(chunk)
    except BlockingIOError:
        pass
    for pgid in groups:
        if _session_leader(pgid):
            try:  # noqa: SIM105 - contextlib is an import this process does without
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(_watch(int(sys.argv[1])))
