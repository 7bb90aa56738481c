"""The replay's time cursor over a real recording of the demo: the store it keeps at a moment
equals the store fed everything up to that moment, however the cursor got there (fed forward
step by step, or rebuilt on a seek back); notable moments are the recorded ones; nothing runs."""

from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from probetui.keys import ProbeKey
from probetui.prober.status import PodStatus
from probetui.record.reader import open_recording
from probetui.record.recorder import Recorder
from probetui.replay.feed import feed, lookback, published
from probetui.replay.player import NOT_RECORDED, NOTABLE, Player
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType
from probetui.timeline.store import Store
from tests.record.helpers import META, assert_same_store, attempt, probe_state, record_demo
from tests.record.helpers import pod as steady_pod

pytestmark = pytest.mark.timeout(60)

SECONDS = 6.0


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("replay") / "demo.db"
    live = Store()
    record_demo(path, SECONDS, live)
    return {"path": path, "live": live}


def fed_up_to(path: Path, t: float) -> Store:
    """Everything published by t, fed at once (the definition the cursor must meet)."""
    store = Store()
    with open_recording(path) as rec:
        feed(store, rec, float("-inf"), t, lookback(rec))
    return store


def test_the_cursor_at_the_end_shows_the_live_store(demo: dict[str, Any]) -> None:
    with open_recording(demo["path"]) as rec:
        player = Player(rec)
        assert player.now() == player.last
        assert_same_store(demo["live"], player.store)


def test_the_store_at_the_cursor_does_not_depend_on_the_way_there(demo: dict[str, Any]) -> None:
    with open_recording(demo["path"]) as rec:
        player = Player(rec, start=rec.span()[0])  # type: ignore[index]
        first, last = player.first, player.last
        instants = [first + (last - first) * f for f in (0.2, 0.45, 0.7, 0.95)]
        # forward in small steps: each step feeds what happened in between
        t = first
        for instant in instants:
            while t + 0.25 < instant:
                t += 0.25
                player.seek(t)
            player.seek(instant)
            t = instant
            assert_same_store(fed_up_to(demo["path"], instant), player.store)
        # back: the store is rebuilt
        player.seek(instants[1])
        assert_same_store(fed_up_to(demo["path"], instants[1]), player.store)


def test_a_seek_to_random_cursors_equals_feeding_from_the_start(demo: dict[str, Any]) -> None:
    """Seeks back and forth to cursors on recorded instants (stamps and ends of attempts, a
    microsecond either side) and between them: the store equals everything fed up to there."""
    rng = random.Random(14)
    with open_recording(demo["path"]) as rec:
        events = list(rec.events())
        instants = [e.t for e in events] + [published(e) for e in events]
        player = Player(rec)
        for _ in range(12):
            t = rng.choice(instants) + rng.choice((-1e-6, 0.0, 1e-6))
            if rng.random() < 0.25:
                t = rng.uniform(player.first, player.last)
            player.seek(t)
            assert_same_store(fed_up_to(demo["path"], player.now()), player.store)


def test_stepping_forward_after_a_seek_back_equals_feeding_from_the_start(
    demo: dict[str, Any],
) -> None:
    """After a rebuild the stream is begun where the cursor stands: the steps after it feed
    what was published in between, the pods' changes included, and nothing twice."""
    with open_recording(demo["path"]) as rec:
        player = Player(rec)
        first, last = player.first, player.last
        player.seek(first + (last - first) * 0.3)
        for _ in range(6):
            player.step((last - first) * 0.08)
            assert_same_store(fed_up_to(demo["path"], player.now()), player.store)


