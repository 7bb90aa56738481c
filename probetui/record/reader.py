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
  sink (a timeline `Store`), the state at `since` first.

Time order: chunks and rows are merged by time; within a probe, items keep the order the engine
published them in (a ResultChanged ahead of the attempt that caused it, as live), each sorted
by the latest time of its chunk so far. Seeks cost an index lookup plus the decoding of one
chunk (at most `CHUNK_ITEMS` items) per probe.

Damage found while reading raises `Damaged` (a `RecordingError`), which says from when the
recording cannot be trusted: a format-2 file's rows are verified as they are read (`pages.py`,
`checks.py`), and a stream of events in time order yields everything before that time before
it raises (`_fenced`), so what is read of a damaged file is what the whole file held up to
there. SQLite's own errors and a decoder's become `Damaged` too.

`Recording` is one read-only connection and the caches every query shares (shapes, strings,
probe and pod ids, decoded specs).
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from probetui.keys import ProbeKey
from probetui.prober.status import PodStatus
from probetui.prober.worker import ProbeRecord
from probetui.record import codec
from probetui.record.checks import BUCKET
from probetui.record.pages import DECODE_ERRORS, IN_LIMIT, Pages, Row
from probetui.record.schema import (
    CHECKED_FORMAT,
    FORMAT_VERSION,
    MAX_SPAN,
    Damaged,
    RecordingError,
    SessionMeta,
    check_header,
    check_identity,
    check_size,
    damaged,
    has_steady,
)
from probetui.record.shapes import EVENT_TYPE, ITEM_TYPES, ProbeRef, Template
from probetui.record.snapshot import status_from_json
from probetui.spec.encode import decode, owner_of
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import Event
from probetui.timeline.store import RecordShape, Store

# probes whose latest chunk is too new to say alone that they were steady, from which their
# chunk before it is looked at too (a second pass over the chunk index, worth it only for many)
STEADY_RECHECK = 200
IN_FORCE_KEPT = 3  # moments whose pods in force `snapshots` keeps


@dataclass(frozen=True, slots=True)
class RecordingMeta:
    format_version: int
    sessions: tuple[SessionMeta, ...]

    @property
    def first(self) -> SessionMeta | None:
        return self.sessions[0] if self.sessions else None

    @property
    def started(self) -> float | None:
        return self.sessions[0].started if self.sessions else None


@dataclass(frozen=True, slots=True)
class PodInfo:
    uid: str
    namespace: str
    name: str
    first_seen: float
    last_seen: float
    deleted: float | None


@dataclass(slots=True)
class Pending:
    """An event read, not yet built: what the replay's feed decides by (its time, when it was
    published, its type and probe), and the event itself on demand. A step forward reads a
    lookback either side of what it feeds; only what it feeds is built."""

    key: float  # the merge key: the latest time of its chunk up to it (rows: their time)
    t: float
    published: float  # an attempt when it ended, the rest when stamped
    type: str
    group: tuple[str, str | None, str | None]  # (pod uid, container, probe)
    _build: Any  # (Template, ProbeRef, Item), or the Event once built

    def event(self) -> Event:
        b = self._build
        if type(b) is tuple:
            template, ref, item = b
            b = self._build = template.event(ref, item)
        return b  # type: ignore[no-any-return]

    def feed(self, store: Store) -> None:
        """`store.event(self.event())`, a recorded doProbe fed without building its event."""
        b = self._build
        if type(b) is not tuple or not b[0].feed(store, b[1], b[2]):
            store.event(self.event())


# what reading a damaged file raises: SQLite's errors and a decoder's, and `Damaged` itself
_BAD = (*DECODE_ERRORS, Damaged)


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


