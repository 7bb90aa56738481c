"""Checksums and tallies let a reader tell a damaged recording from a whole one.

Every row of a format-2 file carries `crc`: zlib's CRC-32 over its id and every other column
(`row_crc`), computed by the writer from the values it inserts and by the reader from the
values SQLite hands back, so a flipped bit in a value, in its type or in the row's id no
longer reads as another value. A row is looked up by its id (strings, shapes, pods, probes),
so a missing one is damage where it is asked for; rows read by time (chunks by `t0`, events,
specs and statuses by `t`) have what a row cannot say for itself, whether rows are missing or
one is there twice, said by a `tally`: per table and `BUCKET` seconds of that time, how many
rows there are and the sum of their checksums, written in the same transaction as the rows.
A reader reads a time window bucket by bucket and compares; retention takes what it deletes
off the tallies, so a trimmed beginning is not damage, while a row lost to damage is. The
open segments (`recent`) have one tally for the whole table, read whole.

Why tallies rather than per-table sequence numbers that must be contiguous: rows are inserted
out of time order (a chunk is written when it closes, up to `MAX_SPAN` after its start) and
retention deletes from the middle of a table (superseded specs, unused strings, the rows of a
deleted pod), so neither the order nor the contiguity of ids says what a time window must
hold; a tally does, and it costs one row per table per bucket written.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Callable, Sequence
from typing import Any

# the width of a tally's bucket, in seconds of recorded time
BUCKET = 10.0

# what each table's checksum covers, in order (the id first): i integer, r real, t text, b blob;
# ? where the column may be NULL
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "sessions": (
        ("id", "i"),
        ("started", "r"),
        ("probetui", "t"),
        ("kube_version", "t"),
        ("source", "t"),
        ("via", "t?"),
        ("context", "t?"),
        ("namespace", "t?"),
        ("selector", "t?"),
        ("read_only", "i"),
        ("runtime", "t"),
    ),
    "strings": (("id", "i"), ("text", "t"), ("last_t", "r")),
    "shapes": (("id", "i"), ("body", "t"), ("last_t", "r")),
    "pods": (
        ("id", "i"),
        ("uid", "t"),
        ("namespace", "t"),
        ("name", "t"),
        ("first_t", "r"),
        ("last_t", "r"),
        ("deleted_t", "r?"),
    ),
    "probes": (("id", "i"), ("pod_id", "i"), ("container", "t"), ("probe", "t"), ("first_t", "r")),
    "specs": (("id", "i"), ("pod_id", "i"), ("t", "r"), ("source", "t"), ("manifest", "t")),
    "statuses": (("id", "i"), ("pod_id", "i"), ("t", "r"), ("status", "t?")),
    "events": (
        ("id", "i"),
        ("t", "r"),
        ("pod_id", "i"),
        ("type", "t"),
        ("container", "t?"),
        ("probe", "t?"),
        ("source", "t"),
        ("fields", "i"),
    ),
    "recent": (("id", "i"), ("seg", "i"), ("probe_id", "i"), ("t", "r"), ("data", "b")),
    "chunks": (
        ("id", "i"),
        ("probe_id", "i"),
        ("t0", "r"),
        ("t1", "r"),
        ("n", "i"),
        ("data", "b"),
        ("marks", "b?"),
        ("steady", "i?"),
    ),
    "tally": (("tbl", "t"), ("bucket", "i"), ("n", "i"), ("sum", "i")),
}

# the tables whose rows are counted per bucket, by which time column
TALLIED = {"chunks": "t0", "events": "t", "specs": "t", "statuses": "t"}
# `recent` has one tally for the whole table, under this bucket
WHOLE = 0


def columns(table: str) -> str:
    """Return the checksummed columns of `table` and `crc`, for a SELECT that verifies its rows."""
    return ", ".join(name for name, _ in COLUMNS[table]) + ", crc"


# a checksum is stored signed, in 32 bits: SQLite keeps it in 4 bytes, not 6
_HALF = 1 << 31
_WRAP = 1 << 32

# per kind of column, its part of the packed head: the value (an 8-byte integer or real) or
# the length of the text or blob, whose bytes follow the head; a column that may be NULL
# says first whether it is
_HEAD = {"i": "q", "r": "d", "t": "I", "b": "I"}


def _body(table: str) -> list[str]:
    """Return the statements that leave the checksum of row `r` of `table` in `c`, unsigned."""
    head, tail, lines = [], [], []
    for j, (_, kind) in enumerate(COLUMNS[table]):
        v = f"r[{j}]"
        nullable = kind.endswith("?")
        if nullable:
            lines.append(f"v{j} = {v}")
            v = f"v{j}"
            head.append(f"{v} is None")
        if kind[0] in "tb":
            # a text as UTF-8: one that is not (a damaged one, read as its bytes with
            # `surrogateescape`) cannot be encoded again, and its row fails
            encoded = f"{v}.encode()" if kind[0] == "t" else v
            lines.append(
                f'e{j} = b"" if {v} is None else {encoded}' if nullable else f"e{j} = {encoded}"
            )
            head.append(f"len(e{j})")
            tail.append(f"e{j}")
        elif nullable:
            head.append(f"{'0' if kind[0] == 'i' else '0.0'} if {v} is None else {v}")
        else:
            head.append(v)
    fmt = "<" + "".join(
        ("?" if kind.endswith("?") else "") + _HEAD[kind[0]] for _, kind in COLUMNS[table]
    )
    lines.append(f"c = _crc32(_pack({fmt!r}, {', '.join(head)}), {_SEED[table]})")
    lines += [f"c = _crc32({e}, c)" for e in tail]
    return lines


def _source(table: str) -> str:
    """Return the Python source of `table`'s checksum functions: of one row (`CRC`), and the first
    of a list of rows (each with its stored checksum last) that does not match (`FIRST_BAD`).

    Generated, one statement per column and no loop over them: a seek or a first screen
    verifies tens of thousands of rows, and looping over the columns cost four times what
    packing them does. A NULL where the column may not hold one, or a value of another type
    than its column's (a damaged row's), raises `BAD_VALUE`."""
    body = _body(table)
    one = [f"def crc_{table}(r):", *(f"    {line}" for line in body)]
    one.append(f"    return c - {_WRAP} if c >= {_HALF} else c")
    first = [
        f"def first_bad_{table}(rows):",
        "    for r in rows:",
        *(f"        {line}" for line in body),
    ]
    first.append(f"        if (c - {_WRAP} if c >= {_HALF} else c) != r[-1]:")
    first.append("            return r")
    first.append("    return None")
    return "\n".join([*one, "", *first])


# each table's checksum starts from its name's: a row never checks as another table's
_SEED = {table: zlib.crc32(table.encode()) for table in COLUMNS}


def _compile(table: str) -> dict[str, Any]:
    scope: dict[str, Any] = {"_crc32": zlib.crc32, "_pack": struct.pack}
    exec(_source(table), scope)  # our own source, built from COLUMNS above
    return scope


_COMPILED = {table: _compile(table) for table in COLUMNS}
# by table: the checksum of a row given as a sequence whose first values are its columns in
# `COLUMNS` order (the id first; what follows, such as the stored `crc`, is not read)
CRC: dict[str, Callable[[Sequence[Any]], int]] = {t: c[f"crc_{t}"] for t, c in _COMPILED.items()}
_FIRST_BAD: dict[str, Callable[[Sequence[Sequence[Any]]], Sequence[Any] | None]] = {
    t: c[f"first_bad_{t}"] for t, c in _COMPILED.items()
}
BAD_VALUE = (struct.error, TypeError, AttributeError, ValueError, OverflowError)


def row_crc(table: str, values: Sequence[Any]) -> int:
    """Return the checksum of one row: its values in `COLUMNS` order (the id first)."""
    return CRC[table](values)


def bad(table: str, row: Sequence[Any]) -> bool:
    """Tell whether a row read back (its columns, then its stored `crc`) fails its checksum."""
    try:
        return bool(row[-1] != CRC[table](row))
    except BAD_VALUE:
        return True


def first_bad(table: str, rows: Sequence[Sequence[Any]]) -> Sequence[Any] | None:
    """Return the first of these rows read back (each its columns, then its stored `crc`) that fails
    its checksum, or None."""
    try:
        return _FIRST_BAD[table](rows)
    except BAD_VALUE:
        # a value that cannot be checksummed at all: found row by row
        return next((row for row in rows if bad(table, row)), None)


_RECENT = struct.Struct("<qqqdI")
_RECENT_SEED = _SEED["recent"]


def recent_crc(row_id: int, seg: int, probe_id: int, t: float, data: bytes) -> int:
    """`row_crc("recent", ...)` for the writer's hottest row (one per item), the same value."""
    c = zlib.crc32(
        data, zlib.crc32(_RECENT.pack(row_id, seg, probe_id, t, len(data)), _RECENT_SEED)
    )
    return c - _WRAP if c >= _HALF else c


