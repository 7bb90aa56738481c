"""Define the recording's SQLite schema and its identity (application_id, format version).

The checks here turn a file which is not a readable recording into one line naming the problem
and the fix.

See `probetui.record` for what each table holds.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

# "PRBT": PRAGMA application_id of every recording, so another SQLite file is told apart
APPLICATION_ID = 0x50524254
# PRAGMA user_version: the format; a reader refuses a newer one instead of misreading it.
# Format 1 added `chunks.marks` (where a chunk can be decoded from, `codec.close_marks`) and
# `chunks.steady` (the shape every item of the chunk has where they all have one and a run
# under way) as columns, not meanings: a file without them (NULL, or no column: `has_marks`)
# is decoded from each chunk's start, and a recorder adding to one adds the columns first.
# Format 2: every row carries its checksum (`crc`) and the rows read by time are counted in
# `tally` (`checks.py`); a reader verifies what it reads. The time indexes carry the id (the
# order rows are read in) and `crc`, so a bucket's rows are counted and summed on the index;
# `chunks_t0` also carries what a seek asks of 15,000 chunks (`Recording.steady_probes`),
# format 1's `chunks_t0_steady`. A format-1 file has none of it: it is read as it always
# was, and a recorder adding to one goes on writing format 1
FORMAT_VERSION = 2
# the first format whose rows carry checksums
CHECKED_FORMAT = 2
SQLITE_MAGIC = b"SQLite format 3\x00"

SCHEMA = """
CREATE TABLE sessions (
    id INTEGER PRIMARY KEY, started REAL NOT NULL, probetui TEXT NOT NULL,
    kube_version TEXT NOT NULL, source TEXT NOT NULL, via TEXT, context TEXT,
    namespace TEXT, selector TEXT, read_only INTEGER NOT NULL, runtime TEXT NOT NULL,
    crc INTEGER);
CREATE TABLE strings (
    id INTEGER PRIMARY KEY, text TEXT NOT NULL, last_t REAL NOT NULL, crc INTEGER);
CREATE TABLE shapes (
    id INTEGER PRIMARY KEY, body TEXT NOT NULL, last_t REAL NOT NULL, crc INTEGER);
CREATE TABLE pods (
    id INTEGER PRIMARY KEY, uid TEXT NOT NULL UNIQUE, namespace TEXT NOT NULL,
    name TEXT NOT NULL, first_t REAL NOT NULL, last_t REAL NOT NULL, deleted_t REAL,
    crc INTEGER);
CREATE TABLE probes (
    id INTEGER PRIMARY KEY, pod_id INTEGER NOT NULL, container TEXT NOT NULL,
    probe TEXT NOT NULL, first_t REAL NOT NULL, crc INTEGER);
CREATE TABLE specs (
    id INTEGER PRIMARY KEY, pod_id INTEGER NOT NULL, t REAL NOT NULL, source TEXT NOT NULL,
    manifest TEXT NOT NULL, crc INTEGER);
CREATE INDEX specs_pod_t ON specs (pod_id, t);
CREATE INDEX specs_t ON specs (t, id, crc);
CREATE TABLE statuses (
    id INTEGER PRIMARY KEY, pod_id INTEGER NOT NULL, t REAL NOT NULL, status TEXT,
    crc INTEGER);
CREATE INDEX statuses_pod_t ON statuses (pod_id, t);
CREATE INDEX statuses_t ON statuses (t, id, crc);
CREATE TABLE events (
    id INTEGER PRIMARY KEY, t REAL NOT NULL, pod_id INTEGER NOT NULL, type TEXT NOT NULL,
    container TEXT, probe TEXT, source TEXT NOT NULL, fields INTEGER NOT NULL, crc INTEGER);
CREATE INDEX events_t ON events (t, id, crc);
CREATE TABLE recent (
    id INTEGER PRIMARY KEY, seg INTEGER NOT NULL, probe_id INTEGER NOT NULL, t REAL NOT NULL,
    data BLOB NOT NULL, crc INTEGER);
CREATE INDEX recent_seg ON recent (seg);
CREATE INDEX recent_probe ON recent (probe_id);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY, probe_id INTEGER NOT NULL, t0 REAL NOT NULL, t1 REAL NOT NULL,
    n INTEGER NOT NULL, data BLOB NOT NULL, marks BLOB, steady INTEGER, crc INTEGER);
CREATE INDEX chunks_t0 ON chunks (t0, id, probe_id, steady, crc);
CREATE INDEX chunks_probe_t0 ON chunks (probe_id, t0);
CREATE TABLE tally (
    tbl TEXT NOT NULL, bucket INTEGER NOT NULL, n INTEGER NOT NULL, sum INTEGER NOT NULL,
    crc INTEGER NOT NULL, PRIMARY KEY (tbl, bucket)) WITHOUT ROWID;
