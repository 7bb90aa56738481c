"""Read a recording's rows by time, a page of tally buckets at a time, each verified.

`Pages.by_time(table, lo, hi)` yields the rows of `table` (chunks by `t0`; events, specs and
statuses by `t`) whose time lies in [lo, hi], a tally's bucket at a time, in time order (then
id). In a format-2 file a page of buckets is read in one read transaction with their tallies
(so a recorder still writing is never caught between a row and its count): each tally is
compared with the count and checksum sum of its bucket's rows, which SQLite adds up on the
time index alone (it carries the id and `crc`), and a stretch without a tally must hold no
rows. The rows are read through that same index (whatever else the query asks of them: what
is read is what was counted), and each bucket's are verified against their own checksums
just before that bucket is yielded, so a stream verifies what it reaches, not the page ahead
of it. Damage ends the pages there: the rows before its bucket are yielded whole, then
`Damaged` says from when the rest cannot be trusted. A format-1 file is read the same way
without any of the checks.

A bucket's tally, once it matched, is not counted again while it stays the same (a recorder
still writing only adds, in the same transaction as the tally; retention takes off both): a
replay's seeks read the same minutes over and over, and counting them again was most of what
the checks cost. What is kept is the count, not the rows: a row read again is verified again.

SQLite's own errors on a damaged file (malformed pages, undecodable text) become `Damaged`
too, here and in every query of the reader (`Pages.q`).
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
from bisect import bisect_left
from collections.abc import Collection, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from probetui.record.checks import BUCKET, COLUMNS, TALLIED, bad, bucket_of, first_bad
from probetui.record.schema import TIME_INDEX, Damaged, damaged

# what SQLite and the decoders raise on a damaged file
DECODE_ERRORS = (
    sqlite3.DatabaseError,
    UnicodeDecodeError,
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    OverflowError,
)

Row = tuple[Any, ...]

# tally buckets a page reads: a bounded read (a seek's window) in few transactions, a stream
# (to the end) no further ahead than it is asked for (a seek's first step of playing reads
# on one bucket, not the next minute's chunks of every probe); a format-1 file's stream a
# minute's buckets at a time, as it always did
PAGE_BOUNDED = 64
PAGE_STREAM = 1
PAGE_UNCHECKED = 6
# the bucket range a read without an end covers (SQLite's integers hold it, and its times)
_FAR = 1 << 52
# the most values an SQL list is written out with (SQLite before 3.32 takes 999 parameters)
IN_LIMIT = 500
# rows looked at where a stretch without a tally holds some: is any of them whole?
_STRAYS = 20


def _time_at(table: str) -> int:
    return [name for name, _ in COLUMNS[table]].index(TALLIED[table])


def _text_of(data: bytes) -> str:
    """Return a TEXT value as a checked file's reader takes it where it is not UTF-8: as it is, to
    fail its row's checksum (`surrogateescape` gives back the very bytes)."""
    return data.decode("utf-8", "surrogateescape")


