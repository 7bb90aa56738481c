"""`--record FILE` adds the engine sink that writes a recording, and the one thread it writes on.

The sink's `event()` and `pod()` run on the event loop, inside the engine's publishing: they
append one tuple to a deque. The writer thread wakes every `flush_every` seconds (0.25 s),
takes what has piled up and writes it as one transaction (`writer.py`). That thread is the one
place in probetui where a thread is justified: sqlite3 blocks on disk I/O, and the loop must
not. Python's GIL still serialises the encoding, which is why the sink leaves most per-item
work (shapes, varints, masking) to the writer and the batches stay large.

The one piece the sink does on the loop is to copy a per-probe event into a tuple of atomics
(`writer.item_of`, a few µs): an `Event` with its record, outcome and attempt (6 tracked
objects) waiting a quarter second is promoted into the collector's old generation on the way,
and every promotion brings the next full collection nearer; the collector stops tracking the
tuple within two collections, before it could be promoted.

`close()` stops the thread after a last flush and joins it; `run_live` calls it on every way
out (the end of `--duration`, SIGINT, SIGTERM, the UI's quit, a failure). A `kill -9` loses what
was not yet flushed: at most the last `flush_every`.

A file is held by one recorder at a time: `FILE-lock` beside it carries an exclusive
`flock`, taken without waiting, with the holder's pid inside (SQLite's own locks are POSIX
record locks on the database file, which one process cannot hold alone across its own
connections, and which readers must be able to share). Readers never look at the lock.

When writing fails (a full disk, an I/O error), the recording stops: `failure` holds one line
saying so, `on_failure` is told once (the CLI prints it; the UI polls `take_failure`), later
events are dropped, and the live view goes on.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probetui.prober.status import PodStatus
from probetui.record.checks import COLUMNS, row_crc
from probetui.record.schema import (
    APPLICATION_ID,
    CHECKED_FORMAT,
    FORMAT_VERSION,
    SCHEMA,
    RecordingError,
    SessionMeta,
    check_header,
    check_identity,
)
from probetui.record.writer import Writer, item_of
from probetui.spec.model import Pod
from probetui.timeline.events import Event

# well inside the second a kill -9 may lose, and batches small enough that the writer's
# encoding of one takes a few milliseconds
FLUSH_EVERY = 0.25
# a batch this large is written in parts, so no transaction grows without bound after a stall
BATCH_LIMIT = 50_000


class Recorder:
    """Writes `path` as an engine sink. Construct it before anything starts (it checks the path,
    takes the lock and writes the session row), then `start()`, and `close()` at the end."""

    def __init__(
        self,
        path: str | Path,
        meta: SessionMeta,
        *,
        retain: float | None = None,
        flush_every: float = FLUSH_EVERY,
        writer_options: dict[str, Any] | None = None,
        max_page_count: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        # what a pod's spec and status are stamped with (a benchmark writing the past sets it)
        self._clock = clock
        self.flush_every = flush_every
        self.failure: str | None = None
        self.on_failure: Callable[[str], None] | None = None
        self._told = False
        self._queue: deque[tuple[Any, ...]] = deque()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.writer_cpu_s = 0.0  # set when the writer thread ends
        self._lock_fd = _lock(self.path)
        try:
            conn = _open_for_writing(self.path)
            if max_page_count is not None:
                # for tests of a full disk: SQLite fails as it does when the disk is full
                conn.execute(f"PRAGMA max_page_count = {int(max_page_count)}")
            _add_session(conn, meta)
            self._writer = Writer(conn, retain=retain, **(writer_options or {}))
        except sqlite3.Error as e:
            self._unlock()
            raise RecordingError(f"--record {self.path}: cannot write it: {e}") from None
        except BaseException:
            self._unlock()
            raise

    # -- Sink (the event loop's side) -------------------------------------------------------

    def event(self, event: Event) -> None:
        if self.failure is None:
            # an event the copy cannot take goes as it is: the writer thread meets the same
            # problem there, where it cannot break the engine's publishing
            try:
                item = item_of(event)
            except Exception:
                item = None
            self._queue.append(item if item is not None else ("e", event))

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        if self.failure is None:
            self._queue.append(("p", self._clock(), pod, status))

    # -- the writer thread ----------------------------------------------------------------

    def start(self) -> None:
        # a daemon, so that an exit that skips close() cannot hang on it; atexit closes it
        self._thread = threading.Thread(target=self._run, name="probetui-recorder", daemon=True)
        self._thread.start()
        atexit.register(self.close)

    def _run(self) -> None:
        began = time.thread_time()
        try:
            self._loop()
        finally:
            # the writer thread's own CPU, for the write path's benchmark
            self.writer_cpu_s = time.thread_time() - began

    def _loop(self) -> None:
        while not self._stop.wait(self.flush_every):
            self._drain()
        self._drain()
        if self.failure is None:
            try:
                self._writer.close()
            except (sqlite3.Error, OSError) as e:
                self._fail(e)
        _finish(self._writer.conn)

    def flush(self) -> None:
        """Write what is queued now, on the caller's thread (tests, before start())."""
        self._drain()

    def _drain(self) -> None:
        queue = self._queue
        while queue and self.failure is None:
            batch = []
            while queue and len(batch) < BATCH_LIMIT:
                batch.append(queue.popleft())
            try:
                self._writer.write(batch)
            except (sqlite3.Error, OSError) as e:
                self._fail(e)
        if self.failure is not None:
            queue.clear()

    def _fail(self, e: BaseException) -> None:
        text = str(e)
        if "full" in text:
            why = "the disk is full (or the file hit its size limit)"
        else:
            why = f"writing failed: {text}"
        self.failure = (
            f"recording stopped: {self.path}: {why}; the live view goes on, nothing more is "
            "recorded (free space and start a new recording)"
        )
        if self.on_failure is not None and not self._told:
            self._told = True
            self.on_failure(self.failure)

    def take_failure(self) -> str | None:
        """Return the failure line once, for a UI that polls."""
        if self.failure is None or self._told:
            return None
        self._told = True
        return self.failure

    def close(self) -> None:
        """Flush the last batch, stop and join the thread, close the file, release the lock."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        else:
            self._drain()
            if self.failure is None:
                with contextlib.suppress(sqlite3.Error, OSError):
                    self._writer.close()
            _finish(self._writer.conn)
        self._unlock()
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)

    def _unlock(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._lock_fd)


def lock_path(path: Path) -> Path:
    return Path(f"{path}-lock")


def _lock(path: Path) -> int:
    lock = lock_path(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise RecordingError(
            f"--record {path}: cannot write there ({e.strerror or e}); "
            "give a path in a directory you can write"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise RecordingError(
            f"--record {path}: another probetui is recording to it (pid {holder}); "
            "stop that one first, or record to another file"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _open_for_writing(path: Path) -> sqlite3.Connection:
    try:
        existing = check_header(path)
    except RecordingError as e:
        raise RecordingError(f"--record {e}") from None
    try:
        # the writer thread uses it, after this thread has set it up
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as e:
        raise RecordingError(
            f"--record {path}: cannot write there ({e}); give a path in a directory you can write"
        ) from None
    if existing:
        try:
            check_identity(conn, path)
        except RecordingError as e:
            conn.close()
            raise RecordingError(
                f"--record {e}".replace("give a file written by --record", "record to a new file")
            ) from None
    else:
        # before the first table: pages freed by retention go back to the file system
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("BEGIN")
        for statement in _statements(SCHEMA):
            conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {FORMAT_VERSION}")
        conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")
    # committed transactions survive a crash of the process; a power cut may lose the last
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _add_session(conn: sqlite3.Connection, m: SessionMeta) -> None:
    i = 1 + conn.execute("SELECT COALESCE(MAX(id), 0) FROM sessions").fetchone()[0]
    row = (
        i,
        m.started,
        m.probetui,
        m.kube_version,
        m.source,
        m.via,
        m.context,
        m.namespace,
        m.selector,
        int(m.read_only),
        m.runtime,
    )
    names = [name for name, _ in COLUMNS["sessions"]]
    if conn.execute("PRAGMA user_version").fetchone()[0] >= CHECKED_FORMAT:
        row = (*row, row_crc("sessions", row))
        names.append("crc")
    conn.execute(
        f"INSERT INTO sessions ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", row
    )


def _finish(conn: sqlite3.Connection) -> None:
    """A finished recording is one plain file: the WAL folded in, rollback journal mode (so it
    reads on read-only media too). Skipped while a reader holds it open: it stays WAL."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
    with contextlib.suppress(sqlite3.Error):
        conn.close()


__all__ = ["FLUSH_EVERY", "Recorder", "SessionMeta", "lock_path"]
