"""`probetui demo` in a real terminal (tmux) with a config file that `probetui config --init`
wrote and a user edited: the remapped key works, help names it, the theme is in force."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from probetui.cli import main
from tests.config.helpers import user_file
from tests.ui.test_tmux import REPO, Terminal, tmux

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


@pytest.fixture
def configured_terminal(tmp_path: Path) -> Iterator[Terminal]:
    assert main(["config", "--init"]) == 0
    path = user_file()
    text = path.read_text().replace("# theme: probetui", "theme: probetui")
    text = text.replace("# keys:", "keys:").replace(
        '#   probetui.probe-now:       "t"', '  probetui.probe-now:       "ctrl+t"'
    )
    path.write_text(text)
    socket = session = f"probetui-config-{os.getpid()}"
    run = shlex.join([sys.executable, "-m", "probetui.cli", "demo"])
    command = (
        f"unset COLUMNS LINES; cd {shlex.quote(str(tmp_path))} && {run}; "
        "echo PROBETUI-EXIT=$?; sleep 60"
    )
    env = {
        "TERM": "xterm-256color",
        "PYTHONPATH": str(REPO),
        "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
        "PROBETUI_SYSTEM_CONFIG": os.environ["PROBETUI_SYSTEM_CONFIG"],
    }
    env_args = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    tmux(socket, "new-session", "-d", "-s", session, "-x", "160", "-y", "45", *env_args, command)
    socket_path = tmux(socket, "display-message", "-p", "#{socket_path}").stdout.strip()
    try:
        yield Terminal(socket, session)
    finally:
        subprocess.run(
            ["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10, check=False
        )
        if socket_path:
            Path(socket_path).unlink(missing_ok=True)


def test_a_remapped_key_and_a_theme_from_the_file(configured_terminal: Terminal) -> None:
    terminal = configured_terminal
    terminal.wait(lambda s: "Workloads (9 pods, 9 containers)" in s)
    terminal.wait(lambda s: "^t probe now" in s)  # the footer names the key in force
    # the theme's background (#1b1f24), as the terminal was told to paint it: in true colour,
    # or as tmux brings it down to xterm-256color (234, #1c1c1c; textual-dark's is 233)
    painted = tmux(terminal.socket, "capture-pane", "-p", "-e", "-t", terminal.session).stdout
    assert "48;2;27;31;36" in painted or "48;5;234" in painted
    terminal.keys("t")
    terminal.keys("C-t")
    terminal.wait(lambda s: "attempt queued" in s)
    terminal.keys("?")
    screen = terminal.wait(lambda s: "probetui help" in s)
    assert "^t      probe now: the selected probe" in screen
    terminal.keys("Escape")
    terminal.wait(lambda s: "probetui help" not in s)
    terminal.keys("q")
    terminal.wait(lambda s: "PROBETUI-EXIT=0" in s, seconds=20)
