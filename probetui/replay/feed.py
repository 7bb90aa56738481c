"""Feed a store from a recording: what was published in a span of recorded time.

`Stream` reads the recording forward from a moment and feeds a store a step at a time (each
chunk decoded once, each event built when it is fed); `rebuild` fills an empty store up to a
moment pod after pod, as a seek does (deferring the probes that did one thing all through:
`fill` feeds them later), and hands on the stream that goes on from there. The
moment an event counts from is when the engine published it (`published`): an attempt when
it ended, a result change with the attempt that caused it. `replay.player` moves the cursor.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field

from probetui import memory
from probetui.keys import ProbeKey
from probetui.prober.prober import MAX_PROBE_RETRIES
from probetui.prober.status import PodStatus
from probetui.record.codec import US
from probetui.record.reader import Recording, Segment, StoppedRead, UnbuiltEvent
from probetui.record.schema import MAX_SPAN, Damaged
from probetui.replay.store import ReplayStore
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import Event, EventType
from probetui.timeline.history import RecordShape
from probetui.timeline.store import Store


def lookback(recording: Recording) -> float:
    """How long before its publication an event can be stamped: the longest an attempt takes,
    all its tries at the longest timeout of any recorded probe, and a second more."""
    return probing(recording)[0]


def probing(recording: Recording) -> tuple[float, float]:
    """(lookback, attempts per second) from the recorded specs."""
    longest, rate = 1.0, 0.0
    seen: set[str] = set()
    for pod in recording.specs():
        # the rate from each pod's first spec, as before; the timeouts from all of them
        first = pod.uid not in seen
        seen.add(pod.uid)
        for c in pod.probed_containers():
            for pt in ProbeType:
                p = c.probe(pt)
                if p is not None:
                    longest = max(longest, float(p.timeout_seconds))
                    if first:
                        rate += 1.0 / max(1, p.period_seconds)
    return MAX_PROBE_RETRIES * longest + 1.0, rate


def published(event: Event) -> float:
    """When the engine published an event: an attempt when it ended, the rest when stamped."""
    r = event.record
    return r.finished_at if r is not None and r.finished_at is not None else event.t


def feed_read(store: Store, p: UnbuiltEvent) -> None:
    """Feed `store` one event read; a `ReplayStore` a recorded doProbe as its shape and its
    own numbers, without building its record and event (a third of a seek's feeding)."""
    b = p.parts
    if type(b) is tuple and isinstance(store, ReplayStore):
        template, ref, item = b
        shape = template.shape_of(ref.key, item)
        if shape is not None:
            latency = item.latency / US if template.attempt is not None else 0.0
            store.feed_shape(ref.key, item.t / US, latency, item.run, shape)
            return
    store.event(p.event())


def feed(store: Store, recording: Recording, after: float, until: float, back: float) -> int:
    """Feed `store` what was published in (after, until], pods' specs and statuses with it;
    returns the events fed (`Stream.feed` on a stream begun for it)."""
    return Stream(recording, after, back).feed(store, after, until)


class Stream:
    """Reads the recording forward from a moment and feeds it to a store a step at a time.

    A step feeds what was published in (after, until]: the events stamped from a lookback
    before `after` (an attempt begun before and ended after it) to one past `until` (a result
    change is paired with its attempt, below). One stream serves every step of playing: each
    chunk is read and decoded once, where the last step left it, and an event is built only
    when it is fed, so a step costs what it feeds, not the chunks of 15,000 probes again.

    What is read and not yet fed waits in a heap by when it was published, each item's time
    of publication worked out once, as it is read: a step takes what its span published off
    the heap, so a short step (a slice of playing) costs what it feeds, not a scan of the
    lookbacks either side read ahead (guarded by benchmarks/replay_keys.py)."""

    def __init__(
        self,
        recording: Recording,
        after: float,
        back: float,
        resumed: StoppedRead | None = None,
    ) -> None:
        self.recording = recording
        self.back = back
        self._it: Iterator[UnbuiltEvent] | None = (
            recording.unbuilt_events(after - back)
            if resumed is None
            else recording.unbuilt_events_from(resumed)
        )
        self._read_to = -float("inf")  # the latest key read
        self._seq = 0  # items in the order read: a step feeds in that order, as read
        # (published, seq, item) of what is read and not fed
        self._heap: list[tuple[float, int, UnbuiltEvent]] = []
        # per probe, the result changes read since its last attempt: each is published with
        # the attempt after it that caused it, or on its own where none comes in time
        self._waiting: dict[tuple[str, str | None, str | None], list[tuple[int, UnbuiltEvent]]] = {}
        # the first step feeds the pods as they stood before it too, unless the store holds
        # them already (a stream going on from a rebuild)
        self._began = resumed is None
        # where the recording is damaged, once the stream has read up to there: what lies
        # before it is fed, and a step past it raises it
        self.fence: Damaged | None = None

    def _pull(self, limit: float) -> None:
        """Read on until an event keyed past `limit` (or the end) is read."""
        it = self._it
        if it is None or self._read_to > limit:
            return
        heap, waiting = self._heap, self._waiting
        push = heapq.heappush
        seq = self._seq
        while True:
            try:
                p = next(it, None)
            except Damaged as e:
                self.fence = e
                p = None
            if p is None:
                self._it = None
                break
            seq += 1
            type_ = p.type
            if type_ == EventType.RESULT_CHANGED:
                waiting.setdefault(p.group, []).append((seq, p))
            else:
                if type_ == EventType.PROBE_ATTEMPT:
                    changes = waiting.pop(p.group, None)
                    if changes is not None:
                        w = p.published
                        for n, rc in changes:
                            push(heap, (w if p.t <= rc.t <= w + 1.0 else rc.published, n, rc))
                push(heap, (p.published, seq, p))
            if p.key > limit:
                self._read_to = p.key
                break
        self._seq = seq

    def feed(self, store: Store, after: float, until: float) -> int:
        """Feed `store` what was published in (after, until]; `after` is where the last step
        ended (or where the stream began).

        The cyclic collector is held off meanwhile: a seek makes many objects that live (the
        store) or die by reference count (the events read), and the collections they would set
        off walk the store each time (guarded by benchmarks/replay.py). What it holds is
        acyclic (a refill cuts the store's one cycle), so nothing waits for the collector."""
        with memory.no_collection_during_bulk_load():
            return self._feed(store, after, until)

    def _feed(self, store: Store, after: float, until: float) -> int:
        """`feed`, under the collector's pause.

        A result change is published just before the attempt that caused it and belongs with
        it: it is fed exactly when that attempt is (the attempt's end is only known to the
        microsecond of its latency, and a cut between the two would reverse them)."""
        back = self.back
        lo, hi = after - back, until + back
        # an event stamped up to hi is keyed (its chunk's latest time) at most an attempt's
        # length later: read that far, so every one of them is in
        self._pull(hi + back)
        heap = self._heap
        pop = heapq.heappop
        ready: list[tuple[int, UnbuiltEvent]] = []
        # a change whose attempt has not come within what is read stands on its own
        for group in [
            g for g, changes in self._waiting.items() if changes[0][1].published <= until
        ]:
            changes = self._waiting[group]
            keep = [(n, rc) for n, rc in changes if rc.published > until]
            ready += ((n, rc) for n, rc in changes if rc.published <= until)
            if keep:
                self._waiting[group] = keep
            else:
                del self._waiting[group]
        ready = [(n, rc) for n, rc in ready if after < rc.published and lo <= rc.t <= hi]
        while heap and heap[0][0] <= until:
            w, n, p = pop(heap)
            if after < w and lo <= p.t <= hi:
                ready.append((n, p))
        ready.sort(key=_seq_of)
        in_force, self._began = self._began, False
        shots = self.recording.snapshots(just_after(after), until, in_force=in_force)
        snaps = ((t, 0, (pod, st)) for t, pod, st in shots)
        events = ((p.t, 1, p) for _, p in ready)
        n = 0
        for _, kind, x in heapq.merge(snaps, events, key=lambda item: item[0]):
            if kind == 0:
                store.pod(*x)  # type: ignore[misc]
            else:
                feed_read(store, x)  # type: ignore[arg-type]
                n += 1
        fence = self.fence
        if fence is not None and (fence.t is None or until >= fence.t):
            # the state up to `until` is whole only where everything stamped by then is
            raise fence
        return n


# a fill of this many deferred probes or more (the player's batch, not the rows on screen)
# reads the segments of every probe still deferred, for the fills after it
READ_ALL = 256


@dataclass(slots=True)
class Rebuilt:
    """Holds what a rebuild hands on: the stream that goes on from its end, and the probes it
    deferred (`ReplayStore.defer_entries`) by key, with their ids, for `fill`; once a fill has
    read them, the segments of those probes by id, with the damage that ended that read; the
    ids filled."""

    stream: Stream
    resumed: StoppedRead
    deferred: dict[ProbeKey, int]
    after: float
    until: float
    back: float
    segments: dict[int, list[Segment]] | None = None
    fence: Damaged | None = None
    filled: set[int] = field(default_factory=set)


def rebuild(
    store: ReplayStore,
    recording: Recording,
    after: float,
    until: float,
    back: float,
    steady: dict[int, tuple[ProbeKey, RecordShape]] | None = None,
) -> Rebuilt:
    """Feed a seek's fresh `store` (`ReplayStore.fresh_for_seek`) what was published in
    (after, until] and the pods as they stood then, as a `Stream` begun at `after` feeds it in
    one step, each pod on its own; returns the stream that goes on from `until`, reading on
    where this stopped.

    The stream merges 15,000 probes' events by time and feeds them in that order, a heap
    step per event; the store's state of one pod depends only on the order of that pod's
    own events and snapshots, so a seek feeds pod after pod: the pod's snapshots, then its
    events, merged by time as the stream does.

    `steady` (`Recording.steady_probes(until, until - back)`): probes that did one thing all
    through the span read, so whatever their records there, they leave the state their shape
    says with a run under way. Those of a pod that stood as one snapshot all through are
    not read: the store is given their state (`ReplayStore.defer_entries`) and `fill` feeds
    their entries when something reads them."""
    lo, hi = after - back, until + back
    snaps: dict[str, list[tuple[float, Pod, PodStatus | None]]] = {}
    order: list[str] = []
    for t, pod, status in recording.snapshots(just_after(after), until):
        s = snaps.get(pod.uid)
        if s is None:
            s = snaps[pod.uid] = []
            order.append(pod.uid)
        s.append((t, pod, status))
    later: dict[str, list[tuple[ProbeKey, RecordShape]]] = {}
    deferred: dict[ProbeKey, int] = {}
    for probe_id, (key, shape) in (steady or {}).items():
        shots = snaps.get(key.pod_uid)
        if shots is not None and len(shots) == 1 and shots[0][2] is not None:
            later.setdefault(key.pod_uid, []).append((key, shape))
            deferred[key] = probe_id
    groups, resumed = recording.unbuilt_by_probe(
        lo, hi, hi + back, until - back, skip=set(deferred.values()), whole_to=until
    )
    assert resumed is not None
    by_pod: dict[str, list[list[tuple[float, int, UnbuiltEvent]]]] = {}
    for group, keyed in groups.items():
        fed = _fed_of(keyed, after, until)
        if fed:
            by_pod.setdefault(group[0], []).append(fed)
    order.extend(uid for uid in by_pod if uid not in snaps)
    # bound once: a seek in a steady stretch runs this for 15,000 pods with nothing to feed
    feed_pod, defer, deferred_of = store.pod, store.defer_entries, later.get
    for uid in order:
        lists = by_pod.get(uid)
        if lists is None:
            events: list[tuple[float, int, UnbuiltEvent]] = []
        elif len(lists) == 1:
            events = lists[0]
        else:
            events = list(heapq.merge(*lists, key=_merge_key))
        shots = snaps.get(uid, ())
        if len(shots) == 1 and (not events or shots[0][0] <= events[0][2].t):
            # the common case: the pod as it stood, then what its probes did or the states
            # of those deferred
            feed_pod(shots[0][1], shots[0][2])
            for _, _, p in events:
                feed_read(store, p)
            for key, shape in deferred_of(uid, ()):
                defer(key, shape)
            continue
        merged = heapq.merge(
            ((t, 0, (pod, st)) for t, pod, st in shots),
            ((p.t, 1, p) for _, _, p in events),
            key=_first,
        )
        for _, kind, x in merged:
            if kind == 0:
                store.pod(*x)  # type: ignore[misc]
            else:
                feed_read(store, x)  # type: ignore[arg-type]
    return Rebuilt(Stream(recording, until, back, resumed), resumed, deferred, after, until, back)


def fill(store: ReplayStore, recording: Recording, rebuilt: Rebuilt, keys: list[ProbeKey]) -> None:
    """Feed deferred histories (emptied, `ReplayStore.fill_deferred`) what `rebuild` would
    have fed them: their events of the same span, or a keyframe where the span holds none.
    What was read for playing on goes to the rebuilt stream (it has not begun: filling all
    the deferred comes before its first step).

    The segments are read from the window as the rebuild would have: the first fill of a
    player's batch (`READ_ALL` or more) reads those of every probe still deferred, once for
    all the fills after it (one pass over the window, not one a batch); a fill of what the
    screen shows reads only its own, so that its repaint does not wait for the rest."""
    ids = {rebuilt.deferred[k] for k in keys if k in rebuilt.deferred}
    after, until, back = rebuilt.after, rebuilt.until, rebuilt.back
    lo, hi = after - back, until + back
    if rebuilt.segments is None and len(ids) >= READ_ALL:
        left = set(rebuilt.deferred.values()) - rebuilt.filled
        rebuilt.segments, rebuilt.fence = recording.segments_of(lo, hi + back, left)
    if rebuilt.segments is not None:
        fence = rebuilt.fence
        found = [x for i in ids for x in rebuilt.segments.pop(i, ())]
    else:
        by_probe, fence = recording.segments_of(lo, hi + back, ids)
        found = [x for got in by_probe.values() for x in got]
    rebuilt.filled |= ids
    if fence is not None and (fence.t is None or fence.t <= until):
        raise fence  # within what the fill feeds: as a rebuild would have found it
    segments = sorted(found, key=_segment_order)
    with memory.no_collection_during_bulk_load():
        groups, got = recording.unbuilt_by_probe(
            lo,
            hi,
            hi + back,
            until - back,
            only=ids,
            rows=False,
            whole_to=until,
            segments=segments,
        )
        for keyed in groups.values():
            for _, _, p in _fed_of(keyed, after, until):
                feed_read(store, p)
        if got is not None:
            resumed = rebuilt.resumed
            resumed.items.extend(got.items)
            resumed.stopped.extend(got.stopped)
            for damage in (got.fence, fence):
                if damage is not None and (resumed.fence is None or damage.sooner(resumed.fence)):
                    resumed.fence = damage
        empty = [k for k in keys if (h := store.probes.get(k)) is not None and not len(h)]
        keyframes(store, recording, empty, after)


def keyframes(store: Store, recording: Recording, keys: list[ProbeKey], lo: float) -> None:
    """Probes fed nothing within a seek's window (their period is longer than a dense
    recording's window) stand as they did at its start: the last chunk before it, fed up
    to there, gives the published result, run and hold, which every record carries. One
    pass over the chunks before the window for all of them."""
    if not keys:
        return
    found = recording.probes_events(keys, since=lo - MAX_SPAN, until=lo)
    for key in keys:
        events = found.get(key)
        if events:
            for e in published_by(events, lo):
                store.event(e)


def _fed_of(
    keyed: list[tuple[float, int, UnbuiltEvent]], after: float, until: float
) -> list[tuple[float, int, UnbuiltEvent]]:
    """One probe's events (in order, stamped within the lookback of the step) that a step
    over (after, until] feeds: published within it, a result change with its attempt."""
    if len(keyed) == 1:
        p = keyed[0][2]
        return keyed if after < p.published <= until else []
    when = [x[2].published for x in keyed]
    following: int | None = None
    for i in range(len(keyed) - 1, -1, -1):
        p = keyed[i][2]
        if p.type == EventType.RESULT_CHANGED:
            j = following
            if j is not None and keyed[j][2].t <= p.t <= when[j] + 1.0:
                when[i] = when[j]
        elif p.type == EventType.PROBE_ATTEMPT:
            following = i
    return [x for x, w in zip(keyed, when, strict=True) if after < w <= until]


def _segment_order(x: Segment) -> tuple[float, int]:
    return (x[0], x[1])


def _seq_of(x: tuple[int, UnbuiltEvent]) -> int:
    return x[0]


def _merge_key(x: tuple[float, int, UnbuiltEvent]) -> tuple[float, int]:
    return (x[0], x[1])


def _first(x: tuple[float, int, object]) -> float:
    return x[0]


def published_by(events: list[Event], t: float) -> list[Event]:
    """One probe's events (in order) that were published by `t`, a result change with the
    attempt after it that caused it (as `Stream.feed` pairs them)."""
    when = [published(e) for e in events]
    following: int | None = None
    for i in range(len(events) - 1, -1, -1):
        e = events[i]
        if e.type == EventType.RESULT_CHANGED:
            j = following
            if j is not None and events[j].t <= e.t <= when[j] + 1.0:
                when[i] = when[j]
        elif e.type == EventType.PROBE_ATTEMPT:
            following = i
    return [e for e, w in zip(events, when, strict=True) if w <= t]


def just_after(t: float) -> float:
    # the reader's windows include both ends; a microsecond on is the next recorded instant
    return t + 1e-6


__all__ = [
    "Rebuilt",
    "Stream",
    "feed",
    "feed_read",
    "fill",
    "just_after",
    "keyframes",
    "lookback",
    "probing",
    "published",
    "published_by",
    "rebuild",
]
