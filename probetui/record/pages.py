"""Reading a recording's rows by time, a tally's bucket at a time, each bucket verified.

`Pages.by_time(table, lo, hi)` yields the rows of `table` (chunks by `t0`; events, specs and
statuses by `t`) whose time lies in [lo, hi], one bucket (`checks.BUCKET`) at a time, in time
order (then id). In a format-2 file each bucket is read in one read transaction with its
tally (so a recorder still writing is never caught between a row and its count), its rows'
checksums are verified and the rows are counted against the tally; a bucket that does not
match ends the pages there: the ones before it have been yielded whole, and `Damaged` says
from when the rest cannot be trusted. Rows are never taken from outside a tally's buckets; a
stretch of buckets without a tally must hold no rows. A format-1 file is read the same way
without any of the checks.

SQLite's own errors on a damaged file (malformed pages, undecodable text) become `Damaged`
too, here and in every query of the reader (`Pages.q`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from probetui.record.checks import BUCKET, COLUMNS, TALLIED, bucket_of, row_crc
from probetui.record.schema import Damaged, damaged

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


def _time_at(table: str) -> int:
    return [name for name, _ in COLUMNS[table]].index(TALLIED[table])


class Pages:
    """One read-only connection's queries, with the checks a format-2 file allows."""

    def __init__(self, conn: sqlite3.Connection, path: Path, checked: bool) -> None:
        self.conn = conn
        self.path = path
        self.checked = checked
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
        except DECODE_ERRORS as e:
            raise damaged(self.path, e) from None

    def q1(self, sql: str, args: Sequence[Any] = ()) -> Any:
        rows = self.q(sql, args)
        return rows[0][0] if rows else None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction around the queries within (a no-op inside one already)."""
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
        """Whether a full row (`self.full[table]`'s columns) fails its checksum (never in a
        format-1 file)."""
        if not self.checked:
            return False
        try:
            return bool(row[-1] != row_crc(table, row[:-1]))
        except (TypeError, ValueError):
            return True

    def row_by_id(self, table: str, i: int, t: float | None = None) -> Row | None:
        """The full row with id `i` (None: there is none), verified: `Damaged` from `t` on."""
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
        for row in got:
            if self.bad(table, row):
                raise Damaged(
                    self.path, self.time_of(table, row), f"{table} row {row[0]} fails its checksum"
                )
        return got

    @staticmethod
    def time_of(table: str, row: Row) -> float | None:
        """A row's time where its table has one and it reads as one (a damaged row's may
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
    ) -> Iterator[list[Row]]:
        """Pages of full rows of `table` with lo <= time <= hi (and `where`, an SQL condition
        on its columns with `args`), a bucket a page, each sorted by (time, id) and verified
        whole before it is yielded (module docstring)."""
        column = TALLIED[table]
        first, last = self._ends(table)
        if first is None:
            return
        b = max(first, bucket_of(lo)) if lo > -float("inf") else first
        end = min(last, bucket_of(hi)) if hi < float("inf") else last
        at = _time_at(table)
        select = f"SELECT {self.full[table]} FROM {table} WHERE {column} >= ? AND {column} < ?"
        if where:
            select += f" AND ({where})"
        while b <= end:
            a0 = b * BUCKET
            try:
                rows, tally, counted, skip = self._page(table, b, end, select, args, bool(where))
            except Damaged as e:
                raise e.at(a0) from None
            if skip is not None:
                b = skip
                continue
            if self.checked:
                assert tally is not None
                self._verify(table, b, rows, tally, counted, at)
            rows.sort(key=lambda r: (r[at], r[0]))
            kept = [r for r in rows if lo <= r[at] <= hi]
            if kept:
                yield kept
            b += 1
        if self.checked and hi == float("inf"):
            self._none_after(table, end)

    def _page(
        self, table: str, b: int, end: int, select: str, args: Sequence[Any], filtered: bool
    ) -> tuple[list[Row], tuple[int, int] | None, tuple[int, int | None] | None, int | None]:
        """One bucket's rows, tally and (filtered) count in one read transaction; or, where
        the bucket has no tally, the bucket to go on from (rows, None, None, that bucket)."""
        column = TALLIED[table]
        a0 = b * BUCKET
        with self.snapshot():
            tally = self._tally(table, b) if self.checked else None
            if self.checked and tally is None:
                # a stretch with no tally: it must hold no rows
                nxt = self.q1(
                    "SELECT MIN(bucket) FROM tally WHERE tbl = ? AND bucket > ?", (table, b)
                )
                stop = end + 1 if nxt is None else min(nxt, end + 1)
                stray = self.q(
                    f"SELECT {self.full[table]} FROM {table} WHERE {column} >= ? AND "
                    f"{column} < ? LIMIT 1",
                    (a0, stop * BUCKET),
                )
                if stray and not self.bad(table, stray[0]):
                    raise Damaged(self.path, a0, f"{table} row {stray[0][0]} is not in its tally")
                return [], None, None, stop
            rows = self.q(select, (a0, (b + 1) * BUCKET, *args))
            counted = (
                self.q(
                    f"SELECT COUNT(*), SUM(crc) FROM {table} WHERE {column} >= ? AND {column} < ?",
                    (a0, (b + 1) * BUCKET),
                )[0]
                if self.checked and filtered
                else None
            )
        return rows, tally, counted, None

    def _none_after(self, table: str, end: int) -> None:
        """No row whose checksum holds lies past the last tally read to (its tally lost)."""
        column = TALLIED[table]
        with self.snapshot():
            last = self.q1("SELECT MAX(bucket) FROM tally WHERE tbl = ?", (table,))
            after = (max(end, last if last is not None else end) + 1) * BUCKET
            for row in self.q(
                f"SELECT {self.full[table]} FROM {table} WHERE {column} >= ? LIMIT 20", (after,)
            ):
                if not self.bad(table, row):
                    raise Damaged(self.path, after, f"{table} row {row[0]} is not in its tally")

    def _ends(self, table: str) -> tuple[int | None, int]:
        """The first and last bucket a read by time visits."""
        if self.checked:
            lo, hi = self.q("SELECT MIN(bucket), MAX(bucket) FROM tally WHERE tbl = ?", (table,))[0]
            return lo, hi if hi is not None else 0
        column = TALLIED[table]
        lo, hi = self.q(f"SELECT MIN({column}), MAX({column}) FROM {table}")[0]
        if lo is None:
            return None, 0
        return bucket_of(lo), bucket_of(hi)

    def _tally(self, table: str, b: int) -> tuple[int, int] | None:
        rows = self.q(
            "SELECT tbl, bucket, n, sum, crc FROM tally WHERE tbl = ? AND bucket = ?", (table, b)
        )
        if not rows:
            return None
        if self.bad("tally", rows[0]):
            raise Damaged(self.path, b * BUCKET, f"the tally of {table} fails its checksum")
        return rows[0][2], rows[0][3]

    def _verify(
        self,
        table: str,
        b: int,
        rows: list[Row],
        tally: tuple[int, int],
        counted: tuple[int, int | None] | None,
        at: int,
    ) -> None:
        a0 = b * BUCKET
        for row in rows:
            if self.bad(table, row):
                raise Damaged(self.path, a0, f"{table} row {row[0]} fails its checksum")
            t = row[at]
            if not a0 <= t < a0 + BUCKET:
                raise Damaged(self.path, a0, f"{table} row {row[0]} is out of place")
        if counted is None:
            counted = (len(rows), sum(r[-1] for r in rows))
        n, total = counted[0], counted[1] or 0
        if (n, total) != tally:
            want = tally[0]
            what = (
                f"{want - n} of its {want} rows missing"
                if n < want
                else f"{n - want} rows more than its {want}"
                if n > want
                else "a row changed"
            )
            raise Damaged(self.path, a0, f"{table}: {what}")


__all__ = ["DECODE_ERRORS", "Pages", "Row"]
