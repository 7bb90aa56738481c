"""No child outlives probetui, however probetui ends: `probetui demo --no-ui`
and `probetui local MANIFEST --no-ui` run as real processes, every descendant is collected from
/proc before probetui is killed, and each must be gone within a few seconds after.

Real time on purpose: what is pinned is what the kernel does when a process dies (the death
signal its children armed). `kill -9` leaves no handler to run, so a container that ignores
SIGTERM waits out the supervisor's 2 s grace before its SIGKILL; the demo's services stop on the
SIGTERM at once.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.processes import (
    DAEMONIZING,
    alive,
    cmdline,
    descendants,
    wait_gone,
    wait_pid_file,
    wait_reaped,
)

ROOT = Path(__file__).resolve().parents[2]
# SIGTERM to the group, SIGKILL 2 s later (ORPHAN_GRACE), plus the kernel's and a loaded
# machine's time
GONE_WITHIN = 6.0
# a container that stops on SIGTERM at once: what it left behind goes with it
DAEMON_GONE_WITHIN = 2.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]


def _probetui(*args: str, stderr: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with stderr.open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "probetui", *args, "--no-ui", "--output", "jsonl"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
        )


def _started(proc: subprocess.Popen[bytes], count: int, seconds: float) -> list[dict[str, object]]:
    """Read the JSONL until `count` ContainerStarted events (they carry the PID)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    started: list[dict[str, object]] = []
    pending = b""
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while len(started) < count and time.monotonic() < deadline:
            if not sel.select(timeout=0.2):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                event = json.loads(line)
                if event.get("type") == "ContainerStarted":
                    started.append(event)
    return started


def _ports(pids: set[int]) -> set[int]:
    """The --port of every demo service among `pids`."""
    ports: set[int] = set()
    for pid in pids:
        argv = cmdline(pid)
        if "--port" in argv:
            ports.add(int(argv[argv.index("--port") + 1]))
    return ports


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _end_and_check(
    proc: subprocess.Popen[bytes], sig: signal.Signals, family: set[int], reaper: set[int]
) -> None:
    reaper.update(family)
    proc.send_signal(sig)
    assert proc.wait(timeout=10) == -sig
    left = wait_gone(family, GONE_WITHIN)
    assert not left, {pid: cmdline(pid) for pid in left}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP], ids=["SIGKILL", "SIGHUP"])
def test_demo_leaves_no_process_and_no_port_behind(
    sig: signal.Signals, tmp_path: Path, reaper: set[int]
) -> None:
    """`kill -9` (no handler runs) or the terminal's SIGHUP of `probetui demo --no-ui`: all nine
    services and their supervisors are gone within seconds, and their ports are free."""
    proc = _probetui("demo", stderr=tmp_path / "stderr")
    reaper.add(proc.pid)
    try:
        started = _started(proc, 9, seconds=60)
        assert len(started) == 9, (tmp_path / "stderr").read_text()[-2000:]
        family = descendants(proc.pid)
        # slow-unguarded is killed every 11 s by design: on a loaded machine its first instance
        # can be gone (and restarted) before the ninth start is read
        services = {pid for e in started if alive(pid := int(str(e["pid"])))}
        assert len(services) >= 8 and services <= family
        ports = _ports(family)
        assert len(ports) >= 8  # every service but exec-file listens
        _end_and_check(proc, sig, family, reaper)
        taken = {port for port in ports if not _port_free(port)}
        assert not taken
    finally:
        proc.kill()
        proc.wait()


MANIFEST = """\
apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  terminationGracePeriodSeconds: 30
  containers:
    - name: deaf
      # ignores SIGTERM and leaves a grandchild in its group that ignores it too
      command: [sh, -c, "trap '' TERM HUP INT; sleep 300 & wait"]
    - name: plain
      command: [sleep, "300"]
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP], ids=["SIGKILL", "SIGHUP"])
def test_local_leaves_no_process_behind(
    sig: signal.Signals, tmp_path: Path, reaper: set[int]
) -> None:
    """`probetui local MANIFEST --no-ui` killed outright or hung up: every container process,
    grandchildren and those that ignore SIGTERM included, is gone within seconds."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(MANIFEST)
    proc = _probetui("local", str(manifest), stderr=tmp_path / "stderr")
    reaper.add(proc.pid)
    try:
        started = _started(proc, 2, seconds=30)
        assert len(started) == 2, (tmp_path / "stderr").read_text()[-2000:]
        # the deaf container's grandchild, once its shell has forked it
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            family = descendants(proc.pid)
            if sum(cmdline(pid)[:1] == ["sleep"] for pid in family) == 2:
                break
            time.sleep(0.02)
        assert sum(cmdline(pid)[:1] == ["sleep"] for pid in family) == 2, family
        _end_and_check(proc, sig, family, reaper)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_closing_the_terminal_of_the_demo_ui_leaves_nothing_behind(
    tmp_path: Path, reaper: set[int]
) -> None:
    """The reported case: `probetui demo` (the UI) in tmux, and the tmux server killed (the
    terminal's SIGHUP): no demo service is left holding its port."""
    socket_name = f"lifeline-orphans-{os.getpid()}"
    run = shlex.join([sys.executable, "-m", "probetui", "demo"])
    tmux = ["tmux", "-L", socket_name, "-f", os.devnull]
    env = ["-e", "TERM=xterm-256color", "-e", f"PYTHONPATH={ROOT}"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", socket_name, "-x", "160", "-y", "45", *env, run],
        check=True,
        timeout=10,
    )
    try:
        pane = int(
            subprocess.run(
                [*tmux, "list-panes", "-F", "#{pane_pid}"],
                capture_output=True,
                text=True,
                check=True,
                timeout=10,
            ).stdout.split()[0]
        )
        reaper.add(pane)
        deadline = time.monotonic() + 60
        family: set[int] = set()
        services: list[int] = []
        while time.monotonic() < deadline:
            family = descendants(pane)
            services = [pid for pid in family if "probetui.runtime.demo.services" in cmdline(pid)]
            if len(services) == 9:
                break
            time.sleep(0.05)
        assert len(services) == 9, {pid: cmdline(pid) for pid in family}
        family.add(pane)
        reaper.update(family)
        ports = _ports(family)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, timeout=10, check=False)
    left = wait_gone(family, GONE_WITHIN)
    assert not left, {pid: cmdline(pid) for pid in left}
    assert not {port for port in ports if not _port_free(port)}


