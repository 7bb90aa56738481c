"""Find a recording's chunks (segments) overlapping a time window, and decode one into events.

A segment is a closed chunk (rows indexed by start time, verified by bucket) or an open one
(`recent`, the last minutes of a live recording). Also `steady_probes`: the probes whose
latest chunks say they did one thing all through a window (a replay's seek leaves them unread).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from probetui.keys import ProbeKey
from probetui.record import codec
from probetui.record.merge import by_first_two, past, us_at_least, us_at_most
from probetui.record.pages import Row
from probetui.record.schema import (
    MAX_SPAN,
    Damaged,
    damaged,
)
from probetui.record.shapes import EVENT_TYPE
from probetui.record.source import _BAD, RecordingSource
from probetui.timeline.events import Event
from probetui.timeline.history import RecordShape

# probes whose latest chunk is too new to say alone that they were steady, from which their
# chunk before it is looked at too (a second pass over the chunk index, worth it only for many)
STEADY_RECHECK = 200


# a segment as `Recording._segments` gives it: (t0, seg id, probe id, data, marks)
Segment = tuple[float, int, int, bytes, codec.Marks | None]


class SegmentReads(RecordingSource):
    """Runs the queries of chunks: `_segments`, `segments_of`, `steady_probes`."""

    def _segments(
        self,
        lo: float,
        hi: float,
        probe_ids: Collection[int] | None,
        after_t0: float | None = None,
        skip: Collection[int] = (),
    ) -> Iterator[Segment]:
        """(t0, seg id, probe id, data, marks) of every segment overlapping [lo, hi], by t0: closed
        chunks by bucket (`pages.py`), open ones (the last minutes of a live recording) from
        `recent`. `recent` is read first: a segment closed in between is then seen twice, never
        missed. Damage in either: every segment before it, then `Damaged`. `probe_ids`: only
        theirs; `skip`: not theirs (a seek defers 15,000 probes: their chunks are left in
        the file, not read and thrown away).

        The probes asked for (or not) are told apart on the time index the tallies are counted
        on, where SQLite can: what a seek reads is then what was counted. Over more than a
        seek's window, a few probes are found on their own index (`chunks_probe_t0`)."""
        pages = self._pages
        where: list[str] = []
        args: list[Any] = []
        if probe_ids is not None and not isinstance(probe_ids, set | frozenset):
            probe_ids = set(probe_ids)  # looked up for every segment below
        if skip and not isinstance(skip, set | frozenset):
            skip = set(skip)
        if probe_ids is not None:
            where.append(pages.among("probe_id", probe_ids, args))
        if skip:
            where.append(pages.among("probe_id", skip, args, negate=True))
        fence: Damaged | None = None
        try:
            open_segs, recent_t = self._open_segments(" AND ".join(w for w in where if w), args)
        except Damaged as e:
            fence, open_segs, recent_t = e, {}, None
        opened: list[Segment] = []
        for seg, (first_t, last_t, probe_id, data, rows) in open_segs.items():
            if last_t < lo or first_t > hi or not _wanted(probe_id, probe_ids, skip):
                continue
            try:
                self._verify_recent(rows, recent_t)
            except Damaged as e:
                fence = e if fence is None or e.sooner(fence) else fence
                continue
            opened.append((first_t, seg, probe_id, b"".join(data), None))
        opened.sort(key=by_first_two)
        by_index = probe_ids is None or hi - lo <= 2 * MAX_SPAN
        if lo > -math.inf:
            where.insert(0, "t1 >= ?")
            args.insert(0, lo)
        first = lo - MAX_SPAN if after_t0 is None else max(lo - MAX_SPAN, after_t0)
        sql = " AND ".join(w for w in where if w)
        i, n = 0, len(opened)
        try:
            for page in pages.by_time("chunks", first, hi, sql, args, time_index=by_index):
                for row in page:
                    seg, probe_id, t0 = row[0], row[1], row[2]
                    if seg in open_segs or not _wanted(probe_id, probe_ids, skip):
                        continue
                    if fence is not None and past(t0, fence):
                        raise fence  # out of both loops: nothing past the damage is read
                    while i < n and (
                        opened[i][0] < t0 or (opened[i][0] == t0 and opened[i][1] < seg)
                    ):
                        yield opened[i]
                        i += 1
                    marks = row[6]
                    yield (t0, seg, probe_id, row[5], (t0, marks) if marks else None)
        except Damaged as e:
            fence = e if fence is None or e.sooner(fence) else fence
        for x in opened[i:]:
            if fence is not None and past(x[0], fence):
                break
            yield x
        if fence is not None:
            raise fence

    def segments_of(
        self, since: float, stop: float, probe_ids: Collection[int]
    ) -> tuple[dict[int, list[Segment]], Damaged | None]:
        """`_segments(since, stop)` of these probes, by probe (each in the order read), and
        the damage that ended the read (what is before it is there), or None: what a seek
        deferred, read once for every fill after it."""
        out: dict[int, list[Segment]] = {}
        try:
            for x in self._segments(since, stop, probe_ids):
                out.setdefault(x[2], []).append(x)
        except Damaged as e:
            return out, e
        return out, None

    def _open_segments(
        self, where: str = "", args: Sequence[Any] = ()
    ) -> tuple[dict[int, list[Any]], float | None]:
        """The open segments (`recent`, with `where`) by id: [first t, last t, probe id, the
        items' bytes, the rows], the table counted against its tally in one read transaction,
        and the earliest time among the rows: what damage in one of them is placed at. Each
        segment's rows are verified where it is read (`_verify_recent`)."""
        pages = self._pages
        with pages.snapshot():
            rows = self._q(
                f"SELECT {pages.full['recent']} FROM recent"
                f"{' WHERE ' + where if where else ''} ORDER BY id",
                args,
            )
            if self.checked:
                tally = self._q("SELECT tbl, bucket, n, sum, crc FROM tally WHERE tbl = 'recent'")
                counted = (
                    self._q("SELECT COUNT(*), SUM(crc) FROM recent")[0]
                    if where
                    else (len(rows), sum(r[-1] for r in rows if type(r[-1]) is int))
                )
        t = None
        if self.checked:
            times = [r[3] for r in rows if isinstance(r[3], float)]
            t = min(times) if times else None
            if tally and pages.bad("tally", tally[0]):
                raise Damaged(self.path, t, "the tally of recent fails its checksum")
            want = (tally[0][2], tally[0][3]) if tally else (0, 0)
            if (counted[0], counted[1] or 0) != want:
                raise Damaged(self.path, t, f"recent: {counted[0]} rows where {want[0]} were")
        open_segs: dict[int, list[Any]] = {}
        for row in rows:
            _, seg, probe_id, when, data, _ = row
            s = open_segs.get(seg)
            if s is None:
                open_segs[seg] = [when, when, probe_id, [data], [row]]
            else:
                s[0], s[1] = min(s[0], when), max(s[1], when)
                s[3].append(data)
                s[4].append(row)
        return open_segs, t

    def _verify_recent(self, rows: list[Row], t: float | None) -> None:
        """An open segment's rows, verified: `Damaged` from `t` (the earliest in `recent`)."""
        pages = self._pages
        for r in rows:
            if pages.bad("recent", r):
                raise Damaged(self.path, t, f"recent row {r[0]} fails its checksum")

    def _probe_ids(self, pod_uids: Collection[str] | None) -> set[int] | None:
        if pod_uids is None:
            return None
        uids = set(pod_uids)
        self._load_refs()
        # a probe whose row is damaged may be one of them: read, it is damage where it is
        return {i for i, ref in self._refs.items() if ref.key.pod_uid in uids} | set(self._bad_refs)

    def _segment_events(
        self,
        probe_id: int,
        data: bytes,
        lo: float,
        hi: float,
        wanted: frozenset[str] | None,
        slack: float | None = None,
        records: bool = True,
        marks: codec.Marks | None = None,
    ) -> Iterator[tuple[float, Event]]:
        ref = self._ref(probe_id)
        us = codec.US
        lo_us, hi_us = us_at_least(lo), us_at_most(hi)
        stop = (1 << 62) if slack is None or hi == math.inf else hi_us + math.ceil(slack * us)
        try:
            start = codec.start_before(marks, lo_us)
            kept = codec.window(data, self._kind, lo_us, hi_us, stop, start)
        except _BAD as e:
            raise self._undecodable(e, None) from None
        template = self._template
        for key, item in kept:
            try:
                tp = template(item.shape)
                if wanted is not None and EVENT_TYPE[tp.kind] not in wanted:
                    continue
                event = tp.event(ref, item, records)
            except _BAD as e:
                raise self._undecodable(e, key / us) from None
            yield key / us, event

    def steady_probes(self, at: float, began_by: float) -> dict[int, tuple[ProbeKey, RecordShape]]:
        """The probes that did the same thing every time from `began_by` to `at`: their
        latest chunk begun by `at` began by `began_by`, is closed and steady (every item a
        record of one shape that counts, with a run under way), and no open segment of theirs
        began by `at`. By probe id: (key, the shape's `RecordShape`). Empty from a file without
        the column; a chunk from before it is not steady."""
        if not self._has_steady:
            return {}
        rows = self._latest_chunks(at)
        busy = {i for (i,) in self._q("SELECT DISTINCT probe_id FROM recent WHERE t <= ?", (at,))}
        # a chunk begun after `began_by` holds the probe's latest items; where the one before
        # it was steady with the same shape, the probe did one thing all the same (many
        # probes close their chunks together: a seek just after that would read them all)
        fresh = {i: steady for i, t0, steady in rows if steady is not None and t0 > began_by}
        if len(fresh) > STEADY_RECHECK:
            # every chunk begun since `began_by` of that one shape (a fast probe with a long
            # timeout may have begun several), and the one before them too
            for probe_id, n, known, low, high in self._q(
                "SELECT probe_id, COUNT(*), COUNT(steady), MIN(steady), MAX(steady) FROM chunks"
                " WHERE t0 > ? AND t0 <= ? GROUP BY probe_id",
                (began_by, at),
            ):
                if n != known or low != high:
                    fresh.pop(probe_id, None)
            for probe_id, _, steady in self._latest_chunks(began_by):
                if fresh.get(probe_id) != steady:
                    fresh.pop(probe_id, None)
        else:
            fresh.clear()
        out: dict[int, tuple[ProbeKey, RecordShape]] = {}
        shapes: dict[int, RecordShape | None] = {}
        for probe_id, t0, steady in rows:
            if steady is None or probe_id in busy or (t0 > began_by and probe_id not in fresh):
                continue
            key = self._ref(probe_id).key
            if steady in shapes:
                shape = shapes[steady]
            else:
                shape = shapes[steady] = self._steady_shape(steady, key)
            if shape is not None:
                out[probe_id] = (key, shape)
        return out

    def _latest_chunks(self, at: float) -> list[tuple[int, float, int | None]]:
        """(probe id, t0, steady) of each probe's latest chunk begun by `at` (within a chunk's
        longest span before it)."""
        return self._q(
            # SQLite takes the bare column from the row holding the MAX
            "SELECT probe_id, MAX(t0), steady FROM chunks WHERE t0 > ? AND t0 <= ?"
            " GROUP BY probe_id",
            (at - MAX_SPAN, at),
        )

    def _steady_shape(self, shape_id: int, key: ProbeKey) -> RecordShape | None:
        try:
            return self._template(shape_id).steady(key)
        except (IndexError, KeyError, TypeError, ValueError) as e:
            raise damaged(self.path, f"undecodable shape {shape_id} ({e!r})") from None


def _wanted(probe_id: int, only: Collection[int] | None, skip: Collection[int]) -> bool:
    """Whether a probe's segment is read: one of `only` (None: any), none of `skip`."""
    return (only is None or probe_id in only) and probe_id not in skip


__all__ = ["STEADY_RECHECK", "Segment", "SegmentReads"]
