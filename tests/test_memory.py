"""`probetui.memory`: the one module that drives the cyclic collector, and its policies."""

from __future__ import annotations

import ast
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

import probetui
from probetui import memory


@pytest.fixture(autouse=True)
def collector() -> Iterator[None]:
    """The collector as each test found it: on, nothing frozen, the same thresholds."""
    was, thresholds = gc.isenabled(), gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    if was:
        gc.enable()
    else:
        gc.disable()


def _imports_gc(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "gc" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module == "gc":
            return True
    return False


def test_no_module_but_memory_imports_gc() -> None:
    root = Path(probetui.__file__).parent
    found = [
        str(path.relative_to(root.parent))
        for path in sorted(root.rglob("*.py"))
        if path.name != "memory.py" and _imports_gc(ast.parse(path.read_text(), str(path)))
    ]
    assert found == [], f"gc driven outside probetui/memory.py: {found}"


def test_memory_imports_nothing_of_probetui() -> None:
    # a leaf, so that every layer may import it
    tree = ast.parse(Path(memory.__file__).read_text())
    names = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [n for n in names if n.startswith("probetui")]


def test_a_bulk_load_runs_no_collection_and_puts_the_collector_back() -> None:
    with memory.no_collection_during_bulk_load() as collecting:
        assert collecting and not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    with memory.no_collection_during_bulk_load() as collecting:
        assert not collecting and not gc.isenabled()
    assert not gc.isenabled()  # off before, off after
    gc.enable()
    with pytest.raises(RuntimeError), memory.no_collection_during_bulk_load():
        raise RuntimeError
    assert gc.isenabled()


def test_freeze_after_start_up_collects_then_freezes() -> None:
    class Cycle:
        def __init__(self) -> None:
            self.me = self

    Cycle()  # garbage: collected, not frozen
    kept = [Cycle() for _ in range(10)]
    gc.unfreeze()
    memory.freeze_after_start_up()
    assert gc.get_freeze_count() > 0
    assert not any(isinstance(o, Cycle) for o in gc.get_objects())  # frozen are not listed
    assert len(kept) == 10


def test_frozen_while_used_hands_everything_back() -> None:
    gc.unfreeze()
    with memory.frozen_while_used():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_freeze_what_lives_freezes_without_collecting() -> None:
    gc.unfreeze()
    memory.freeze_what_lives()
    assert gc.get_freeze_count() > 0


def test_probing_processes_collect_young_rarely() -> None:
    memory.collect_young_rarely()
    assert gc.get_threshold() == (memory.PROBER_YOUNG, 10, 10)
    memory.collect_young_rarely(700)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_collection_log_counts_passes_by_generation() -> None:
    log = memory.CollectionLog()
    log.start()
    gc.collect(0)
    gc.collect(2)
    log.stop()
    log.stop()  # a second stop does nothing
    gc.collect(2)
    assert [log.passes[g][0] for g in (0, 1, 2)] == [1, 0, 1]
    assert log.passes[2][2] > 0
    assert log.thresholds() == gc.get_threshold()
