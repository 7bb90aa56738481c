"""What verifying a format-2 recording costs a replay, kept to what reading it costs anyway:
a seek counts its window's tally buckets in a page of them, once per open reader, and reads
none of the chunks of the probes it defers (the first fill reads them, once for every fill
after it)."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from probetui.record.reader import Recording, open_recording
from probetui.record.recorder import Recorder
from probetui.record.schema import Damaged
from probetui.replay import feed
from probetui.replay.player import Player
from tests.record.helpers import META, attempt, pod
from tests.record.test_faults import _status

pytestmark = pytest.mark.timeout(120)

PODS = 40


def _staggered(path: Path, rounds: int = 400) -> None:
    """`PODS` pods probed every 2 s from t=1000, each a little after the one before, so that
    their chunks (32 attempts, 64 s) begin in every 10-s tally bucket, as a real recording's
    do."""
    rec = Recorder(path, META, clock=lambda: 999.0)
    pods = [pod(i) for i in range(PODS)]
    for p in pods:
        rec.pod(p, _status())
    for i in range(rounds):
        for j, p in enumerate(pods):
            # the first attempts spread the pods over a chunk's span
            if i >= j % 32:
                rec.event(attempt(p, 1000.0 + 2 * i + 0.04 * j, i + 1))
        if i % 25 == 0:
            rec.flush()
    rec.close()


@contextmanager
def _statements(recording: Recording) -> Iterator[list[str]]:
    """The SQL the recording's connection runs meanwhile."""
    seen: list[str] = []
    recording.conn.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        recording.conn.set_trace_callback(None)


def seen_by(recording: Recording, fill_some: Callable[[int], bool], n: int) -> list[str]:
    """The SQL `fill_some(n)` runs."""
    with _statements(recording) as seen:
        fill_some(n)
    return seen


def _on_chunks(statements: list[str]) -> list[str]:
    return [s for s in statements if "FROM chunks" in s]


def test_a_seek_reads_its_window_in_pages_of_buckets_and_counts_each_once(tmp_path: Path) -> None:
    """A seek reads chunks begun up to ten minutes before its window: some 70 tally buckets.
    Each was read and counted in a transaction of its own (3-4 queries a bucket); a page of
    them now takes a few, and a second seek over the same minutes counts none again."""
    path = tmp_path / "r.db"
    _staggered(path)
    with open_recording(path) as r:
        player = Player(r)
        player.window = 10.0
        with _statements(r) as seen:
            player.seek(1700.0)
        assert len(_on_chunks(seen)) < 20, _on_chunks(seen)
        with _statements(r) as seen:
            player.seek(1650.0)
        counts = [s for s in _on_chunks(seen) if "COUNT(*)" in s and "tally.bucket" in s]
        # only the buckets the first seek did not reach are counted
        assert len(counts) <= 1, counts


def test_a_seek_reads_none_of_the_chunks_it_defers_and_the_fill_reads_them_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probes a seek defers (steady all through its window) were read with the rest and
    thrown away, each fill then read the window again for its batch: a chunk of theirs that
    is damaged is not the seek's to find, a fill finds it; what the screen shows is filled
    on its own, the player's first batch reads every probe left, and no fill after it reads
    a chunk from the file."""
    path = tmp_path / "r.db"
    _staggered(path)
    with open_recording(path) as r:
        player = Player(r)
        player.window = 10.0
        player.seek(1700.0)
        assert player.damage is None and player.store.deferred() > PODS // 2
        # what the screen shows is filled on its own; the player's first batch reads the rest
        monkeypatch.setattr(feed, "READ_ALL", 10)
        assert [s for s in _on_chunks(seen_by(r, player.fill_some, 5)) if "data" in s]
        assert [s for s in _on_chunks(seen_by(r, player.fill_some, 10)) if "data" in s]
        with _statements(r) as seen:
            while player.fill_some(5):
                pass
        assert not [s for s in _on_chunks(seen) if "data" in s], _on_chunks(seen)
        assert gc.isenabled()  # held off while feeding only
    # damage in the chunk a deferred probe is read from at 1700
    conn = sqlite3.connect(path)
    chunk, probe_id = conn.execute(
        "SELECT id, probe_id FROM chunks WHERE t0 <= 1690 AND t1 >= 1700 ORDER BY id LIMIT 1"
    ).fetchone()
    conn.execute("UPDATE chunks SET data = X'00' || data WHERE id = ?", (chunk,))
    conn.commit()
    conn.close()
    with open_recording(path) as r:
        player = Player(r, start=1700.0)
        assert probe_id in r.steady_probes(1700.0, 1700.0 - player.lookback)
        assert player.damage is None  # deferred: the seek did not read it
        while player.fill_some():
            pass
        assert player.damage is not None and f"chunks row {chunk}" in player.damage.where
        assert player.cursor < (player.damage.t or 0.0)


def test_a_pages_tally_changed_since_it_was_counted_is_counted_again(tmp_path: Path) -> None:
    """A reader keeps which buckets matched their tallies; a recorder still writing adds to a
    bucket (a chunk closes up to ten minutes after it began) and changes its tally with it:
    the bucket is counted again, and what it holds now reads whole."""
    path = tmp_path / "r.db"
    rec = Recorder(path, META, clock=lambda: 999.0)
    p, q = pod(0), pod(1)
    rec.pod(p, _status())
    rec.pod(q, _status())
    for i in range(40):
        rec.event(attempt(p, 1000.0 + 2 * i, i + 1))
    rec.event(attempt(q, 1001.0, 1))
    rec.flush()
    with open_recording(path) as r:
        before = len(list(r.events()))
        # q's open segment closes into a chunk begun at 1001: a bucket read before
        for i in range(1, 40):
            rec.event(attempt(q, 1001.0 + 2 * i, i + 1))
        rec.flush()
        rec.close()
        assert len(list(r.events())) == before + 39


def test_a_damaged_row_in_a_bucket_verified_before_is_found_where_it_is_read(
    tmp_path: Path,
) -> None:
    """What is kept of a bucket that matched is its count, not its rows: a row read again is
    verified again."""
    path = tmp_path / "r.db"
    _staggered(path, rounds=120)
    with open_recording(path) as r:
        assert len(list(r.events())) > 1000
        chunk = r.conn.execute("SELECT MAX(id) FROM chunks").fetchone()[0]
        # changed under the open reader: the bucket's count and checksum sum stay the same
        conn = sqlite3.connect(path)
        conn.execute("UPDATE chunks SET n = n + 1 WHERE id = ?", (chunk,))
        conn.commit()
        conn.close()
        with pytest.raises(Damaged, match=f"chunks row {chunk} "):
            list(r.events())
