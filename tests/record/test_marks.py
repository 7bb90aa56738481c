"""Marks: where a chunk can be decoded from. A window read from the last mark before it equals
the same window read from each chunk's start, for every cut; a file from before marks (no
column, no time indexes) reads the same, and a recorder adding to one adds them first."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from probetui.prober.worker import Trigger
from probetui.record import codec
from probetui.record.reader import open_recording
from probetui.record.recorder import Recorder
from probetui.record.schema import CHUNK_ITEMS, has_marks, has_steady
from tests.record.helpers import META, as_format_1, attempt, kinds_of, pod

pytestmark = pytest.mark.timeout(60)


def _write(path: Path, rounds: int = 90) -> None:
    """Three probes with irregular ticks, failures (new shapes), runs that reset and restart,
    manual attempts off the grid: every header bit and varint length a mark may land on."""
    rng = random.Random(11)
    rec = Recorder(path, META)
    pods = [pod(i) for i in range(3)]
    runs = [0, 0, 0]
    for i in range(rounds):
        for j, p in enumerate(pods):
            ok = rng.random() > 0.2
            runs[j] = runs[j] + 1 if rng.random() > 0.1 else 0
            tick = 1000.0 + 10 * i + j + (rng.uniform(-3, 3) if rng.random() < 0.2 else 0.0)
            t = tick + rng.uniform(0.0001, 0.2)
            trigger = Trigger.USER if rng.random() < 0.05 else Trigger.TICK
            rec.event(
                attempt(p, t, runs[j], ok=ok, output="" if ok else f"HTTP {500 + j}",
                        latency=rng.uniform(0.0005, 2.5), trigger=trigger, tick=tick)
            )  # fmt: skip
        if i % 25 == 0:
            rec.flush()
    rec.close()


def _as_before_marks(path: Path) -> None:
    """The file as an older probetui wrote it: no marks or steady column, no time indexes."""
    conn = sqlite3.connect(path)
    as_format_1(conn)
    conn.execute("DROP INDEX chunks_t0_steady")
    conn.execute("ALTER TABLE chunks DROP COLUMN steady")
    conn.execute("ALTER TABLE chunks DROP COLUMN marks")
    conn.execute("DROP INDEX specs_t")
    conn.execute("DROP INDEX statuses_t")
    conn.commit()
    conn.close()


@pytest.fixture
def from_mark(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each chunk the reader decodes part of, whether it began at a mark (else at the
    chunk's start), as `codec.start_before` answered it."""
    began: list[bool] = []
    real = codec.start_before

    def counted(marks: codec.Marks | None, lo: int) -> codec.ScanState | None:
        start = real(marks, lo)
        began.append(start is not None)
        return start

    monkeypatch.setattr(codec, "start_before", counted)
    return began


def _window(rec: object, since: float, until: float) -> list[tuple[object, ...]]:
    return [
        (e.type, e.t, e.pod_uid, e.record)
        for e in rec.events(since=since, until=until)  # type: ignore[attr-defined]
    ]


def test_a_window_read_from_marks_equals_it_read_from_each_chunks_start(
    tmp_path: Path, from_mark: list[bool]
) -> None:
    path, old = tmp_path / "r.db", tmp_path / "old.db"
    _write(path)
    _write(old)  # the same recording, then as a file from before marks reads
    _as_before_marks(old)
    with open_recording(path) as rec:
        # a mark before every MARK_EVERY-th item of a chunk
        counts = rec.conn.execute("SELECT n, marks FROM chunks").fetchall()
        assert any(n == CHUNK_ITEMS for n, _ in counts)
        for n, marks in counts:
            assert (marks is not None) == (n > codec.MARK_EVERY)
        first, last = rec.span()  # type: ignore[misc]
        rng = random.Random(5)
        cuts = [rng.uniform(first - 1, last + 1) for _ in range(60)]
        with_marks = {}
        for a in cuts:
            with_marks[a] = (_window(rec, a, a + 35.0), rec.probe_events(rec.probe_keys()[1], a))
    assert any(from_mark)  # those reads began chunks at their marks
    from_mark.clear()
    with open_recording(old) as rec:
        for a in cuts:
            got = (_window(rec, a, a + 35.0), rec.probe_events(rec.probe_keys()[1], a))
            assert got == with_marks[a], a
    assert from_mark and not any(from_mark)  # these from each chunk's start


