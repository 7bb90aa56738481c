"""Checksums and tallies: what lets a reader tell a damaged recording from a whole one.

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
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

# the width of a tally's bucket, in seconds of recorded time
BUCKET = 10.0

# what each table's checksum covers, in order (the id first): i integer, r real, t text, b blob
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "sessions": (
        ("id", "i"),
        ("started", "r"),
        ("probetui", "t"),
        ("kube_version", "t"),
        ("source", "t"),
        ("via", "t"),
        ("context", "t"),
        ("namespace", "t"),
        ("selector", "t"),
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
        ("deleted_t", "r"),
    ),
    "probes": (("id", "i"), ("pod_id", "i"), ("container", "t"), ("probe", "t"), ("first_t", "r")),
    "specs": (("id", "i"), ("pod_id", "i"), ("t", "r"), ("source", "t"), ("manifest", "t")),
    "statuses": (("id", "i"), ("pod_id", "i"), ("t", "r"), ("status", "t")),
    "events": (
        ("id", "i"),
        ("t", "r"),
        ("pod_id", "i"),
        ("type", "t"),
        ("container", "t"),
        ("probe", "t"),
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
        ("marks", "b"),
        ("steady", "i"),
    ),
    "tally": (("tbl", "t"), ("bucket", "i"), ("n", "i"), ("sum", "i")),
}

# the tables whose rows are counted per bucket, by which time column
TALLIED = {"chunks": "t0", "events": "t", "specs": "t", "statuses": "t"}
# `recent` has one tally for the whole table, under this bucket
WHOLE = 0


def columns(table: str) -> str:
    """The checksummed columns of `table` and `crc`, for a SELECT that verifies its rows."""
    return ", ".join(name for name, _ in COLUMNS[table]) + ", crc"


def _typed(kinds: Sequence[str], values: Iterable[Any]) -> tuple[list[Any], list[bytes]]:
    head: list[Any] = []
    blobs: list[bytes] = []
    for kind, v in zip(kinds, values, strict=True):
        if v is None:
            head.append(None)
        elif kind == "b":
            if isinstance(v, bytes | bytearray | memoryview):
                blob = bytes(v)
                head.append(len(blob))
                blobs.append(blob)
            else:
                head.append(v)  # a blob column holding something else: damage, kept as it is
        elif kind == "r" and type(v) is int:
            head.append(float(v))
        elif kind == "i" and type(v) is bool:
            head.append(int(v))
        else:
            head.append(v)
    return head, blobs


_KINDS = {table: tuple(kind for _, kind in cols) for table, cols in COLUMNS.items()}


def row_crc(table: str, values: Sequence[Any]) -> int:
    """The checksum of one row: its values in `COLUMNS` order (the id first)."""
    head, blobs = _typed(_KINDS[table], values)
    crc = zlib.crc32(repr((table, *head)).encode("utf-8", "surrogateescape"))
    for blob in blobs:
        crc = zlib.crc32(blob, crc)
    return crc - _WRAP if crc >= _HALF else crc


def recent_crc(row_id: int, seg: int, probe_id: int, t: float, data: bytes) -> int:
    """`row_crc("recent", ...)` for the writer's hottest row (one per item), the same value."""
    head = repr(("recent", row_id, seg, probe_id, float(t), len(data))).encode()
    crc = zlib.crc32(data, zlib.crc32(head))
    return crc - _WRAP if crc >= _HALF else crc


# a checksum is stored signed, in 32 bits: SQLite keeps it in 4 bytes, not 6
_HALF = 1 << 31
_WRAP = 1 << 32


def sql_crc(table: str, *values: Any) -> int:
    """`row_crc` as an SQL function (`probetui_crc`), for UPDATEs that change a column."""
    return row_crc(table, values)


def bucket_of(t: float) -> int:
    """The tally bucket of time `t`: the n with n * BUCKET <= t < (n + 1) * BUCKET."""
    n = math.floor(t / BUCKET)
    while n * BUCKET > t:
        n -= 1
    while (n + 1) * BUCKET <= t:
        n += 1
    return n


class Tallies:
    """The writer's tallies, all of them (a bucket a minute per table: a few thousand a day),
    and which changed since they were last written."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], tuple[int, int]] = {}
        self.dirty: set[tuple[str, int]] = set()

    def add(self, table: str, bucket: int, crc: int) -> None:
        self.add_sum(table, bucket, 1, crc)

    def add_sum(self, table: str, bucket: int, n: int, total: int) -> None:
        """Add `n` rows whose checksums sum to `total` (negative both to take them off)."""
        key = (table, bucket)
        count, was = self.counts.get(key, (0, 0))
        self.counts[key] = (count + n, was + total)
        self.dirty.add(key)

    def rows(self) -> tuple[list[tuple[str, int, int, int, int]], list[tuple[str, int]]]:
        """The changed tallies as rows to write, and those down to nothing, to delete."""
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
    "BUCKET",
    "COLUMNS",
    "TALLIED",
    "WHOLE",
    "Tallies",
    "bucket_of",
    "columns",
    "recent_crc",
    "row_crc",
    "sql_crc",
]