def test_a_seek_with_a_short_window_keeps_each_probes_state(demo: dict[str, Any]) -> None:
    """A dense recording's window is seconds: the history before it is not in the store, but
    every probe stands as it did with everything fed, attempted within the window or not."""
    rng = random.Random(3)
    with open_recording(demo["path"]) as rec:
        player = Player(rec)
        player.window = 1.5
        for _ in range(8):
            t = rng.uniform(player.first + 3.0, player.last)
            player.seek(player.first)
            player.seek(t)
            full = probe_state(fed_up_to(demo["path"], player.now()))
            got = probe_state(player.store)
            # those not attempted within it too, from their last chunk before it
            assert got == full


def _two_sessions(path: Path, n: int) -> list[Pod]:
    """`n` probes attempted for 30 s from 1000, then a second session from 4599 (an hour on,
    the recorder stopped in between) for 5 s: the first left every probe at run 30."""
    pods = [steady_pod(i) for i in range(n)]
    rec = Recorder(path, META, clock=lambda: 999.0)
    for p in pods:
        rec.pod(p, PodStatus(phase="Running"))
    for i in range(30):
        for j, p in enumerate(pods):
            rec.event(attempt(p, 1000.0 + i + j / 100, i + 1))
    rec.close()
    rec = Recorder(path, replace(META, started=4599.0), clock=lambda: 4599.5)
    for p in pods:
        rec.pod(p, PodStatus(phase="Running"))
    for i in range(5):
        for j, p in enumerate(pods):
            rec.event(attempt(p, 4600.0 + i + j / 100, i + 1, ok=j % 20 != 0))
    rec.close()
    return pods


def test_a_seek_into_a_gap_keyframes_every_probe_in_one_pass(tmp_path: Path) -> None:
    """The recorder was stopped for a while (a night; two sessions in one file): a seek into
    the gap finds no probe attempted within the window, so every probe stands as its last
    chunk before the window left it, as feeding everything up to there does. Those chunks
    are read in one pass, not one lookup per probe (15,000 probes: 17 s a seek)."""
    path = tmp_path / "gap.db"
    pods = _two_sessions(path, 40)
    with open_recording(path) as r:
        last = 1029.39  # the first session's last attempt was stamped then
        assert r.gaps() == [(pytest.approx(last), 4599.0)]
        player = Player(r, start=4604.0)
        player.window = 10.0
        passes = 0
        segments = r._segments

        def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal passes
            passes += 1
            return segments(*args, **kwargs)

        r._segments = counted  # type: ignore[method-assign]
        player.seek(1100.0)  # 70 s into the gap: nothing within the window
        assert passes <= 2
        assert probe_state(player.store) == probe_state(fed_up_to(path, player.now()))
        assert {h.result_run for h in player.store.probes.values()} == {30}
        # the screen says that nothing was recorded there, not that the probes never ran
        assert player.gap() == (pytest.approx(last), 4599.0)
        assert player.status() == "REPLAY ‖ · not recorded here"
        player.clock_words = lambda t: f"{t:.2f}"  # the screen's clock, on the replay screen
        assert player.status() == "REPLAY ‖ · not recorded 1029.39-4599.00"
        spec = pods[0].containers[0]
        assert player.runtime.not_probed(pods[0], spec, ProbeType.READINESS) == NOT_RECORDED
        player.seek(4604.0)
        assert player.gap() is None and player.status() == "REPLAY ‖"
        assert player.runtime.not_probed(pods[0], spec, ProbeType.READINESS) == "replayed"


def test_the_notable_moments_take_in_a_gaps_ends(tmp_path: Path) -> None:
    """`]` and `[` stop where the recorder stopped and where it began again, so that a night
    without a recorder is crossed in two keys rather than by playing through it."""
    path = tmp_path / "gap.db"
    _two_sessions(path, 3)
    with open_recording(path) as r:
        player = Player(r, start=1010.0)
        moments = []
        while (t := player.jump(1)) is not None:
            moments.append(t)
        last = 1029.02  # the first session's last attempt: the third probe's at 29 s
        assert moments == [pytest.approx(last), 4599.0]
        player.seek(4604.0)
        assert player.jump(-1) == 4599.0
        assert player.jump(-1) == pytest.approx(last)
        assert player.jump(-1) is None