def test_a_mark_is_the_decoders_state_before_its_item(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _write(path)
    with open_recording(path) as rec:
        kind_of = kinds_of(rec.conn)
        for t0, data, marks in rec.conn.execute("SELECT t0, data, marks FROM chunks"):
            everything = list(codec.scan(data, kind_of, -(1 << 62), 1 << 62, 1 << 62))
            for k, (_, item) in enumerate(everything):
                # from the last mark before each item's time: the same items from there on
                start = codec.start_before((t0, marks) if marks else None, item.t)
                tail = list(codec.scan(data, kind_of, item.t, 1 << 62, 1 << 62, start))
                assert tail == [x for x in everything if x[1].t >= item.t], k


def test_a_file_from_before_marks_is_read_and_then_added_to(
    tmp_path: Path, from_mark: list[bool]
) -> None:
    path = tmp_path / "r.db"
    _write(path, rounds=40)
    with open_recording(path) as rec:
        want = _window(rec, float("-inf"), float("inf"))
    _as_before_marks(path)
    with open_recording(path) as rec:
        assert not has_marks(rec.conn)
        assert _window(rec, float("-inf"), float("inf")) == want
    # a recorder adding to it adds the column and the indexes, and the old chunks still read
    rec2 = Recorder(path, META)
    p = pod(0)
    for i in range(2 * CHUNK_ITEMS):
        rec2.event(attempt(p, 5000.0 + 10 * i, i + 1))
    rec2.close()
    with open_recording(path) as rec:
        assert has_marks(rec.conn) and has_steady(rec.conn)
        indexes = {r[0] for r in rec.conn.execute("SELECT name FROM sqlite_master")}
        assert {"specs_t", "statuses_t", "chunks_t0_steady"} <= indexes
        # the old chunks say nothing of being steady (they are decoded), the new ones do
        steady = dict(rec.conn.execute("SELECT t0 >= 5000.0, COUNT(steady) FROM chunks GROUP BY 1"))
        assert steady == {0: 0, 1: 2}
        events = _window(rec, float("-inf"), float("inf"))
        assert events[: len(want)] == want
        assert len(events) == len(want) + 2 * CHUNK_ITEMS
        # and the reader decodes the new chunks from their marks: past the first new chunk's
        # second mark, the same events as read whole
        from_mark.clear()
        since = 5000.0 + 10 * (2 * codec.MARK_EVERY + 1)
        assert _window(rec, since, float("inf")) == [e for e in events if e[1] >= since]
        assert any(from_mark)


def test_seeks_that_decode_from_marks_keep_each_probes_state(tmp_path: Path) -> None:
    """The replay's rebuild and the stream it plays on with both start at marks: each probe
    stands as with everything fed, after a seek and after steps on from it."""
    from probetui.replay.feed import feed, lookback
    from probetui.replay.player import Player
    from probetui.timeline.store import Store

    path = tmp_path / "r.db"
    _write(path)

    def state(store: Store) -> dict[object, tuple[object, ...]]:
        out = {}
        for key, h in store.probes.items():
            last = h.recent(1)
            # times to the ring's millisecond, which depends on its first entry: left out
            entry = (last[0].kind, last[0].result_run, last[0].published) if last else None
            out[key] = (h.published, h.result_run, h.last_result, h.on_hold, entry)
        return out

    rng = random.Random(8)
    with open_recording(path) as rec:
        player = Player(rec)
        player.window = 40.0
        for _ in range(10):
            player.seek(rng.uniform(player.first + 50, player.last))
            for _ in range(3):
                full = Store()
                feed(full, rec, float("-inf"), player.now(), lookback(rec))
                assert state(player.store) == state(full), player.now()
                player.step(7.0)
