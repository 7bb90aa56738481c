"""What the recorder holds stays out of the cyclic garbage collector's old generation.

At 15,000 probes the writer's per-probe state and the items waiting for it were most of what a
full collection walked (the engine's own long-lived objects are frozen): full collections came
three times as often with the recorder as without and stalled the event loop up to 95 ms. The
cure is the form of what is held (tuples of atomics, dicts of those, bytearrays), which a
refactoring could undo without any other test noticing; these tests notice.

The collector untracks a tuple of atomics when a collection finds it so, one level of nesting a
pass: what a young-generation pass and a middle-generation pass leave tracked is what reaches
the old generation. The tests run exactly those two passes, the automatic collector off, and
count what the old generation gained while a recorder was fed through its public calls
(`pod`, `event`, `flush`): the measure a full collection pays, whatever the recorder's insides
look like. The pods and statuses are made before the count starts and kept, as the engine
keeps them; a recorder may refer to them, but what it makes of its own must not grow with the
number of probes. One tracked object per probe or per item (a list, a dataclass, a kept
`Event`) shows as at least one per probe; the bounds allow a tenth of that.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from probetui.prober.status import PodStatus
from probetui.record.recorder import Recorder
from probetui.redact import redact_pod
from probetui.spec.model import Pod
from tests.record.helpers import META, SECRET, attempt, pod
from tests.record.test_faults import _status

pytestmark = pytest.mark.timeout(60)


def _old_generation() -> int:
    """How many objects the old generation holds once the young and middle passes have run."""
    gc.collect(0)
    gc.collect(1)
    return len(gc.get_objects(generation=2))


@contextmanager
def _collector_off() -> Iterator[None]:
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _pods(n: int) -> list[tuple[Pod, PodStatus]]:
    # as the engine hands them to its sinks: redacted (tests/test_redaction.py)
    return [(redact_pod(pod(i, secret=SECRET if i % 2 else None))[0], _status()) for i in range(n)]


def _attempts(rec: Recorder, pods: list[tuple[Pod, PodStatus]], rounds: int) -> None:
    # each event is made here and dropped at once: only what the recorder keeps of it survives
    for i in range(rounds):
        for p, _ in pods:
            rec.event(attempt(p, 1000.0 + 10 * i, i + 1, ok=i % 4 != 3, output=f"o{i % 2}"))


def _gained_while_queued(tmp_path: Path, n: int, rounds: int) -> int:
    """What the old generation gains while `rounds` attempts of `n` probes wait for the writer."""
    path = tmp_path / f"queued-{n}.db"
    rec = Recorder(path, META)
    pods = _pods(n)
    try:
        for p, status in pods:
            rec.pod(p, status)
        gc.collect()
        with _collector_off():
            before = _old_generation()
            _attempts(rec, pods, rounds)
            gained = _old_generation() - before
    finally:
        rec.close()
    _assert_recorded(path, n, rounds)
    return gained


def _gained_once_written(tmp_path: Path, n: int, rounds: int) -> int:
    """What the old generation gains from a writer that has written `n` probes' pods, statuses
    and `rounds` attempts each; the recording is then checked to hold them all."""
    path = tmp_path / f"written-{n}.db"
    rec = Recorder(path, META)
    pods = _pods(n)
    try:
        gc.collect()
        with _collector_off():
            before = _old_generation()
            for p, status in pods:
                rec.pod(p, status)
            _attempts(rec, pods, rounds)
            rec.flush()
            gained = _old_generation() - before
    finally:
        rec.close()
    _assert_recorded(path, n, rounds)
    return gained


def _assert_recorded(path: Path, n: int, rounds: int) -> None:
    """The file holds what was fed in (so the count above was of a writer that did the work):
    every pod, probe, spec and status, every probe's segment, no secret in the clear."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:

        def count(sql: str) -> int:
            return int(conn.execute(sql).fetchone()[0])

        assert count("SELECT count(*) FROM pods") == n
        assert count("SELECT count(*) FROM probes") == n
        assert count("SELECT count(DISTINCT pod_id) FROM specs") == n
        assert count("SELECT count(DISTINCT pod_id) FROM statuses") == n
        # close() turned every probe's open segment into a chunk: one item per attempt
        items = count("SELECT coalesce(sum(n), 0) FROM chunks")
        assert count("SELECT count(DISTINCT probe_id) FROM chunks") == n and items == n * rounds
    finally:
        conn.close()
    assert SECRET.encode() not in path.read_bytes()


def test_what_waits_for_the_writer_is_untracked_before_it_could_grow_old(tmp_path: Path) -> None:
    n, rounds = 20, 4
    gained = _gained_while_queued(tmp_path, n, rounds)
    # an item still tracked would make it n * rounds = 80 (a kept Event, about 7 each: 560)
    assert gained < n * rounds / 10, gained


def test_the_writers_state_holds_no_tracked_object_per_probe(tmp_path: Path) -> None:
    rounds = 6
    few = _gained_once_written(tmp_path, 40, rounds)
    many = _gained_once_written(tmp_path, 400, rounds)
    # a few objects once (the writer's tables, SQLite's statement cache), none per probe: one
    # tracked object per probe held would make the difference at least 360
    assert many - few < (400 - 40) / 10, (few, many)
