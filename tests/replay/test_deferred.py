"""A seek that gives steady probes their state and not their entries (`defer_entries`).

Over a recording where most probes did the same thing for minutes, a seek reads none of
their chunks: the store holds what the list shows of them (published and last result, a run
under way, hold, pause), and whatever reads their entries fills them first, so every reader
sees what a seek that fed everything saw. The reference here is the same player with no
probe deferred, and everything fed from the start."""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from probetui.keys import ProbeKey
from probetui.prober.status import PodStatus
from probetui.record import pod_reads, segments
from probetui.record.reader import Recording, open_recording
from probetui.record.recorder import Recorder
from probetui.replay import player as player_module
from probetui.replay.feed import feed, lookback
from probetui.replay.player import Player
from probetui.spec.model import ProbeType
from probetui.timeline.events import Event
from probetui.timeline.store import Store
from tests.record.helpers import META, as_format_1, assert_same_store, attempt, probe_state
from tests.record.helpers import pod as steady_pod

pytestmark = pytest.mark.timeout(120)

PODS = 40
ROUNDS = 240  # one attempt a second per probe from 1000
FLAPPING = {3, 11}  # fail in turns of 40 attempts: their chunks are not all one shape
RESPEC = 7  # its spec changes at 1150: two snapshots in a window across it
GONE = 9  # deleted at 1100


