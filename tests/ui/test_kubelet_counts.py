"""The kubelet's own counts in the threshold pane: a node agent's KubeletProbeCounts windows."""

from __future__ import annotations

from typing import Any

from probetui.keys import ProbeKey
from probetui.timeline.events import Event
from probetui.ui.widgets.header import TopBar
from probetui.ui.widgets.threshold import ThresholdPane, counts_line
from tests.ui.fakes import T_END, R, make_app
from tests.ui.test_app import SIZE, plain


def window(t: float, kubelet: tuple[int, int], shadow: tuple[int, int] | None, **kw: Any) -> Event:
    def side(v: tuple[int, int] | None) -> dict[str, int] | None:
        return None if v is None else {"successful": v[0], "failed": v[1], "unknown": 0}

    fields = {"kubelet": side(kubelet), "shadow": side(shadow), "seconds": 60.0, "node": "node-1"}
    fields.update(kw)
    return Event(
        "KubeletProbeCounts", t, "uid-api", "demo", "api", "api", "readiness", "kubelet", fields
    )


def test_counts_line_sums_the_recent_windows() -> None:
    windows = [
        window(T_END - 900, (99, 99), (99, 99)),  # too old for the line
        *(window(T_END - 60 * i, (5, 1), (5, 1)) for i in range(5)),
    ]
    line = counts_line(windows, T_END)
    assert line is not None
    assert line.plain == "≡ kubelet counted 25 ✓ 5 ✖ in 5 min; shadow 25 ✓ 5 ✖ · node node-1"
    exec_only = counts_line([window(T_END, (3, 0), None)], T_END)
    assert exec_only is not None and "the shadow does not run it" in exec_only.plain
    assert counts_line(windows[:1], T_END) is None


async def test_the_pane_shows_the_kubelets_counts_of_the_selected_probe() -> None:
    app, store, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "kubelet counted" not in plain(app.query_one(ThresholdPane))
        for i in range(3):
            store.event(window(T_END - 60 * i, (6, 0), (5, 0)))
        await pilot.pause(0.3)
        text = plain(app.query_one(ThresholdPane))
        assert "kubelet counted 18 ✓ 0 ✖ in 3 min; shadow 15 ✓ 0 ✖" in text
        assert list(store.kubelet_counts) == [ProbeKey("uid-api", "api", R)]
        # not a mark on the container's lane: a flood of them would push the starts out
        assert all(
            m.type != "KubeletProbeCounts" for m in store.containers.values() for m in m.marks
        )


async def test_t_on_an_agents_probe_in_read_only_says_why_and_sends_nothing() -> None:
    app, _, controls = make_app(read_only=True)
    refusal = "read-only: probe now through an agent is a POST"
    controls.runtime.probe_now_refused = lambda key: refusal  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        assert app.query_one(TopBar).message == f"readiness of api not probed: {refusal}"
        await pilot.press("T")
        assert app.query_one(TopBar).message == f"api not probed: {refusal}"
    assert controls.calls == []
