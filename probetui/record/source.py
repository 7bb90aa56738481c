"""Open a recording's file and read what every query shares: sessions, probes, shapes, strings.

`RecordingSource` is one read-only SQLite connection (`file:...?mode=ro`: nothing is ever
written, and in WAL mode a reader sees every committed batch of a recorder still running) and
the caches every query shares: the shapes as `Template`s, the interned strings, each probe's
`ProbeRef` and each pod's names, looked up by id and verified when first read (`pages.py`).
The queries stand on it: `pod_reads.py` (specs and statuses), `segments.py` (chunks),
`unbuilt.py` (the replay's forward read) and `reader.py` (`Recording`, events in time order).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from probetui.keys import ProbeKey
from probetui.prober.status import PodStatus
from probetui.record.pages import DECODE_ERRORS, Pages, Row
from probetui.record.schema import (
    CHECKED_FORMAT,
    FORMAT_VERSION,
    Damaged,
    SessionMeta,
    damaged,
    has_steady,
)
from probetui.record.shapes import ProbeRef, Template
from probetui.spec.model import Pod, ProbeType
from probetui.timeline.events import Event


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


# what reading a damaged file raises: SQLite's errors and a decoder's, and `Damaged` itself
_BAD = (*DECODE_ERRORS, Damaged)


class RecordingSource:
    """Holds one read-only connection to a recording and the lookups by id every query shares."""

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

    def __enter__(self) -> Self:
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

    # -- what items and rows refer to ---------------------------------------------------

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
            refs[row[0]] = ProbeRef(key, pod[2], pod[3], row[2], key.probe_type)  # type: ignore[index]

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
        self._refs[i] = ProbeRef(key, pod[2], pod[3], container, key.probe_type)

    def _pod_of(self, pod_id: int) -> tuple[str, str, str]:
        p = self._pods.get(pod_id)
        if p is None:
            row = self._pages.row_by_id("pods", pod_id)
            if row is None:
                raise Damaged(self.path, None, f"pods row {pod_id} is missing")
            p = self._pods[pod_id] = (row[1], row[2], row[3])
        return p

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
            probe_type = ProbeType.parse(probe) if probe else None
            return Event(type_, t, uid, ns, name, container, probe_type, source, json.loads(text))
        except _BAD as e:
            if isinstance(e, Damaged):
                raise e.at(t) from None
            raise Damaged(self.path, t, f"an undecodable event ({e!r})") from None

    def _undecodable(self, e: BaseException, t: float | None) -> Damaged:
        """A chunk that did not decode (or a row it needs), as damage from `t` on."""
        if isinstance(e, Damaged):
            return e.at(t)
        return Damaged(self.path, t, f"an undecodable chunk ({e!r})")


__all__ = ["PodInfo", "RecordingMeta", "RecordingSource"]
