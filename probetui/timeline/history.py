"""Keep one probe's history: the bit-packed ring of every doProbe, its layout, and the intern table.

`ProbeHistory` keeps, per probe worker, a ring of every doProbe (attempt or skip) packed into
one `array("I")` of small numbers: no Python object per attempt. The codes stored in its
columns (`Kind`, trigger, skip reason, published result, result run) and the field offsets are
defined here, beside the packing and unpacking that use them. Texts (output, target, body
excerpt, errors, event messages) go through `Texts`, one reference-counted intern table shared
by every ring of a store, since most attempts repeat the previous one's text; a slot that is
overwritten releases its texts. `AttemptView` is one entry unpacked for the attempt log.

A doProbe record reaches a history as its own numbers (time, latency, result run) and its
`RecordShape`, the history's form of the record's steady part (`probetui.prober.steady`, which
the worker interns): the live store makes one per part and keeps it on the part, a replay one
per recorded shape.

`probetui.timeline.store` owns the rings, sizes them and feeds them events.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from probetui.keys import ProbeKey
from probetui.prober.outcome import KIND_NAMES, Kind
from probetui.prober.results import ResultValue
from probetui.prober.steady import SteadyPart
from probetui.prober.worker import ProbeRecord, Skip, Trigger

if TYPE_CHECKING:
    from probetui.timeline.store import ContainerHistory


# -- codes stored in the columns ----------------------------------------------------------


TRIGGERS: tuple[Trigger, ...] = tuple(Trigger)
TRIGGER_CODE = {t: i for i, t in enumerate(TRIGGERS)}
# skip reasons: 1.. in Skip's order; OTHER_SKIP carries its reason in the output column
SKIPS: tuple[Skip, ...] = tuple(Skip)
SKIP_CODE = {s: i + 1 for i, s in enumerate(SKIPS)}
OTHER_SKIP = 255
_RESULTS = {-1: ResultValue.UNKNOWN, 0: ResultValue.SUCCESS, 1: ResultValue.FAILURE}

MAX_RUN = 0xFFFF
BODY_EXCERPT = 2048  # characters of an HTTP body kept for the attempt log

CHANGES = 64  # per probe: published result changes kept for ▼/▲


def kind_of(record: ProbeRecord) -> int:
    return record.steady.kind


# -- the intern table ---------------------------------------------------------------------


class Texts:
    """Shares strings by index, with reference counts so that overwritten slots free theirs.

    Index 0 is the empty string and is never freed.
    """

    __slots__ = ("_free", "_index", "_refs", "_texts")

    def __init__(self) -> None:
        self._texts: list[str] = [""]
        self._refs = array("I", [0])
        self._index: dict[str, int] = {"": 0}
        self._free: list[int] = []

    def add(self, text: str | None) -> int:
        """The index of `text`, with one more reference to it."""
        if not text:
            return 0
        i = self._index.get(text)
        if i is None:
            if self._free:
                i = self._free.pop()
                self._texts[i] = text
                self._refs[i] = 0
            else:
                i = len(self._texts)
                self._texts.append(text)
                self._refs.append(0)
            self._index[text] = i
        self._refs[i] += 1
        return i

    def release(self, i: int) -> None:
        if i == 0:
            return
        left = self._refs[i] - 1
        self._refs[i] = left
        if left == 0:
            del self._index[self._texts[i]]
            self._texts[i] = ""
            self._free.append(i)

    def __getitem__(self, i: int) -> str:
        return self._texts[i]

    def __len__(self) -> int:
        """Distinct strings held (the empty one included)."""
        return len(self._index)


# -- one probe's history ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AttemptView:
    """Holds one ring entry as the attempt log shows it (built on demand, a few dozen at a time)."""

    t: float
    kind: int
    trigger: Trigger
    skip: Skip | None
    latency: float  # seconds
    status_code: int | None
    result_run: int
    published: ResultValue | None
    output: str  # the handler's output: what the kubelet's event carries; skip reason for skips
    detail: bool = False  # the fields below are known (one of the last `detail` attempts)
    target: str = ""
    body: str = ""
    error: str = ""
    event: str = ""
    tries: int = 0

    @property
    def manual(self) -> bool:
        return self.trigger is Trigger.USER

    @property
    def is_attempt(self) -> bool:
        return self.kind != Kind.SKIP

    @property
    def skip_reason(self) -> str:
        if self.kind != Kind.SKIP:
            return ""
        return self.skip.value if self.skip is not None else self.output


# one entry: five unsigned 32-bit fields side by side in one array (see ProbeHistory)
F_T, F_LAT, F_CODE, F_STATUS, F_OUT = range(5)
REC = 5
# one kept detail: the entry's sequence number + 1 (0: empty slot), then text indices, tries
D_SEQ, D_TARGET, D_BODY, D_ERROR, D_EVENT, D_TRIES = range(6)
DREC = 6
MAX_LAT_US = 0xFFFFFFFF


class ProbeHistory:
    """Keeps every doProbe of one worker, newest last, in a ring of `capacity` entries.

    An entry is 20 bytes in one `array("I")`, five fields side by side: time (ms after the
    history's base time: 49 days of range), latency (µs), a packed code (kind, trigger,
    published result, skip reason, result run), the HTTP status, and the output's text index.
    One array rather than one per column: with 15,000 workers every Python object counts
    twice, once in memory and once in each full pass of the garbage collector.
    """

    __slots__ = (
        "_base",
        "_changes",
        "_counts",
        "_d",
        "_d_head",
        "_detail",
        "_head",
        "_last_t",
        "_rec",
        "_run",
        "_seq",
        "_texts",
        "capacity",
        "in_run",
        "key",
        "last_result",
        "next_tick",
        "on_hold",
        "owner",
        "paused",
        "published",
        "shape",
    )

    def __init__(self, key: ProbeKey, texts: Texts, capacity: int, detail: int) -> None:
        self.key = key
        self.owner: ContainerHistory | None = None  # set by the store
        self._texts = texts
        self.capacity = max(1, capacity)
        self._detail = max(0, min(detail, self.capacity))
        self._base: float | None = None
        # grows with use up to capacity entries, then wraps at _head
        self._rec = array("I")
        self._head = 0
        # the detail ring, over attempts only, allocated on the first attempt
        self._d = array("I")
        self._d_head = 0
        # published result changes: (t, ResultValue int), bounded
        self._changes: deque[tuple[float, int]] | None = None
        # what the last record said, and totals since the worker began
        self._run = 0
        self.in_run = False  # result_run > 0, read without filling a deferred history
        self.last_result: ResultValue | None = None
        self.published: ResultValue | None = None
        self.on_hold = False
        # the worker's schedule as last told: the tick armed next (None: no running worker,
        # e.g. a recorded session or a stopped worker) and whether the user paused it
        self.next_tick: float | None = None
        self.paused = False
        # the shape of the last record, kept on its steady part
        self.shape: RecordShape | None = None
        self._last_t: float | None = None
        self._counts = [0] * 7  # by Kind
        self._seq = 0  # entries ever appended

    @property
    def result_run(self) -> int:
        """The run of equal results the last record said, towards a threshold."""
        return self._run

    @result_run.setter
    def result_run(self, run: int) -> None:
        self._run = run
        self.in_run = run > 0

    @property
    def counts(self) -> list[int]:
        """Entries by Kind since the worker began (a replay: since the store was filled)."""
        return self._counts

    @property
    def last_t(self) -> float | None:
        return self._last_t

    @property
    def seq(self) -> int:
        """Entries ever appended."""
        return self._seq

    def attempted(self) -> bool:
        """Tell whether any entry is an attempt."""
        c = self._counts
        return any(c[kind] for kind in Kind.ATTEMPTS)

    # -- writing ----------------------------------------------------------------------

    def _ms(self, t: float) -> int:
        base = self._base
        if base is None:
            # a little before the first entry, so a slightly earlier one still fits
            base = self._base = t - 60.0
        return min(max(0, round((t - base) * 1000.0)), 0xFFFFFFFF)

    def append(self, t: float, latency: float, run: int, shape: RecordShape) -> None:
        """Add one doProbe's entry: its own numbers and its steady part."""
        out = self._texts.add(shape.output)
        code = shape.code | min(run, MAX_RUN) << 16
        status = shape.status
        ms = self._ms(t)
        lat = min(max(0, round(latency * 1e6)), MAX_LAT_US)
        rec = self._rec
        if len(rec) < self.capacity * REC:
            rec.extend((ms, lat, code, status, out))
        else:
            i = self._head * REC
            self._texts.release(rec[i + F_OUT])
            rec[i] = ms
            rec[i + 1] = lat
            rec[i + 2] = code
            rec[i + 3] = status
            rec[i + 4] = out
            self._head = (self._head + 1) % self.capacity
        self._counts[shape.kind] += 1
        self._last_t = t
        seq = self._seq
        self._seq = seq + 1
        detail = shape.detail
        if detail is not None:
            self._set_detail(seq, *detail)

    def _set_detail(
        self,
        seq: int,
        target: str,
        body: str | None,
        error: str | None,
        event: str | None,
        tries: int,
    ) -> None:
        if self._detail == 0:
            return
        texts = self._texts
        d = self._d
        if not d:
            d = self._d = array("I", [0]) * (self._detail * DREC)
        # a ring over attempts only: skips never push an attempt's detail out
        i = self._d_head * DREC
        self._d_head = (self._d_head + 1) % self._detail
        for f in (D_TARGET, D_BODY, D_ERROR, D_EVENT):
            texts.release(d[i + f])
        d[i + D_SEQ] = (seq + 1) & 0xFFFFFFFF
        d[i + D_TARGET] = texts.add(target)
        d[i + D_BODY] = texts.add(body)
        d[i + D_ERROR] = texts.add(error)
        d[i + D_EVENT] = texts.add(event)
        d[i + D_TRIES] = min(tries, 255)

    def add_change(self, t: float, result: ResultValue) -> None:
        if self._changes is None:
            self._changes = deque(maxlen=CHANGES)
        self._changes.append((t, int(result)))

    def release(self) -> None:
        """Give back every text this history holds (the probe is gone)."""
        texts = self._texts
        rec, d = self._rec, self._d
        for i in range(F_OUT, len(rec), REC):
            texts.release(rec[i])
        for i in range(0, len(d), DREC):
            for f in (D_TARGET, D_BODY, D_ERROR, D_EVENT):
                texts.release(d[i + f])
        self._rec = array("I")
        self._d = array("I")

    # -- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rec) // REC

    def _time(self, ms: int) -> float:
        assert self._base is not None
        return self._base + ms / 1000.0

    @property
    def oldest_t(self) -> float | None:
        n = len(self)
        if n == 0:
            return None
        first = self._head if n == self.capacity else 0
        return self._time(self._rec[first * REC + F_T])

    def indices_back(self) -> Iterator[int]:
        """Offsets of the entries in the array, newest first."""
        n = len(self)
        if n < self.capacity:
            yield from range((n - 1) * REC, -1, -REC)
            return
        head = self._head
        yield from range((head - 1) * REC, -1, -REC)
        yield from range((n - 1) * REC, head * REC - 1, -REC)

    def window(
        self, start: float, end: float, published_by: float | None = None
    ) -> list[tuple[float, int]]:
        """(t, kind) of the entries with start <= t < end, newest first; with `published_by`,
        only those finished by then (an attempt is stamped with its start, known at its end)."""
        out: list[tuple[float, int]] = []
        if self._base is None:
            return out
        base = self._base
        lo, hi = (start - base) * 1000.0, (end - base) * 1000.0
        # in the fields' units: ms for the time, µs for the latency
        by = None if published_by is None else (published_by - base) * 1000.0
        rec = self._rec
        for i in self.indices_back():
            ms = rec[i]
            if ms >= hi:
                continue
            if ms < lo:
                break
            if by is not None and ms + rec[i + F_LAT] / 1000.0 > by:
                continue
            out.append((base + ms / 1000.0, rec[i + F_CODE] & 7))
        return out

    def changes(self, start: float, end: float) -> list[tuple[float, ResultValue]]:
        if not self._changes:
            return []
        return [(t, _RESULTS[r]) for t, r in self._changes if start <= t < end]

    def latencies(self, n: int) -> list[tuple[float, int]]:
        """(latency s, kind) of the last `n` attempts (skips left out), oldest first."""
        out: list[tuple[float, int]] = []
        rec = self._rec
        for i in self.indices_back():
            kind = rec[i + F_CODE] & 7
            if kind == Kind.SKIP:
                continue
            out.append((rec[i + F_LAT] / 1e6, kind))
            if len(out) >= n:
                break
        out.reverse()
        return out

    def last_skip(self) -> AttemptView | None:
        """The newest entry when it is a skip (why the probe is not running now)."""
        for i in self.indices_back():
            return self._view(i, {}) if self._rec[i + F_CODE] & 7 == Kind.SKIP else None
        return None

    def recent(
        self, n: int, until: float | None = None, *, published: bool = False
    ) -> list[AttemptView]:
        """The newest `n` entries (begun at or before `until`, when given; with `published`,
        finished by then too), newest first, with detail where it is still kept."""
        d = self._d
        details = {d[j] - 1: j for j in range(0, len(d), DREC) if d[j]}
        out: list[AttemptView] = []
        seq = self._seq
        rec = self._rec
        last_ms = None if until is None or self._base is None else (until - self._base) * 1000.0
        for i in self.indices_back():
            seq -= 1
            if last_ms is not None and (
                rec[i] > last_ms or (published and rec[i] + rec[i + F_LAT] / 1000.0 > last_ms)
            ):
                continue
            out.append(self._view(i, details, seq & 0xFFFFFFFF))
            if len(out) >= n:
                break
        return out

    def _view(self, i: int, details: dict[int, int], seq: int = -1) -> AttemptView:
        texts = self._texts
        rec = self._rec
        code = rec[i + F_CODE]
        skip_code = (code >> 8) & 0xFF
        status = rec[i + F_STATUS]
        j = details.get(seq)
        detail: dict[str, object] = {}
        if j is not None:
            d = self._d
            detail = {
                "detail": True,
                "target": texts[d[j + D_TARGET]],
                "body": texts[d[j + D_BODY]],
                "error": texts[d[j + D_ERROR]],
                "event": texts[d[j + D_EVENT]],
                "tries": d[j + D_TRIES],
            }
        return AttemptView(
            t=self._time(rec[i + F_T]),
            kind=code & 7,
            trigger=TRIGGERS[(code >> 3) & 3],
            skip=SKIPS[skip_code - 1] if 0 < skip_code <= len(SKIPS) else None,
            latency=rec[i + F_LAT] / 1e6,
            status_code=status or None,
            result_run=code >> 16,
            published=_PUB_VALUE[(code >> 5) & 3],
            output=texts[rec[i + F_OUT]],
            **detail,  # type: ignore[arg-type]
        )


