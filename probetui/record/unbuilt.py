"""Read a recording forward as events not yet built: what a replay feeds as it plays and seeks.

`UnbuiltEvent` is an event read with what the replay's feed decides by (its time, when it was
published, its type and probe) and the event built only when asked; `unbuilt_events(since)` is
every one from a moment to the end, page by page as pulled; `unbuilt_by_probe` the same of a
window by probe (a seek feeds each probe on its own), and where the forward read then stands
(`StoppedRead`), from which `unbuilt_events_from` goes on without decoding a chunk from its
start again.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from probetui.record import codec
from probetui.record.merge import (
    by_first,
    by_first_two,
    fenced_merge,
    later_than,
    merge_segments,
    raising,
    us_at_least,
    us_at_most,
)
from probetui.record.schema import Damaged
from probetui.record.segments import Segment, SegmentReads
from probetui.record.shapes import EVENT_TYPE
from probetui.record.source import _BAD
from probetui.timeline.events import Event


@dataclass(slots=True)
class UnbuiltEvent:
    """Holds an event read, not yet built: what the replay's feed decides by (its time, when it was
    published, its type and probe), and the event itself on demand. A step forward reads a
    lookback either side of what it feeds; only what it feeds is built."""

    key: float  # the merge key: the latest time of its chunk up to it (rows: their time)
    t: float
    published: float  # an attempt when it ended, the rest when stamped
    type: str
    group: Group  # (pod uid, container, probe)
    parts: Any  # (Template, ProbeRef, Item), or the Event once built

    def event(self) -> Event:
        """Build the event (once) from its template, its probe and its item."""
        b = self.parts
        if type(b) is tuple:
            template, ref, item = b
            b = self.parts = template.event(ref, item)
        return b  # type: ignore[no-any-return]


# (pod uid, container, probe): whose an event is
Group = tuple[str, str | None, str | None]


# (merge key, 0 for a chunk's item or 1 for a kubelet row, the event)
Keyed = tuple[float, int, UnbuiltEvent]


@dataclass(slots=True)
class StoppedRead:
    """Marks where `unbuilt_events(since)` stands after a seek read it to `stop`
    (`unbuilt_by_probe`): the items it read of each segment (in the order the segments began) and
    the rows, and each segment it stopped decoding in: (the stopping item's key in µs, t0, id,
    probe id, data, that item, the decoder's state after it)."""

    since: float
    stop: float
    items: list[list[UnbuiltEvent]]
    rows: list[UnbuiltEvent]
    stopped: list[tuple[int, float, int, int, bytes, Any, Any]]
    # damage the seek read past what it fed: the stream that plays on raises it there
    fence: Damaged | None = None


class UnbuiltReads(SegmentReads):
    """Runs the forward reads of events not yet built: `unbuilt_events`, `unbuilt_by_probe` and
    `unbuilt_events_from`."""

    def unbuilt_events(self, since: float) -> Iterator[UnbuiltEvent]:
        """Every event with t >= since to the end of what is recorded now, in the order of
        `events()`, read page by page as it is pulled and built only when asked (`UnbuiltEvent`):
        the replay plays forward on one stream, each chunk decoded once, from where it was."""
        items = self._unbuilt_items(since)
        rows = self._unbuilt_rows(since)
        for _, _, p in fenced_merge((items, rows), by_first_two, by_first):
            yield p

    def _unbuilt_items(self, lo: float) -> Iterator[tuple[float, int, UnbuiltEvent]]:
        return merge_segments(
            self._segment_pages(lo),
            lambda seg: (
                (p.key, p) for p in self._segment_unbuilt(seg[2], seg[3], lo, marks=seg[4])
            ),
        )

    def _segment_pages(
        self, lo: float, after_t0: float | None = None
    ) -> Iterator[tuple[float, int, int, bytes, codec.Marks | None]]:
        """`_segments(lo, inf)`, the closed chunks a bucket of start times at a time (from
        `after_t0` on, given: a stream resumed there has read those before)."""
        return self._segments(lo, math.inf, None, after_t0)

    def unbuilt_by_probe(
        self,
        since: float,
        until: float,
        stop: float,
        resume: float | None = None,
        *,
        skip: Collection[int] = (),
        only: Collection[int] | None = None,
        rows: bool = True,
        whole_to: float | None = None,
        segments: list[Segment] | None = None,
    ) -> tuple[dict[Group, list[Keyed]], StoppedRead | None]:
        """What `unbuilt_events(since)` yields stamped up to `until` and keyed up to `stop`, by
        probe (pod uid, container, probe; a kubelet row by what it names), each as (key,
        0 for an item or 1 for a row, UnbuiltEvent) in the order `unbuilt_events` gives
        them.

        A seek feeds each probe on its own: the same events as a stream of 15,000 probes
        merged by time (restricted to one probe, that merge is its segments' and rows' merge
        by key), without the heap that merge walks for every event, and each chunk decoded
        no further than `stop` (a key past it: nothing after it is wanted).

        `resume` (at least `since`), given: also where `unbuilt_events(resume)` stands after what
        was read here (`StoppedRead`, for `unbuilt_events_from`), so that playing on from the seek
        decodes no chunk from its start again (that was a second seek's worth of decoding
        in the first step of playing after it).

        `skip`: probes not read (a seek defers them); `only`: just these probes, and without
        `rows` none of the kubelet's rows (a deferred history filled after the seek fed them).
        `whole_to` (default `until`): damage found past it is read up to, not raised (the
        stream that plays on raises it): what a seek feeds is published by then.
        `segments`: what `_segments` would give (in its order), read before (`segments_of`:
        what a seek deferred, read once for all the fills after it)."""
        stop_us = us_at_most(stop)
        whole = until if whole_to is None else whole_to
        lists: list[tuple[int, list[UnbuiltEvent]]] = []
        stopped: list[tuple[int, float, int, int, bytes, Any, Any]] = []
        # damage found past `until` is read up to (what is fed is whole), and raised by the
        # stream that plays on (`StoppedRead.fence`), where it reaches it
        fence: Damaged | None = None
        try:
            source = (
                self._segments(since, stop, only, skip=skip) if segments is None else iter(segments)
            )
            for t0, seg, probe_id, data, marks in source:
                if probe_id in skip:
                    continue
                left: list[Any] | None = [] if resume is not None else None
                got: list[UnbuiltEvent] = []
                try:
                    got.extend(
                        self._segment_unbuilt(
                            probe_id, data, since, stop_us, stop_us, None, left, marks
                        )
                    )
                except Damaged as e:
                    fence = later_than(e, whole, fence)
                    left = None
                if got:
                    lists.append((probe_id, got))
                if left:
                    key, item, state = left[0]
                    stopped.append((key, t0, seg, probe_id, data, item, state))
        except Damaged as e:
            fence = later_than(e, whole, fence)
        by_probe: dict[int, list[list[UnbuiltEvent]]] = {}
        for probe_id, got in lists:
            by_probe.setdefault(probe_id, []).append(got)
        out: dict[Group, list[Keyed]] = {}
        for got_lists in by_probe.values():
            if len(got_lists) == 1:
                merged: Iterable[UnbuiltEvent] = got_lists[0]
            else:
                # each segment is in key order; ties go to the one that began first, as the
                # stream's merge takes them
                merged = heapq.merge(*got_lists, key=_key_of)
            kept = [(p.key, 0, p) for p in merged if p.t <= until]
            if kept:
                out[kept[0][2].group] = kept
        row_list: list[UnbuiltEvent] = []
        if rows:
            try:
                row_list.extend(p for _, _, p in self._unbuilt_rows(since, stop))
            except Damaged as e:
                fence = later_than(e, whole, fence)
        by_group: dict[Group, list[Keyed]] = {}
        for p in row_list:
            if p.t <= until:
                by_group.setdefault(p.group, []).append((p.t, 1, p))
        for group, kept in by_group.items():
            items = out.get(group)
            out[group] = kept if items is None else list(heapq.merge(items, kept, key=_merge_key))
        if resume is None:
            return out, None
        return out, StoppedRead(resume, stop, [got for _, got in lists], row_list, stopped, fence)

    def unbuilt_events_from(self, r: StoppedRead) -> Iterator[UnbuiltEvent]:
        """`unbuilt_events(r.since)`, from what a seek read (`unbuilt_by_probe`) and on from there;
        nothing is done before the first pull (a seek that is not played on pays none of it).

        What the seek read keyed up to its `stop` comes first, in the stream's order: by key,
        a segment's items before the rows at the same key, segments in the order they began.
        Then the segments the seek stopped decoding in, each from its stopping item on (by
        that item's key: none has a later item keyed before it, so each is opened only when
        the merge reaches it), with those begun after `stop`, and the rows after it."""
        since = r.since
        prefix = [
            (p.key, 0, rank, j, p)
            for rank, got in enumerate(r.items)
            for j, p in enumerate(got)
            if p.t >= since
        ]
        prefix.extend((p.t, 1, 0, j, p) for j, p in enumerate(r.rows) if p.t >= since)
        prefix.sort(key=_prefix_key)
        us = codec.US
        resumed = sorted((key / us, *rest) for key, *rest in r.stopped)
        # what the seek read before `since` (most of it, built events included) goes now, not
        # with the stream: kept, every full collection while playing walked it
        r.items, r.rows, r.stopped = [], [], []
        for x in prefix:
            yield x[4]
        del prefix
        later = (s for s in self._segment_pages(since, after_t0=r.stop) if s[0] > r.stop)

        def opened(seg: tuple[Any, ...]) -> Iterator[tuple[float, UnbuiltEvent]]:
            if len(seg) == 5:  # a segment begun after the seek's end
                return (
                    (p.key, p) for p in self._segment_unbuilt(seg[2], seg[3], since, marks=seg[4])
                )
            return self._resumed_segment(seg, since)

        segments = heapq.merge(resumed, later, key=by_first)
        items = merge_segments(segments, opened)
        rows = self._unbuilt_rows(math.nextafter(r.stop, math.inf))
        for _, _, p in fenced_merge((items, rows, raising(r.fence)), _merge_key, by_first):
            yield p

    def _resumed_segment(
        self, seg: tuple[Any, ...], lo: float
    ) -> Iterator[tuple[float, UnbuiltEvent]]:
        key, _, _, probe_id, data, item, state = seg
        first = self._unbuilt_of(probe_id, round(key * codec.US), item)
        yield first.key, first
        end = 1 << 62
        for p in self._segment_unbuilt(probe_id, data, lo, end, end, state):
            yield p.key, p

    def _unbuilt_of(self, probe_id: int, key: int, item: codec.Item) -> UnbuiltEvent:
        ref = self._ref(probe_id)
        us = codec.US
        tp = self._template(item.shape)
        t = item.t / us
        done = t + item.latency / us if tp.kind == "A" else t
        group = (ref.key.pod_uid, ref.container, ref.probe)
        return UnbuiltEvent(key / us, t, done, EVENT_TYPE[tp.kind], group, (tp, ref, item))

    def _segment_unbuilt(
        self,
        probe_id: int,
        data: bytes,
        lo: float,
        hi_us: int = 1 << 62,
        stop_us: int = 1 << 62,
        start: codec.ScanState | None = None,
        stopped: list[Any] | None = None,
        marks: codec.Marks | None = None,
    ) -> Iterator[UnbuiltEvent]:
        ref = self._ref(probe_id)
        us = codec.US
        group = (ref.key.pod_uid, ref.container, ref.probe)
        template = self._template
        lo_us = us_at_least(lo)
        key: int | None = None
        try:
            if start is None:
                start = codec.start_before(marks, lo_us)
            for key, item in codec.scan(data, self._kind, lo_us, hi_us, stop_us, start, stopped):
                tp = template(item.shape)
                t = item.t / us
                kind = tp.kind
                done = t + item.latency / us if kind == "A" else t
                yield UnbuiltEvent(key / us, t, done, EVENT_TYPE[kind], group, (tp, ref, item))
        except _BAD as e:
            raise self._undecodable(e, None if key is None else key / us) from None

    def _unbuilt_rows(
        self, lo: float, hi: float = math.inf
    ) -> Iterator[tuple[float, int, UnbuiltEvent]]:
        for page in self._pages.by_time("events", lo, hi):
            for _, t, pod_id, type_, container, probe, source, fields, _ in page:
                e = self._event_row(t, pod_id, type_, container, probe, source, fields)
                yield t, 1, UnbuiltEvent(t, t, t, type_, (e.pod_uid, container, probe), e)


def _prefix_key(x: tuple[float, int, int, int, UnbuiltEvent]) -> tuple[float, int, int, int]:
    return (x[0], x[1], x[2], x[3])


def _key_of(p: UnbuiltEvent) -> float:
    return p.key


def _merge_key(x: Keyed) -> tuple[float, int]:
    return (x[0], x[1])


__all__ = ["Group", "Keyed", "StoppedRead", "UnbuiltEvent", "UnbuiltReads"]
