"""Turn batches of sink calls into rows, on one thread: the SQLite side of a recorder.

`Writer.write(batch)` is one transaction: per-probe items go to their probe's open segment
(kept in memory and, for crash safety, as one `recent` row each); a segment that is full
(`CHUNK_ITEMS`) or would span more than `MAX_SPAN` becomes one `chunks` row and its `recent`
rows go. Everything else is a row of its own (`events`, `specs`, `statuses`). Every minute,
`maintain` closes idle segments, writes when each shape and string was last used, and, with
`retain`, drops what is older than that (whole chunks), then gives the pages back.

Nothing here is thread-safe: the recorder calls it from its one writer thread only.

What the writer keeps between batches (intern tables, pods, open segments: one entry per
probe, 15,000 of each in a cluster) is held in forms the cyclic garbage collector does not
track: dicts of str / int / float keys and values, tuples of those, bytearrays.
Held as objects (a dataclass per segment and per pod, lists, tuples of enum members) they would
be most of the old generation the collector walks on every full collection, and those passes
stall the event loop (guarded by benchmarks/record.py's tick lateness). The
engine's own long-lived objects are frozen (`Engine.collect_and_freeze`); the writer's appear after
that, and are out of the collector's way by their form instead.

`Writer` is one transaction's worth of state on one thread: its parts (interning, open
segments, snapshots, maintenance) all read and change the same intern tables and segments; the
encoding of items is `codec.py`'s, the schema `schema.py`'s.
"""

from __future__ import annotations

import json
import sqlite3
import time
from operator import itemgetter
from typing import Any

from probetui.prober.status import PodStatus
from probetui.record import codec
from probetui.record.checks import (
    COLUMNS,
    CRC,
    TALLIED,
    WHOLE,
    Tallies,
    bucket_of,
    recent_crc,
    sql_crc,
)
from probetui.record.schema import CHECKED_FORMAT, CHUNK_ITEMS, MAX_SPAN, upgrade
from probetui.record.snapshot import status_json
from probetui.spec.encode import encode
from probetui.spec.model import Pod
from probetui.timeline.events import PROBE_ATTEMPT, Event
from probetui.timeline.history import BODY_EXCERPT

MAINTAIN_EVERY = 60.0  # seconds of wall time between maintenance passes
# bounds on the writer's caches of raw values (the intern tables in the file stay whole)
MAX_RAW_KEYS = 50_000
# the writer's encoding holds the GIL at most this long at a stretch (seconds), then sleeps
HOLD_GIL = 0.001
YIELD_SLEEP = 0.0002


# the tables whose rows a batch inserts, in this order: a segment's recent rows are written
# before a close in the same batch deletes them (`closed`); each row its id first
_INSERTED = ("strings", "shapes", "pods", "probes", "specs", "statuses", "events", "recent")
_AFTER = ("chunks",)
_CHANGES = {
    "deleted": "UPDATE pods SET deleted_t = ? WHERE id = ?",
    "closed": "DELETE FROM recent WHERE seg = ?",
}
# where rows carry checksums, a pod's row is written whole (`_pod_update`: its checksum from
# what the writer keeps of it, not by an SQL function called back for 15,000 pods a minute)
_POD_UPDATE = "UPDATE pods SET last_t = ?, deleted_t = ?, crc = ? WHERE id = ?"
# and another changed row's checksum is computed anew from its columns
_CHECKED_CHANGES = {
    "deleted": _POD_UPDATE,
    "closed": "DELETE FROM recent WHERE seg = ?",
}
_LAST_USED = {
    "pods": "UPDATE pods SET last_t = ? WHERE id = ?",
    "shapes": "UPDATE shapes SET last_t = ? WHERE id = ?",
    "strings": "UPDATE strings SET last_t = ? WHERE id = ?",
}
_CHECKED_LAST_USED = {
    "pods": _POD_UPDATE,
    "shapes": "UPDATE shapes SET last_t = ?1, crc = probetui_crc('shapes', id, body, ?1)"
    " WHERE id = ?2",
    "strings": "UPDATE strings SET last_t = ?1, crc = probetui_crc('strings', id, text, ?1)"
    " WHERE id = ?2",
}
# the tables whose ids the writer gives out (the others' ids are their own keys too)
_NUMBERED = (
    "strings",
    "shapes",
    "pods",
    "probes",
    "chunks",
    "specs",
    "statuses",
    "events",
    "recent",
)


