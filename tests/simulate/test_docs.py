"""docs/simulate.md: every scenario it shows runs, and prints the lines shown after it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from probetui.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "simulate.md"
# a ```yaml scenario, and the plain ``` block of output lines that may follow it
_BLOCK = re.compile(r"```yaml\n(.*?)```\n(?:\n```\n(.*?)```)?", re.S)


def _examples() -> list[tuple[str, str]]:
    return [(m[1], m[2] or "") for m in _BLOCK.finditer(DOC.read_text())]


def test_the_page_shows_one_example_per_feature() -> None:
    assert len(_examples()) == 9


@pytest.mark.parametrize(("scenario", "shown"), _examples())
def test_each_example_runs_and_prints_what_the_page_shows(
    scenario: str, shown: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the slow start names examples/slow-start-pod.yaml relative to the examples
    path = tmp_path / "scenario.yaml"
    path.write_text(
        scenario.replace("pod: slow-start-pod.yaml", f"pod: {ROOT}/examples/slow-start-pod.yaml")
    )
    assert main(["simulate", str(path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    for line in shown.splitlines():
        assert line in printed, line
