"""Hold every probetui module to at most 800 lines: a longer one has more than one job."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 800


def test_no_module_is_over_800_lines() -> None:
    long = {}
    for path in sorted((ROOT / "probetui").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text().splitlines())
        if lines > LIMIT:
            long[name] = lines
    assert not long, f"modules over {LIMIT} lines (split each along a seam): {long}"
