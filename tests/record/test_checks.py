"""Format 2's checksums and tallies: each kind of damage is found, and says from when; what is
not damage (retention, a recorder still writing, a format-1 file) reads as it always did."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import time
from pathlib import Path

import pytest

from probetui.cli import main
from probetui.record.reader import open_recording
from probetui.record.recorder import Recorder
from probetui.record.schema import CHECKED_FORMAT, Damaged
from probetui.replay.player import Player
from tests.record.helpers import META, as_format_1, attempt, pod
from tests.record.test_faults import _status

pytestmark = pytest.mark.timeout(60)


def _record(path: Path, n: int = 60, pods: int = 3) -> None:
    """`pods` pods probed every 2 s from t=1000 (tally buckets of 10 s: 5 attempts each)."""
    rec = Recorder(path, META, clock=lambda: 999.0)
    ps = [pod(i) for i in range(pods)]
    for p in ps:
        rec.pod(p, _status())
    for i in range(n):
        for j, p in enumerate(ps):
            rec.event(attempt(p, 1000.0 + 2 * i + 0.1 * j, i + 1))
        if i % 10 == 0:
            rec.flush()
    rec.close()


def _replay(path: Path, *args: str) -> tuple[int, list[dict[str, object]], str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["replay", str(path), "--no-ui", *args])
    return code, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def _edit(path: Path, sql: str, *args: object) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


def _chunk_at(path: Path, k: int) -> tuple[int, float]:
    conn = sqlite3.connect(path)
    row = conn.execute(
        "SELECT id, t0 FROM chunks ORDER BY t0, id LIMIT 1 OFFSET ?", (k,)
    ).fetchone()
    conn.close()
    return row  # type: ignore[no-any-return]


def test_a_missing_chunk_is_damage_from_its_bucket_and_what_is_before_it_prints(
    tmp_path: Path,
) -> None:
    """A row gone (as a lost b-tree cell leaves it) says nothing about itself: the tally of its
    ten seconds does."""
    path = tmp_path / "r.db"
    _record(path)
    _, whole, _ = _replay(path)
    chunk, t0 = _chunk_at(path, 3)
    _edit(path, "DELETE FROM chunks WHERE id = ?", chunk)
    code, printed, err = _replay(path)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "damaged recording from" in err and "chunks: 1 of its" in err and "missing" in err
    assert printed and printed == whole[: len(printed)]
    # everything stamped before the bucket of the missing chunk printed
    bucket = t0 // 10 * 10
    assert len(printed) == sum(1 for e in whole if _t(e) < bucket)


def _t(event: dict[str, object]) -> float:
    from datetime import datetime

    return datetime.fromisoformat(str(event["ts"])).timestamp()


def test_a_changed_value_a_changed_id_and_an_undecodable_text_are_damage(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _record(path)
    conn = sqlite3.connect(path)
    kinds = [
        # a REAL off by a bit: another time, the row's checksum fails
        ("UPDATE chunks SET t1 = t1 + 1e-9 WHERE id = (SELECT MIN(id) FROM chunks)", "chunks row"),
        # a row's id (its rowid) changed
        ("UPDATE chunks SET id = id + 1000 WHERE id = (SELECT MIN(id) FROM chunks)", "chunks row"),
        # a text that is no longer UTF-8 (it raised UnicodeDecodeError before)
        ("UPDATE strings SET text = CAST(x'ff41' AS TEXT) WHERE id = 1", "strings row 1"),
        # an interned shape's JSON
        ("UPDATE shapes SET body = '[' WHERE id = 1", "shapes row 1"),
    ]
    conn.close()
    for i, (sql, words) in enumerate(kinds):
        copy = tmp_path / f"c{i}.db"
        copy.write_bytes(path.read_bytes())
        _edit(copy, sql)
        code, _, err = _replay(copy)
        assert code == 2 and "damaged recording" in err and words in err, (sql, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_retention_is_not_damage(tmp_path: Path) -> None:
    """Retention drops whole chunks, rows and unused strings from the beginning and the middle,
    and takes them off the tallies: the file replays whole (exit 0)."""
    path = tmp_path / "r.db"
    rec = Recorder(path, META, retain=600.0, writer_options={"maintain_every": 0.0})
    p, q = pod(0), pod(1)
    base = time.time() - 3000.0
    rec.pod(p, _status())
    rec.pod(q, _status())
    for i in range(300):
        rec.event(attempt(p, base + 10 * i, i + 1, output=f"o{i // 30}"))
        if i == 100:
            rec.pod(q, None)  # deleted: retention drops its rows with it later
        if i < 100:
            rec.event(attempt(q, base + 10 * i + 1, i + 1))
        if i % 20 == 0:
            rec.flush()
    rec.close()
    with open_recording(path) as r:
        assert r.checked and r.meta.format_version == CHECKED_FORMAT
        first, _ = r.span() or (0, 0)
        assert first > base + 1500  # the beginning went
    code, printed, err = _replay(path)
    assert code == 0 and not err and len(printed) > 50


def test_a_file_read_while_it_is_written_is_not_damage(tmp_path: Path) -> None:
    """The reader verifies what the recorder has committed, each bucket with its tally in one
    read transaction: rows being written between two reads are not damage."""
    path = tmp_path / "r.db"
    rec = Recorder(path, META, clock=lambda: 999.0)
    ps = [pod(i) for i in range(5)]
    for p in ps:
        rec.pod(p, _status())
    with open_recording(path) as r:
        for i in range(200):
            for j, p in enumerate(ps):
                rec.event(attempt(p, 1000.0 + i + 0.1 * j, i + 1))
            rec.flush()  # a committed batch, open segments in `recent` included
            if i % 20 == 0:
                events = r.events()
                got = [next(events) for _ in range(3)]  # a stream left half read ...
                rec.event(attempt(ps[0], 1000.0 + i + 0.5, i + 1))
                rec.flush()  # ... while the recorder commits more
                got += list(events)
                assert len(got) >= 5 * i
    rec.close()


def test_a_format_1_file_reads_unchecked_and_a_recorder_adding_to_it_keeps_it_format_1(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    _record(path)
    conn = sqlite3.connect(path)
    as_format_1(conn)
    conn.close()
    _, before, _ = _replay(path)
    rec = Recorder(path, META)
    p = pod(7)
    rec.pod(p, _status())
    rec.event(attempt(p, 2000.0, 1))
    rec.close()
    with open_recording(path) as r:
        assert r.meta.format_version == 1 and not r.checked
        assert len(r.meta.sessions) == 2
    code, after, err = _replay(path)
    assert (
        code == 0 and not err and after[: len(before)] == before and len(after) == len(before) + 1
    )


def test_the_screen_holds_the_cursor_before_the_damage_and_says_where(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _record(path)
    chunk, t0 = _chunk_at(path, 4)
    _edit(path, "UPDATE chunks SET data = X'00' || data WHERE id = ?", chunk)
    with open_recording(path) as r:
        player = Player(r)  # at the end: past the damage
        # the probe is steady: its chunk is read when its history is filled, after the seek
        while player.fill_some():
            pass
        assert player.damage is not None and player.damage.t is not None
        assert player.damage.t <= t0 and player.cursor < player.damage.t
        assert "damaged recording from" in player.status() or "damaged recording" in player.status()
        assert f"chunks row {chunk}" in player.status()
        assert player.store.probes  # what lies before it is shown
        player.seek(player.first + 1.0)
        player.seek(2000.0)  # held before it again
        assert player.cursor < player.damage.t


def test_damage_carries_its_time_and_where(tmp_path: Path) -> None:
    e = Damaged(tmp_path / "r.db", 0.0, "chunks row 3 fails its checksum")
    assert "damaged recording from 1970-01-01T00:00:00.000+00:00 (chunks row 3" in str(e)
    assert Damaged(tmp_path / "r.db", None, "x").at(5.0).t == 5.0
