"""The recording's reader returns data and never sees the timeline's store (architecture.md,
"Recording"): the replay feeds what it reads (`replay/feed.py`), and the live read model
(`timeline/store.py`) carries nothing only a replay's seek needs (`replay/store.py`)."""

from __future__ import annotations

import ast
from pathlib import Path

import probetui.record
from probetui.timeline.store import Store

RECORD = Path(probetui.record.__file__).parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_no_module_of_the_recording_imports_the_store() -> None:
    importing = sorted(
        p.name for p in RECORD.glob("*.py") if "probetui.timeline.store" in _imports(p)
    )
    assert importing == []


def test_the_live_store_has_no_seek_of_its_own() -> None:
    seek_only = {
        "shaped",
        "defer",
        "materialize",
        "fill_read",
        "deferred",
        "deferred_keys",
        "rebase",
        "settle",
        "loader",
    }
    assert not seek_only & set(dir(Store()))