# a queued `recent` row's checksum
_CRC_OF_RECENT = itemgetter(5)

# where a tallied table's time is in its row
_TIME_AT = {
    table: [name for name, _ in COLUMNS[table]].index(column) for table, column in TALLIED.items()
}


def _insert(table: str, checked: bool) -> str:
    names = [name for name, _ in COLUMNS[table]] + (["crc"] if checked else [])
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"


# an open segment: (its bytes so far, its chain, id, n, t0, t1, its marks so far or None, the
# latest item time in µs, the shape of all its items while they are records of one shape with
# a run under way, else -1: `chunks.steady`; the sum of its `recent` rows' checksums), replaced
# by a new tuple with every item; the collector tracks neither a bytearray nor a tuple of ints
# and floats
Segment = tuple[bytearray, codec.Chain, int, int, float, float, bytearray | None, int, int, int]

# an item as the recorder's sink queues it (`item_of`): tag, pod uid, namespace, pod name,
# container, probe, t, raw key, then for records t / tick / result run / latency in µs
ITEM = "i"


def item_of(e: Event) -> tuple[Any, ...] | None:
    """A per-probe event as one tuple of atomics (None for the others), made on the event loop
    by the sink: what waits for the writer (up to a flush interval) is then not an `Event` and
    its record, outcome, attempt and fields (6 tracked objects each, 1,500 a second, promoted
    into the old generation while they wait, bringing full collections on sooner), but one tuple
    the collector stops tracking within two collections, before it could be promoted."""
    attempt = e.type == PROBE_ATTEMPT
    via = e.fields.get("via") if attempt else None
    key = codec.raw_key(e, via, e.fields.get("node") if attempt else None)
    if key is None:
        return None
    record = e.record
    # the probe as a plain `str`, not its member: a member is an object the collector tracks
    probe = str(e.probe) if e.probe is not None else None
    if record is None:
        return (ITEM, e.pod_uid, e.namespace, e.pod, e.container, probe, e.t, key)
    us = codec.us
    return (
        ITEM,
        e.pod_uid,
        e.namespace,
        e.pod,
        e.container,
        probe,
        e.t,
        key,
        us(record.t),
        us(record.scheduled_at),
        record.result_run,
        us(record.latency),  # 0.0 without a try: read off the record, no outcome built
    )