class Pages:
    """Runs one read-only connection's queries, with the checks a format-2 file allows."""

    def __init__(self, conn: sqlite3.Connection, path: Path, checked: bool) -> None:
        self.conn = conn
        self.path = path
        self.checked = checked
        # tallies that matched their rows, by (table, bucket): (n, sum, crc) as they were
        self._verified: dict[tuple[str, int], tuple[int, int, int]] = {}
        # stretches of buckets found to hold no rows, by (table, first, last)
        self._empty: set[tuple[str, int, int]] = set()
        # whether SQLite has JSON (3.38 on, and most builds before): a list of ids as one
        # parameter, where a seek leaves 15,000 probes out
        try:
            self.json_each = bool(conn.execute("SELECT 1 FROM json_each('[1]')").fetchall())
        except sqlite3.Error:
            self.json_each = False
        # the SELECT list of each table's full row (its checksum last, NULL where the file
        # has no such column: a format-1 file, or one from before marks)
        have = {table: {r[1] for r in self.q(f"PRAGMA table_info({table})")} for table in COLUMNS}
        self.full = {
            table: ", ".join(
                name if name in have[table] else "NULL" for name in [*(n for n, _ in cols), "crc"]
            )
            for table, cols in COLUMNS.items()
        }

    # -- queries ------------------------------------------------------------------------

    def q(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        try:
            return self.conn.execute(sql, tuple(args)).fetchall()
        except sqlite3.OperationalError as e:
            if not self.checked or self.conn.text_factory is not str:
                raise damaged(self.path, e) from None
            # a text that is not UTF-8: read again as it is, for its row's checksum to fail
            # (where SQLite decodes, a Python decoder for every text cost a first screen 10%)
            self.conn.text_factory = _text_of
            try:
                return self.conn.execute(sql, tuple(args)).fetchall()
            except DECODE_ERRORS as again:
                raise damaged(self.path, again) from None
            finally:
                self.conn.text_factory = str
        except DECODE_ERRORS as e:
            raise damaged(self.path, e) from None

    def among(
        self, column: str, values: Collection[int], args: list[Any], negate: bool = False
    ) -> str:
        """Return an SQL condition that `column` is one of `values` (or, `negate`, none of them),
        its parameters added to `args`; "" where SQLite cannot say it for so many (the caller
        tells them apart itself)."""
        op = "NOT IN" if negate else "IN"
        if self.json_each:
            args.append(json.dumps(list(values)))
            return f"{column} {op} (SELECT value FROM json_each(?))"
        if len(values) <= IN_LIMIT:
            args.extend(values)
            return f"{column} {op} ({','.join('?' * len(values))})"
        return ""

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Return one read transaction around the queries within (a no-op inside one already)."""
        conn = self.conn
        if conn.in_transaction:
            yield
            return
        self.q("BEGIN")
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("COMMIT")

    # -- rows ---------------------------------------------------------------------------

    def bad(self, table: str, row: Row) -> bool:
        """Tell whether a full row (`self.full[table]`'s columns) fails its checksum (never in a
        format-1 file)."""
        return self.checked and bad(table, row)

    def first_bad(self, table: str, rows: list[Row]) -> Row | None:
        """Return the first of these full rows that fails its checksum (never in a format-1
        file)."""
        return first_bad(table, rows) if self.checked else None  # type: ignore[return-value]

    def row_by_id(self, table: str, i: int, t: float | None = None) -> Row | None:
        """Return the full row with id `i` (None: there is none), verified: `Damaged` from `t`
        on."""
        rows = self.q(f"SELECT {self.full[table]} FROM {table} WHERE id = ?", (i,))
        if not rows:
            return None
        if self.bad(table, rows[0]):
            raise Damaged(self.path, t, f"{table} row {i} fails its checksum")
        return rows[0]  # type: ignore[no-any-return]

    def rows(self, table: str, where: str = "", args: Sequence[Any] = ()) -> list[Row]:
        """Full rows by any condition, each verified (`Damaged` at the row's time, where it
        has one, else none: the caller says when, `Damaged.at`); completeness is the caller's
        to know."""
        got = self.q(f"SELECT {self.full[table]} FROM {table} {where}", args)
        row = self.first_bad(table, got)
        if row is not None:
            raise Damaged(
                self.path, self.time_of(table, row), f"{table} row {row[0]} fails its checksum"
            )
        return got

    @staticmethod
    def time_of(table: str, row: Row) -> float | None:
        """Return a row's time where its table has one and it reads as one (a damaged row's may
        not: the caller bounds it by what it asked for)."""
        column = TALLIED.get(table)
        if column is None:
            return None
        t = row[_time_at(table)]
        return t if isinstance(t, float) and t == t and abs(t) < 1e12 else None

    # -- by time --------------------------------------------------------------------------

    def by_time(
        self,
        table: str,
        lo: float,
        hi: float,
        where: str = "",
        args: Sequence[Any] = (),
        *,
        time_index: bool = True,
    ) -> Iterator[list[Row]]:
        """Lists of full rows of `table` with lo <= time <= hi (and `where`, an SQL condition
        on its columns with `args`), a tally's bucket a list, each sorted by (time, id) and
        verified just before it is yielded (module docstring). Without
        `time_index` the planner picks the index that finds the rows (a few probes' over
        hours: `chunks_probe_t0`); the buckets are counted all the same."""
        stream = hi == math.inf
        if not self.checked:
            yield from self._unchecked(table, lo, hi, where, args, PAGE_UNCHECKED if stream else 0)
            return
        b = bucket_of(lo) if lo > -math.inf else -_FAR
        end = bucket_of(hi) if hi < math.inf else _FAR
        b, end = max(b, -_FAR), min(end, _FAR)
        at = _time_at(table)
        time = itemgetter(at)
        column = TALLIED[table]
        index = f" INDEXED BY {TIME_INDEX[table]}" if time_index else ""
        select = (
            f"SELECT {self.full[table]} FROM {table}{index} WHERE {column} >= ? AND {column} < ?"
            f" AND {column} >= ? AND {column} <= ?{f' AND ({where})' if where else ''}"
            f" ORDER BY {column}, id"
        )
        while b <= end:
            tallies, rows, after, found = self._page(table, b, end, stream, select, (lo, hi, *args))
            # the rows of each tally's bucket in turn (none from the stretches between: a row
            # whose time was damaged into one is missed by its own bucket), each bucket checked
            # only once the one before is taken: a stream verifies what it reaches
            j, n = 0, len(rows)
            for bucket, *_ in tallies:
                a0 = bucket * BUCKET
                if found is not None and a0 >= found.t:  # type: ignore[operator]
                    break
                a1 = (bucket + 1) * BUCKET
                j = bisect_left(rows, a0, j, n, key=time)
                k = bisect_left(rows, a1, j, n, key=time)
                if k == j:
                    continue
                page = rows[j:k]
                j = k
                failed = first_bad(table, page)
                if failed is not None:
                    raise Damaged(self.path, a0, f"{table} row {failed[0]} fails its checksum")
                yield page
            if found is not None:
                raise found
            b = after

    def _page(
        self, table: str, b: int, end: int, stream: bool, select: str, args: Sequence[Any]
    ) -> tuple[list[Row], list[Row], int, Damaged | None]:
        """Return the tallies from `b` (through `end`: up to `PAGE_BOUNDED` of them, or for a
        `stream` those within `PAGE_STREAM` buckets of the first) and the rows of their
        buckets and of the stretches between, read in one transaction with their counts:
        (tallies, rows, the bucket after the page, the damage found in the tallies and the
        stretches, earliest, or None)."""
        column = TALLIED[table]
        index = TIME_INDEX[table]
        size = PAGE_BOUNDED
        in_bucket = f"{column} >= tally.bucket * ? AND {column} < (tally.bucket + 1) * ?"
        try:
            with self.snapshot():
                tallies = self.q(
                    "SELECT bucket, n, sum, crc FROM tally WHERE tbl = ? AND bucket >= ? AND"
                    " bucket <= ? ORDER BY bucket LIMIT ?",
                    (table, b, end, size),
                )
                last = tallies[-1][0] if len(tallies) == size else end
                if stream and tallies and tallies[-1][0] >= tallies[0][0] + PAGE_STREAM:
                    tallies = [t for t in tallies if t[0] < tallies[0][0] + PAGE_STREAM]
                    last = tallies[-1][0]
                verified = self._verified
                todo = [t for t in tallies if verified.get((table, t[0])) != t[1:]]
                counts: dict[int, tuple[int, int]] = {}
                if todo:
                    for bucket, n, total in self.q(
                        f"SELECT bucket, (SELECT COUNT(*) FROM {table} INDEXED BY {index} WHERE"
                        f" {in_bucket}), (SELECT SUM(crc) FROM {table} INDEXED BY {index} WHERE"
                        f" {in_bucket}) FROM tally WHERE tbl = ? AND bucket >= ? AND bucket <= ?",
                        (BUCKET, BUCKET, BUCKET, BUCKET, table, todo[0][0], todo[-1][0]),
                    ):
                        counts[bucket] = (n, total or 0)
                strays: dict[int, list[Row]] = {}
                for first, final in self._gaps(table, b, last, tallies):
                    got = self.q(
                        f"SELECT {self.full[table]} FROM {table} INDEXED BY {index} WHERE"
                        f" {column} >= ? AND {column} < ? LIMIT {_STRAYS}",
                        (first * BUCKET, (final + 1) * BUCKET),
                    )
                    if got:
                        strays[first] = got
                    else:
                        self._empty.add((table, first, final))
                rows = self.q(select, (b * BUCKET, (last + 1) * BUCKET, *args))
        except Damaged as e:
            if b < end:
                # SQLite's own error somewhere in the page: read bucket by bucket to place
                # it, as a page of one would have (what is before it reads)
                return self._page(table, b, b, stream, select, args)
            return [], [], b + 1, e.at(b * BUCKET)
        found: Damaged | None = None
        for bucket, n, total, crc in tallies:
            if verified.get((table, bucket)) == (n, total, crc):
                continue
            a0 = bucket * BUCKET
            if bad("tally", (table, bucket, n, total, crc)):
                found = Damaged(self.path, a0, f"the tally of {table} fails its checksum")
                break
            count, summed = counts.get(bucket, (0, 0))
            if (count, summed) != (n, total):
                what = (
                    f"{n - count} of its {n} rows missing"
                    if count < n
                    else f"{count - n} rows more than its {n}"
                    if count > n
                    else "a row changed"
                )
                found = Damaged(self.path, a0, f"{table}: {what}")
                break
            verified[(table, bucket)] = (n, total, crc)
        for first in sorted(strays):
            if found is not None and first * BUCKET >= found.t:  # type: ignore[operator]
                break
            # a row whose time was damaged into the stretch fails its checksum: its own
            # bucket misses it; one that holds is a row whose tally is lost
            stray = next((r for r in strays[first] if not bad(table, r)), None)
            if stray is not None:
                found = Damaged(
                    self.path, first * BUCKET, f"{table} row {stray[0]} is not in its tally"
                )
                break
        return tallies, rows, last + 1, found

    def _gaps(self, table: str, b: int, last: int, tallies: list[Row]) -> list[tuple[int, int]]:
        """Return the stretches of buckets in [b, last] without a tally, not yet found empty."""
        out = []
        at = b
        for bucket, *_ in tallies:
            if bucket > at:
                out.append((at, bucket - 1))
            at = bucket + 1
        if at <= last:
            out.append((at, last))
        empty = self._empty
        return [(first, final) for first, final in out if (table, first, final) not in empty]

    def _unchecked(
        self, table: str, lo: float, hi: float, where: str, args: Sequence[Any], page: int
    ) -> Iterator[list[Row]]:
        """`by_time` in a format-1 file: pages of `page` buckets' time (0: all at once), from
        the first row's to the last's."""
        column = TALLIED[table]
        first, last = self.q(f"SELECT MIN({column}), MAX({column}) FROM {table}")[0]
        if first is None:
            return
        a = max(lo, first)
        last = min(last, hi)
        select = (
            f"SELECT {self.full[table]} FROM {table} WHERE {column} >= ? AND {column} < ?"
            f" AND {column} <= ?{f' AND ({where})' if where else ''} ORDER BY {column}, id"
        )
        while a <= last:
            b = a + page * BUCKET if page else math.nextafter(last, math.inf)
            try:
                rows = self.q(select, (a, b, hi, *args))
            except Damaged as e:
                raise e.at(a) from None
            if rows:
                yield rows
            a = b


__all__ = ["DECODE_ERRORS", "IN_LIMIT", "PAGE_BOUNDED", "PAGE_STREAM", "Pages", "Row"]
