"""`probetui demo` in a real terminal (tmux) with a config file that `probetui config --init`
wrote and a user edited: the remapped key works, help names it, the theme is in force."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from probetui.cli import main
from tests.config.helpers import user_file
from tests.ui.test_tmux import Terminal, demo_terminal, tmux

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
    env = {name: os.environ[name] for name in ("XDG_CONFIG_HOME", "PROBETUI_SYSTEM_CONFIG")}
    with demo_terminal(tmp_path, f"probetui-config-{os.getpid()}", env) as terminal:
        yield terminal


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
