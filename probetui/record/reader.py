"""Reading a recording: `open_recording(path) -> Recording`, read-only, also while it is written.

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

Damage found while reading (a truncated or corrupt page) raises `RecordingError`.

Why one module of over 500 lines: `Recording` is one read-only connection and the caches every
query shares (shapes, strings, probe and pod ids, decoded specs); its queries are short, and
cut apart they would each reach into the others' caches.
"""

from __future__ import annotations

import heapq
import itertools
import json
import math
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from probetui.prober.status import PodStatus
from probetui.prober.worker import ProbeKey, ProbeRecord
from probetui.record import codec
from probetui.record.schema import (
    FORMAT_VERSION,
    MAX_SPAN,
    RecordingError,
    SessionMeta,
    check_header,
    check_identity,
    check_size,
    damaged,
    has_marks,
    has_steady,
)
from probetui.record.shapes import EVENT_TYPE, ITEM_TYPES, ProbeRef, Template
from probetui.record.snapshot import status_from_json
from probetui.spec.encode import decode, owner_of
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import Event
from probetui.timeline.store import RecordShape, Store

# a filter of more ids than this is applied in Python rather than in an SQL IN (...)
_SQL_IN_LIMIT = 500
# probes whose latest chunk is too new to say alone that they were steady, from which their
# chunk before it is looked at too (a second pass over the chunk index, some 15 ms)
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