def test_one_session_has_no_gaps(demo: dict[str, Any]) -> None:
    with open_recording(demo["path"]) as rec:
        assert rec.gaps() == []


def test_notable_moments_and_playing(demo: dict[str, Any]) -> None:
    with open_recording(demo["path"]) as rec:
        notable = [e.t for e in rec.events(types=NOTABLE)]
        assert notable, "the demo flips results and kills within seconds"
        player = Player(rec, start=rec.span()[0])  # type: ignore[index]
        assert player.jump(1) == notable[0]
        assert player.now() == notable[0]
        later = [t for t in notable if t > notable[0] + 1e-6]
        assert player.jump(1) == later[0]
        assert player.jump(-1) == notable[0]
        player.seek(player.last)
        assert player.jump(1) is None
        assert player.jump(-1) == max(t for t in notable if t < player.last - 1e-6)
        # playing at 100x from the start reaches the end within the run loop's ticks
        player.seek(player.first)
        player.set_speed(100.0)
        assert player.toggle() and player.status() == "REPLAY ▶ 100x"

        async def play() -> None:
            task = asyncio.ensure_future(player.run())
            for _ in range(100):
                await asyncio.sleep(0.05)
                if not player.playing:
                    break
            task.cancel()

        asyncio.run(play())
        assert player.now() == player.last and not player.playing
        assert player.status() == "REPLAY ‖"


def test_playing_feeds_a_tick_in_slices_and_serves_the_loop_between_them(
    demo: dict[str, Any],
) -> None:
    """A tick's advance at 100x is fed a slice at a time, other tasks running in between (a
    key waits one slice); a seek made between slices stands, and playing goes on from it."""
    with open_recording(demo["path"]) as rec:
        player = Player(rec, start=rec.span()[0])  # type: ignore[index]
        player.slice = 0.05
        player.set_speed(100.0)
        player.toggle()
        served = 0
        seen: list[tuple[float, int]] = []
        real_seek = player.seek
        sliced = asyncio.Event()

        def seek(t: float) -> None:
            seen.append((t, served))
            real_seek(t)
            if len(seen) >= 6:
                sliced.set()

        player.seek = seek  # type: ignore[method-assign]

        async def other() -> None:
            nonlocal served
            while True:
                served += 1
                await asyncio.sleep(0)

        async def play() -> None:
            task = asyncio.ensure_future(player.run())
            loop = asyncio.ensure_future(other())
            await asyncio.wait_for(sliced.wait(), 10.0)
            # between two slices: a move back, as a key does
            mark = player.first + 0.5
            player.seek(mark)
            await asyncio.sleep(0.3)
            task.cancel()
            loop.cancel()

        asyncio.run(play())
        slices = [n for _, n in seen[:6]]
        assert all(b > a for a, b in itertools.pairwise(slices)), seen
        steps = [b - a for (a, _), (b, _) in itertools.pairwise(seen)]
        assert max(steps[:4]) <= 0.05 + 1e-9
        back = next(i for i, (t, _) in enumerate(seen) if t == player.first + 0.5)
        # what followed the move back went on from there, not from where the tick was headed
        assert all(t > seen[back][0] for t, _ in seen[back + 1 :])
        assert seen[back + 1][0] - seen[back][0] <= 0.05 + 1e-9


def test_the_top_bar_says_the_speed_reached_where_playing_cannot_keep_up(
    demo: dict[str, Any],
) -> None:
    with open_recording(demo["path"]) as rec:
        player = Player(rec, start=rec.span()[0])  # type: ignore[index]
        player.set_speed(100.0)
        player.toggle()
        player.reached = 31.4
        assert player.status() == "REPLAY ▶ 100x (at 31x)"
        player.reached = 95.0
        assert player.status() == "REPLAY ▶ 100x"
        player.toggle()
        assert player.status() == "REPLAY ‖"


