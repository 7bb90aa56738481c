"""The agent's ring: what was published, by stamp, bounded by age, entries and text."""

from __future__ import annotations

from dataclasses import replace

import pytest

from probetui.agent import ring as ring_module
from probetui.agent.ring import BODY, CHUNK, BlobEntry, Ring, RowEntry
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.worker import ProbeRecord, Skip, Trigger
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType
from probetui.stream.rows import row_parts
from probetui.timeline.events import record_event

POD = Pod(
    "web",
    namespace="ns",
    uid="uid-1",
    containers=(
        Container("app", readiness_probe=Probe(http_get=HTTPGetAction(port=80, path="/h"))),
    ),
)
KEY = ProbeKey("uid-1", "app", ProbeType.READINESS)


def _attempt(t: float, body: str = "ok", tries: int = 1) -> ProbeRecord:
    a = Attempt("http", "http://10.0.0.1:80/h", Result.SUCCESS, "", None, 0.0012, t, 200, body)
    retries = tuple(
        replace(a, error="connection refused", latency=0.001 * i, started_at=t + i)
        for i in range(1, tries)
    )
    return ProbeRecord(
        KEY, t, t - 0.0004, Trigger.TICK, "containerd://4f1c", finished_at=t + 0.0013,
        outcome=ProbeOutcome(ResultValue.SUCCESS, None, (*retries, a), None), result_run=3,
        published=ResultValue.SUCCESS, next_tick=t + 1,
    )  # fmt: skip


def _skip(t: float) -> ProbeRecord:
    return ProbeRecord(KEY, t, t, Trigger.TICK, "containerd://4f1c", skip=Skip.INITIAL_DELAY)


def _add(ring: Ring, stamp: float, record: ProbeRecord) -> None:
    ring.add_row(stamp, *row_parts(record_event(POD, record, "direct")))


def test_entries_come_back_in_stamp_order_as_they_went_in() -> None:
    ring = Ring(3600, 10_000)
    records = [_attempt(100.0, tries=3), _skip(101.0), _attempt(102.0)]
    for i, record in enumerate(records):
        _add(ring, 1000.0 + i, record)
    ring.add_blob(1003.0, "uid-1", "ResultChanged", b'{"k":"event"}\n')
    entries, last = ring.after(-1.0, 100)
    assert [e.stamp for e in entries] == [1000.0, 1001.0, 1002.0, 1003.0] and last == 1003.0
    for entry, record in zip(entries, records, strict=False):
        assert isinstance(entry, RowEntry)
        key, names, head, rest = row_parts(record_event(POD, record, "direct"))
        assert (entry.key, entry.names, entry.head, entry.rest) == (key, names, head, rest)
    skip = entries[1]
    assert isinstance(skip, RowEntry) and skip.head[2] is None and skip.head[3] is None
    assert entries[3] == BlobEntry(1003.0, "uid-1", "ResultChanged", b'{"k":"event"}\n')


def test_after_a_cursor_and_a_limit() -> None:
    ring = Ring(3600, 10_000)
    for i in range(3000):  # three chunks
        _add(ring, 1000.0 + i, _attempt(float(i)))
    entries, last = ring.after(1500.0, 10)
    assert [e.stamp for e in entries] == [1501.0 + i for i in range(10)] and last == 1510.0
    assert ring.after(3999.0, 10) == ([], 3999.0)
    # the retain window's start: nothing stamped before it
    entries, _ = ring.after(-1.0, 5, not_before=2500.0)
    assert entries[0].stamp == 2500.0


def test_old_chunks_go_by_age_and_by_count_and_free_what_they_held() -> None:
    ring = Ring(60, 2 * CHUNK)
    for i in range(5 * CHUNK):
        _add(ring, 1000.0 + i * 0.001, _attempt(float(i), body=f"body {i % 7}"))
    assert ring.entries <= 3 * CHUNK and ring.evicted >= 2 * CHUNK
    assert ring.stats()["rests"] == 7 and ring.stats()["workers"] == 1
    # an hour later, everything but the newest chunk is past the retain window
    ring.prune(1000.0 + 3600)
    assert ring.entries == CHUNK
    ring.add_blob(1000.0 + 7200, "", "EventsDropped", b"{}\n")
    assert ring.entries == 1 and ring.stats()["rests"] == 0 and ring.stats()["workers"] == 0


def test_bodies_are_cut_and_dropped_past_the_text_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    ring = Ring(3600, 10_000)
    _add(ring, 1.0, _attempt(1.0, body="x" * (BODY * 3)))
    (entry,), _ = ring.after(0.0, 10)
    assert isinstance(entry, RowEntry)
    assert entry.rest[8][3][0][6] == "x" * BODY  # the try's body, cut
    monkeypatch.setattr(ring_module, "TEXT_BUDGET", 100)
    _add(ring, 2.0, _attempt(2.0, body="changes every time 1"))
    _add(ring, 3.0, _attempt(3.0, body="changes every time 2"))
    entries, _ = ring.after(1.5, 10)
    assert [e.rest[8][3][0][6] for e in entries if isinstance(e, RowEntry)] == [None, None]
