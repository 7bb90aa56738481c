"""What the recorder holds stays out of the cyclic garbage collector's old generation.

At 15,000 probes the writer's per-probe state and the items waiting for it were most of what a
full collection walked (the engine's own long-lived objects are frozen): full collections came
three times as often with the recorder as without and stalled the event loop up to 95 ms. The
cure is the form of what is held (tuples of atomics, dicts of those, bytearrays), which a
refactoring could undo without any other test noticing; these tests notice.

The collector untracks a tuple of atomics when a collection finds it so, one level of nesting a
pass: what a young-generation pass and a middle-generation pass leave tracked is what reaches
the old generation. The tests run exactly those two passes, the automatic collector off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from probetui.record.recorder import Recorder
from probetui.record.writer import ITEM
from tests.record.helpers import META, SECRET, attempt, pod
from tests.record.test_faults import _status

pytestmark = pytest.mark.timeout(60)

# references the writer keeps to objects the engine owns anyway: the last Pod and status seen
# of each pod (two dicts of references, not an object per pod)
BORROWED = ("_pod_seen", "_statuses")


def _young_then_middle() -> None:
    gc.collect(0)
    gc.collect(1)


def _tracked_inside(value: Any) -> Iterator[Any]:
    """Tracked objects among a container's keys, values and members, one level down."""
    if isinstance(value, dict):
        members: list[Any] = [*value.keys(), *value.values()]
    elif isinstance(value, set | frozenset | tuple | list):
        members = list(value)
    else:
        return
    for m in members:
        if gc.is_tracked(m):
            yield m


def _record(rec: Recorder, pods: int, rounds: int) -> None:
    ps = [pod(i, secret=SECRET if i % 2 else None) for i in range(pods)]
    for p in ps:
        rec.pod(p, _status())
    for i in range(rounds):
        for p in ps:
            rec.event(attempt(p, 1000.0 + 10 * i, i + 1, ok=i % 4 != 3, output=f"o{i % 2}"))


def test_what_waits_for_the_writer_is_untracked_before_it_could_grow_old(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "r.db", META)
    gc.disable()
    try:
        _record(rec, 20, 4)
        items = [x for x in rec._queue if x[0] == ITEM]
        _young_then_middle()
        assert len(items) == 80
        assert not [x for x in items if gc.is_tracked(x)]
    finally:
        gc.enable()
        rec.close()


def test_the_writers_state_holds_no_tracked_object_per_probe(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "r.db", META)
    gc.disable()
    try:
        _record(rec, 40, 6)
        rec.flush()
        _young_then_middle()
        writer = rec._writer
        found = {
            name: list(_tracked_inside(value))
            for name, value in vars(writer).items()
            if name not in BORROWED
        }
        assert {name: objs for name, objs in found.items() if objs} == {}
        # the open segments, pods and probes are there to be checked
        assert len(writer._open) == 40 and len(writer._pod_ids) == 40
        assert writer._raw and writer._shape_strings and writer._masked
    finally:
        gc.enable()
        rec.close()
