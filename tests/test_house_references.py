"""Hold code and tests to the repository: nothing reads a path outside it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# spelled apart so that this file does not name them itself
OUTSIDE = ("../" + "shared", "/" + "work/")
TREES = ("probetui", "tests", "benchmarks", "scripts", ".ci")


def test_no_reference_outside_the_repository() -> None:
    found = []
    for tree in TREES:
        for path in sorted((ROOT / tree).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text()
            except (UnicodeDecodeError, OSError):
                continue  # binary: images, snapshots' fonts
            for n, line in enumerate(text.splitlines(), 1):
                if any(ref in line for ref in OUTSIDE):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "references outside the repository:\n" + "\n".join(found)