def test_nothing_runs_in_a_replay(demo: dict[str, Any]) -> None:
    with open_recording(demo["path"]) as rec:
        player = Player(rec)
        key = next(iter(player.store.probes))
        assert isinstance(key, ProbeKey)
        assert not player.probe_now(key) and not player.set_paused(key, True)
        assert player.probe_container(key.pod_uid, key.container) == 0
        entry = player.store.pods[key.pod_uid]
        c = entry.pod.container(key.container)
        assert c is not None
        assert player.runtime.not_probed(entry.pod, c, ProbeType.READINESS) == "replayed"


def _replay_app(player: Player) -> Any:
    """The replay screen over `player`, as `probetui replay` builds it."""
    from probetui.ui.app import ProbeApp
    from probetui.ui.screens.replay import ReplayScreen

    return ProbeApp(
        player,
        player.store,
        now=player.now,
        pace_gc=False,
        make_screen=lambda ctx: ReplayScreen(ctx, player),
    )


def said(app: Any, bar: Any) -> str:
    """What the top bar and the toasts on the screen say, a toast's rows joined."""
    toasts = [" ".join(str(t.render()).split()) for t in app.screen.query("Toast")]
    return " ".join([bar.render().plain, *toasts])


async def test_the_replay_screen_keys(demo: dict[str, Any]) -> None:
    """The top bar says REPLAY and the cursor's day and time; `]` and `[` move to notable
    moments, `,` and `.` by ten seconds, `@` takes a typed time; `t` and space say why they
    do nothing; `x` plays."""
    from probetui.ui.widgets.header import TopBar

    with open_recording(demo["path"]) as rec:
        player = Player(rec, start=rec.span()[0])  # type: ignore[index]
        notable = [e.t for e in rec.events(types=NOTABLE)]
        app = _replay_app(player)
        async with app.run_test(size=(160, 45), notifications=True) as pilot:
            await pilot.pause()
            bar = app.query_one(TopBar)
            text = bar.render().plain
            assert "REPLAY ‖" in text and "replay " in text
            assert app.ctx.date_time(player.first) in text
            await pilot.press("right_square_bracket")
            assert player.now() == notable[0]
            await pilot.press("full_stop")
            assert player.now() == min(notable[0] + 10, player.last)
            await pilot.press("comma", "comma")
            assert player.now() == player.first  # held within the recording
            await pilot.press("at")
            await pilot.pause()
            await pilot.press("plus", "3", "s", "enter")
            await pilot.pause()
            assert player.now() == pytest.approx(player.first + 3)
            # what the bar has no room for is said whole in a toast, and its right side stays
            await pilot.press("t")
            await pilot.pause()
            assert "not probed: replayed" in said(app, bar)
            await pilot.press("space")
            await pilot.pause()
            assert "pause: this is a recording: nothing is probed or paused in a replay" in said(
                app, bar
            )
            assert bar.render().plain.rstrip().endswith("? help")
            await pilot.press("x")
            assert player.playing and player.speed == 1.0
            await pilot.press("3")
            assert player.speed == 100.0
            await pilot.press("x")
            assert not player.playing


async def test_the_replay_screen_in_a_gap_says_nothing_was_recorded(tmp_path: Path) -> None:
    """Between two sessions the top bar names the stretch nothing was recorded in, and the
    threshold pane says the probe was not recorded there, not that its container was never
    created (the store holds no attempt of it: the first session is over 10 minutes back)."""
    from probetui.ui.widgets.header import TopBar
    from probetui.ui.widgets.threshold import ThresholdPane

    path = tmp_path / "gap.db"
    _two_sessions(path, 3)
    with open_recording(path) as rec:
        player = Player(rec, start=3000.0)
        app = _replay_app(player)
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.pause()
            ctx = app.ctx
            bar = app.query_one(TopBar).render().plain
            assert f"REPLAY ‖ · not recorded {ctx.clock(1029.02)}-{ctx.clock(4599.0)}" in bar
            pane = app.query_one(ThresholdPane).render().plain  # type: ignore[attr-defined]
            assert "not recorded here" in pane and "has not been created" not in pane
            player.seek(4604.0)
            app.screen._moved()  # type: ignore[attr-defined]
            await pilot.pause()
            assert "not recorded" not in app.query_one(TopBar).render().plain