class Recording:
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self._templates: dict[int, Template] = {}
        self._strings: dict[int, str] = {}
        self._refs: dict[int, ProbeRef] = {}
        self._pods: dict[int, tuple[str, str, str]] = {}
        self._specs: dict[int, Pod] = {}  # decoded specs by row: a seek decodes none twice
        self._statuses: dict[int, PodStatus] = {}  # and statuses (15,000 at every seek)
        self._refs_loaded = False
        self._by_spec: dict[str, Pod] = {}  # by the spec part alone, shared by replicas
        # what `snapshots` found in force at a few moments, newest first: (the moment,
        # `_table_ends` then, pods and statuses by pod id, the (time, pod id) of each in force,
        # in time order)
        self._in_force_at: list[tuple[float, Any, dict[int, Pod], dict[int, Any], list[Any]]]
        self._in_force_at = []
        version = conn.execute("PRAGMA user_version").fetchone()[0] or FORMAT_VERSION
        # format 2 on: every row read is verified (`pages.py`)
        self.checked = version >= CHECKED_FORMAT
        self._pages = Pages(conn, path, self.checked)
        self._bad_refs: dict[int, str] = {}  # probes whose row or pod's row fails its checksum
        try:
            self._has_steady = has_steady(conn)
        except sqlite3.DatabaseError as e:
            raise damaged(path, e) from None
        self.meta = RecordingMeta(version, self._sessions())

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- small queries ------------------------------------------------------------------

    def _q(self, sql: str, args: Iterable[Any] = ()) -> list[Any]:
        return self._pages.q(sql, tuple(args))

    def _q1(self, sql: str, args: Iterable[Any] = ()) -> Any:
        rows = self._q(sql, args)
        return rows[0][0] if rows else None

    def _sessions(self) -> tuple[SessionMeta, ...]:
        rows = self._pages.rows("sessions", "ORDER BY id")
        if self.checked and [r[0] for r in rows] != list(range(1, len(rows) + 1)):
            # sessions are numbered from 1 and never deleted: one missing is damage
            raise Damaged(self.path, None, "sessions: a row is missing")
        # id, started, probetui, kube_version, source, via, context, namespace, selector,
        # read_only, runtime
        return tuple(
            SessionMeta(r[1], r[2], r[3], r[4], r[10], r[5], r[6], r[7], r[8], bool(r[9]))
            for r in rows
        )

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

    def _pod_id(self, uid: str) -> int | None:
        rows = self._pages.rows("pods", "WHERE uid = ?", (uid,))
        return rows[0][0] if rows else None

    # -- specs and statuses ---------------------------------------------------------------

    def spec_at(self, pod_uid: str, t: float) -> Pod:
        """The spec in force at `t` (the first one, for a time before it). KeyError: unknown."""
        pod_id = self._pod_id(pod_uid)
        if pod_id is None:
            raise KeyError(pod_uid)
        rows = self._pages.rows(
            "specs", "WHERE pod_id = ? AND t <= ? ORDER BY t DESC, id DESC LIMIT 1", (pod_id, t)
        ) or self._pages.rows("specs", "WHERE pod_id = ? ORDER BY t, id LIMIT 1", (pod_id,))
        if not rows:
            raise KeyError(pod_uid)
        # through the same cache as snapshots(): a replay asks both for every pod at start-up
        spec_id, _, _, source, text, _ = rows[0]
        return self._spec(spec_id, source, text)

    def specs(self) -> Iterator[Pod]:
        """Every recorded spec, each pod's oldest first: one query, not one per pod, through
        the cache that `snapshots()` decodes by (a replay reads the probe settings of all
        15,000 pods at start-up, then their specs in force)."""
        rows = [r for page in self._pages.by_time("specs", -math.inf, math.inf) for r in page]
        rows.sort(key=itemgetter(1, 2, 0))  # by pod, time, id
        for spec_id, _, _, source, text, _ in rows:
            yield self._spec(spec_id, source, text)

    def labels_of(self, pod_uid: str) -> list[dict[str, str]]:
        """The labels of each recorded spec of the pod, oldest first."""
        pod_id = self._pod_id(pod_uid)
        rows = self._pages.rows("specs", "WHERE pod_id = ? ORDER BY id", (pod_id,))
        try:
            return [json.loads(r[4])["metadata"].get("labels", {}) for r in rows]
        except DECODE_ERRORS as e:
            raise damaged(self.path, f"an undecodable spec of pod {pod_uid} ({e!r})") from None

    def status_at(self, pod_uid: str, t: float) -> PodStatus | None:
        """The status at `t`; None before the first one and after the pod was deleted."""
        pod_id = self._pod_id(pod_uid)
        if pod_id is None:
            return None
        rows = self._pages.rows(
            "statuses", "WHERE pod_id = ? AND t <= ? ORDER BY t DESC, id DESC LIMIT 1", (pod_id, t)
        )
        return self._status(rows[0][0], rows[0][3]) if rows else None

    def snapshots(
        self, since: float | None = None, until: float | None = None, *, in_force: bool = True
    ) -> Iterator[tuple[float, Pod, PodStatus | None]]:
        """Each pod's (spec, status) as it changed, in time order; before `since` only the
        latest of each pod (at its own time), and not even that without `in_force` (a step
        forward: the store holds it already; feeding it again would touch every container).

        A seek asks this for a moment deep in a long recording: what was in force at `since`
        is found per pod through the (pod, time) indexes, never by reading all that came
        before, and each spec is decoded once per `Recording`."""
        hi = math.inf if until is None else until
        lo = -math.inf if since is None else since
        pods: dict[int, Pod] = {}
        statuses: dict[int, PodStatus | None] = {}
        seen: dict[int, float] = {}
        # in force at lo, for every pod at once where they are all fed (SQLite gives the other
        # columns of the row with the MAX); a step forward looks up only the pods that change
        if in_force:
            ends = self._table_ends()
            cached = next(
                (c for c in self._in_force_at if c[1] == ends and self._none_between(c[0], lo)),
                None,
            )
            if cached is not None:
                _, _, kept_pods, kept_statuses, before = cached
            else:
                kept_pods, kept_statuses = {}, {}
                for pod_id, (t, spec) in self._latest_before("specs", lo).items():
                    kept_pods[pod_id] = spec
                    seen[pod_id] = t
                for pod_id, (t, status) in self._latest_before("statuses", lo).items():
                    kept_statuses[pod_id] = status
                    seen[pod_id] = max(seen.get(pod_id, t), t)
                before = sorted(
                    (seen[i], i)
                    for i in kept_pods
                    if i in kept_statuses and kept_statuses[i] is not None
                )
                # a few moments kept: seeks go back and forth (the end, then a moment before)
                self._in_force_at = [
                    (lo, ends, kept_pods, kept_statuses, before),
                    *self._in_force_at[: IN_FORCE_KEPT - 1],
                ]
            # what the rows after `lo` change is a copy: the kept ones serve the next seek
            pods, statuses = dict(kept_pods), dict(kept_statuses)
            for t, pod_id in before:
                yield t, pods[pod_id], statuses[pod_id]
        # specs before statuses at one time; each table's rows verified by bucket
        rows = heapq.merge(
            (
                (r[2], 0, r[1], r[0], r[3], r[4])
                for page in self._pages.by_time("specs", lo, hi)
                for r in page
            ),
            (
                (r[2], 1, r[1], r[0], None, r[3])
                for page in self._pages.by_time("statuses", lo, hi)
                for r in page
            ),
            key=_time_kind,
        )
        looked: set[int] = set()
        for t, kind, pod_id, row_id, source, text in rows:
            if not in_force and pod_id not in looked:
                looked.add(pod_id)
                self._in_force(pod_id, lo, pods, statuses)
            if kind == 0:
                pods[pod_id] = self._spec(row_id, source, text)
            else:
                statuses[pod_id] = self._status(row_id, text)
            pod = pods.get(pod_id)
            if pod is None or pod_id not in statuses:
                continue
            yield t, pod, statuses[pod_id]

    def _table_ends(self) -> tuple[Any, ...]:
        """The newest spec and status rows: what was in force at a moment, kept, still is
        while these are the same (a live recording adds rows) and `_none_between`."""
        return tuple(
            self._q("SELECT (SELECT MAX(id) FROM specs), (SELECT MAX(id) FROM statuses)")[0]
        )

    def _none_between(self, was: float, lo: float) -> bool:
        """Whether no spec or status lies between `was` and `lo`, so that what was in force
        before one is what is in force before the other. A seek in a long steady stretch then
        reads every pod's rows once, not at every seek (guarded by benchmarks/replay.py)."""
        a, b = min(was, lo), max(was, lo)
        return not self._q1(
            "SELECT (SELECT COUNT(*) FROM specs WHERE t >= ? AND t < ?)"
            " + (SELECT COUNT(*) FROM statuses WHERE t >= ? AND t < ?)",
            (a, b, a, b),
        )

    def _latest_before(self, table: str, lo: float) -> dict[int, tuple[float, Any]]:
        """Each pod's latest row of `table` ("specs" or "statuses") before `lo`: (its time, the
        decoded value). The ids first, the texts only of what is not decoded yet: a seek asks
        for the same specs again, and reading their manifests would be much of its time."""
        cache: dict[int, Any] = self._specs if table == "specs" else self._statuses
        decode = self._spec if table == "specs" else self._status
        rows = self._q(f"SELECT pod_id, MAX(t), id FROM {table} WHERE t < ? GROUP BY pod_id", (lo,))
        texts = self._by_id(table, [i for _, _, i in rows if i not in cache])
        out: dict[int, tuple[float, Any]] = {}
        for pod_id, t, row_id in rows:
            got = texts.get(row_id)
            if got is not None and (got[0] != pod_id or got[1] != t):
                # the index said another pod or time than the row holds
                raise Damaged(self.path, min(t, lo), f"{table} row {row_id} is out of place")
            if got is None:
                out[pod_id] = (t, cache[row_id])
            elif table == "specs":
                out[pod_id] = (t, decode(row_id, got[2], got[3]))
            else:
                out[pod_id] = (t, decode(row_id, got[2]))
        return out

    def _by_id(self, table: str, ids: list[int]) -> dict[int, tuple[Any, ...]]:
        """`table`'s rows for these ids, verified, by id, each without its id and checksum:
        all of the table at once where most are asked for (a first screen), else a few
        hundred at a time."""
        if not ids:
            return {}
        select = f"SELECT {self._pages.full[table]} FROM {table}"
        wanted = set(ids)
        if len(ids) > 4 * IN_LIMIT:
            got = [r for r in self._q(select) if r[0] in wanted]
        else:
            got = []
            for a in range(0, len(ids), IN_LIMIT):
                part = ids[a : a + IN_LIMIT]
                got += self._q(select + f" WHERE id IN ({','.join('?' * len(part))})", part)
        bad = self._pages.first_bad(table, got)
        if bad is not None:
            t = self._pages.time_of(table, bad)
            raise Damaged(self.path, t, f"{table} row {bad[0]} fails its checksum")
        return {r[0]: r[1:-1] for r in got}

    def _in_force(
        self, pod_id: int, lo: float, pods: dict[int, Pod], statuses: dict[int, PodStatus | None]
    ) -> None:
        """One pod's spec and status in force before `lo` (what the GROUP BY gives all)."""
        last = "WHERE pod_id = ? AND t < ? ORDER BY t DESC, id DESC LIMIT 1"
        for spec_id, _, _, source, text, _ in self._rows_before("specs", last, pod_id, lo):
            pods[pod_id] = self._spec(spec_id, source, text)
        for status_id, _, _, text, _ in self._rows_before("statuses", last, pod_id, lo):
            statuses[pod_id] = self._status(status_id, text)

    def _rows_before(self, table: str, where: str, pod_id: int, lo: float) -> list[Row]:
        try:
            return self._pages.rows(table, where, (pod_id, lo))
        except Damaged as e:
            raise Damaged(self.path, min(e.t if e.t is not None else lo, lo), e.where) from None

    def _status(self, status_id: int, text: str | None) -> PodStatus | None:
        if not text:
            return None
        status = self._statuses.get(status_id)
        if status is None:
            try:
                status = status_from_json(json.loads(text))
            except DECODE_ERRORS as e:
                raise damaged(self.path, f"statuses row {status_id} ({e!r})") from None
            self._statuses[status_id] = status
        return status

    def _spec(self, spec_id: int, source: str, text: str) -> Pod:
        pod = self._specs.get(spec_id)
        if pod is not None:
            return pod
        try:
            pod = self._decode_spec(source, text)
        except DECODE_ERRORS as e:
            raise damaged(self.path, f"specs row {spec_id} ({e!r})") from None
        self._specs[spec_id] = pod
        return pod

    def _decode_spec(self, source: str, text: str) -> Pod:
        manifest = json.loads(text)
        meta = manifest["metadata"]
        # the replicas of a workload share their spec: parse it once, name each copy
        key = json.dumps(manifest["spec"], sort_keys=True)
        template = self._by_spec.get(key)
        deleting = "deletionTimestamp" in meta or "deletionGracePeriodSeconds" in meta
        if template is None or deleting:
            pod = decode(manifest, source)
            if not deleting:
                self._by_spec[key] = pod
        else:
            pod = replace(
                template,
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta["uid"],
                labels=dict(meta.get("labels", {})),
                source=source,
                **{"owner_kind": "", "owner_name": "", **owner_of(meta)},
            )
        return pod

    # -- shapes ---------------------------------------------------------------------------

    def _text(self, i: int | None) -> str | None:
        if i is None:
            return None
        s = self._strings.get(i)
        if s is None:
            row = self._pages.row_by_id("strings", i)
            if row is None:
                raise Damaged(self.path, None, f"strings row {i} is missing")
            s = self._strings[i] = row[1]
        return s

    def _template(self, i: int) -> Template:
        t = self._templates.get(i)
        if t is None:
            row = self._pages.row_by_id("shapes", i)
            if row is None:
                raise Damaged(self.path, None, f"shapes row {i} is missing")
            try:
                t = Template(json.loads(row[1]), self._text)
            except Damaged:
                raise
            except DECODE_ERRORS as e:
                raise Damaged(self.path, None, f"shapes row {i} is undecodable ({e!r})") from None
            self._templates[i] = t
        return t

    def _kind(self, i: int) -> str:
        return self._template(i).kind

    def _ref(self, probe_id: int) -> ProbeRef:
        ref = self._refs.get(probe_id)
        if ref is None and not self._refs_loaded:
            # all at once on the first miss: a seek asks for every probe, one query each was
            # a sixth of a first screen at 15,000 probes
            self._load_refs()
            ref = self._refs.get(probe_id)
        if ref is None and probe_id not in self._bad_refs:
            # a probe recorded since
            row = self._pages.row_by_id("probes", probe_id)
            if row is not None:
                self._add_ref(row, self._pages.row_by_id("pods", row[1]))
            ref = self._refs.get(probe_id)
        if ref is None:
            raise Damaged(
                self.path, None, self._bad_refs.get(probe_id, f"probes row {probe_id} is missing")
            )
        return ref

    def _load_refs(self) -> None:
        """Every probe's where: a row that fails its checksum (or its pod's) is damage only
        where that probe is read, not for the probes before it."""
        self._refs_loaded = True
        pages = self._pages
        pod_rows = self._q(f"SELECT {pages.full['pods']} FROM pods")
        pods: dict[int, Row | None] = {row[0]: row for row in pod_rows}
        probe_rows = self._q(f"SELECT {pages.full['probes']} FROM probes")
        if pages.first_bad("pods", pod_rows) is not None:
            for row in pod_rows:
                if pages.bad("pods", row):
                    pods[row[0]] = None
        whole = pages.first_bad("probes", probe_rows) is None
        refs, parse, gone = self._refs, ProbeType.parse, object()
        for row in probe_rows:
            if not whole and pages.bad("probes", row):
                self._bad_refs[row[0]] = f"probes row {row[0]} fails its checksum"
                continue
            pod = pods.get(row[1], gone)
            if pod is gone:
                continue  # a probe of a pod retention dropped
            try:
                # as `_add_ref`, inline: 15,000 probes at a first screen
                key = ProbeKey(pod[1], row[2], parse(row[3]))  # type: ignore[index]
            except DECODE_ERRORS:
                self._add_ref(row, pod)  # type: ignore[arg-type]  # says why
                continue
            refs[row[0]] = ProbeRef(key, pod[2], pod[3], row[2], row[3])  # type: ignore[index]

    def _add_ref(self, row: Row, pod: Row | None) -> None:
        """One probe's `ProbeRef` from its verified row and its pod's (None: that row fails its
        checksum or is missing)."""
        i, _, container, probe = row[0], row[1], row[2], row[3]
        if pod is None:
            self._bad_refs[i] = f"pods row {row[1]} is missing or fails its checksum"
            return
        try:
            key = ProbeKey(pod[1], container, ProbeType.parse(probe))
        except DECODE_ERRORS as e:
            self._bad_refs[i] = f"probes row {i} is undecodable ({e!r})"
            return
        self._refs[i] = ProbeRef(key, pod[2], pod[3], container, probe)

    def _pod_of(self, pod_id: int) -> tuple[str, str, str]:
        p = self._pods.get(pod_id)
        if p is None:
            row = self._pages.row_by_id("pods", pod_id)
            if row is None:
                raise Damaged(self.path, None, f"pods row {pod_id} is missing")
            p = self._pods[pod_id] = (row[1], row[2], row[3])
        return p

    # -- chunks ---------------------------------------------------------------------------

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
        opened.sort(key=_first_two)
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
                    if fence is not None and _past(t0, fence):
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
            if fence is not None and _past(x[0], fence):
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
        return _fenced(streams, _first_two, _first)

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
        return _merge_segments(
            self._segments(lo, hi, probe_ids),
            lambda seg: self._segment_events(
                seg[2], seg[3], lo, hi, wanted, slack, records, seg[4]
            ),
        )

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
        lo_us, hi_us = _us_at_least(lo), _us_at_most(hi)
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

    def _undecodable(self, e: BaseException, t: float | None) -> Damaged:
        """A chunk that did not decode (or a row it needs), as damage from `t` on."""
        if isinstance(e, Damaged):
            return e.at(t)
        return Damaged(self.path, t, f"an undecodable chunk ({e!r})")

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

    def _event_row(
        self,
        t: float,
        pod_id: int,
        type_: str,
        container: str | None,
        probe: str | None,
        source: str,
        fields: int,
    ) -> Event:
        """One row of `events` as its event: damage in what it refers to is damage from `t`."""
        try:
            uid, ns, name = self._pod_of(pod_id)
            text = self._text(fields) or "{}"
            return Event(type_, t, uid, ns, name, container, probe, source, json.loads(text))
        except _BAD as e:
            if isinstance(e, Damaged):
                raise e.at(t) from None
            raise Damaged(self.path, t, f"an undecodable event ({e!r})") from None

    # -- a stream to the end -------------------------------------------------------------

    def pending(self, since: float) -> Iterator[Pending]:
        """Every event with t >= since to the end of what is recorded now, in the order of
        `events()`, read page by page as it is pulled and built only when asked (`Pending`):
        the replay plays forward on one stream, each chunk decoded once, from where it was."""
        items = self._pending_items(since)
        rows = self._pending_rows(since)
        for _, _, p in _fenced((items, rows), _first_two, _first):
            yield p

    def _pending_items(self, lo: float) -> Iterator[tuple[float, int, Pending]]:
        return _merge_segments(
            self._segment_pages(lo),
            lambda seg: (
                (p.key, p) for p in self._segment_pending(seg[2], seg[3], lo, marks=seg[4])
            ),
        )

    def _segment_pages(
        self, lo: float, after_t0: float | None = None
    ) -> Iterator[tuple[float, int, int, bytes, codec.Marks | None]]:
        """`_segments(lo, inf)`, the closed chunks a bucket of start times at a time (from
        `after_t0` on, given: a stream resumed there has read those before)."""
        return self._segments(lo, math.inf, None, after_t0)

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

    def pending_groups(
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
    ) -> tuple[dict[Group, list[Keyed]], Resumed | None]:
        """What `pending(since)` yields stamped up to `until` and keyed up to `stop`, by probe
        (pod uid, container, probe; a kubelet row by what it names), each as (key, 0 for an
        item or 1 for a row, Pending) in the order `pending` gives them.

        A seek feeds each probe on its own: the same events as a stream of 15,000 probes
        merged by time (restricted to one probe, that merge is its segments' and rows' merge
        by key), without the heap that merge walks for every event, and each chunk decoded
        no further than `stop` (a key past it: nothing after it is wanted).

        `resume` (at least `since`), given: also where `pending(resume)` stands after what
        was read here (`Resumed`, for `pending_resumed`), so that playing on from the seek
        decodes no chunk from its start again (that was a second seek's worth of decoding
        in the first step of playing after it).

        `skip`: probes not read (a seek defers them); `only`: just these probes, and without
        `rows` none of the kubelet's rows (a deferred history filled after the seek fed them).
        `whole_to` (default `until`): damage found past it is read up to, not raised (the
        stream that plays on raises it): what a seek feeds is published by then.
        `segments`: what `_segments` would give (in its order), read before (`segments_of`:
        what a seek deferred, read once for all the fills after it)."""
        stop_us = _us_at_most(stop)
        whole = until if whole_to is None else whole_to
        lists: list[tuple[int, list[Pending]]] = []
        stopped: list[tuple[int, float, int, int, bytes, Any, Any]] = []
        # damage found past `until` is read up to (what is fed is whole), and raised by the
        # stream that plays on (`Resumed.fence`), where it reaches it
        fence: Damaged | None = None
        try:
            source = (
                self._segments(since, stop, only, skip=skip) if segments is None else iter(segments)
            )
            for t0, seg, probe_id, data, marks in source:
                if probe_id in skip:
                    continue
                left: list[Any] | None = [] if resume is not None else None
                got: list[Pending] = []
                try:
                    got.extend(
                        self._segment_pending(
                            probe_id, data, since, stop_us, stop_us, None, left, marks
                        )
                    )
                except Damaged as e:
                    fence = _later_than(e, whole, fence)
                    left = None
                if got:
                    lists.append((probe_id, got))
                if left:
                    key, item, state = left[0]
                    stopped.append((key, t0, seg, probe_id, data, item, state))
        except Damaged as e:
            fence = _later_than(e, whole, fence)
        by_probe: dict[int, list[list[Pending]]] = {}
        for probe_id, got in lists:
            by_probe.setdefault(probe_id, []).append(got)
        out: dict[Group, list[Keyed]] = {}
        for got_lists in by_probe.values():
            if len(got_lists) == 1:
                merged: Iterable[Pending] = got_lists[0]
            else:
                # each segment is in key order; ties go to the one that began first, as the
                # stream's merge takes them
                merged = heapq.merge(*got_lists, key=_key_of)
            kept = [(p.key, 0, p) for p in merged if p.t <= until]
            if kept:
                out[kept[0][2].group] = kept
        row_list: list[Pending] = []
        if rows:
            try:
                row_list.extend(p for _, _, p in self._pending_rows(since, stop))
            except Damaged as e:
                fence = _later_than(e, whole, fence)
        by_group: dict[Group, list[Keyed]] = {}
        for p in row_list:
            if p.t <= until:
                by_group.setdefault(p.group, []).append((p.t, 1, p))
        for group, kept in by_group.items():
            items = out.get(group)
            out[group] = kept if items is None else list(heapq.merge(items, kept, key=_merge_key))
        if resume is None:
            return out, None
        return out, Resumed(resume, stop, [got for _, got in lists], row_list, stopped, fence)

    def pending_resumed(self, r: Resumed) -> Iterator[Pending]:
        """`pending(r.since)`, from what a seek read (`pending_groups`) and on from there;
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

        def opened(seg: tuple[Any, ...]) -> Iterator[tuple[float, Pending]]:
            if len(seg) == 5:  # a segment begun after the seek's end
                return (
                    (p.key, p) for p in self._segment_pending(seg[2], seg[3], since, marks=seg[4])
                )
            return self._resumed_segment(seg, since)

        segments = heapq.merge(resumed, later, key=_first)
        items = _merge_segments(segments, opened)
        rows = self._pending_rows(math.nextafter(r.stop, math.inf))
        for _, _, p in _fenced((items, rows, _raising(r.fence)), _merge_key, _first):
            yield p

    def _resumed_segment(self, seg: tuple[Any, ...], lo: float) -> Iterator[tuple[float, Pending]]:
        key, _, _, probe_id, data, item, state = seg
        first = self._pending_of(probe_id, round(key * codec.US), item)
        yield first.key, first
        end = 1 << 62
        for p in self._segment_pending(probe_id, data, lo, end, end, state):
            yield p.key, p

    def _pending_of(self, probe_id: int, key: int, item: codec.Item) -> Pending:
        ref = self._ref(probe_id)
        us = codec.US
        tp = self._template(item.shape)
        t = item.t / us
        done = t + item.latency / us if tp.kind == "A" else t
        group = (ref.key.pod_uid, ref.container, ref.probe)
        return Pending(key / us, t, done, EVENT_TYPE[tp.kind], group, (tp, ref, item))

    def _segment_pending(
        self,
        probe_id: int,
        data: bytes,
        lo: float,
        hi_us: int = 1 << 62,
        stop_us: int = 1 << 62,
        start: codec.ScanState | None = None,
        stopped: list[Any] | None = None,
        marks: codec.Marks | None = None,
    ) -> Iterator[Pending]:
        ref = self._ref(probe_id)
        us = codec.US
        group = (ref.key.pod_uid, ref.container, ref.probe)
        template = self._template
        lo_us = _us_at_least(lo)
        key: int | None = None
        try:
            if start is None:
                start = codec.start_before(marks, lo_us)
            for key, item in codec.scan(data, self._kind, lo_us, hi_us, stop_us, start, stopped):
                tp = template(item.shape)
                t = item.t / us
                kind = tp.kind
                done = t + item.latency / us if kind == "A" else t
                yield Pending(key / us, t, done, EVENT_TYPE[kind], group, (tp, ref, item))
        except _BAD as e:
            raise self._undecodable(e, None if key is None else key / us) from None

    def _pending_rows(
        self, lo: float, hi: float = math.inf
    ) -> Iterator[tuple[float, int, Pending]]:
        for page in self._pages.by_time("events", lo, hi):
            for _, t, pod_id, type_, container, probe, source, fields, _ in page:
                e = self._event_row(t, pod_id, type_, container, probe, source, fields)
                yield t, 1, Pending(t, t, t, type_, (e.pod_uid, container, probe), e)

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
        for _, kind, x in _fenced((snaps, events), _first_two, _first):
            if kind < 0:
                sink.pod(*x)
            else:
                sink.event(x)
                n += 1
        return n


def _us_at_least(t: float) -> int:
    """The first whole µs n with n / US >= t: the float comparison an event's time makes."""
    if t == -math.inf:
        return -(1 << 62)
    n = math.ceil(t * codec.US)
    while (n - 1) / codec.US >= t:
        n -= 1
    while n / codec.US < t:
        n += 1
    return n


