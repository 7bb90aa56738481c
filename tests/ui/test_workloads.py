"""The Workloads list at cluster scale shows one line per container, problems first, the
jumps to the next problem, the fleet summary, and the columns at 80 and 160 columns."""

from __future__ import annotations

import pytest

from probetui.keys import ContainerKey
from probetui.timeline.store import Store
from probetui.ui.widgets.header import TopBar
from probetui.ui.widgets.rows import columns, fit, header_text, label
from probetui.ui.widgets.workloads import WorkloadHeader, WorkloadList
from tests.ui.fakes import make_app
from tests.ui.test_app import API, CRASHY, ENVOY, JOB, WEB, main, plain

SLOW = ContainerKey("uid-slow", "app")


def lines(wl: WorkloadList) -> list[str]:
    return [wl.render_line(y).text for y in range(len(wl.rows))]


async def test_one_line_per_container_the_pod_on_it() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        shown = lines(wl)
        assert len(shown) == 6
        # the container's name only where the pod has several
        assert shown[0].startswith("▸ api/api ") and shown[1].startswith(" ◇api/envoy ")
        assert shown[2].startswith("  batch ") and shown[5].startswith("  web-flap ")
        assert "S· R● L●" in shown[0] and "↺4" in shown[3] and "≠" in shown[0]
        # every line the same width, the columns under the header's
        head = plain(app.query_one(WorkloadHeader))
        assert len({len(s) for s in shown}) == 1
        assert shown[0].index("S·") == head.index("probes")
        assert "namespace" not in head


async def test_80_columns_keep_the_columns_and_drop_the_probe_letters() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        shown = lines(wl)
        head = plain(app.query_one(WorkloadHeader))
        assert wl.size.width == 34
        assert "SRL" in head and shown[0].index("·●●") == head.index("SRL")
        assert shown[3].startswith("  crashy ") and "↺4" in shown[3]


async def test_all_namespaces_adds_a_namespace_column() -> None:
    app, _, controls = make_app()
    controls.runtime.all_namespaces = True
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        head = plain(app.query_one(WorkloadHeader))
        assert head.startswith("  ns   pod[/container] ")
        assert lines(wl)[2].startswith("  demo batch ")


