"""End to end: `probetui demo` in a real terminal (tmux), driven with send-keys, read with
capture-pane. Real processes, real time: a few seconds, so marked slow."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

REPO = Path(__file__).resolve().parents[2]


def tmux(socket: str, *args: str) -> subprocess.CompletedProcess[str]:
    # a server of our own (-L) with no user config (-f): sizes and options are ours alone
    return subprocess.run(
        ["tmux", "-L", socket, "-f", os.devnull, *args],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )


class Terminal:
    def __init__(self, socket: str, session: str) -> None:
        self.socket = socket
        self.session = session

    def screen(self) -> str:
        return tmux(self.socket, "capture-pane", "-p", "-t", self.session).stdout

    def keys(self, *keys: str) -> None:
        tmux(self.socket, "send-keys", "-t", self.session, *keys)

    def text(self, text: str) -> None:
        tmux(self.socket, "send-keys", "-t", self.session, "-l", text)

    def wait(self, condition: Callable[[str], bool], seconds: float = 15.0) -> str:
        deadline = time.monotonic() + seconds
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never got there; it shows:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    with demo_terminal(tmp_path, f"probetui-e2e-{os.getpid()}") as term:
        yield term


@contextlib.contextmanager
def demo_terminal(
    tmp_path: Path, socket: str, env: dict[str, str] | None = None
) -> Iterator[Terminal]:
    """`probetui demo` in a tmux server and session named `socket`, in `tmp_path`, with `env`
    added to the pane's environment."""
    session = socket
    run = shlex.join(
        [
            sys.executable,
            "-c",
            "import sys; from probetui.cli import main; sys.exit(main())",
            "demo",
        ]
    )
    # the exit status stays on screen after the app has gone, for the test to read
    # COLUMNS/LINES, where the shell has them, would win over the real size of the pane
    command = (
        f"unset COLUMNS LINES; cd {shlex.quote(str(tmp_path))} && {run}; "
        "echo PROBETUI-EXIT=$?; sleep 60"
    )
    env = {"TERM": "xterm-256color", "PYTHONPATH": str(REPO), **(env or {})}
    env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    tmux(socket, "new-session", "-d", "-s", session, "-x", "160", "-y", "45", *env_args, command)
    socket_path = tmux(socket, "display-message", "-p", "#{socket_path}").stdout.strip()
    try:
        yield Terminal(socket, session)
    finally:
        # ends the app if it is still up (SIGHUP): the runtime's exit handler reaps the demo
        subprocess.run(
            ["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10, check=False
        )
        if socket_path:
            Path(socket_path).unlink(missing_ok=True)


def test_the_demo_in_a_real_terminal(terminal: Terminal, tmp_path: Path) -> None:
    screen = terminal.wait(lambda s: "Workloads (9 pods, 9 containers)" in s)
    assert "probetui" in screen and "demo" in screen and "READ-ONLY" not in screen
    assert "Timeline (follow)" in screen and "Threshold state" in screen and "Attempts" in screen

    # j moves to the next container; its name shows in the detail line
    first = terminal.wait(lambda s: "demo/exec-file / worker" in s)
    assert re.search(r"▸ +exec-file", first)  # the cursor, also without colour
    terminal.keys("j")
    terminal.wait(lambda s: "demo/grpc-flip / orders" in s)

    # the help screen lists the keys; escape closes it
    terminal.keys("?")
    terminal.wait(lambda s: "probetui help" in s and "probe now" in s)
    terminal.keys("Escape")
    terminal.wait(lambda s: "probetui help" not in s)

    # / filters the workload list
    terminal.keys("/")
    # type only once the input is there: keys sent before it has focus go to the list
    terminal.wait(lambda s: "filter: pod, container, namespace" in s)
    terminal.text("flap")
    terminal.wait(lambda s: "Workloads (2 pods, 2 containers) /flap" in s)
    terminal.keys("Enter", "Escape")
    terminal.wait(lambda s: "Workloads (9 pods, 9 containers)" in s)

    # t queues an attempt of the selected probe; it shows up as manual in the log
    terminal.keys("t")
    terminal.wait(lambda s: "attempt queued" in s)
    terminal.wait(lambda s: " manual " in s, seconds=10)

    # s saves an SVG screenshot in the working directory and says where
    terminal.keys("s")
    screen = terminal.wait(lambda s: "screenshot saved to" in s)
    shots = list(tmp_path.glob("probetui-*.svg"))
    assert len(shots) == 1 and shots[0].read_text().startswith("<svg")

    # q quits cleanly
    terminal.keys("q")
    terminal.wait(lambda s: "PROBETUI-EXIT=0" in s, seconds=20)