class Writer:
    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        retain: float | None = None,
        chunk_items: int = CHUNK_ITEMS,
        chunk_span: float = MAX_SPAN,
        maintain_every: float = MAINTAIN_EVERY,
    ) -> None:
        self.conn = conn
        self.retain = retain
        self.chunk_items = chunk_items
        self.chunk_span = min(chunk_span, MAX_SPAN)
        self.maintain_every = maintain_every
        self._next_maintain = time.monotonic() + maintain_every
        self.now = 0.0  # the latest time seen in the data: retention counts back from it
        self._strings: dict[str, int] = {}
        self._string_used: dict[int, float] = {}
        self._shapes: dict[str, int] = {}  # body JSON -> id
        self._shape_strings: dict[int, tuple[int, ...]] = {}
        self._shape_used: dict[int, float] = {}
        self._dirty_shapes: set[int] = set()
        self._dirty_strings: set[int] = set()
        self._raw: dict[tuple[Any, ...], int] = {}  # raw key -> shape id
        # per probe id: its last item's raw key and shape id, and `_raw`'s generation then:
        # the items of a steady probe share one raw key object (`codec.raw_key`), found here
        # without hashing it again; a generation moves on whenever `_raw` is cleared
        self._last_raw: dict[int, tuple[tuple[Any, ...], int, int]] = {}
        self._raw_gen = 0
        # pods by uid, one dict per attribute (of atomics, but for the last Pod and status
        # seen: two dicts of references, not 15,000 objects)
        self._pod_ids: dict[str, int] = {}
        self._pod_last: dict[str, float] = {}
        # in a checked file, each pod's row but for last_t: (id, uid, namespace, name,
        # first_t, deleted_t)
        self._pod_rows: dict[str, tuple[int, str, str, str, float, float | None]] = {}
        self._pod_seen: dict[str, Pod] = {}
        self._manifests: dict[str, str] = {}
        self._statuses: dict[str, PodStatus] = {}
        self._status_texts: dict[str, str] = {}
        self._probes: dict[tuple[str, str, str], int] = {}
        self._open: dict[int, Segment] = {}  # by probe id
        self._rows: dict[str, list[tuple[Any, ...]]] = {}
        self._touched_pods: set[str] = set()
        # format 2 and on: rows carry checksums, rows read by time are tallied (`checks.py`)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        self.checked = version >= CHECKED_FORMAT
        self._tally = Tallies()
        changes = _CHECKED_CHANGES if self.checked else _CHANGES
        self._sql = {t: _insert(t, self.checked) for t in (*_INSERTED, *_AFTER)}
        self._sql.update(changes)
        self._last_used = _CHECKED_LAST_USED if self.checked else _LAST_USED
        if self.checked:
            conn.create_function("probetui_crc", -1, sql_crc, deterministic=True)
        self._load()

    # -- state kept in the file ---------------------------------------------------------

    def _load(self) -> None:
        """What an earlier session left: intern tables, pods, probes; segments it never closed
        (it was killed) are closed now, as they stand."""
        c = self.conn
        upgrade(c)  # a file from before marks and the time indexes
        for i, text, last in c.execute("SELECT id, text, last_t FROM strings"):
            self._strings[text] = i
            self._string_used[i] = last
        for i, body, last in c.execute("SELECT id, body, last_t FROM shapes"):
            self._shapes[body] = i
            self._shape_used[i] = last
            self._shape_strings[i] = codec.shape_strings(json.loads(body))
        by_id: dict[int, str] = {}
        for i, uid, ns, name, first, last, deleted in c.execute(
            "SELECT id, uid, namespace, name, first_t, last_t, deleted_t FROM pods"
        ):
            self._pod_ids[uid] = i
            self._pod_last[uid] = last
            if self.checked:
                self._pod_rows[uid] = (i, uid, ns, name, first, deleted)
            by_id[i] = uid
        for i, pod_id, container, probe in c.execute(
            "SELECT id, pod_id, container, probe FROM probes"
        ):
            self._probes[(by_id[pod_id], container, probe)] = i
        for pod_id, manifest in c.execute(
            "SELECT pod_id, manifest FROM specs WHERE id IN (SELECT MAX(id) FROM specs GROUP BY pod_id)"
        ):
            self._manifests[by_id[pod_id]] = manifest
        # ids are never given out twice, also after retention dropped the highest
        self._next = {
            table: 1 + c.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
            for table in _NUMBERED
        }
        # the next `recent` row's id, kept apart: given out once an item
        self._next_recent = self._next.pop("recent")
        if self.checked:
            for table, bucket, n, total in c.execute("SELECT tbl, bucket, n, sum FROM tally"):
                self._tally.counts[(table, bucket)] = (n, total)
        self._next["chunks"] = max(
            self._next["chunks"],
            1 + c.execute("SELECT COALESCE(MAX(seg), 0) FROM recent").fetchone()[0],
        )
        left: dict[int, list[tuple[int, float, bytes]]] = {}
        for seg, probe_id, t, data in c.execute(
            "SELECT seg, probe_id, t, data FROM recent ORDER BY id"
        ):
            left.setdefault(seg, []).append((probe_id, t, data))
        if left:
            self._rows = {}
            for seg, rows in left.items():
                ts = [t for _, t, _ in rows]
                data = b"".join(d for *_, d in rows)
                self._row(
                    "chunks", (seg, rows[0][0], min(ts), max(ts), len(rows), data, None, None)
                )
            if self.checked:
                n, total = self._tally.counts.get(("recent", WHOLE), (0, 0))
                self._tally.add_sum("recent", WHOLE, -n, -total)
            c.execute("BEGIN")
            c.execute("DELETE FROM recent")
            self._flush_rows()
            c.execute("COMMIT")
            self._rows = {}

    # -- one batch ------------------------------------------------------------------------

    def write(self, batch: list[tuple[Any, ...]]) -> None:
        """One transaction for the batch; raises sqlite3.Error (disk full ...) as it comes.

        A batch holds the sink's tuples: `item_of`'s items, ("e", Event) for the other
        events, ("p", t, pod, status) for snapshots."""
        self._rows = {}
        clock = time.perf_counter
        until = clock() + HOLD_GIL
        for item in batch:
            tag = item[0]
            if tag == ITEM:
                self._item(*item[1:])
            elif tag == "e":
                self._event(item[1])
            else:
                self._snapshot(item[1], item[2], item[3])
            if clock() > until:
                self._let_the_loop_run()
                until = clock() + HOLD_GIL
        maintain = time.monotonic() >= self._next_maintain
        if maintain:
            self._close_idle()
        c = self.conn
        c.execute("BEGIN")
        try:
            self._flush_rows()
            if maintain:
                self._maintain()
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise
        finally:
            # not kept until the next batch: a quarter second is long enough to grow old in
            self._rows = {}
        if maintain:
            self._next_maintain = time.monotonic() + self.maintain_every
            if self.retain is not None:
                c.execute("PRAGMA incremental_vacuum")

    @staticmethod
    def _let_the_loop_run() -> None:
        """Give the GIL to the event loop if it waits for it. Python hands it over on its own
        only after the switch interval (5 ms), and again each time the loop let go of it for a
        select() that returned at once (the GIL's convoy effect), so a burst of encoding (the
        first batches of a large fleet and their first shapes) would delay the loop's timers
        by many times their interval; the writer's burst takes a little longer instead
        (guarded by benchmarks/record.py's tick lateness). A real sleep, not sleep(0): that one
        takes the GIL straight back before the woken loop thread runs."""
        time.sleep(YIELD_SLEEP)

    def close(self) -> None:
        """Every open segment becomes a chunk: a finished recording has no `recent` rows."""
        self._rows = {}
        for probe_id in list(self._open):
            self._close(probe_id)
        c = self.conn
        c.execute("BEGIN")
        self._flush_rows()
        self._write_last_used()
        c.execute("COMMIT")
        self._rows = {}
        # the pages `recent` used go back to the file system
        c.execute("PRAGMA incremental_vacuum")

    def _row(self, table: str, row: tuple[Any, ...]) -> None:
        """Queue one row (its id first) for the batch; in a checked file with its checksum,
        counted in its tally."""
        rows = self._rows.get(table)
        if rows is None:
            rows = self._rows[table] = []
        if not self.checked:
            rows.append(row)
            return
        crc = CRC[table](row)
        rows.append((*row, crc))
        at = _TIME_AT.get(table)
        if at is not None:
            self._tally.add(table, row[at], crc)

    def _write_tallies(self) -> None:
        if self._tally.dirty:
            kept, gone = self._tally.rows()
            c = self.conn
            c.executemany("INSERT OR REPLACE INTO tally VALUES (?, ?, ?, ?, ?)", kept)
            c.executemany("DELETE FROM tally WHERE tbl = ? AND bucket = ?", gone)

    def _change(self, kind: str, row: tuple[Any, ...]) -> None:
        rows = self._rows.get(kind)
        if rows is None:
            rows = self._rows[kind] = []
        rows.append(row)

    def _flush_rows(self) -> None:
        c = self.conn
        recent = self._rows.get("recent")
        if recent and self.checked:
            # the items' rows, in their tally at once (`_item` queues them)
            self._tally.add_sum("recent", WHOLE, len(recent), sum(map(_CRC_OF_RECENT, recent)))
        for table, sql in self._sql.items():
            rows = self._rows.get(table)
            if rows:
                c.executemany(sql, rows)
        self._write_tallies()

    # -- interning ----------------------------------------------------------------------

    def _id(self, table: str) -> int:
        i = self._next[table]
        self._next[table] = i + 1
        return i

    def _string(self, text: str, t: float) -> int:
        i = self._strings.get(text)
        if i is None:
            i = self._strings[text] = self._id("strings")
            self._row("strings", (i, text, t))
        self._string_used[i] = t
        return i

    def _texts(self, t: float, cut: int | None = None) -> codec.Text:
        # the engine masked every text already (probetui.redact): stored as given
        def text(value: str | None) -> int | None:
            if value is None:
                return None
            return self._string(value[:cut] if cut is not None else value, t)

        return text

    def _shape(self, raw: tuple[Any, ...], t: float, probe_id: int) -> int:
        last = self._last_raw.get(probe_id)
        if last is not None and last[0] is raw and last[2] == self._raw_gen:
            i = last[1]
        else:
            i = self._raw_shape(raw, t)
            self._last_raw[probe_id] = (raw, i, self._raw_gen)
        if self._shape_used.get(i) != t:
            self._shape_used[i] = t
            self._dirty_shapes.add(i)
        return i

    def _raw_shape(self, raw: tuple[Any, ...], t: float) -> int:
        i = self._raw.get(raw)
        if i is None:
            body = codec.shape_body(raw, self._texts(t), self._texts(t, BODY_EXCERPT))
            text = json.dumps(body, separators=(",", ":"))
            i = self._shapes.get(text)
            if i is None:
                i = self._shapes[text] = self._id("shapes")
                self._shape_strings[i] = codec.shape_strings(body)
                self._row("shapes", (i, text, t))
            if len(self._raw) > MAX_RAW_KEYS:
                self._clear_raw()
            self._raw[raw] = i
        return i

    def _clear_raw(self) -> None:
        self._raw.clear()
        self._last_raw.clear()
        self._raw_gen += 1

    # -- pods -----------------------------------------------------------------------------

    def _pod_update(self, uid: str) -> tuple[float, float | None, int, int]:
        """A pod's `_POD_UPDATE` as it stands now: its last use, its deletion, its checksum."""
        pod_id, _, namespace, name, first, deleted = self._pod_rows[uid]
        last = self._pod_last[uid]
        crc = CRC["pods"]((pod_id, uid, namespace, name, first, last, deleted))
        return (last, deleted, crc, pod_id)

    def _pod(self, uid: str, namespace: str, name: str, t: float) -> int:
        pod_id = self._pod_ids.get(uid)
        if pod_id is None:
            pod_id = self._pod_ids[uid] = self._id("pods")
            self._pod_last[uid] = t
            self._row("pods", (pod_id, uid, namespace, name, t, t, None))
            if self.checked:
                self._pod_rows[uid] = (pod_id, uid, namespace, name, t, None)
        elif t > self._pod_last[uid]:
            self._pod_last[uid] = t
            self._touched_pods.add(uid)
        if t > self.now:
            self.now = t
        return pod_id

    def _snapshot(self, t: float, pod: Pod, status: PodStatus | None) -> None:
        uid = pod.uid
        pod_id = self._pod(uid, pod.namespace, pod.name, t)
        if status is None:
            self._row("statuses", (self._id("statuses"), pod_id, t, None))
            if self.checked:
                self._pod_rows[uid] = (*self._pod_rows[uid][:5], t)
                self._change("deleted", self._pod_update(uid))
            else:
                self._change("deleted", (t, pod_id))
            self._statuses.pop(uid, None)
            self._status_texts.pop(uid, None)
            return
        last = self._pod_seen.get(uid)
        if last is None or last != pod or last.labels != pod.labels:
            self._pod_seen[uid] = pod
            # the engine's redacted copy (probetui.redact): the file never holds the real spec
            manifest = json.dumps(encode(pod), separators=(",", ":"))
            if manifest != self._manifests.get(uid, ""):
                self._manifests[uid] = manifest
                self._row("specs", (self._id("specs"), pod_id, t, pod.source, manifest))
        before = self._statuses.get(uid)
        if status is not before and status != before:
            self._statuses[uid] = status
            text = json.dumps(status_json(status), separators=(",", ":"))
            if text != self._status_texts.get(uid):
                self._status_texts[uid] = text
                self._row("statuses", (self._id("statuses"), pod_id, t, text))

    # -- events ---------------------------------------------------------------------------

    def _event(self, e: Event) -> None:
        item = item_of(e)
        if item is not None:
            self._item(*item[1:])
            return
        pod_id = self._pod(e.pod_uid, e.namespace, e.pod, e.t)
        sid = self._string(json.dumps(e.fields, separators=(",", ":"), default=str), e.t)
        row = (self._id("events"), e.t, pod_id, e.type, e.container, e.probe, e.source, sid)
        self._row("events", row)

    def _item(
        self,
        uid: str,
        namespace: str,
        name: str,
        container: str,
        probe: str,
        t: float,
        raw: tuple[Any, ...],
        t_us: int = 0,
        tick_us: int = 0,
        run: int = 0,
        lat_us: int = 0,
    ) -> None:
        pod_id = self._pod(uid, namespace, name, t)
        pkey = (uid, container, probe)
        probe_id = self._probes.get(pkey)
        if probe_id is None:
            probe_id = self._probes[pkey] = self._id("probes")
            self._row("probes", (probe_id, pod_id, container, probe, t))
        kind = raw[0]
        shape = self._shape(raw, t, probe_id)
        seg = self._open.get(probe_id)
        if seg is not None and max(seg[5], t) - min(seg[4], t) > self.chunk_span:
            self._close(probe_id)
            seg = None
        if seg is None:
            data, chain, seg_id, n, t0, t1 = (
                bytearray(),
                codec.KEYFRAME,
                self._id("chunks"),
                0,
                t,
                t,
            )
            marks, key = None, -(1 << 62)
            steady = shape
            sums = 0
        else:
            data, chain, seg_id, n, t0, t1, marks, key, steady, sums = seg
        if steady != shape or run < 1 or kind not in codec.RECORD_KINDS:
            steady = -1
        start = len(data)
        if n and not n % codec.MARK_EVERY:
            if marks is None:
                marks = bytearray()
            codec.open_mark(marks, start, chain, key)
        if kind in codec.RECORD_KINDS:
            chain = codec.put_record(data, chain, shape, kind, t_us, tick_us, run, lat_us)
        else:
            chain = codec.put_other(data, chain, shape, codec.us(t))
        n += 1
        if chain[4] > key:
            key = chain[4]
        # the item's `recent` row, queued as `_row` would (inline: one an item), its checksum
        # added to the segment's
        piece = bytes(data[start:])
        i = self._next_recent
        self._next_recent = i + 1
        recent = self._rows.get("recent")
        if recent is None:
            recent = self._rows["recent"] = []
        if self.checked:
            crc = recent_crc(i, seg_id, probe_id, t, piece)
            sums += crc
            recent.append((i, seg_id, probe_id, t, piece, crc))
        else:
            recent.append((i, seg_id, probe_id, t, piece))
        self._open[probe_id] = (
            data,
            chain,
            seg_id,
            n,
            min(t0, t),
            max(t1, t),
            marks,
            key,
            steady,
            sums,
        )
        if n >= self.chunk_items:
            self._close(probe_id)

    def _close(self, probe_id: int) -> None:
        data, _, seg_id, n, t0, t1, marks, _, steady, sums = self._open.pop(probe_id)
        stored = codec.close_marks(marks, t0) if marks else None
        kept = steady if steady >= 0 else None
        self._row("chunks", (seg_id, probe_id, t0, t1, n, bytes(data), stored, kept))
        self._change("closed", (seg_id,))
        if self.checked:
            self._tally.add_sum("recent", WHOLE, -n, -sums)

    def _close_idle(self) -> None:
        horizon = self.now - self.chunk_span / 2
        for probe_id in [p for p, seg in self._open.items() if seg[5] < horizon]:
            self._close(probe_id)

    # -- maintenance ----------------------------------------------------------------------

    def _write_last_used(self) -> None:
        """When each shape, string and pod was last used: written once a minute, not with every
        batch (a pod is touched by nearly every batch: 15,000 updates a second)."""
        c = self.conn
        if self._touched_pods:
            ids, last = self._pod_ids, self._pod_last
            c.executemany(
                self._last_used["pods"],
                [self._pod_update(u) for u in self._touched_pods if u in ids]
                if self.checked
                else [(last[u], ids[u]) for u in self._touched_pods if u in ids],
            )
            self._touched_pods = set()
        for i in self._dirty_shapes:
            t = self._shape_used[i]
            for s in self._shape_strings.get(i, ()):
                if self._string_used.get(s, 0.0) < t:
                    self._string_used[s] = t
                    self._dirty_strings.add(s)
        c.executemany(
            self._last_used["shapes"],
            [(self._shape_used[i], i) for i in self._dirty_shapes],
        )
        c.executemany(
            self._last_used["strings"],
            [(self._string_used[i], i) for i in self._dirty_strings if i in self._string_used],
        )
        self._dirty_shapes = set()
        self._dirty_strings = set()

    def _maintain(self) -> None:
        self._write_last_used()
        if self.retain is not None:
            self._drop_before(self.now - self.retain)

    def _drop_before(self, cutoff: float) -> None:
        """Retention: whole chunks and rows older than `cutoff`; of specs and statuses the one
        in force at `cutoff` stays; pods deleted before it go with everything of theirs."""
        c = self.conn
        delete = self._delete
        delete("chunks", "t1 < ?", (cutoff,))
        delete("events", "t < ?", (cutoff,))
        for table in ("specs", "statuses"):
            delete(
                table,
                f"t < ? AND id NOT IN (SELECT MAX(id) FROM {table} WHERE t < ? GROUP BY pod_id)",
                (cutoff, cutoff),
            )
        gone = [
            (i, uid)
            for i, uid in c.execute(
                "SELECT id, uid FROM pods WHERE deleted_t IS NOT NULL AND deleted_t < ?",
                (cutoff,),
            )
        ]
        for pod_id, uid in gone:
            for table in ("specs", "statuses", "probes", "events"):
                delete(table, "pod_id = ?", (pod_id,))
            c.execute("DELETE FROM pods WHERE id = ?", (pod_id,))
            for table in (
                self._pod_ids,
                self._pod_last,
                self._pod_rows,
                self._pod_seen,
                self._manifests,
                self._statuses,
                self._status_texts,
            ):
                table.pop(uid, None)  # type: ignore[attr-defined]
            for k in [k for k in self._probes if k[0] == uid]:
                self._last_raw.pop(self._probes.pop(k), None)
        # a shape or string last used before every chunk still kept (closed or open) began
        # appears only in what was dropped
        kept = c.execute("SELECT MIN(t0) FROM chunks").fetchone()[0]
        horizon = min(
            [cutoff, *([kept] if kept is not None else []), *(s[4] for s in self._open.values())]
        )
        old_shapes = [i for i, t in self._shape_used.items() if t < horizon]
        old_strings = [i for i, t in self._string_used.items() if t < horizon]
        if old_shapes:
            c.executemany("DELETE FROM shapes WHERE id = ?", [(i,) for i in old_shapes])
            dead = set(old_shapes)
            self._shapes = {b: i for b, i in self._shapes.items() if i not in dead}
            for i in old_shapes:
                del self._shape_used[i]
                self._shape_strings.pop(i, None)
        if old_strings:
            c.executemany("DELETE FROM strings WHERE id = ?", [(i,) for i in old_strings])
            dead = set(old_strings)
            self._strings = {s: i for s, i in self._strings.items() if i not in dead}
            for i in old_strings:
                del self._string_used[i]
        if old_shapes or old_strings:
            self._clear_raw()

    def _delete(self, table: str, where: str, args: tuple[Any, ...]) -> None:
        """Retention's DELETE, taken off the table's tallies in a checked file: what retention
        drops is then not missing, as what damage drops is."""
        c = self.conn
        column = TALLIED.get(table)
        if self.checked and column is not None:
            for t, crc in c.execute(f"SELECT {column}, crc FROM {table} WHERE {where}", args):
                self._tally.add_sum(table, bucket_of(t), -1, -crc)
        c.execute(f"DELETE FROM {table} WHERE {where}", args)
        self._write_tallies()


__all__ = ["ITEM", "Segment", "Writer", "item_of"]