ENDINGS = pytest.mark.parametrize(
    ("sig", "status"),
    [
        (signal.SIGINT, 130),
        (signal.SIGTERM, 143),
        (signal.SIGHUP, -signal.SIGHUP),
        (signal.SIGKILL, -signal.SIGKILL),
    ],
    ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"],
)


def _no_daemon_left(
    container: dict[str, object],
    pid_file: Path,
    sig: signal.Signals,
    status: int,
    tmp_path: Path,
    reaper: set[int],
) -> None:
    """Run `container` alone in a pod under `probetui local --no-ui`, wait for the PID of the
    daemon it starts, end probetui with `sig`: the daemon must be reaped within seconds, and
    every process of the run gone."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "daemon"},
        "spec": {"containers": [{"name": "app", **container}]},
    }
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(json.dumps(pod))
    proc = _probetui("local", str(manifest), stderr=tmp_path / "stderr")
    reaper.add(proc.pid)
    try:
        assert len(_started(proc, 1, seconds=30)) == 1, (tmp_path / "stderr").read_text()[-2000:]
        daemon = wait_pid_file(pid_file, 10)
        reaper.add(daemon)
        family = descendants(proc.pid) | {daemon}
        reaper.update(family)
        proc.send_signal(sig)
        assert proc.wait(timeout=10) == status
        assert not wait_reaped({daemon}, DAEMON_GONE_WITHIN), cmdline(daemon)
        left = wait_gone(family, DAEMON_GONE_WITHIN)
        assert not left, {pid: cmdline(pid) for pid in left}
    finally:
        proc.kill()
        proc.wait()


@ENDINGS
def test_local_leaves_no_daemon_behind(
    sig: signal.Signals, status: int, tmp_path: Path, reaper: set[int]
) -> None:
    """A container that daemonizes (forks, setsid(), forks again: its daemon is in no group or
    session of the container's) does not outlive `probetui local --no-ui`, however that ends:
    the daemon is gone within seconds, reaped (no zombie left), and so is every process of the
    run. SIGINT and SIGTERM stop the run as `q` in the UI does (the engine's task cancelled)."""
    pid_file = tmp_path / "daemon.pid"
    command = [sys.executable, "-c", DAEMONIZING, str(pid_file)]
    _no_daemon_left({"command": command}, pid_file, sig, status, tmp_path, reaper)


@ENDINGS
def test_local_leaves_no_daemon_of_an_exec_probe_behind(
    sig: signal.Signals, status: int, tmp_path: Path, reaper: set[int]
) -> None:
    """An exec probe whose command daemonizes: the daemon is the container's (as in a real
    container) and goes with it, however probetui ends."""
    pid_file = tmp_path / "daemon.pid"
    daemonize = shlex.join([sys.executable, "-c", DAEMONIZING, str(pid_file), "exit"])
    once = f"test -e {shlex.quote(str(pid_file))} || {daemonize}"
    container = {
        "command": ["sleep", "300"],
        "readinessProbe": {
            # the first attempt starts the daemon, the next ones leave it be
            "exec": {"command": ["sh", "-c", once]},
            "periodSeconds": 1,
        },
    }
    _no_daemon_left(container, pid_file, sig, status, tmp_path, reaper)


EXEC_MANIFEST = """\
apiVersion: v1
kind: Pod
metadata: {name: exec-hangs}
spec:
  containers:
    - name: app
      command: [sleep, "300"]
      livenessProbe:
        # an attempt that hangs far past the end of probetui
        exec: {command: [sh, -c, "sleep 301"]}
        periodSeconds: 1
        timeoutSeconds: 100
"""


def test_kill_9_leaves_no_exec_probe_running(tmp_path: Path, reaper: set[int]) -> None:
    """An exec probe attempt running when probetui is killed outright is killed with its
    container (its supervisor started it), not left to run out its 100 s timeout."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(EXEC_MANIFEST)
    proc = _probetui("local", str(manifest), stderr=tmp_path / "stderr")
    reaper.add(proc.pid)
    try:
        assert len(_started(proc, 1, seconds=30)) == 1, (tmp_path / "stderr").read_text()[-2000:]
        deadline = time.monotonic() + 10
        family: set[int] = set()
        attempt: list[int] = []
        while not attempt and time.monotonic() < deadline:
            family = descendants(proc.pid)
            attempt = [pid for pid in family if cmdline(pid) == ["sleep", "301"]]
            time.sleep(0.02)
        assert attempt, {pid: cmdline(pid) for pid in family}
        _end_and_check(proc, signal.SIGKILL, family, reaper)
    finally:
        proc.kill()
        proc.wait()