def _us_at_most(t: float) -> int:
    """The last whole µs n with n / US <= t."""
    if t == math.inf:
        return 1 << 62
    n = math.floor(t * codec.US)
    while (n + 1) / codec.US <= t:
        n += 1
    while n / codec.US > t:
        n -= 1
    return n


T = TypeVar("T")
# (pod uid, container, probe): whose an event is
Group = tuple[str, str | None, str | None]
# (merge key, 0 for a chunk's item or 1 for a kubelet row, the event)
Keyed = tuple[float, int, Pending]
# a segment as `Recording._segments` gives it: (t0, seg id, probe id, data, marks)
Segment = tuple[float, int, int, bytes, codec.Marks | None]


@dataclass(slots=True)
class Resumed:
    """Where `pending(since)` stands after a seek read it to `stop` (`pending_groups`): the
    items it read of each segment (in the order the segments began) and the rows, and each
    segment it stopped decoding in: (the stopping item's key in µs, t0, id, probe id, data,
    that item, the decoder's state after it)."""

    since: float
    stop: float
    items: list[list[Pending]]
    rows: list[Pending]
    stopped: list[tuple[int, float, int, int, bytes, Any, Any]]
    # damage the seek read past what it fed: the stream that plays on raises it there
    fence: Damaged | None = None


