"""Files that are not readable recordings, a second recorder, a full disk, a crash."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from probetui.cli import main
from probetui.record.reader import open_recording
from probetui.record.recorder import Recorder
from probetui.record.schema import RecordingError
from tests.record.helpers import META, attempt, pod

pytestmark = pytest.mark.timeout(60)


def _record(path: Path, n: int = 50, **kw: object) -> Recorder:
    rec = Recorder(path, META, **kw)  # type: ignore[arg-type]
    p = pod(0)
    rec.pod(p, _status())
    for i in range(n):
        rec.event(attempt(p, 1000.0 + 10 * i, i + 1))
    return rec


def _status():  # type: ignore[no-untyped-def]
    from probetui.prober.status import ContainerStatus, PodStatus, Running

    return PodStatus(container_statuses=(ContainerStatus("app", "cid-1", Running(900.0)),))


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err
    assert "Traceback" not in err[0]


def test_not_sqlite_foreign_sqlite_newer_and_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n")
    _one_line_exit_2(capsys, ["replay", str(text), "--no-ui"], "not an SQLite database")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    _one_line_exit_2(capsys, ["replay", str(other), "--no-ui"], "an SQLite database of something")
    newer = tmp_path / "newer.db"
    _record(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    _one_line_exit_2(capsys, ["replay", str(newer), "--no-ui"], "newer probetui (format 99")
    _one_line_exit_2(capsys, ["replay", str(tmp_path / "none.db"), "--no-ui"], "no such file")
    # --record onto a file that is not a recording refuses it, before anything starts
    _one_line_exit_2(
        capsys, ["demo", "--no-ui", "--record", str(other), "--duration", "1"], "something else"
    )


def test_truncated_and_corrupt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.db"
    _record(path, 2000).close()
    data = path.read_bytes()
    cut = tmp_path / "cut.db"
    cut.write_bytes(data[: len(data) // 2])
    _one_line_exit_2(capsys, ["replay", str(cut), "--no-ui"], "damaged recording")
    bad = bytearray(data)
    for i in range(len(bad) // 2, len(bad), 97):
        bad[i] = 0xFF
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(bytes(bad))
    _one_line_exit_2(capsys, ["replay", str(corrupt), "--no-ui"], "damaged recording")


def test_a_second_recorder_is_refused_and_a_reader_reads_meanwhile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r.db"
    rec = _record(path)
    rec.flush()
    with pytest.raises(RecordingError, match=rf"pid {os.getpid()}"):
        Recorder(path, META)
    _one_line_exit_2(
        capsys,
        ["demo", "--no-ui", "--record", str(path), "--duration", "1"],
        "another probetui is recording to it",
    )
    with open_recording(path) as r:  # while the recorder holds it: read-only, WAL
        assert len(r.attempts(r.probe_keys()[0])) == 50
    rec.close()
    Recorder(path, META).close()  # free again; appends a session
    with open_recording(path) as r:
        assert len(r.meta.sessions) == 2


def test_unwritable_path_is_one_line_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing-dir" / "r.db"
    _one_line_exit_2(
        capsys, ["demo", "--no-ui", "--record", str(target), "--duration", "1"], "cannot write"
    )
    _one_line_exit_2(capsys, ["demo", "--no-ui", "--retain", "1h"], "--retain: only with")
    _one_line_exit_2(
        capsys,
        ["demo", "--no-ui", "--record", str(tmp_path / "x.db"), "--retain", "soon"],
        "not a duration",
    )


def test_full_disk_stops_recording_with_one_message_and_keeps_the_sink_harmless(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    told: list[str] = []
    rec = Recorder(path, META, max_page_count=40)
    rec.on_failure = told.append
    p = pod(0)
    for i in range(3000):
        rec.event(attempt(p, 1000.0 + i, i + 1, output=f"unique output {i}" * 20))
        if i % 500 == 0:
            rec.flush()
    rec.flush()
    assert rec.failure is not None and "disk is full" in rec.failure
    assert told == [rec.failure]
    rec.event(attempt(p, 9999.0, 1))  # dropped, not raised
    rec.close()
    with open_recording(path) as r:  # what was written before stays readable
        assert r.meta.sessions


def test_kill_9_loses_at_most_the_last_second(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "probetui", "demo", "--no-ui", "--record", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    lines = []
    deadline = time.monotonic() + 30
    while len(lines) < 60 and time.monotonic() < deadline:
        lines.append(proc.stdout.readline())
    os.kill(proc.pid, signal.SIGKILL)
    killed = time.time()
    proc.wait()
    # its demo services are children of the killed process: the registry's exit handlers did
    # not run; they end when their parent's pipe goes (or the test's process group does)
    with open_recording(path) as r:
        span = r.span()
        assert span is not None and span[1] > killed - 2.5
        assert sum(1 for _ in r.events()) > 20
    Recorder(path, META).close()  # the next recorder closes what the killed one left open
    with open_recording(path) as r:
        assert r.conn.execute("SELECT COUNT(*) FROM recent").fetchone()[0] == 0