# the attempt log's detail of one attempt: target, body excerpt, error, the kubelet's event
# message, tries (None for a skip or an error without an attempt)
Detail = tuple[str, str | None, str | None, str | None, int]


@dataclass(frozen=True, slots=True)
class RecordShape:
    """Holds what a doProbe record adds to its probe's history but its own numbers (time,
    latency, result run, next tick): the part every record of a steady probe shares.

    One instance per steady part, kept on it (`record_shape`), so a steady probe's records
    share one and a replay builds one per recorded shape.
    """

    kind: int  # Kind
    trigger: int  # TRIGGER_CODE
    skip: int  # SKIP_CODE, OTHER_SKIP; 0 for an attempt
    status: int  # the HTTP status code, 0 for none
    output: str | None  # the handler's output, else its error
    detail: Detail | None
    container_id: str
    last_result: ResultValue | None  # None: unchanged, as after an error or a skip
    published: ResultValue | None
    on_hold: bool
    paused: bool
    # the entry's packed code but its result run (`ProbeHistory`): packed once per shape
    code: int = field(default=0, compare=False, repr=False)
    # the key of the steady part it was made of (`probetui.prober.steady`)
    key: tuple[object, ...] = field(default=(), compare=False, repr=False)


def record_shape(record: ProbeRecord, last: RecordShape | None = None) -> RecordShape:
    """Return the steady part of a doProbe record as a history keeps it: made once per steady
    part (`probetui.prober.steady`) and kept on it, so the records of a steady probe share one.
    A part the store meets first takes `last` (the probe's previous record's) where it holds
    the same values: records made apart (a test's, an event frame's) share one too."""
    part = record.steady
    shape = part.shape
    if shape is None:
        if last is not None and last.key == part.key:
            shape = part.shape = last
        else:
            shape = part.shape = _make_shape(part)
    return shape


