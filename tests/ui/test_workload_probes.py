"""The workload's probe view: the cursor on a workload's line shows its
probes across replicas in place of one container's panes; `w` goes to the worst replica's
line and timeline. Snapshots at 160x45 and 80x24, and in monochrome."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from probetui.keys import ContainerKey
from probetui.probe.base import Result
from probetui.spec.model import Container, Pod, Probe, TCPSocketAction
from probetui.timeline.store import Store
from probetui.ui.widgets.workload_probes import WorkloadProbeView
from tests.timeline.synth import T0, Synth
from tests.ui.fakes import R, http, make_app
from tests.ui.test_app import main, plain

PAYMENTS = "demo/Deployment/payments"
BAD_REPLICA = ContainerKey("uid-payments-1", "app")
SEARCH = "demo/Deployment/search"


def add_search(store: Store) -> None:
    """A Deployment of three two-container replicas, one of them slow to answer readiness
    (0.85 s of a 1 s timeout) while the others answer in milliseconds."""
    s = Synth(store)
    s.ids = 1000  # container IDs apart from the fixture's
    for i in range(3):
        pod = s.add_pod(
            Pod(
                name=f"search-6c8d-{i}",
                namespace="demo",
                uid=f"uid-search-{i}",
                containers=(
                    Container(name="app", readiness_probe=http(18200 + i, "/ready")),
                    Container(
                        name="proxy", readiness_probe=Probe(tcp_socket=TCPSocketAction(port=15021))
                    ),
                ),
                owner_kind="Deployment",
                owner_name="search",
            ),
            T0,
        )
        for name in ("app", "proxy"):
            s.start(pod, name, T0 + 1)
        for k in range(20):
            t = T0 + 5 + 10 * k
            slow = 0.85 if i == 2 else 0.003 + 0.001 * (k % 2)
            s.attempt(pod, "app", R, t, Result.SUCCESS, latency=slow)
            s.attempt(pod, "proxy", R, t + 1, Result.SUCCESS, latency=0.0005)


def panes_for(app: Any, group: str) -> None:
    """The right side as a line wants it: a workload's probe view on a workload's line, one
    container's panes on a container's."""
    assert app.query_one(WorkloadProbeView).display == bool(group)
    assert app.query_one("#timeline").display != bool(group)


async def test_a_workload_s_line_shows_its_probes_across_replicas() -> None:
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        screen = main(app)
        view = app.query_one(WorkloadProbeView)
        assert not view.display and app.query_one("#timeline").display
        await pilot.press("j")  # the payments line
        await pilot.pause()
        assert screen.group == PAYMENTS and view.display
        assert not app.query_one("#timeline").display
        assert not app.query_one("#threshold").display
        text = plain(view)
        assert "✗ 2/3 Ready · ≠ 1 · ✖ 1 shadow not ready" in text
        assert "readiness    ●2 pass ✖1 fail ‖0 on hold ○0 unknown" in text
        assert "p50 2.0 ms  p90 2.0 ms  p99 2.0 ms  of timeout 1s  (60 attempts)" in text
        assert "✖ payments-7d9f8b6c4-d3e4f fails; the rest pass" in text
        assert view.border_title == "deploy payments · 3 replicas · probes"
        # a replica's line: its own panes again
        await pilot.press("j")
        await pilot.pause()
        assert screen.group == "" and not view.display and app.query_one("#timeline").display


async def test_keys_faster_than_frames_leave_the_panes_as_the_last_line_wants() -> None:
    # the swap between the view and a container's panes comes a frame after the list's (a
    # layout, kept out of the key's frame): however many lines the keys crossed meanwhile,
    # what shows is what the line the cursor ends on wants
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        screen = main(app)
        for keys, group in ((("j", "j", "k"), PAYMENTS), (("j", "k", "j"), "")):
            await pilot.press(*keys)
            await pilot.pause()
            assert screen.group == group
            panes_for(app, group)


async def test_a_filter_moves_the_selection_at_once_and_the_panes_a_frame_later() -> None:
    # a filter's character draws the list first; the panes of the line the cursor lands on
    # come with the next frame (they are most of that frame's cost at 2,000 pods)
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        screen = main(app)
        view = app.query_one(WorkloadProbeView)
        await pilot.press("slash", *"payments")
        assert screen.group == PAYMENTS  # what the keys act on: at once
        await pilot.pause()
        panes_for(app, PAYMENTS)
        assert "deploy payments" in (view.border_title or "")
        await pilot.press("escape")
        await pilot.pause()
        panes_for(app, screen.group)


async def test_a_replica_s_change_redraws_the_view() -> None:
    app, store, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("j")
        await pilot.pause()
        view = app.query_one(WorkloadProbeView)
        assert "2/3 Ready" in plain(view)
        entry = store.pods["uid-payments-0"]
        (cs,) = entry.status.container_statuses
        store.pod(entry.pod, replace(entry.status, container_statuses=(cs.with_(ready=False),)))
        # the app polls the store ten times a second (real time: its timer, not the test's)
        await pilot.pause(0.3)
        assert "1/3 Ready" in plain(view)


async def test_w_goes_to_the_worst_replica_s_line_and_timeline() -> None:
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        screen = main(app)
        wl = screen.workloads
        await pilot.press("j", "z")  # folded: the replica is not even in the list
        assert BAD_REPLICA not in wl.index
        await pilot.press("w")
        await pilot.pause()
        assert wl.rows[wl.cursor].key == BAD_REPLICA and PAYMENTS not in wl.collapsed
        assert screen.selected == BAD_REPLICA and screen.group == ""
        assert app.query_one("#timeline").display
        assert "payments-7d9f8b6c4-d3e4f" in plain(app.query_one("#detail-header"))


async def test_the_worst_replica_key_is_remappable() -> None:
    app, _, _ = make_app(
        fleet=True, observes_kubelet=True, keymap={"probetui.worst-replica": "ctrl+w"}
    )
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("j")
        await pilot.pause()
        view = app.query_one(WorkloadProbeView)
        assert str(view.border_subtitle) == "^w worst replica"
        await pilot.press("ctrl+w")
        assert main(app).workloads.rows[main(app).workloads.cursor].key == BAD_REPLICA


async def test_a_slow_replica_stands_out_and_containers_are_named() -> None:
    app, store, _ = make_app(fleet=True, observes_kubelet=True)
    add_search(store)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await to_search(pilot)
        await pilot.pause()
        text = plain(app.query_one(WorkloadProbeView))
        assert "readiness · app" in text and "readiness · proxy" in text
        assert "◷ search-6c8d-2 slow: p50 850 ms, the rest 3.0 ms" in text
        assert "near timeout" in text


async def to_search(pilot) -> None:  # type: ignore[no-untyped-def]
    """The cursor to the search Deployment's line."""
    await pilot.pause()
    wl = main(pilot.app).workloads
    line = next(i for i, r in enumerate(wl.rows) if r.group == SEARCH)
    await pilot.press(*["j"] * line)


def test_workload_probe_view(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """payments at 160x45: one replica fails readiness and diverges, the rest pass."""
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    assert snap_compare(app, press=["j"], terminal_size=(160, 45))


def test_workload_probe_view_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The same at 80x24: the counts drop their empty words, the names shorten in the middle."""
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    assert snap_compare(app, press=["j"], terminal_size=(80, 24))


def test_workload_probe_view_slow_replica(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """search at 160x45: two containers a pod, one replica near its readiness timeout."""
    app, store, _ = make_app(fleet=True, observes_kubelet=True)
    add_search(store)
    assert snap_compare(app, run_before=to_search, terminal_size=(160, 45))


def test_workload_probe_view_no_color(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    """NO_COLOR at 80x24: the states, the differing replica and the worst one read in glyphs."""
    monkeypatch.setenv("NO_COLOR", "1")
    app, _, _ = make_app(fleet=True, observes_kubelet=True, theme="probetui")
    assert app.no_color
    assert snap_compare(app, press=["j"], terminal_size=(80, 24))
