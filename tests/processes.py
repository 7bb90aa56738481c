"""Process checks shared by the tests that start real processes."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path


def free_port() -> int:
    """A loopback port the OS picked and let go (for a manifest that names its port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alive(pid: int) -> bool:
    """A zombie counts as dead: PID 1 here may not reap the orphans it inherits."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        # the process may be reaped between the open and the read of its stat file
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def parent_of(pid: int) -> int:
    """The PID of the process's parent, from /proc."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _parents() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (children, grandchildren...), read from /proc now."""
    children = _parents()
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and alive(child):
                found.add(child)
                todo.append(child)
    return found


def cmdline(pid: int) -> list[str]:
    """The process's argv, or [] once it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def wait_gone(pids: set[int], seconds: float) -> set[int]:
    """Wait until none of `pids` is alive, at most `seconds`; the ones still alive then."""
    deadline = time.monotonic() + seconds
    left = {pid for pid in pids if alive(pid)}
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = {pid for pid in left if alive(pid)}
    return left


def in_a_terminal(
    argv: list[str], *, cwd: Path, keys: bytes = b"", keys_after: float = 0.0, seconds: float = 60.0
) -> tuple[int, str]:
    """Run `argv` on a pseudo-terminal of its own (stdin, stdout and stderr, as in a shell),
    typing `keys` once `keys_after` seconds have passed; its exit status and the text it left on
    the terminal outside its full screen (what a user sees before it starts and after it ends)."""
    import pty
    import subprocess

    leader, follower = pty.openpty()
    out = bytearray()
    try:
        env = {**os.environ, "PYTHONPATH": str(cwd), "TERM": "xterm-256color"}
        proc = subprocess.Popen(
            argv, stdin=follower, stdout=follower, stderr=follower, env=env, cwd=cwd
        )
        os.close(follower)
        follower = -1
        # the screen's output must be read, or a full pty blocks the app
        os.set_blocking(leader, False)
        started = time.monotonic()
        typed = not keys
        while time.monotonic() - started < seconds:
            if not typed and time.monotonic() - started >= keys_after:
                os.write(leader, keys)
                typed = True
            try:
                chunk = os.read(leader, 65536)
            except BlockingIOError:
                chunk = b""
            except OSError:  # EIO: every writer has gone
                break
            out += chunk
            if not chunk:
                if proc.poll() is not None:
                    break
                time.sleep(0.05)
        if proc.poll() is None:
            proc.kill()
        status = proc.wait(timeout=10)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    text = out.decode(errors="replace")
    # the alternate screen is entered with CSI ?1049h and left with CSI ?1049l
    before, _, rest = text.partition("\x1b[?1049h")
    after = rest.rpartition("\x1b[?1049l")[2] if rest else ""
    return status, before + after


def reaped(pid: int) -> bool:
    """Gone from /proc: exited and waited for by its parent, not left a zombie."""
    return not Path(f"/proc/{pid}").exists()


def wait_reaped(pids: set[int], seconds: float) -> set[int]:
    """Wait until every one of `pids` is reaped, at most `seconds`; the ones still there then."""
    deadline = time.monotonic() + seconds
    left = {pid for pid in pids if not reaped(pid)}
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = {pid for pid in left if not reaped(pid)}
    return left


def wait_pid_file(path: Path, seconds: float) -> int:
    """The PID a process wrote to `path` (written whole: to a temporary name, then renamed)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no PID in {path} after {seconds} s")
        time.sleep(0.01)
    return int(path.read_text())


# A container that daemonizes as the textbook says: it forks, the child calls setsid() and forks
# again, and the grandchild (now in a session and a process group of its own, its parent gone)
# writes its PID to argv[1] and sleeps. The container's own process sleeps too, unless argv[2]
# is "exit": then it exits 0 once the daemon is up, as a daemon's launcher does.
DAEMONIZING = """\
import os, sys, time
path = sys.argv[1]
child = os.fork()
if child == 0:
    os.setsid()
    if os.fork() == 0:
        with open(path + ".tmp", "w") as out:
            out.write(str(os.getpid()))
        os.rename(path + ".tmp", path)
        time.sleep(300)
    os._exit(0)
os.waitpid(child, 0)
while not os.path.exists(path):
    time.sleep(0.01)
if sys.argv[2:] != ["exit"]:
    time.sleep(300)
"""