# seconds of chunk starts (and of kubelet rows) a stream reads per query: no query stays open
# between pulls, so a replay of a live recording never holds a read transaction (that would
# stop the recorder's checkpoints and grow its WAL)
STREAM_PAGE = 60.0


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
    except sqlite3.DatabaseError as e:
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
        # where chunks can be decoded from (files from before marks: from their starts)
        try:
            self._marks = "marks" if has_marks(conn) else "NULL"
            self._has_steady = has_steady(conn)
        except sqlite3.DatabaseError as e:
            raise damaged(path, e) from None
        self.meta = RecordingMeta(
            self._q1("PRAGMA user_version") or FORMAT_VERSION, self._sessions()
        )

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- small queries ------------------------------------------------------------------

    def _q(self, sql: str, args: Iterable[Any] = ()) -> list[Any]:
        try:
            return self.conn.execute(sql, tuple(args)).fetchall()
        except sqlite3.DatabaseError as e:
            raise damaged(self.path, e) from None

    def _q1(self, sql: str, args: Iterable[Any] = ()) -> Any:
        rows = self._q(sql, args)
        return rows[0][0] if rows else None

    def _cursor(self, sql: str, args: Iterable[Any] = ()) -> Iterator[Any]:
        try:
            yield from self.conn.execute(sql, tuple(args))
        except sqlite3.DatabaseError as e:
            raise damaged(self.path, e) from None

    def _sessions(self) -> tuple[SessionMeta, ...]:
        rows = self._q(
            "SELECT started, probetui, kube_version, source, runtime, via, context, namespace,"
            " selector, read_only FROM sessions ORDER BY id"
        )
        return tuple(SessionMeta(*r[:9], read_only=bool(r[9])) for r in rows)

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
        return (min(lows), max(highs)) if lows else None

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
        return [
            PodInfo(*r)
            for r in self._q(
                "SELECT uid, namespace, name, first_t, last_t, deleted_t FROM pods ORDER BY id"
            )
        ]

    def probe_keys(self) -> list[ProbeKey]:
        return [
            ProbeKey(uid, container, ProbeType.parse(probe))
            for uid, container, probe in self._q(
                "SELECT pods.uid, probes.container, probes.probe FROM probes"
                " JOIN pods ON pods.id = probes.pod_id ORDER BY probes.id"
            )
        ]

    def _pod_id(self, uid: str) -> int | None:
        return self._q1("SELECT id FROM pods WHERE uid = ?", (uid,))

    # -- specs and statuses ---------------------------------------------------------------

    def spec_at(self, pod_uid: str, t: float) -> Pod:
        """The spec in force at `t` (the first one, for a time before it). KeyError: unknown."""
        pod_id = self._pod_id(pod_uid)
        if pod_id is None:
            raise KeyError(pod_uid)
        rows = self._q(
            "SELECT id, source, manifest FROM specs WHERE pod_id = ? AND t <= ? ORDER BY t DESC,"
            " id DESC LIMIT 1",
            (pod_id, t),
        ) or self._q(
            "SELECT id, source, manifest FROM specs WHERE pod_id = ? ORDER BY t, id LIMIT 1",
            (pod_id,),
        )
        if not rows:
            raise KeyError(pod_uid)
        # through the same cache as snapshots(): a replay asks both for every pod at start-up
        return self._spec(*rows[0])

    def specs(self) -> Iterator[Pod]:
        """Every recorded spec, each pod's oldest first: one query, not one per pod, through
        the cache that `snapshots()` decodes by (a replay reads the probe settings of all
        15,000 pods at start-up, then their specs in force)."""
        for spec_id, source, text in self._cursor(
            "SELECT id, source, manifest FROM specs ORDER BY pod_id, t, id"
        ):
            yield self._spec(spec_id, source, text)

    def labels_of(self, pod_uid: str) -> list[dict[str, str]]:
        """The labels of each recorded spec of the pod, oldest first."""
        pod_id = self._pod_id(pod_uid)
        rows = self._q("SELECT manifest FROM specs WHERE pod_id = ? ORDER BY id", (pod_id,))
        return [json.loads(m)["metadata"].get("labels", {}) for (m,) in rows]

    def status_at(self, pod_uid: str, t: float) -> PodStatus | None:
        """The status at `t`; None before the first one and after the pod was deleted."""
        pod_id = self._pod_id(pod_uid)
        if pod_id is None:
            return None
        text = self._q1(
            "SELECT status FROM statuses WHERE pod_id = ? AND t <= ? ORDER BY t DESC, id DESC"
            " LIMIT 1",
            (pod_id, t),
        )
        return status_from_json(json.loads(text)) if text is not None else None

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
                for pod_id, (t, spec) in self._latest_before(
                    "specs", "source, manifest", lo
                ).items():
                    kept_pods[pod_id] = spec
                    seen[pod_id] = t
                for pod_id, (t, status) in self._latest_before("statuses", "status", lo).items():
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
        rows = self._cursor(
            "SELECT t, 0, pod_id, id, source, manifest FROM specs WHERE t >= ? AND t <= ?"
            " UNION ALL SELECT t, 1, pod_id, id, NULL, status FROM statuses"
            " WHERE t >= ? AND t <= ? ORDER BY 1, 2",
            (lo, hi, lo, hi),
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
        reads 15,000 pods' rows once, not at every seek (30 ms each)."""
        a, b = min(was, lo), max(was, lo)
        return not self._q1(
            "SELECT (SELECT COUNT(*) FROM specs WHERE t >= ? AND t < ?)"
            " + (SELECT COUNT(*) FROM statuses WHERE t >= ? AND t < ?)",
            (a, b, a, b),
        )

    def _latest_before(self, table: str, columns: str, lo: float) -> dict[int, tuple[float, Any]]:
        """Each pod's latest row of `table` ("specs" or "statuses") before `lo`: (its time, the
        decoded value). The ids first, the texts only of what is not decoded yet: a seek asks
        for the same 15,000 specs again, and reading their manifests was 0.04-0.1 s of it."""
        cache: dict[int, Any] = self._specs if table == "specs" else self._statuses
        decode = self._spec if table == "specs" else self._status
        rows = self._q(f"SELECT pod_id, MAX(t), id FROM {table} WHERE t < ? GROUP BY pod_id", (lo,))
        texts = self._by_id(
            f"SELECT id, {columns} FROM {table}", [i for _, _, i in rows if i not in cache]
        )
        out: dict[int, tuple[float, Any]] = {}
        for pod_id, t, row_id in rows:
            got = texts.get(row_id)
            out[pod_id] = (t, cache[row_id] if got is None else decode(row_id, *got))
        return out

    def _by_id(self, select: str, ids: list[int]) -> dict[int, tuple[Any, ...]]:
        """`select`'s rows (id first) for these ids, by id: all of the table at once where
        most are asked for (a first screen), else a few hundred at a time."""
        if not ids:
            return {}
        if len(ids) > 4 * _SQL_IN_LIMIT:
            wanted = set(ids)
            return {r[0]: r[1:] for r in self._q(select) if r[0] in wanted}
        out: dict[int, tuple[Any, ...]] = {}
        for a in range(0, len(ids), _SQL_IN_LIMIT):
            part = ids[a : a + _SQL_IN_LIMIT]
            where = f" WHERE id IN ({','.join('?' * len(part))})"
            out.update((r[0], r[1:]) for r in self._q(select + where, part))
        return out

    def _in_force(
        self, pod_id: int, lo: float, pods: dict[int, Pod], statuses: dict[int, PodStatus | None]
    ) -> None:
        """One pod's spec and status in force before `lo` (what the GROUP BY gives all)."""
        for spec_id, source, text in self._q(
            "SELECT id, source, manifest FROM specs WHERE pod_id = ? AND t < ?"
            " ORDER BY t DESC, id DESC LIMIT 1",
            (pod_id, lo),
        ):
            pods[pod_id] = self._spec(spec_id, source, text)
        for status_id, text in self._q(
            "SELECT id, status FROM statuses WHERE pod_id = ? AND t < ?"
            " ORDER BY t DESC, id DESC LIMIT 1",
            (pod_id, lo),
        ):
            statuses[pod_id] = self._status(status_id, text)

    def _status(self, status_id: int, text: str | None) -> PodStatus | None:
        if not text:
            return None
        status = self._statuses.get(status_id)
        if status is None:
            status = self._statuses[status_id] = status_from_json(json.loads(text))
        return status

    def _spec(self, spec_id: int, source: str, text: str) -> Pod:
        pod = self._specs.get(spec_id)
        if pod is not None:
            return pod
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
        self._specs[spec_id] = pod
        return pod

    # -- shapes ---------------------------------------------------------------------------

    def _text(self, i: int | None) -> str | None:
        if i is None:
            return None
        s = self._strings.get(i)
        if s is None:
            s = self._q1("SELECT text FROM strings WHERE id = ?", (i,))
            if s is None:
                raise damaged(self.path, f"string {i} is missing")
            self._strings[i] = s
        return s

    def _template(self, i: int) -> Template:
        t = self._templates.get(i)
        if t is None:
            body = self._q1("SELECT body FROM shapes WHERE id = ?", (i,))
            if body is None:
                raise damaged(self.path, f"shape {i} is missing")
            t = self._templates[i] = Template(json.loads(body), self._text)
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
        if ref is None:
            rows = self._q(
                "SELECT pods.uid, pods.namespace, pods.name, probes.container, probes.probe"
                " FROM probes JOIN pods ON pods.id = probes.pod_id WHERE probes.id = ?",
                (probe_id,),
            )
            if not rows:
                raise damaged(self.path, f"probe {probe_id} is missing")
            uid, ns, name, container, probe = rows[0]
            key = ProbeKey(uid, container, ProbeType.parse(probe))
            ref = self._refs[probe_id] = ProbeRef(key, ns, name, container, probe)
        return ref

    def _load_refs(self) -> None:
        self._refs_loaded = True
        for i, uid, ns, name, container, probe in self._q(
            "SELECT probes.id, pods.uid, pods.namespace, pods.name, probes.container,"
            " probes.probe FROM probes JOIN pods ON pods.id = probes.pod_id"
        ):
            key = ProbeKey(uid, container, ProbeType.parse(probe))
            self._refs[i] = ProbeRef(key, ns, name, container, probe)

    def _pod_of(self, pod_id: int) -> tuple[str, str, str]:
        p = self._pods.get(pod_id)
        if p is None:
            rows = self._q("SELECT uid, namespace, name FROM pods WHERE id = ?", (pod_id,))
            if not rows:
                raise damaged(self.path, f"pod {pod_id} is missing")
            p = self._pods[pod_id] = rows[0]
        return p

    # -- chunks ---------------------------------------------------------------------------

    def _segments(
        self, lo: float, hi: float, probe_ids: Collection[int] | None
    ) -> Iterator[tuple[float, int, int, bytes, codec.Marks | None]]:
        """(t0, seg id, probe id, data, marks) of every segment overlapping [lo, hi], by t0: closed
        chunks from the index, open ones (the last minutes of a live recording) from `recent`.
        `recent` is read first: a segment closed in between is then seen twice, never missed."""
        where, args = "", []
        if probe_ids is not None and not isinstance(probe_ids, set | frozenset):
            probe_ids = set(probe_ids)  # looked up for every segment below
        if probe_ids is not None and len(probe_ids) <= _SQL_IN_LIMIT:
            where = f" AND probe_id IN ({','.join('?' * len(probe_ids))})"
            args = list(probe_ids)
        open_segs: dict[int, list[Any]] = {}
        for seg, probe_id, t, data in self._cursor(
            f"SELECT seg, probe_id, t, data FROM recent WHERE 1 = 1{where} ORDER BY id", args
        ):
            s = open_segs.get(seg)
            if s is None:
                open_segs[seg] = [t, t, probe_id, [data]]
            else:
                s[0], s[1] = min(s[0], t), max(s[1], t)
                s[3].append(data)
        opened = sorted(
            (s[0], seg, s[2], b"".join(s[3]), None)
            for seg, s in open_segs.items()
            if s[1] >= lo and s[0] <= hi and (probe_ids is None or s[2] in probe_ids)
        )
        closed = (
            (t0, seg, probe_id, data, (t0, marks) if marks else None)
            for seg, probe_id, t0, data, marks in self._cursor(
                f"SELECT id, probe_id, t0, data, {self._marks} FROM chunks"
                " WHERE t0 >= ? AND t0 <= ? AND t1 >= ?"
                f"{where} ORDER BY t0",
                [max(lo - MAX_SPAN, -1e300), min(hi, 1e300), max(lo, -1e300), *args],
            )
            if seg not in open_segs and (probe_ids is None or probe_id in probe_ids)
        )
        yield from heapq.merge(closed, opened)

    def _probe_ids(self, pod_uids: Collection[str] | None) -> set[int] | None:
        if pod_uids is None:
            return None
        uids = set(pod_uids)
        return {
            i
            for i, uid in self._q(
                "SELECT probes.id, pods.uid FROM probes JOIN pods ON pods.id = probes.pod_id"
            )
            if uid in uids
        }

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
        return heapq.merge(*streams, key=lambda x: (x[0], x[1]))

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
        except (IndexError, KeyError, ValueError) as e:
            raise damaged(self.path, f"undecodable chunk ({e!r})") from None
        template = self._template
        for key, item in kept:
            tp = template(item.shape)
            if wanted is not None and EVENT_TYPE[tp.kind] not in wanted:
                continue
            yield key / us, tp.event(ref, item, records)

    def _row_stream(
        self,
        lo: float,
        hi: float,
        pod_uids: Collection[str] | None,
        wanted: frozenset[str] | None,
    ) -> Iterator[tuple[float, int, Event]]:
        uids = None if pod_uids is None else set(pod_uids)
        for t, pod_id, type_, container, probe, source, fields in self._cursor(
            "SELECT t, pod_id, type, container, probe, source, fields FROM events"
            " WHERE t >= ? AND t <= ? ORDER BY t, id",
            (max(lo, -1e300), min(hi, 1e300)),
        ):
            if wanted is not None and type_ not in wanted:
                continue
            uid, ns, name = self._pod_of(pod_id)
            if uids is not None and uid not in uids:
                continue
            text = self._text(fields) or "{}"
            yield t, 1, Event(type_, t, uid, ns, name, container, probe, source, json.loads(text))

    # -- a stream to the end -------------------------------------------------------------

    def pending(self, since: float) -> Iterator[Pending]:
        """Every event with t >= since to the end of what is recorded now, in the order of
        `events()`, read page by page as it is pulled and built only when asked (`Pending`):
        the replay plays forward on one stream, each chunk decoded once, from where it was."""
        items = self._pending_items(since)
        rows = self._pending_rows(since)
        for _, _, p in heapq.merge(items, rows, key=lambda x: (x[0], x[1])):
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
        """`_segments(lo, inf)`, the closed chunks a page of start times at a time (from
        `after_t0` on, given: a stream resumed there has read those before)."""
        open_segs: dict[int, list[Any]] = {}
        for seg, probe_id, t, data in self._q(
            "SELECT seg, probe_id, t, data FROM recent ORDER BY id"
        ):
            s = open_segs.get(seg)
            if s is None:
                open_segs[seg] = [t, t, probe_id, [data]]
            else:
                s[0], s[1] = min(s[0], t), max(s[1], t)
                s[3].append(data)
        opened = sorted(
            (s[0], seg, s[2], b"".join(s[3]), None) for seg, s in open_segs.items() if s[1] >= lo
        )
        first, last = self._q("SELECT MIN(t0), MAX(t0) FROM chunks")[0]

        def closed() -> Iterator[tuple[float, int, int, bytes, codec.Marks | None]]:
            if first is None:
                return
            a = max(lo - MAX_SPAN, first)
            if after_t0 is not None:
                a = max(a, after_t0)
            while a <= last:
                b = a + STREAM_PAGE
                for seg, probe_id, t0, data, marks in self._q(
                    f"SELECT id, probe_id, t0, data, {self._marks} FROM chunks"
                    " WHERE t0 >= ? AND t0 < ? AND t1 >= ? ORDER BY t0",
                    (a, b, max(lo, -1e300)),
                ):
                    if seg not in open_segs:
                        yield t0, seg, probe_id, data, (t0, marks) if marks else None
                a = b

        yield from heapq.merge(closed(), opened)

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
        `rows` none of the kubelet's rows (a deferred history filled after the seek fed them)."""
        stop_us = _us_at_most(stop)
        lists: list[tuple[int, list[Pending]]] = []
        stopped: list[tuple[int, float, int, int, bytes, Any, Any]] = []
        for t0, seg, probe_id, data, marks in self._segments(since, stop, only):
            if probe_id in skip:
                continue
            left: list[Any] | None = [] if resume is not None else None
            got = list(
                self._segment_pending(probe_id, data, since, stop_us, stop_us, None, left, marks)
            )
            if got:
                lists.append((probe_id, got))
            if left:
                key, item, state = left[0]
                stopped.append((key, t0, seg, probe_id, data, item, state))
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
        row_list = [p for _, _, p in self._pending_rows(since, stop)] if rows else []
        by_group: dict[Group, list[Keyed]] = {}
        for p in row_list:
            if p.t <= until:
                by_group.setdefault(p.group, []).append((p.t, 1, p))
        for group, kept in by_group.items():
            items = out.get(group)
            out[group] = kept if items is None else list(heapq.merge(items, kept, key=_merge_key))
        if resume is None:
            return out, None
        return out, Resumed(resume, stop, [got for _, got in lists], row_list, stopped)

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
        for _, _, p in heapq.merge(items, rows, key=_merge_key):
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
        try:
            if start is None:
                start = codec.start_before(marks, lo_us)
            for key, item in codec.scan(data, self._kind, lo_us, hi_us, stop_us, start, stopped):
                tp = template(item.shape)
                t = item.t / us
                kind = tp.kind
                done = t + item.latency / us if kind == "A" else t
                yield Pending(key / us, t, done, EVENT_TYPE[kind], group, (tp, ref, item))
        except (IndexError, KeyError, ValueError) as e:
            raise damaged(self.path, f"undecodable chunk ({e!r})") from None

    def _pending_rows(
        self, lo: float, hi: float = math.inf
    ) -> Iterator[tuple[float, int, Pending]]:
        first, last = self._q("SELECT MIN(t), MAX(t) FROM events")[0]
        if first is None:
            return
        last = min(last, hi)
        a = max(lo, first)
        while a <= last:
            b = a + STREAM_PAGE
            for t, pod_id, type_, container, probe, source, fields in self._q(
                "SELECT t, pod_id, type, container, probe, source, fields FROM events"
                " WHERE t >= ? AND t < ? ORDER BY t, id",
                (a, b),
            ):
                if t > hi:
                    return
                uid, ns, name = self._pod_of(pod_id)
                text = self._text(fields) or "{}"
                e = Event(type_, t, uid, ns, name, container, probe, source, json.loads(text))
                yield t, 1, Pending(t, t, t, type_, (uid, container, probe), e)
            a = b

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
        over the chunks of the span: a lookup per probe scanned the span's index each time
        (15,000 probes seeking into a gap between two sessions: 17 s)."""
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
        for _, kind, x in heapq.merge(snaps, events, key=lambda x: (x[0], x[1])):
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
    recording is never opened all at once. Yields (key, 0, item), as `events()` merges."""
    order = itertools.count()
    heap: list[tuple[float, int, T, Iterator[tuple[float, T]]]] = []
    pending = next(segments, None)
    while heap or pending is not None:
        while pending is not None and (not heap or pending[0] <= heap[0][0]):
            it = open_segment(pending)
            first = next(it, None)
            if first is not None:
                heapq.heappush(heap, (first[0], next(order), first[1], it))
            pending = next(segments, None)
        if not heap:
            continue
        key, n, item, it = heap[0]
        yield key, 0, item
        following = next(it, None)
        if following is None:
            heapq.heappop(heap)
        else:
            heapq.heapreplace(heap, (following[0], n, following[1], it))


__all__ = [
    "Group",
    "Keyed",
    "Pending",
    "PodInfo",
    "Recording",
    "RecordingMeta",
    "Resumed",
    "open_recording",
]