async def test_the_cluster_view_puts_problems_first_and_s_still_cycles() -> None:
    app, _, _ = make_app(observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        assert wl.sort == "problems"
        assert [r.key for r in wl.rows[:3]] == [CRASHY, API, ENVOY]
        assert main(app).selected == CRASHY
        assert "sort: problems (S)" in str(app.query_one("#workloads-pane").border_subtitle)
        await pilot.press("S", "S")
        assert wl.sort == "name" and wl.rows[0].key == API


async def test_n_and_shift_n_jump_to_the_next_and_previous_problem() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        screen = main(app)
        assert screen.selected == API  # diverged: a problem, but the cursor starts here
        await pilot.press("n")
        assert screen.selected == CRASHY  # envoy and batch have nothing wrong
        await pilot.press("n")
        assert screen.selected == API  # round the end: slow-start and web are healthy now
        await pilot.press("N")
        assert screen.selected == CRASHY
        for key in (ENVOY, JOB, SLOW, WEB):
            assert not screen.workloads.is_problem(screen.workloads.index[key])


async def test_the_top_bar_carries_the_fleet_summary() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        bar = plain(app.query_one(TopBar))
        assert "5 pods · 1 not ready · 1 ≠ · 1 restarted in 10m" in bar


def test_names_shorten_in_the_middle_and_keep_the_container() -> None:
    assert fit("payments-7d9f8b6c4-x2x8k", 12) == "paymen…x2x8k"
    assert label("payments-7d9f8b6c4-x2x8k", "envoy", 16) == "payme…2x8k/envoy"
    assert label("api", "envoy", 16) == "api/envoy"
    cols = columns(33, 0)
    assert cols.narrow and len(header_text(cols)) == 33
    wide = columns(45, 0)
    assert not wide.narrow and len(header_text(wide)) == 45
    ns = columns(45, 20)
    assert ns.ns and ns.ns <= ns.name and len(header_text(ns)) == 45


PAYMENTS = "demo/Deployment/payments"
BAD_REPLICA = ContainerKey("uid-payments-1", "app")


async def test_pods_group_under_their_workload_with_a_summary() -> None:
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        shown = lines(wl)
        # problems first: crashy, then the workload with the bad replica, its bad one first
        assert wl.rows[1].group == PAYMENTS and wl.rows[2].key == BAD_REPLICA
        assert shown[1].startswith(" -payments 2/3 ≠1 ✖1 ") and "R✖" in shown[1]
        assert shown[2].startswith("  payments-7d9f8…d3e4f ")
        cache = next(i for i, r in enumerate(wl.rows) if r.group.endswith("/cache"))
        assert shown[cache].startswith(" -sts cache 2/2 ") and "≠" not in shown[cache]
        assert app.query_one("#workloads-pane").border_title == (
            "Workloads (10 pods, 11 containers)"
        )
        # the cursor on a workload's line shows its worst replica on the right
        await pilot.press("j")
        assert main(app).selected == BAD_REPLICA


async def test_z_folds_a_workload_and_shift_z_all_of_them() -> None:
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        await pilot.press("j", "j", "z")  # on a replica: its workload folds, the cursor on it
        assert wl.rows[wl.cursor].group == PAYMENTS and PAYMENTS in wl.collapsed
        assert BAD_REPLICA not in wl.index and lines(wl)[1].startswith("▸+payments")
        assert main(app).selected == BAD_REPLICA
        await pilot.press("n")  # a folded workload with a problem is a stop of its own
        assert wl.rows[wl.cursor].key == API
        await pilot.press("Z")
        assert wl.collapsed == {PAYMENTS, "demo/StatefulSet/cache"}
        assert len(wl.rows) == 8 and wl.containers == 11
        await pilot.press("Z")
        assert not wl.collapsed and len(wl.rows) == 13
        # selecting a folded replica (as the palette or a jump does) unfolds its workload
        await pilot.press("Z")
        assert wl.select(BAD_REPLICA) and PAYMENTS not in wl.collapsed


async def test_local_and_demo_pods_stand_alone() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        assert not wl.members and all(r.container is not None for r in wl.rows)


def test_grouped_list_no_color(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """NO_COLOR at 160x45: the grouped list's states read in glyphs alone (≠, ✖, the ready
    counts, the cursor's ▸), the workloads' lines apart from their replicas."""
    monkeypatch.setenv("NO_COLOR", "1")
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    assert app.no_color
    assert snap_compare(app, terminal_size=(160, 45))


def test_grouped_list_no_color_80x24(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """The same at 80x24 with every workload folded (Z): the overview of a namespace, one
    line a workload, the narrow columns still aligned."""
    monkeypatch.setenv("NO_COLOR", "1")
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    assert snap_compare(app, press=["Z"], terminal_size=(80, 24))


def test_a_workloads_kind_gives_way_to_its_name_a_deployments_first() -> None:
    from probetui.prober.results import ResultValue
    from probetui.triage.groups import Summary
    from probetui.ui.widgets.groups import group_text

    s = Summary(20, 18, 2, True, 0, 0, (False, ResultValue.FAILURE, ResultValue.SUCCESS))
    cols = columns(50, 0)
    line = group_text("shop/DaemonSet/node-exporter", s, cols, False, False, 0).plain
    assert line.startswith(" -ds node-exporter 18/20 ✖2 ")  # a DaemonSet says so
    line = group_text("shop/Deployment/node-exporter", s, cols, False, False, 0).plain
    assert line.startswith(" -node-exporter 18/20 ✖2 ")  # a bare name is a Deployment's
    line = group_text("shop/StatefulSet/payments-backend-cache", s, cols, False, False, 0).plain
    assert line.startswith(" -sts paymen…cache 18/20 ✖2 ")
    # where the name would be cut to a stub, the kind goes for any workload
    line = group_text("shop/DaemonSet/node-exporter", s, columns(44, 0), False, False, 0).plain
    assert line.startswith(" -node-…rter 18/20 ✖2 ")


async def test_a_resort_that_keeps_the_selection_leaves_the_panes_alone() -> None:
    """S re-sorts, a filter narrows: the cursor stays on its container, and the right-hand panes
    (most of a key's cost at 2,000 pods) are not shown anew; a move of the cursor shows them."""
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        screen = main(app)
        shown: list[object] = []
        original = screen._show
        screen._show = lambda: (shown.append(screen.selected), original())  # type: ignore[method-assign]
        selected = screen.selected
        await pilot.press("S")
        assert app.query_one(WorkloadList).sort == "restarts"
        assert screen.selected == selected and shown == []
        await pilot.press("j")
        assert shown == [screen.selected] and screen.selected != selected


def test_rows_kept_names_follow_a_pod_that_changed() -> None:
    """build_rows keeps each pod's names between builds (a filter's keystrokes); a pod whose
    spec or owner changed is a new Pod object, and its rows follow it at the next build."""
    import dataclasses

    from probetui.ui.widgets.rows import build_rows
    from tests.ui.fakes import build, build_fleet

    store = Store()
    build_fleet(build(store, False))
    cache: dict = {}
    first = build_rows(store, ["payments"], "name", cache=cache)
    assert PAYMENTS in first.members and cache
    entry = store.pods["uid-payments-1"]
    store.pod(dataclasses.replace(entry.pod, owner_name="billing"), entry.status)
    again = build_rows(store, ["payments"], "name", cache=cache)
    # its pod name still says payments; its workload is billing now
    assert "demo/Deployment/billing" in again.members
    assert "uid-payments-1" not in again.members[PAYMENTS]
    assert build_rows(store, ["billing"], "name", cache=cache).pods == 1


async def test_a_resort_keeps_the_cursor_where_it_stood_in_the_view() -> None:
    """Problems first re-sorts as things go wrong: the cursor's container moves in the list,
    and the view moves with it, so the cursor stays on the same screen line (within the ends)."""
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(80, 14)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        assert len(wl.rows) > wl.size.height  # the list scrolls
        await pilot.press("end", "k", "k")
        key, offset, index = main(app).selected, wl.cursor - wl.top, wl.cursor
        await pilot.press("S")  # problems -> restarts
        assert main(app).selected == key and wl.cursor != index
        assert wl.cursor - wl.top == offset


async def test_a_workloads_restarts_are_those_of_the_last_hour() -> None:
    """The workload's line says ↺ for restarts in the last hour, as its probe view does: a
    replica that restarted two hours ago and once just now shows ↺1, not its lifetime 2."""
    from datetime import UTC

    from probetui.ui.app import ProbeApp
    from tests.ui.fakes import T_END, FakeControls, FakeRuntime, build, build_fleet

    store = Store()
    synth = build(store, False)
    build_fleet(synth)
    pod = store.pods["uid-cache-3"].pod
    synth.exit(pod, "app", T_END - 10, 137)
    synth.start(pod, "app", T_END - 5)  # two hours before `now`
    now = T_END + 7200.0
    synth.exit(pod, "app", now - 60, 137)
    synth.start(pod, "app", now - 50)
    assert store.pods["uid-cache-3"].status.lookup("app").restart_count == 2
    controls = FakeControls(FakeRuntime(observes_kubelet=True))
    app = ProbeApp(controls, store, now=lambda: now, tz=UTC, run_engine=False)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        y = wl.rows.index(next(r for r in wl.rows if r.group == "demo/StatefulSet/cache"))
        line = "".join(s.text for s in wl.render_line(y - wl.top))
        assert "↺1" in line and "↺2" not in line


async def test_typing_in_the_filter_reflows_nothing_and_the_box_follows_its_cursor() -> None:
    """A character typed in the filter repaints the box and the list, and asks no layout of the
    screen (Textual's Input asks one per character: 8 ms of each keystroke at 2,000 pods); the
    box still scrolls to keep the end of a long filter in view."""
    app, _, _ = make_app(fleet=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = main(app)
        layouts: list[object] = []
        reflow = screen._refresh_layout
        screen._refresh_layout = lambda *a, **k: (layouts.append(a), reflow(*a, **k))  # type: ignore[method-assign]
        await pilot.press("slash")
        await pilot.pause()
        before = len(layouts)
        await pilot.press(*"api")  # the cursor stays on api: the panes keep their places
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        assert wl.filter == "api" and main(app).selected == API
        assert len(layouts) == before
        await pilot.press(*"/envoy-and-then-a-much-longer-tail")
        await pilot.pause()
        box = screen.filter_box
        assert box.value == "api/envoy-and-then-a-much-longer-tail" and box.scroll_x > 0
        drawn = box.render_lines(box.region.reset_offset)[0].text
        assert drawn.strip().endswith("and-then-a-much-longer-tail")


async def test_the_panes_titles_repaint_their_own_border_line() -> None:
    """The Workloads pane's title (the filter) and subtitle (the order) change on each filter
    keystroke and each S: the border line they are on is drawn again, not the pane's every
    line (43 at 160x45, children composited again with them)."""
    app, _, _ = make_app(fleet=True)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        pane = app.query_one("#workloads-pane")
        drawn: list[int] = []
        cache = pane._styles_cache
        render_line = cache.render_line
        cache.render_line = lambda styles, y, *a, **k: (  # type: ignore[method-assign]
            drawn.append(y),
            render_line(styles, y, *a, **k),
        )[1]

        def screen_lines() -> list[str]:
            update = app.screen._compositor.render_update(full=True)
            return ["".join(s.text for s in strip) for strip in update.strips]  # type: ignore[attr-defined]

        await pilot.press("S")
        await pilot.pause()
        assert "sort: problems (S)" in screen_lines()[-2]
        assert drawn == [pane.outer_size.height - 1]
        drawn.clear()
        await pilot.press("slash", *"api")
        await pilot.pause()
        assert screen_lines()[1].startswith("╭─ Workloads (1 pod, 2 container")
        assert set(drawn) == {0}


async def test_keys_that_come_in_one_read_after_slash_are_the_filter() -> None:
    """ "/api" arriving at once (a fast typist, a paste, tmux send-keys): every key is handed to
    the screen before "/"'s binding runs, and "api" is the filter, not three bindings' keys."""
    from textual import events

    app, _, _ = make_app(fleet=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for key, char in (("slash", "/"), ("a", "a"), ("p", "p"), ("i", "i")):
            app._driver.send_message(events.Key(key, char))  # type: ignore[union-attr]
        await pilot.pause()
        await pilot.pause()
        screen = main(app)
        assert screen.filter_box.value == "api" and screen.filter_box.has_focus
        assert app.query_one(WorkloadList).filter == "api"


async def test_the_cursor_stops_on_every_line_and_at_either_end() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        wl = app.query_one(WorkloadList)
        last = len(wl.rows) - 1
        assert wl.cursor == 0
        await pilot.press("k")  # up at the first line: it stays
        assert wl.cursor == 0
        await pilot.press("j", "j")  # one line a key, none skipped
        assert wl.cursor == 2
        await pilot.press("pagedown")  # a page past the end stops on the last line
        assert wl.cursor == last
        await pilot.press("j")  # down at the last line: it stays
        assert wl.cursor == last
        await pilot.press("pageup")
        assert wl.cursor == 0
        await pilot.press("end")
        assert wl.cursor == last
        await pilot.press("home")
        assert wl.cursor == 0