def _first(x: tuple[Any, ...]) -> Any:
    return x[0]


def _prefix_key(x: tuple[float, int, int, int, Pending]) -> tuple[float, int, int, int]:
    return (x[0], x[1], x[2], x[3])


def _key_of(p: Pending) -> float:
    return p.key


def _merge_key(x: Keyed) -> tuple[float, int]:
    return (x[0], x[1])


def _merge_segments(
    segments: Iterator[tuple[Any, ...]],
    open_segment: Callable[[tuple[Any, ...]], Iterator[tuple[float, T]]],
) -> Iterator[tuple[float, int, T]]:
    """The (key, item) streams of segments that come in order of their start (`seg[0]`),
    merged by key: a segment is opened only once the merge reaches its start, so a long
    recording is never opened all at once. Yields (key, 0, item), as `events()` merges.

    Damage (`Damaged`) in the segments read, in opening one or in reading on in one ends that
    stream there: what the others hold keyed before its time comes first, then it is raised
    (the earliest, where there are several), as a whole file would have given it."""
    order = itertools.count()
    heap: list[tuple[float, int, T, Iterator[tuple[float, T]]]] = []
    fence: Damaged | None = None

    def fenced(e: Damaged) -> None:
        nonlocal fence
        if fence is None or e.sooner(fence):
            fence = e

    def pull() -> tuple[Any, ...] | None:
        if fence is not None and fence.t is None:
            return None
        try:
            got = next(segments, None)
        except Damaged as e:
            fenced(e)
            return None
        return None if got is None or (fence is not None and _past(got[0], fence)) else got

    pending = pull()
    while heap or pending is not None:
        while pending is not None and (not heap or pending[0] <= heap[0][0]):
            try:
                it = open_segment(pending)
                first = next(it, None)
            except Damaged as e:
                fenced(e.at(pending[0]))
                first = None
            if first is not None:
                heapq.heappush(heap, (first[0], next(order), first[1], it))
            pending = pull()
        if not heap:
            continue
        key, n, item, it = heap[0]
        if fence is not None and _past(key, fence):
            break
        yield key, 0, item
        try:
            following = next(it, None)
        except Damaged as e:
            fenced(e.at(key))
            following = None
        if following is None:
            heapq.heappop(heap)
        else:
            heapq.heapreplace(heap, (following[0], n, following[1], it))
    if fence is not None:
        raise fence