# the engine's own skips' shapes, by reason and published value: a few fixed texts
_NOT_RUN: dict[tuple[str, int | None], RecordShape] = {}
MAX_NOT_RUN = 256


def not_run_shape(reason: str, published: ResultValue | None) -> RecordShape:
    """Return the shared shape of a tick the runtime would not let run, which no record
    describes: a skip whose output is its reason."""
    key = (reason, None if published is None else published._value_)
    shape = _NOT_RUN.get(key)
    if shape is None:
        if len(_NOT_RUN) >= MAX_NOT_RUN:
            _NOT_RUN.clear()
        code = Kind.SKIP | _PUB_CODE[published] << 5 | OTHER_SKIP << 8
        shape = _NOT_RUN[key] = RecordShape(
            Kind.SKIP, 0, OTHER_SKIP, 0, reason, None, "", None, published, False, False, code
        )
    return shape


def _make_shape(part: SteadyPart) -> RecordShape:
    """Return the shape of the records that carry `part`: none of it reads their numbers."""
    trig = TRIGGER_CODE[part.trigger]
    outcome = part.outcome
    last: ResultValue | None = None
    detail = None
    if outcome is None:
        kind = Kind.SKIP
        skip = SKIP_CODE.get(part.skip, OTHER_SKIP) if part.skip else OTHER_SKIP
        status, output = 0, None
    else:
        kind, skip = part.kind, 0
        if kind != Kind.ERROR:
            last = part.last_result
        attempt = outcome.attempt
        if attempt is None:
            status, output = 0, None
        else:
            status = (attempt.status_code or 0) & 0xFFFF  # the entry's 16 bits
            output = attempt.output or attempt.error
            body = attempt.body
            detail = (
                attempt.target,
                body[:BODY_EXCERPT] if body else None,
                outcome.error,
                outcome.event.message if outcome.event is not None else None,
                len(outcome.attempts),
            )
    published = part.published
    return RecordShape(
        kind,
        trig,
        skip,
        status,
        output,
        detail,
        part.container_id,
        last,
        published,
        part.on_hold,
        part.paused,
        kind | trig << 3 | _PUB_CODE[published] << 5 | (skip & 0xFF) << 8,
        part.key,
    )


_PUB_CODE: dict[ResultValue | None, int] = {
    ResultValue.SUCCESS: 0,
    ResultValue.FAILURE: 1,
    ResultValue.UNKNOWN: 2,
    None: 3,
}
_PUB_VALUE: tuple[ResultValue | None, ...] = (
    ResultValue.SUCCESS,
    ResultValue.FAILURE,
    ResultValue.UNKNOWN,
    None,
)


__all__ = [
    "KIND_NAMES",
    "OTHER_SKIP",
    "SKIPS",
    "SKIP_CODE",
    "TRIGGERS",
    "TRIGGER_CODE",
    "AttemptView",
    "Detail",
    "Kind",
    "ProbeHistory",
    "RecordShape",
    "Texts",
    "kind_of",
    "not_run_shape",
    "record_shape",
]