def _write(path: Path) -> None:
    pods = [steady_pod(i) for i in range(PODS)]
    clock = [999.0]
    rec = Recorder(path, META, clock=lambda: clock[0])
    for p in pods:
        rec.pod(p, PodStatus(phase="Running"))
    runs = [0] * PODS
    last = [True] * PODS
    for i in range(ROUNDS):
        for j, p in enumerate(pods):
            t = 1000.0 + i + j / 100
            clock[0] = t
            if j == GONE and t >= 1100.0:
                continue
            if j == RESPEC and i == 150:
                rec.pod(p, PodStatus(phase="Running", pod_ip="10.0.0.9"))
            ok = not (j in FLAPPING and (i // 40) % 2 == 1)
            runs[j] = runs[j] + 1 if ok == last[j] else 1
            last[j] = ok
            rec.event(attempt(p, t, runs[j], ok=ok, output="" if ok else "HTTP 500"))
        if i == 100:
            clock[0] = 1100.5
            rec.pod(pods[GONE], None)
        if i % 20 == 19:
            rec.flush()
    rec.close()


@pytest.fixture(scope="module")
def steady(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("deferred") / "steady.db"
    _write(path)
    return path


def _eager(rec: Recording) -> Player:
    """The same player with no probe deferred: every chunk of the window read and fed."""
    rec.steady_probes = lambda *_: {}  # type: ignore[method-assign]
    return Player(rec)


def _listed(player: Player) -> dict[ProbeKey, tuple[Any, ...]]:
    """What the list reads of each probe: none of it fills a deferred history."""
    return {
        k: (h.published, h.last_result, h.in_run, h.on_hold, h.paused)
        for k, h in player.store.probes.items()
    }


def _fed_up_to(path: Path, t: float) -> Store:
    store = Store()
    with open_recording(path) as rec:
        feed(store, rec, float("-inf"), t, lookback(rec))
    return store


def test_a_seek_defers_the_steady_probes_and_reads_as_one_that_fed_them(steady: Path) -> None:
    """Random seeks: most probes are deferred, what the list reads of them equals the eager
    seek's before anything is filled, and every reader after equals it and feeding
    everything from the start (entries, run, totals, changes)."""
    rng = random.Random(5)
    with open_recording(steady) as rec, open_recording(steady) as ref:
        player, eager = Player(rec), _eager(ref)
        for window in (10.0, 60.0):
            player.window = eager.window = window
            # mid-chunk (32 attempts a chunk), then anywhere
            instants = [1000.0 + 32 * k + 16 for k in range(1, 7)]
            for t in [*instants, *(rng.uniform(1000.0, 1240.0) for _ in range(6))]:
                # from the end, so that each is a seek back (rebuilt), on both
                player.seek(player.last)
                eager.seek(eager.last)
                player.seek(t)
                eager.seek(t)
                if t in instants:
                    # the steady ones are deferred: all but the flapping, the respec and the gone
                    assert player.store.deferred() >= PODS - len(FLAPPING) - 2, t
                assert _listed(player) == _listed(eager), t
                assert_same_store(eager.store, player.store)
                assert player.store.deferred() == 0
                full = _fed_up_to(steady, t)
                assert probe_state(player.store) == probe_state(full)
                # the pods as they stood (what was in force is kept across seeks: not past the
                # respec at 1150 or the deletion at 1100.5)
                pods = {u: (e.pod, e.status) for u, e in player.store.pods.items()}
                assert pods == {u: (e.pod, e.status) for u, e in full.pods.items()}


def test_the_deferred_are_the_steady_probes_of_pods_that_stood_still(steady: Path) -> None:
    """Not deferred: a probe whose chunk holds failures among successes, a pod whose spec
    changed within the window, a pod deleted before the cursor."""
    with open_recording(steady) as rec:
        player = Player(rec)
        player.window = 10.0
        player.seek(1155.0)  # the respec at 1150 is within the window
        deferred = {k.pod_uid for k in player.store.deferred_keys(10**6)}
        assert f"uid-{RESPEC}" not in deferred
        assert f"uid-{GONE}" not in deferred and f"uid-{GONE}" not in player.store.pods
        player.seek(player.last)
        player.seek(1210.0)  # 3 and 11 failed from 1200: the chunk begun at 1192 holds both
        deferred = {k.pod_uid for k in player.store.deferred_keys(10**6)}
        assert not {f"uid-{j}" for j in FLAPPING} & deferred
        assert len(deferred) >= PODS - len(FLAPPING) - 2


def test_reading_one_fills_some_without_moving_any_version(steady: Path) -> None:
    """The entries of a deferred history were always there to read: filling it moves neither
    the store's version nor its container's, so no pane redraws for it; its neighbours are
    filled in the same read."""
    with open_recording(steady) as rec, open_recording(steady) as ref:
        player, eager = Player(rec), _eager(ref)
        player.seek(1200.0)
        eager.seek(1200.0)
        store = player.store
        before = store.deferred()
        assert before > 30
        key = store.deferred_keys(1)[0]
        h = store.probes[key]
        owner = store.container(key[:2])  # type: ignore[arg-type]
        versions = (store.version, owner.version if owner else None)
        views = h.recent(5)
        assert (store.version, owner.version if owner else None) == versions
        assert not h.deferred and store.deferred() == 0  # the rest went with it (under 64)
        want = eager.store.probes[key].recent(5)
        assert [(v.t, v.result_run, v.kind) for v in views] == [
            (v.t, v.result_run, v.kind) for v in want
        ]


def test_playing_on_after_a_seek_feeds_the_deferred_ones_on(steady: Path) -> None:
    """Steps forward after a deferring seek: each deferred history is filled before the
    first step, and the stream goes on for them from where their fill stopped reading."""
    with open_recording(steady) as rec:
        player = Player(rec)
        player.window = 10.0
        player.seek(1140.0)
        assert player.store.deferred() > 30
        for _ in range(6):
            player.step(7.5)
            assert player.store.deferred() == 0
            assert probe_state(player.store) == probe_state(_fed_up_to(steady, player.now()))


def test_the_players_task_fills_them_a_batch_at_a_time(steady: Path) -> None:
    with open_recording(steady) as rec:
        player = Player(rec)
        player.seek(1200.0)
        n = player.store.deferred()
        assert n > 30
        left = player.fill_some(10)
        assert left and player.store.deferred() == n - 10
        while player.fill_some(10):
            pass
        assert player.store.deferred() == 0
        assert probe_state(player.store) == probe_state(_fed_up_to(steady, 1200.0))


def test_a_recording_without_the_column_is_read_in_full(steady: Path, tmp_path: Path) -> None:
    """A file written before `chunks.steady`: nothing deferred, the same store."""
    old = tmp_path / "old.db"
    with sqlite3.connect(steady) as src, sqlite3.connect(old) as dst:
        src.backup(dst)
    with sqlite3.connect(old) as c:
        as_format_1(c)
        c.execute("DROP INDEX chunks_t0_steady")
        c.execute("ALTER TABLE chunks DROP COLUMN steady")
    with open_recording(old) as rec, open_recording(steady) as ref:
        player, eager = Player(rec), _eager(ref)
        player.seek(1200.0)
        eager.seek(1200.0)
        assert player.store.deferred() == 0
        assert_same_store(eager.store, player.store)


def test_a_chunk_is_steady_when_all_its_items_are_one_counting_shape(tmp_path: Path) -> None:
    """The recorder's `chunks.steady`: the shape of every item where all are one record shape
    with a run under way; NULL with a second shape (a failure among successes) or a result
    change among them."""
    path = tmp_path / "kinds.db"
    p, q = steady_pod(0), steady_pod(1)
    rec = Recorder(path, META, clock=lambda: 999.0)
    rec.pod(p, PodStatus(phase="Running"))
    rec.pod(q, PodStatus(phase="Running"))
    for i in range(32):
        rec.event(attempt(p, 1000.0 + i, i + 1))
        ok = i != 20
        rec.event(attempt(q, 1000.5 + i, i + 1 if ok else 1, ok=ok, output="" if ok else "x"))
    for i in range(32, 64):
        rec.event(attempt(p, 1000.0 + i, i + 1))
        if i == 40:
            rec.event(
                Event(
                    "ResultChanged",
                    1000.0 + i,
                    p.uid,
                    p.namespace,
                    p.name,
                    "app",
                    ProbeType.READINESS.key,
                    "shadow",
                    {"result": "Failure", "containerID": "cid-1"},
                )
            )
    rec.close()
    with sqlite3.connect(path) as c:
        rows = c.execute(
            "SELECT pods.uid, chunks.t0, chunks.steady FROM chunks"
            " JOIN probes ON probes.id = chunks.probe_id JOIN pods ON pods.id = probes.pod_id"
            " ORDER BY pods.uid, chunks.t0"
        ).fetchall()
    by = {(uid, t0): steady for uid, t0, steady in rows}
    assert by[("uid-0", 1000.0)] is not None
    assert by[("uid-0", 1032.0)] is None  # the result change
    assert by[("uid-1", 1000.5)] is None  # the failure


def test_just_after_a_chunk_began_the_one_before_says_it(
    steady: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Probes close their chunks together (32 attempts each): just after they began new ones
    the latest says too little alone, so the chunk before it is asked too. Deferred where
    both are one shape; not a flapping probe whose new chunk follows failures."""
    monkeypatch.setattr(segments, "STEADY_RECHECK", 0)
    with open_recording(steady) as rec, open_recording(steady) as ref:
        player, eager = Player(rec), _eager(ref)
        for t in (1161.0, 1130.0):  # chunks began at 1160 and 1128, lookback 4 s
            player.seek(player.last)
            eager.seek(eager.last)
            player.seek(t)
            eager.seek(t)
            deferred = {k.pod_uid for k in player.store.deferred_keys(10**6)}
            assert len(deferred) >= PODS - len(FLAPPING) - 2, t
            if t == 1161.0:  # 3 and 11 failed until 1160
                assert not {f"uid-{j}" for j in FLAPPING} & deferred
            assert _listed(player) == _listed(eager), t
            assert_same_store(eager.store, player.store)


def test_the_idle_task_decodes_the_pods_where_a_gap_begins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions an hour apart, each recording its pods' statuses: the first screen (at the
    end) decodes the second's; `warm` decodes those in force where the gap begins, so a seek
    into the gap decodes none for the first time."""
    path = tmp_path / "two.db"
    pods = [steady_pod(i) for i in range(20)]
    for start in (1000.0, 5000.0):
        rec = Recorder(path, replace(META, started=start - 1), clock=lambda s=start: s - 1)
        for p in pods:
            rec.pod(p, PodStatus(phase="Running", pod_ip=f"10.0.{int(start) % 7}.1"))
        for i in range(60):
            for j, p in enumerate(pods):
                rec.event(attempt(p, start + i + j / 100, i + 1))
        rec.close()
    decoded: list[object] = []
    real = pod_reads.status_from_json
    monkeypatch.setattr(pod_reads, "status_from_json", lambda d: decoded.append(d) or real(d))
    # a dense recording's window (10 s), which holds nothing of the first session's statuses
    monkeypatch.setattr(player_module, "SEEK_EVENTS", 20)
    with open_recording(path) as rec:
        player = Player(rec)
        assert player.window == 10.0
        assert player.gaps and len(decoded) == len(pods)  # the second session's
        decoded.clear()
        assert not player.warm()  # one gap: none left
        assert len(decoded) == len(pods)
        decoded.clear()
        player.seek(3000.0)
        assert not decoded
        assert {e.status.pod_ip for e in player.store.pods.values()} == {"10.0.6.1"}
