"""Read a recording: `open_recording(path) -> Recording`, read-only, also while it is written.

The file is opened as a `file:...?mode=ro` URI: nothing is ever written to it, and in WAL mode
a reader sees every committed batch of a recorder still running. Queries:

- `meta`, `span()`, `pods()`, `probe_keys()`;
- `spec_at(uid, t)`, `status_at(uid, t)`, `snapshots(since, until)`: a pod's spec and status in
  force at a time (indexed by pod and time);
- `events(since, until, pod_uids, types)`: every recorded event in time order, equal to what
  the engine published (times to the microsecond; secrets masked; `next_tick` None; of a
  retried attempt's tries only the last is kept, repeated), with its `ProbeRecord` or
  `WorkerState`;
- `attempts(key, since, until)`, `probe_events(key, since, until)`: one probe's, reading only
  the chunks of that probe that overlap the window (index on probe and start time);
- `replay_into(sink, since, until)`: snapshots and events merged in time order into any engine
  sink (anything with `pod()` and `event()`), the state at `since` first.

Time order: chunks and rows are merged by time; within a probe, items keep the order the engine
published them in (a ResultChanged ahead of the attempt that caused it, as live), each sorted
by the latest time of its chunk so far. Seeks cost an index lookup plus the decoding of one
chunk (at most `CHUNK_ITEMS` items) per probe.

Damage found while reading raises `Damaged` (a `RecordingError`), which says from when the
recording cannot be trusted: a format-2 file's rows are verified as they are read (`pages.py`,
`checks.py`), and a stream of events in time order yields everything before that time before
it raises (`merge.fenced_merge`), so what is read of a damaged file is what the whole file held
up to there. SQLite's own errors and a decoder's become `Damaged` too.

`Recording` is one read-only connection and the caches every query shares (`source.py`); its
queries stand in modules of one job each: `pod_reads.py` (specs and statuses), `segments.py`
(chunks), `unbuilt.py` (the replay's forward read of events not yet built), and here the
events in time order.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

from probetui.keys import ProbeKey
from probetui.prober.worker import ProbeRecord
from probetui.record.checks import BUCKET
from probetui.record.merge import by_first, by_first_two, fenced_merge, merge_segments
from probetui.record.pages import DECODE_ERRORS
from probetui.record.pod_reads import PodReads
from probetui.record.schema import (
    MAX_SPAN,
    Damaged,
    RecordingError,
    check_header,
    check_identity,
    check_size,
    damaged,
)
from probetui.record.segments import Segment
from probetui.record.shapes import ITEM_TYPES
from probetui.record.source import PodInfo, RecordingMeta
from probetui.record.unbuilt import Group, Keyed, StoppedRead, UnbuiltEvent, UnbuiltReads
from probetui.timeline.events import Event


def open_recording(path: str | Path) -> Recording:
    """Open a recording read-only; RecordingError (one line) for anything that is not one."""
    p = Path(path)
    if not p.exists():
        raise RecordingError(f"{p}: no such file; give a file written by --record")
    if not check_header(p):
        raise RecordingError(f"{p}: empty file, not a recording; give a file written by --record")
    try:
        conn = sqlite3.connect(f"file:{quote(str(p.resolve()))}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise RecordingError(f"{p}: cannot open: {e}") from None
    try:
        check_identity(conn, p)
        check_size(conn, p)
        return Recording(conn, p)
    except DECODE_ERRORS as e:
        conn.close()
        raise damaged(p, e) from None
    except BaseException:
        conn.close()
        raise


class Recording(UnbuiltReads, PodReads):
    """Reads a recording opened read-only: its sessions, pods, probes, and events in time order."""

    def span(self) -> tuple[float, float] | None:
        """(first, last) time of anything recorded; None for an empty recording."""
        lows, highs = [], []
        for table, lo, hi in (
            ("chunks", "t0", "t1"),
            ("recent", "t", "t"),
            ("events", "t", "t"),
            ("statuses", "t", "t"),
        ):
            row = self._q(f"SELECT MIN({lo}), MAX({hi}) FROM {table}")[0]
            if row[0] is not None:
                lows.append(row[0])
                highs.append(row[1])
        if not lows:
            return None
        first, last = min(lows), max(highs)
        if self.checked:
            # a damaged time read off an index must not stretch the recording: within the
            # tallies' buckets (and what a chunk begun in the last can span, and `recent`)
            a, b = self._q("SELECT MIN(bucket), MAX(bucket) FROM tally WHERE tbl != 'recent'")[0]
            ends = self._q("SELECT MIN(t), MAX(t) FROM recent")[0]
            if a is not None:
                low, high = a * BUCKET, (b + 1) * BUCKET + MAX_SPAN
                if ends[0] is not None:
                    low, high = min(low, ends[0]), max(high, ends[1])
                first = min(max(first, low), high)
                last = max(min(last, high), first)
        return first, last

    def gaps(self) -> list[tuple[float, float]]:
        """(the last thing recorded, the next session's start) for each session begun after
        the one before it had stopped: a stretch in which nothing was recorded because no
        recorder ran, where the replay's state is only what was last seen before it."""
        out = []
        for session in self.meta.sessions[1:]:
            last = self._last_before(session.started)
            if last is not None and last < session.started:
                out.append((last, session.started))
        return out

    def _last_before(self, t: float) -> float | None:
        """The latest time anything recorded before `t` covers."""
        highs = []
        # a chunk spans at most MAX_SPAN: the latest end is among those begun that much
        # before the last one begun, found on the index rather than by a scan of every chunk
        began = self._q1("SELECT MAX(t0) FROM chunks WHERE t0 < ?", (t,))
        if began is not None:
            highs.append(
                self._q1(
                    "SELECT MAX(t1) FROM chunks WHERE t0 >= ? AND t0 < ?", (began - MAX_SPAN, t)
                )
            )
        for table in ("recent", "events", "statuses"):
            highs.append(self._q1(f"SELECT MAX(t) FROM {table} WHERE t < ?", (t,)))
        found = [min(h, t) for h in highs if h is not None]
        return max(found) if found else None

    def pods(self) -> list[PodInfo]:
        return [PodInfo(*r[1:7]) for r in self._pages.rows("pods", "ORDER BY id")]

    def probe_keys(self) -> list[ProbeKey]:
        if not self._refs_loaded:
            self._load_refs()
        if self._bad_refs:
            i = min(self._bad_refs)
            raise Damaged(self.path, None, self._bad_refs[i])
        return [ref.key for _, ref in sorted(self._refs.items())]

    # -- events ---------------------------------------------------------------------------

    def events(
        self,
        since: float | None = None,
        until: float | None = None,
        pod_uids: Collection[str] | None = None,
        types: Collection[str] | None = None,
        *,
        slack: float | None = None,
        records: bool = True,
    ) -> Iterator[Event]:
        """Every recorded event with since <= t <= until, in time order (module docstring).

        `slack`: at least how long an attempt can take (the replay's lookback). Given, a probe's
        chunk is decoded no further than `slack` past `until`, where nothing up to `until` can
        follow (items are published in order, an attempt stamped with its start); a seek into
        a long chunk then decodes what it needs, not the rest. Without `records`, attempts
        come with their fields alone (`record` None), for readers of fields: the counterfactual
        reads a day of a pod's answers."""
        for _, _, event in self._keyed(since, until, pod_uids, types, slack, records):
            yield event

    def _keyed(
        self,
        since: float | None,
        until: float | None,
        pod_uids: Collection[str] | None,
        types: Collection[str] | None,
        slack: float | None = None,
        records: bool = True,
    ) -> Iterator[tuple[float, int, Event]]:
        lo = -math.inf if since is None else since
        hi = math.inf if until is None else until
        wanted = None if types is None else frozenset(types)
        streams: list[Iterator[tuple[float, int, Event]]] = []
        if wanted is None or wanted & ITEM_TYPES:
            ids = self._probe_ids(pod_uids)
            streams.append(self._item_stream(lo, hi, ids, wanted, slack, records))
        if wanted is None or wanted - ITEM_TYPES:
            streams.append(self._row_stream(lo, hi, pod_uids, wanted))
        return fenced_merge(streams, by_first_two, by_first)

    def _item_stream(
        self,
        lo: float,
        hi: float,
        probe_ids: set[int] | None,
        wanted: frozenset[str] | None,
        slack: float | None = None,
        records: bool = True,
    ) -> Iterator[tuple[float, int, Event]]:
        """Items of every segment, merged: a segment joins once the merge reaches its start."""
        return merge_segments(
            self._segments(lo, hi, probe_ids),
            lambda seg: self._segment_events(
                seg[2], seg[3], lo, hi, wanted, slack, records, seg[4]
            ),
        )

    def _row_stream(
        self,
        lo: float,
        hi: float,
        pod_uids: Collection[str] | None,
        wanted: frozenset[str] | None,
    ) -> Iterator[tuple[float, int, Event]]:
        uids = None if pod_uids is None else set(pod_uids)
        for page in self._pages.by_time("events", lo, hi):
            for _, t, pod_id, type_, container, probe, source, fields, _ in page:
                if wanted is not None and type_ not in wanted:
                    continue
                event = self._event_row(t, pod_id, type_, container, probe, source, fields)
                if uids is not None and event.pod_uid not in uids:
                    continue
                yield t, 1, event

    # -- one probe ------------------------------------------------------------------------

    def probe_events(
        self, key: ProbeKey, since: float | None = None, until: float | None = None
    ) -> list[Event]:
        """One probe's items (attempts, skips, result changes, worker states), in order."""
        lo = -math.inf if since is None else since
        hi = math.inf if until is None else until
        return self.probes_events([key], lo, hi).get(key, [])

    def probes_events(
        self, keys: Collection[ProbeKey], since: float, until: float
    ) -> dict[ProbeKey, list[Event]]:
        """`probe_events(key, since, until)` of each of `keys` (those with any), in one pass
        over the chunks of the span, so a seek into a gap between two sessions does not scan
        the span's index once per probe (guarded by benchmarks/replay.py)."""
        wanted = set(keys)
        ids = {i for i, ref in self._refs.items() if ref.key in wanted}
        if len(ids) < len(wanted):
            self._load_refs()  # probes recorded since the refs were read
            ids = {i for i, ref in self._refs.items() if ref.key in wanted}
        out: dict[ProbeKey, list[Event]] = {}
        if not ids:
            return out
        for _, _, pid, data, marks in self._segments(since, until, ids):
            key = self._refs[pid].key
            got = [e for _, e in self._segment_events(pid, data, since, until, None, marks=marks)]
            if got:
                out.setdefault(key, []).extend(got)
        return out

    def attempts(
        self, key: ProbeKey, since: float | None = None, until: float | None = None
    ) -> list[ProbeRecord]:
        """One probe's doProbe records (attempts and skips) with since <= t <= until."""
        return [e.record for e in self.probe_events(key, since, until) if e.record is not None]

    # -- into a sink ----------------------------------------------------------------------

    def replay_into(self, sink: Any, since: float | None = None, until: float | None = None) -> int:
        """Feed `sink` (`pod()`, `event()`) what the engine fed it; returns the events fed."""
        snaps = ((t, -1, (pod, status)) for t, pod, status in self.snapshots(since, until))
        events = self._keyed(since, until, None, None)
        n = 0
        for _, kind, x in fenced_merge((snaps, events), by_first_two, by_first):
            if kind < 0:
                sink.pod(*x)
            else:
                sink.event(x)
                n += 1
        return n


__all__ = [
    "Group",
    "Keyed",
    "PodInfo",
    "Recording",
    "RecordingMeta",
    "Segment",
    "StoppedRead",
    "UnbuiltEvent",
    "open_recording",
]
