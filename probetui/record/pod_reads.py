"""Read the pods' specs and statuses in force at a time, and as they changed, from a recording.

Each spec and status row is decoded once per `Recording` (a seek asks for the same 15,000 again)
and what was in force at a few moments is kept (`snapshots`).
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Iterator
from dataclasses import replace
from operator import itemgetter
from typing import Any

from probetui.prober.status import PodStatus
from probetui.record.merge import by_first_two
from probetui.record.pages import DECODE_ERRORS, IN_LIMIT, Row
from probetui.record.schema import (
    Damaged,
    damaged,
)
from probetui.record.snapshot import status_from_json
from probetui.record.source import RecordingSource
from probetui.spec.encode import decode, owner_of
from probetui.spec.model import Pod

IN_FORCE_KEPT = 3  # moments whose pods in force `snapshots` keeps


class PodReads(RecordingSource):
    """Runs the queries of pods: `spec_at`, `status_at`, `specs`, `labels_of`, `snapshots`."""

    def _pod_id(self, uid: str) -> int | None:
        rows = self._pages.rows("pods", "WHERE uid = ?", (uid,))
        return rows[0][0] if rows else None

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
            key=by_first_two,
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


__all__ = ["IN_FORCE_KEPT", "PodReads"]