def sql_crc(table: str, *values: Any) -> int:
    """`row_crc` as an SQL function (`probetui_crc`), for UPDATEs that change a column."""
    return row_crc(table, values)


def bucket_of(t: float) -> int:
    """Return the tally bucket of time `t`: the n with n * BUCKET <= t < (n + 1) * BUCKET."""
    n = math.floor(t / BUCKET)
    while n * BUCKET > t:
        n -= 1
    while (n + 1) * BUCKET <= t:
        n += 1
    return n


class Tallies:
    """Keeps the writer's tallies, all of them (a bucket a minute per table: a few thousand a day),
    and which changed since they were last written."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], tuple[int, int]] = {}
        self.dirty: set[tuple[str, int]] = set()
        # the bucket of the last time counted, and its ends: rows come in time order
        self._bucket, self._lo, self._hi = 0, math.inf, -math.inf

    def add(self, table: str, t: float, crc: int) -> None:
        """Count one row of `table` at time `t` with checksum `crc`."""
        if not self._lo <= t < self._hi:
            b = self._bucket = bucket_of(t)
            self._lo, self._hi = b * BUCKET, (b + 1) * BUCKET
        key = (table, self._bucket)
        was = self.counts.get(key)
        self.counts[key] = (1, crc) if was is None else (was[0] + 1, was[1] + crc)
        self.dirty.add(key)

    def add_sum(self, table: str, bucket: int, n: int, total: int) -> None:
        """Add `n` rows whose checksums sum to `total` (negative both to take them off)."""
        key = (table, bucket)
        count, was = self.counts.get(key, (0, 0))
        self.counts[key] = (count + n, was + total)
        self.dirty.add(key)

    def rows(self) -> tuple[list[tuple[str, int, int, int, int]], list[tuple[str, int]]]:
        """Return the changed tallies as rows to write, and those down to nothing, to delete."""
        out, gone = [], []
        for key in self.dirty:
            n, total = self.counts[key]
            if n == 0 and total == 0:
                del self.counts[key]
                gone.append(key)
            else:
                table, bucket = key
                out.append((table, bucket, n, total, row_crc("tally", (table, bucket, n, total))))
        self.dirty = set()
        return out, gone


__all__ = [
    "BAD_VALUE",
    "BUCKET",
    "COLUMNS",
    "CRC",
    "TALLIED",
    "WHOLE",
    "Tallies",
    "bad",
    "bucket_of",
    "columns",
    "first_bad",
    "recent_crc",
    "row_crc",
    "sql_crc",
]
