"""Every key and pane of the app, with the Pilot, on a synthetic store and a stand-in engine."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandPalette

from probetui.keys import ContainerKey, ProbeKey
from probetui.ui.commands import ProbeCommands
from probetui.ui.screens.help import HelpScreen
from probetui.ui.screens.main import MainScreen
from probetui.ui.widgets.attempts import AttemptLog
from probetui.ui.widgets.header import DetailHeader, TopBar
from probetui.ui.widgets.threshold import ThresholdPane
from probetui.ui.widgets.timeline import Timeline
from probetui.ui.widgets.workloads import WorkloadList
from tests.ui.fakes import L, R, make_app

SIZE = (160, 45)
API = ContainerKey("uid-api", "api")
ENVOY = ContainerKey("uid-api", "envoy")
JOB = ContainerKey("uid-batch", "job")
CRASHY = ContainerKey("uid-crashy", "worker")
WEB = ContainerKey("uid-web", "web")


def plain(widget) -> str:  # type: ignore[no-untyped-def]
    return widget.render().plain


def main(app) -> MainScreen:  # type: ignore[no-untyped-def]
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen


async def test_starts_on_the_first_container_with_every_pane_filled() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = main(app)
        assert screen.selected == API
        assert "demo  08:58:20" in plain(app.query_one(TopBar))
        assert "READ-ONLY" not in plain(app.query_one(TopBar))
        assert "demo/api / api" in plain(app.query_one(DetailHeader))
        lanes = plain(app.query_one(Timeline)).splitlines()
        assert lanes[1].startswith(" startup") and "(none)" in lanes[1]
        assert lanes[2].startswith("▶readiness") and "●" in lanes[2]
        assert lanes[4].startswith(" kubelet") and "≠" in lanes[4]  # the Divergence event
        threshold = plain(app.query_one(ThresholdPane))
        assert "gRPC <pod IP>:18090" in threshold and "every 10s" in threshold
        assert "3 failures in a row take it out of service" in threshold
        assert "detect a failure in 30s (10s × 3)" in threshold
        log = plain(app.query_one(AttemptLog)).splitlines()
        assert log[0].startswith("08:58:15  ● success") and "→ 127.0.0.1:18090" in log[0]
        wl = app.query_one(WorkloadList)
        assert wl.containers == 6 and len(wl.rows) == 6  # one line per container
        assert app.query_one("#workloads-pane").border_title == "Workloads (5 pods, 6 containers)"


async def test_j_k_and_arrows_move_between_containers() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("j")
        assert main(app).selected == ENVOY
        await pilot.press("down")
        assert main(app).selected == JOB
        await pilot.press("k", "up")
        assert main(app).selected == API
        await pilot.press("up")  # nothing above the first
        assert main(app).selected == API
        await pilot.press("end")
        assert main(app).selected == WEB
        await pilot.press("home")
        assert main(app).selected == API


async def test_a_restarting_container_shows_kills_exits_and_back_off() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main(app).workloads.select(CRASHY)
        await pilot.press("minus", "minus")  # 5 s a cell: the whole crash loop
        await pilot.pause()
        header = plain(app.query_one(DetailHeader))
        assert "restarts 4" in header and "Waiting: CrashLoopBackOff, next start in" in header
        lanes = plain(app.query_one(Timeline)).splitlines()
        liveness, kubelet = lanes[3], lanes[4]
        assert liveness.count("▼") == 4 and "◷" not in liveness  # ▼ drawn on the third failure
        assert kubelet.count("↺") == 4 and kubelet.count("■") == 4 and kubelet.count("B") == 4
        assert "│" in kubelet
        assert app.query_one(Timeline).border_title == "Timeline (follow) · 5s/cell"
        threshold = plain(app.query_one(ThresholdPane))
        assert "on hold: Failure published, the kubelet restarts the container" in threshold
        # no startup probe: liveness's delay + period x threshold is the time to start
        assert "must start within 9s (delay 0s + 3s × 3)" in threshold
        log = plain(app.query_one(AttemptLog)).splitlines()
        assert "skipped" in log[0] and "on hold" in log[0]
        assert "◷ timeout" in log[1] and "context deadline exceeded" in log[1]
        assert "✖ failure" in log[2] and " 500 " in log[2]


async def test_t_and_shift_t_probe_now_through_the_engine() -> None:
    app, _, controls = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        assert app.query_one(TopBar).message == "readiness of api: attempt queued"
        await pilot.press("T")
        assert app.query_one(TopBar).message == "api: 2 probes queued"
    assert controls.calls == [
        ("probe_now", ProbeKey("uid-api", "api", R)),
        ("probe_container", ("uid-api", "api")),
    ]


async def test_p_selects_the_next_probe_for_t_the_timeline_and_the_log() -> None:
    app, _, controls = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        assert main(app).probe is L
        assert plain(app.query_one(Timeline)).splitlines()[3].startswith("▶liveness")
        assert app.query_one(AttemptLog).border_title == "Attempts · liveness"
        await pilot.press("t", "P")
        assert main(app).probe is R
    assert controls.calls == [("probe_now", ProbeKey("uid-api", "api", L))]


async def test_space_without_a_live_worker_says_so() -> None:
    app, _, controls = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("space")
        await pilot.pause()
        assert "no running worker" in app.query_one(TopBar).message
    assert controls.calls == []


async def test_slash_filters_and_escape_clears() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", "c", "r", "a", "s", "h")
        wl = app.query_one(WorkloadList)
        assert wl.containers == 1 and main(app).selected == CRASHY
        assert app.query_one("#workloads-pane").border_title.endswith("/crash")
        await pilot.press("enter")  # keep the filter, back to the list
        assert wl.has_focus and wl.containers == 1
        await pilot.press("escape")
        assert wl.containers == 6 and main(app).selected == CRASHY


async def test_f_left_right_and_zoom_move_the_timeline() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        tl = app.query_one(Timeline)
        await pilot.press("left")
        assert not tl.follow and tl.border_title.startswith("Timeline (at 08:")
        await pilot.press("right", "right")
        assert tl.follow
        await pilot.press("f")
        assert not tl.follow
        await pilot.press("f")
        assert tl.follow
        await pilot.press("minus")
        assert tl.scale == 2.0
        await pilot.press("plus", "plus")
        assert tl.scale == 0.5


async def test_scrolling_the_timeline_back_scrolls_the_attempt_log_with_it() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = app.query_one(AttemptLog)
        newest = plain(log).splitlines()[0][:8]
        await pilot.press("left", "left")
        tl = app.query_one(Timeline)
        assert tl.end is not None and log.until == tl.end
        edge = app.ctx.clock(tl.end)  # type: ignore[attr-defined]
        assert log.border_title.endswith(f"· up to {edge}")
        lines = plain(log).splitlines()
        assert lines[0][:8] <= edge < newest, (lines[0], edge, newest)
        await pilot.press("f")  # back to now: the log follows again
        assert log.until is None and plain(log).splitlines()[0][:8] == newest
        assert "up to" not in log.border_title


async def test_top_bar_says_when_the_shadow_prober_falls_behind() -> None:
    app, _, controls = make_app()
    async with app.run_test(size=SIZE) as pilot:
        bar = app.query_one(TopBar)
        assert "behind" not in plain(bar)
        controls.late = 2.5
        bar.refresh()
        await pilot.pause()
        assert "shadow prober 2.5s behind its ticks" in plain(bar)


async def test_enter_gives_details_and_escape_goes_back() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        screen = main(app)
        assert screen.has_class("-details")
        assert not app.query_one("#workloads-pane").display
        log = plain(app.query_one(AttemptLog)).splitlines()
        assert log[1].lstrip().startswith("no event") and "tick" in log[1]
        await pilot.press("escape")
        assert not screen.has_class("-details")
        assert app.query_one(WorkloadList).has_focus


async def test_o_shows_the_output_tail_as_the_runtime_gives_it() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
        await pilot.pause()
        log = app.query_one(AttemptLog)
        assert log.border_title == "Output · api"
        text = plain(log)
        assert "listening on 127.0.0.1:8080" in text
        assert "Authorization was ••••••" in text


async def test_the_threshold_pane_shows_the_redacted_copy_of_a_secret_header() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main(app).workloads.select(WEB)
        await pilot.pause()
        text = plain(app.query_one(ThresholdPane))
        assert "[Authorization: ••••••]" in text and "s3cr3t" not in text


async def test_shift_s_sorts_problems_first() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("S")
        wl = app.query_one(WorkloadList)
        assert wl.sort == "problems"
        assert wl.rows[0].key == CRASHY
        # api diverged once: after crashy, before the pods with nothing wrong
        assert [r.key for r in wl.rows[1:3]] == [API, ENVOY]
        assert main(app).selected == API  # the cursor stays on its container
        await pilot.press("S")
        assert wl.sort == "restarts" and wl.rows[0].key == CRASHY


async def test_s_saves_an_svg_screenshot_and_says_where(tmp_path: Path) -> None:
    app, _, _ = make_app(screenshot_dir=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await pilot.pause()
        files = sorted(str(p) for p in tmp_path.iterdir())  # noqa: ASYNC240 - a test's tmp dir
        assert len(files) == 1 and files[0].endswith(".svg")
        assert files[0] in app.query_one(TopBar).message
    assert Path(files[0]).read_text().startswith("<svg")  # noqa: ASYNC240


async def test_question_mark_opens_help_with_every_key() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        keys = dict(app.screen.rows)
        for key in ("t", "T", "space", "/", "f", "⏎", "s", "^q q", "?", "↓ j", "↑ k"):
            assert key in keys, key
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_q_quits_with_status_zero() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_read_only_offers_no_probe_now_where_the_probe_is_not_run() -> None:
    app, _, controls = make_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        assert "READ-ONLY" in plain(app.query_one(TopBar))
        main(app).workloads.select(JOB)  # an exec probe: not run in read-only mode
        await pilot.pause()
        assert "not run: read-only" in plain(app.query_one(ThresholdPane))
        active = {b.binding.action for b in app.screen.active_bindings.values()}
        assert "probe_now" not in active and "probe_all" not in active
        await pilot.press("t", "T")
        # an HTTP probe is still run in read-only mode, so it is offered there
        main(app).workloads.select(WEB)
        await pilot.pause()
        active = {b.binding.action for b in app.screen.active_bindings.values()}
        assert "probe_now" in active
    assert controls.calls == []


async def test_the_command_palette_lists_the_actions() -> None:
    app, _, controls = make_app()
    async with app.run_test(size=SIZE) as pilot:
        provider = ProbeCommands(app.screen)
        titles = [hit.display async for hit in provider.discover()]
        assert {"probe now", "all probes", "pause/resume", "filter", "quit"} <= set(titles)
        await pilot.press("ctrl+p")
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"probe now")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
    assert ("probe_now", ProbeKey("uid-api", "api", R)) in controls.calls


async def test_keys_can_be_remapped_by_binding_id() -> None:
    app, _, controls = make_app(keymap={"probetui.probe-now": "x"})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("x")
        await pilot.pause()
    assert controls.calls == [("probe_now", ProbeKey("uid-api", "api", R))]


async def test_new_events_redraw_only_the_changed_container() -> None:
    app, store, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = main(app)
        # the list's own refresh_keys, watched: which containers each poll asks it to redraw
        asked: list[list[ContainerKey]] = []
        refresh_keys = screen.workloads.refresh_keys

        def watched(keys: list[ContainerKey]) -> None:
            asked.append(list(keys))
            refresh_keys(keys)

        screen.workloads.refresh_keys = watched  # type: ignore[method-assign]
        seen = store.version
        from tests.ui.fakes import T_END, build  # noqa: F401 - the same builder feeds more

        synth = app.store  # the same store; add one kubelet event to crashy
        from probetui.timeline.events import Event

        synth.event(
            Event(
                "ReadyChanged",
                T_END,
                "uid-crashy",
                "demo",
                "crashy",
                "worker",
                None,
                "kubelet",
                {"ready": True},
            )
        )
        assert store.changed_since(seen) == [CRASHY]
        await pilot.pause(0.25)
        # one poll redraws crashy alone; the polls after it find nothing new
        assert asked == [[CRASHY]]


async def test_a_runtime_that_fails_ends_the_app_with_its_one_line() -> None:
    from probetui.runtime.base import RuntimeFailure
    from probetui.timeline.store import Store
    from probetui.ui.app import ProbeApp
    from tests.ui.fakes import FakeControls, FakeRuntime

    class Failing(FakeControls):
        async def run(self) -> None:
            raise RuntimeFailure("port 18080 is taken: stop what listens there, or pick another")

    app = ProbeApp(Failing(FakeRuntime()), Store())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.1)
    assert app.exit_code == 1 and app.return_code == 1
    assert app.failure == "port 18080 is taken: stop what listens there, or pick another"


async def test_a_focus_move_repaints_what_it_restyles_not_the_whole_screen() -> None:
    # Textual's own `focused` repainted every widget of the screen on each focus move (the
    # frame of `/` and of escape); the filter box and the list restyle and repaint themselves
    from textual._compositor import Compositor

    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        full = 0
        render = Compositor.render_full_update

        def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            nonlocal full
            full += 1
            return render(self, *args, **kwargs)

        Compositor.render_full_update = counted  # type: ignore[method-assign]
        try:
            await pilot.press("slash")
            await pilot.pause()
            box = main(app).filter_box
            assert box.has_focus
            await pilot.press("escape")
            await pilot.pause()
        finally:
            Compositor.render_full_update = render  # type: ignore[method-assign]
        assert app.query_one(WorkloadList).has_focus
        assert full == 0


async def test_closing_a_screen_over_details_leaves_no_focus_in_the_hidden_filter() -> None:
    # Textual's auto focus gave the focus back to the first focusable widget, the filter's
    # box, hidden with the list in details mode: the next `q` was typed into it
    from probetui.ui.screens.whatif import WhatIfScreen

    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        main(app).workloads.select(CRASHY)  # its advice proposes a setting: `a` opens
        await pilot.pause()
        await pilot.press("enter", "a")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen)
        await app.workers.wait_for_complete()
        await pilot.press("escape")
        await pilot.pause()
        screen = main(app)
        assert app.focused is not screen.filter_box and screen.filter_box.value == ""
        await pilot.press("question_mark", "escape", "escape")  # help, then details off
        await pilot.pause()
        assert app.query_one(WorkloadList).has_focus
        await pilot.press("question_mark", "escape")
        await pilot.pause()
        assert app.query_one(WorkloadList).has_focus  # where it was
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_f_stays_put_where_it_was_pressed_as_left_does() -> None:
    # `f` said "stay put" and the title named the moment, but the edge went on with now: new
    # cells kept arriving. Staying put shows what was published by the moment `f` was pressed
    from datetime import UTC

    from probetui.probe.base import Result
    from probetui.timeline.store import Store
    from probetui.ui.app import ProbeApp
    from tests.ui.fakes import T_END, FakeControls, FakeRuntime, build

    store = Store()
    synth = build(store)
    clock = [T_END]
    app = ProbeApp(
        FakeControls(FakeRuntime()), store, now=lambda: clock[0], tz=UTC, run_engine=False
    )
    api = synth.pods["uid-api"]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        tl, log = app.query_one(Timeline), app.query_one(AttemptLog)
        # an attempt under way when `f` is pressed, published after it
        clock[0] = T_END + 0.8
        await pilot.press("f")
        await pilot.pause()
        assert not tl.follow and tl.border_title.startswith("Timeline (at 08:58:20, f: follow)")
        # the lanes, not the axis: its labels say how long ago, relative to now
        lanes, lines = plain(tl).splitlines()[1:], plain(log)
        synth.attempt(api, "api", R, T_END + 0.5, Result.FAILURE, latency=0.6)
        for step in range(1, 6):
            clock[0] = T_END + 0.8 + 2 * step
            synth.attempt(api, "api", R, clock[0] - 0.1, Result.FAILURE, latency=0.01)
            await pilot.pause(0.15)  # a poll of the store
        assert plain(tl).splitlines()[1:] == lanes and plain(log) == lines
        assert tl.border_title.startswith("Timeline (at 08:58:20, f: follow)")
        assert log.border_title.endswith("· up to 08:58:20")
        await pilot.press("f")  # following again: the failures come in
        await pilot.pause()
        assert tl.follow and log.until is None
        assert "✖" in plain(tl).splitlines()[2] and plain(log).splitlines()[0][10:19] == "✖ failure"


async def test_a_new_attempt_of_the_selected_container_reaches_its_panes_at_the_next_poll() -> None:
    from probetui.probe.base import Result
    from probetui.timeline.store import Store
    from probetui.ui.app import ProbeApp
    from tests.ui.fakes import T_END, FakeControls, FakeRuntime, build

    store = Store()
    synth = build(store)
    app = ProbeApp(FakeControls(FakeRuntime()), store, now=lambda: T_END + 1, run_engine=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.25)  # the panes drawn
        log = app.query_one(AttemptLog)
        assert main(app).selected == API and log.render_line(0).text.startswith("08:58:15")
        synth.attempt(synth.pods["uid-api"], "api", R, T_END + 0.5, Result.FAILURE)
        await pilot.pause(0.25)  # a poll of the store, no key
        # what is drawn, not what render() would say now
        assert "✖ failure" in log.render_line(0).text
        assert app.query_one(Timeline).render_line(2).text.rstrip().endswith("✖")