def _web_replica() -> Pod:
    probe = Probe(exec=ExecAction(("check",)))
    return Pod("web-0", "shop", "uid-0", {"app": "web"}, (Container("app", readiness_probe=probe),))


def _recorded_back(path: Path, pods: list[Pod]) -> dict[str, Pod]:
    """`pods` recorded to `path` and read back, by uid."""
    rec = Recorder(path, META)
    for p in pods:
        rec.pod(p, PodStatus(phase="Running"))
    rec.close()
    with open_recording(path) as r:
        return {p.uid: p for _, p, _ in r.snapshots()}


def test_replicas_sharing_a_spec_decode_to_their_own_pods(tmp_path: Path) -> None:
    """The reader parses a spec shared by replicas once; each pod still comes back as it was
    recorded (name, uid, labels), and one being deleted keeps its deletion fields alone."""
    base = _web_replica()
    pods = [replace(base, name=f"web-{i}", uid=f"uid-{i}", labels={"app": "web", "i": str(i)})
            for i in range(3)]  # fmt: skip
    pods.append(replace(base, name="web-3", uid="uid-3", deletion_timestamp=1.0e9,
                        deletion_grace_period_seconds=30))  # fmt: skip
    got = _recorded_back(tmp_path / "replicas.db", pods)
    for p in pods:
        back = got[p.uid]
        assert back == replace(p, source=back.source) and back.labels == p.labels
    assert got["uid-0"].deletion_timestamp is None
    assert got["uid-3"].deletion_grace_period_seconds == 30


async def test_the_timeline_reads_history_past_the_rings_from_the_recording(
    demo: dict[str, Any],
) -> None:
    """With a recording behind it, the archive answers for what the store's ring no longer
    holds: the probe's attempts before the ring's oldest, read off the loop, and `version`
    tells the screen to redraw."""
    from probetui.record.archive import HistoryArchive
    from probetui.timeline.history import kind_of

    with open_recording(demo["path"]) as rec:
        # two attempts at least: the window below is cut between the first two
        key = next(k for k in rec.probe_keys() if len(rec.attempts(k)) >= 2)
        records = rec.attempts(key)
    start, end = records[0].t - 1, records[-1].t + 1
    archive = HistoryArchive(demo["path"])
    try:
        assert archive.window(key, start, end) == []  # not read yet: a read starts
        for _ in range(100):
            await asyncio.sleep(0.02)
            if archive.version:
                break
        assert archive.version == 1 and archive.failure is None
        got = archive.window(key, start, end)
        assert got == [(r.t, kind_of(r)) for r in records]
        assert archive.window(key, start, records[1].t) == got[:1]  # from what was read
        assert archive.version == 1
    finally:
        archive.close()


def test_a_replayed_pod_keeps_its_workload(tmp_path: Path) -> None:
    """The list groups replicas under their workload; a recording keeps the workload as the
    cluster source resolved it, so a replay groups them the same way."""
    base = _web_replica()
    pods = [
        replace(base, owner_kind="Deployment", owner_name="web"),
        replace(base, name="web-2", uid="uid-2", owner_kind="Deployment", owner_name="web"),
        replace(base, name="solo", uid="uid-3"),
    ]
    got = _recorded_back(tmp_path / "owners.db", pods)
    assert {uid: (p.owner_kind, p.owner_name) for uid, p in got.items()} == {
        "uid-0": ("Deployment", "web"),
        "uid-2": ("Deployment", "web"),
        "uid-3": ("", ""),
    }