def _fenced(
    streams: Iterable[Iterator[T]], key: Callable[[T], Any], time: Callable[[T], float]
) -> Iterator[T]:
    """`heapq.merge(*streams, key=key)` (ties to the stream given first), where a stream that
    raises `Damaged` ends there: what the others hold before its time (`time(item)`) comes
    first, then it is raised (the earliest, where there are several)."""
    heap: list[tuple[Any, int, T, Iterator[T]]] = []
    fence: Damaged | None = None

    def pull(it: Iterator[T], order: int) -> None:
        nonlocal fence
        try:
            x = next(it)
        except StopIteration:
            return
        except Damaged as e:
            if fence is None or e.sooner(fence):
                fence = e
            return
        heapq.heappush(heap, (key(x), order, x, it))

    for order, it in enumerate(streams):
        pull(iter(it), order)
    while heap:
        _, order, x, it = heapq.heappop(heap)
        if fence is not None and _past(time(x), fence):
            break
        yield x
        pull(it, order)
    if fence is not None:
        raise fence


def _wanted(probe_id: int, only: Collection[int] | None, skip: Collection[int]) -> bool:
    """Whether a probe's segment is read: one of `only` (None: any), none of `skip`."""
    return (only is None or probe_id in only) and probe_id not in skip


def _later_than(e: Damaged, until: float, fence: Damaged | None) -> Damaged:
    """`e` where it lies past `until` (the sooner of it and `fence`); else it is raised."""
    if e.t is None or e.t <= until:
        raise e
    return e if fence is None or e.sooner(fence) else fence


def _raising(fence: Damaged | None) -> Iterator[Any]:
    """A stream that is nothing but `fence` (none: empty), for `_fenced` to merge."""
    if fence is not None:
        raise fence
    yield from ()


def _past(t: float, fence: Damaged) -> bool:
    """Whether what is stamped `t` lies where `fence` says the recording is damaged."""
    return fence.t is None or t >= fence.t


def _first_two(x: tuple[Any, ...]) -> tuple[Any, Any]:
    return (x[0], x[1])


def _time_kind(x: tuple[Any, ...]) -> tuple[Any, Any]:
    return (x[0], x[1])


__all__ = [
    "Group",
    "Keyed",
    "Pending",
    "PodInfo",
    "Recording",
    "RecordingMeta",
    "Resumed",
    "Segment",
    "open_recording",
]