"""

# the index each tallied table is read and counted through (in a format-2 file it carries
# `crc`, so counting a bucket never visits its rows)
TIME_INDEX = {
    "chunks": "chunks_t0",
    "events": "events_t",
    "specs": "specs_t",
    "statuses": "statuses_t",
}

# a chunk closes at this many items or this span, whichever comes first; readers rely on the
# span: a chunk overlapping [a, b] starts after a - MAX_SPAN. The items only weigh the cost of
# a seek (a chunk decodes from its start) against the bytes per attempt (each chunk's row and
# index entries), guarded by benchmarks/replay.py and benchmarks/record.py; files of any size
# read alike
CHUNK_ITEMS = 32
MAX_SPAN = 600.0


@dataclass(frozen=True, slots=True)
class SessionMeta:
    """Describes one recording session: what the runtime and the engine knew when it began."""

    started: float
    probetui: str
    kube_version: str
    source: str
    runtime: str  # "local", "demo", "kubernetes"
    via: str | None = None
    context: str | None = None
    namespace: str | None = None
    selector: str | None = None
    read_only: bool = False


class RecordingError(Exception):
    """Signals a file that cannot be read or written as a recording: one line, problem and fix."""


class Damaged(RecordingError):
    """Signals a recording damaged from time `t` on (None: from its start, or where no time
    is known), found at `where` (a table and row, or what SQLite said): what lies before `t`
    reads."""

    def __init__(self, path: Path, t: float | None, where: str) -> None:
        self.path = path
        self.t = t
        self.where = where
        super().__init__(self.line())

    def at(self, t: float | None) -> Damaged:
        """Return the same damage, placed at `t` where it had no time yet."""
        if self.t is not None or t is None:
            return self
        return Damaged(self.path, t, self.where)

    def sooner(self, other: Damaged) -> bool:
        """Tell whether this damage begins before `other` (no time: from the start)."""
        if self.t is None:
            return other.t is not None
        return other.t is not None and self.t < other.t

    def line(self, when: str | None = None) -> str:
        """Return the one line a user reads; `when` the time as the caller words it."""
        at = "" if self.t is None else f"from {when or _utc(self.t)} "
        return (
            f"{self.path}: damaged recording {at}({self.where}); what is recorded before it "
            "reads; copy out what still reads with sqlite3's .recover, or record again"
        )


def _utc(t: float) -> str:
    """`t` as the `ts` of an exported line words it."""
    import datetime

    try:
        return datetime.datetime.fromtimestamp(t, datetime.UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return repr(t)


def check_header(path: Path) -> bool:
    """True for an SQLite file, False for an empty or missing one; RecordingError otherwise."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return False
    except OSError as e:
        raise RecordingError(f"{path}: cannot read: {e.strerror or e}") from None
    if not head:
        return False
    if head != SQLITE_MAGIC:
        raise RecordingError(
            f"{path}: not a probetui recording (not an SQLite database); "
            "give a file written by --record"
        )
    return True


def check_identity(conn: sqlite3.Connection, path: Path) -> None:
    """Our application_id and a format this probetui reads, else RecordingError."""
    try:
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        raise damaged(path, e) from None
    if app != APPLICATION_ID:
        raise RecordingError(
            f"{path}: not a probetui recording (an SQLite database of something else); "
            "give a file written by --record"
        )
    if version > FORMAT_VERSION:
        raise RecordingError(
            f"{path}: recorded by a newer probetui (format {version}; this one reads up to "
            f"{FORMAT_VERSION}); upgrade probetui to read it"
        )


# added since the first files: a recorder adding to an older file creates them (`upgrade`);
# by time, for the changes a replay's step reads (without, each step scanned both tables)
LATER_INDEXES = (
    "CREATE INDEX IF NOT EXISTS specs_t ON specs (t)",
    "CREATE INDEX IF NOT EXISTS statuses_t ON statuses (t)",
    # what a seek asks of 15,000 chunks (`Recording.steady_probes`) without visiting their rows
    "CREATE INDEX IF NOT EXISTS chunks_t0_steady ON chunks (t0, probe_id, steady)",
)


def upgrade(conn: sqlite3.Connection) -> None:
    """Tell what a file written before marks, steady chunks and the time indexes lacks, added in
    place (columns and indexes: the format stays 1, an older reader reads the file as before).
    A format-2 file has them all from the start."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= CHECKED_FORMAT:
        return
    columns = _chunk_columns(conn)
    if "marks" not in columns:
        conn.execute("ALTER TABLE chunks ADD COLUMN marks BLOB")
    if "steady" not in columns:
        conn.execute("ALTER TABLE chunks ADD COLUMN steady INTEGER")
    for statement in LATER_INDEXES:
        conn.execute(statement)


def has_marks(conn: sqlite3.Connection) -> bool:
    """Tell whether the file's chunks carry marks (files written before them have no column)."""
    return "marks" in _chunk_columns(conn)


def has_steady(conn: sqlite3.Connection) -> bool:
    """Tell whether the file's chunks say which are steady (files written before have no column)."""
    return "steady" in _chunk_columns(conn)


def _chunk_columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}


def check_size(conn: sqlite3.Connection, path: Path) -> None:
    """A file shorter than its header says is truncated (unless the WAL holds the rest)."""
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        return
    try:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    except sqlite3.DatabaseError as e:
        raise damaged(path, e) from None
    if os.path.getsize(path) < pages * size:
        raise damaged(path, "shorter than its header says")


def damaged(path: Path, e: object, t: float | None = None) -> Damaged:
    """Tell what SQLite or a decoder said of a damaged file, as `Damaged` from `t` on."""
    return Damaged(path, t, f"truncated or corrupt: {e}")


__all__ = [
    "APPLICATION_ID",
    "CHECKED_FORMAT",
    "CHUNK_ITEMS",
    "FORMAT_VERSION",
    "MAX_SPAN",
    "SCHEMA",
    "TIME_INDEX",
    "Damaged",
    "RecordingError",
    "SessionMeta",
    "check_header",
    "check_identity",
    "check_size",
    "damaged",
    "has_marks",
    "upgrade",
]
