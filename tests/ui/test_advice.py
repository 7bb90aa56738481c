"""Show the lint advice live and the divergence reasons where they show, with the Pilot on
the synthetic store: the threshold pane lists the selected probe's
findings worst first, says why the shadow and the kubelet disagree, and a key (remappable)
opens the what-if of a proposed setting, replayed over the session's history."""

from __future__ import annotations

from typing import Any

from textual.widgets import Static

from probetui.keys import ContainerKey
from probetui.lint.live import REFRESH, Advisor
from probetui.timeline.events import Event
from probetui.timeline.store import Store
from probetui.ui.describe import divergence_lines
from probetui.ui.screens.main import MainScreen
from probetui.ui.screens.whatif import WhatIfScreen
from tests.ui.fakes import T_END, make_app

SIZE = (160, 45)
API = ContainerKey("uid-api", "api")
CRASHY = ContainerKey("uid-crashy", "worker")
LIKELY = [
    "network path: the shadow reaches localhost inside the pod through the API server; the "
    "kubelet dials the pod IP from its node",
    "timing: the two workers probe at different instants of each period",
    "flakiness: failureThreshold 1 turns one slow answer into a flip",
]


def diverge(store: Store, t: float = T_END - 20) -> None:
    """A Divergence of api/api's readiness as the cluster runtime writes it."""
    store.event(
        Event(
            "Divergence",
            t,
            "uid-api",
            "shop",
            "api",
            "api",
            "readiness",
            "shadow",
            {
                "shadow": "ready",
                "kubelet": "not ready",
                "since": t - 12.0,
                "via": "port-forward",
                "likely": LIKELY,
                "message": "kubelet says not ready, shadow says ready for 12s",
            },
        )
    )


def pane_text(app: Any) -> str:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen.threshold.render().plain


def findings_in(pane: str) -> list[str]:
    """The pane's findings, each with the rows it wraps onto (indented two) joined back."""
    out: list[str] = []
    for ln in pane.splitlines():
        if ln[:2] in ("! ", "i ", "✖ "):
            out.append(ln)
        elif out and ln.startswith("  ") and not ln.startswith("   "):
            out[-1] += " " + ln.strip()
    return out


async def test_the_pane_lists_the_selected_probes_findings_worst_first() -> None:
    """crashy/worker's liveness timed out on 9% of its attempts: the evidence rule (a warning)
    comes before the manifest's infos; the other probes keep one line; the border names the
    what-if key because the first finding proposes a setting."""
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.screen.workloads.select(CRASHY)
        await pilot.pause()
        advice = findings_in(pane_text(app))
        assert advice[0].startswith("! observed-latency-near-timeout: 'worker' liveness: 9.1%")
        assert "fix: timeoutSeconds: 2" in advice[0]
        assert all(ln.startswith("i ") for ln in advice[1:])
        assert app.screen.threshold.border_subtitle == "a what-if"


async def test_divergence_reasons_show_in_the_pane_and_wider_in_details() -> None:
    app, store, _ = make_app()
    diverge(store)
    async with app.run_test(size=SIZE) as pilot:
        app.screen.workloads.select(API)
        await pilot.pause()
        text = pane_text(app)
        assert "≠ kubelet says not ready, shadow says ready for 12s (since" in text
        assert "likely network path: the shadow reaches localhost" in text
        assert "likely timing: the two workers probe at different instants" in text
        assert "likely flakiness: failureThreshold 1 turns one slow answer into a flip" in text
        narrow = app.screen.threshold.size.width
        await pilot.press("enter")  # details: the pane takes the width, the reasons with it
        await pilot.pause()
        assert "likely network path" in pane_text(app)
        assert app.screen.threshold.size.width > narrow + 40


async def test_a_cleared_divergence_says_it_was() -> None:
    app, store, _ = make_app()
    diverge(store, T_END - 40)
    store.event(
        Event(
            "DivergenceCleared",
            T_END - 10,
            "uid-api",
            "shop",
            "api",
            "api",
            "readiness",
            "shadow",
            {"message": "shadow and kubelet agree again after 30s"},
        )
    )
    async with app.run_test(size=SIZE) as pilot:
        app.screen.workloads.select(API)
        await pilot.pause()
        assert "≠ was: kubelet says not ready" in pane_text(app)
        assert "agree again after 30s" in pane_text(app)


async def test_the_what_if_key_replays_the_proposal_side_by_side() -> None:
    app, _, _ = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.screen.workloads.select(CRASHY)
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        body = str(app.screen.query_one("#whatif-body", Static).render())
        assert "observed-latency-near-timeout  propose liveness.timeoutSeconds=2" in body
        assert "self-check (model with the recorded settings" in body
        # the synthetic history does not fit the model: the coarser model stands in, side by side
        assert "settings now" in body and "proposal" in body
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_the_what_if_key_says_when_nothing_is_proposed() -> None:
    app, _, _ = make_app()
    # notifications on (run_test leaves them off): the toast on the screen is what is said
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()  # api/api: infos only, none proposes a setting
        assert app.screen.threshold.border_subtitle == ""
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        toasts = [str(toast.render()) for toast in app.screen.query("Toast")]
        assert any("proposes no setting" in text for text in toasts), toasts


async def test_the_what_if_key_is_remappable() -> None:
    app, _, _ = make_app(keymap={"probetui.what-if": "y"})
    async with app.run_test(size=SIZE) as pilot:
        app.screen.workloads.select(CRASHY)
        await pilot.pause()
        assert app.screen.threshold.border_subtitle == "y what-if"
        await pilot.press("a")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, WhatIfScreen)
        await app.workers.wait_for_complete()


def test_the_advisor_caches_until_the_spec_changes_or_refresh_passes() -> None:
    _, store, _ = make_app()
    now = [T_END]
    advisor = Advisor(store, lambda: now[0])
    first = advisor.advice(CRASHY)
    assert first is not None and advisor.advice(CRASHY) is first
    store.containers[CRASHY].version += 1  # the history moved on: stands for REFRESH
    assert advisor.advice(CRASHY) is first
    now[0] += REFRESH
    assert advisor.advice(CRASHY) is not first
    assert advisor.advice(ContainerKey("uid-gone", "x")) is None


def test_divergence_lines_words() -> None:
    fields = {"message": "kubelet says ready, shadow says not ready for 15s", "via": "proxy"}
    assert divergence_lines({**fields, "likely": ["timing: x"]}, None, "12:00:00") == [
        "kubelet says ready, shadow says not ready for 15s (since 12:00:00) · shadow via proxy",
        "likely timing: x",
    ]
    assert divergence_lines({}, "agree again after 3s") == [
        "was: the shadow and the kubelet disagree; agree again after 3s"
    ]


async def test_the_what_if_replays_the_sessions_history_through_the_counterfactual() -> None:
    """A store fed by the kubelet's model for 30 min (readiness failureThreshold 1 against an
    app that fails for 8 s every 150 s): the advice proposes failureThreshold 3, and the
    what-if is the counterfactual over that in-memory history, its self-check passed, the
    what-if column beside the recorded one."""
    from datetime import UTC

    from probetui.prober.status import PodStatus
    from probetui.simulate.scenario import App, Behaviour
    from probetui.spec.model import ProbeType
    from probetui.ui.app import ProbeApp
    from tests.lint.histories import probe, simulate, web
    from tests.ui.fakes import FakeControls, FakeRuntime

    pod = web(readiness=probe(period=5, failure=1))
    fails = tuple((100.0 + 150.0 * i, 108.0 + 150.0 * i) for i in range(10))
    app_model = App(probes={ProbeType.READINESS: Behaviour(fail_between=fails)})
    store = Store()
    store.pod(pod, PodStatus(phase="Running"))
    for e in simulate(pod, app_model, 1800):
        store.event(e)
    app = ProbeApp(FakeControls(FakeRuntime()), store, now=lambda: 1800.0, tz=UTC, run_engine=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "! readiness-flapping: 'app' lost Ready 10 times" in pane_text(app)
        await pilot.press("a")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        body = str(app.screen.query_one("#whatif-body", Static).render())
        assert "readiness-flapping  propose readiness.failureThreshold=3" in body
        assert "  passed" in body and "what-if" in body
        assert "settings now" not in body  # no fallback: the counterfactual answered


async def test_the_pane_proposes_a_start_budget_that_ends_the_kills_when_simulated() -> None:
    """The threshold pane over a session that saw a 20 s start killed at 9 s every time
    (liveness 3 x 3 s, no startup probe, the kubelet model's history in the store): it says no
    start has finished yet, proposes a guess above the longest survival, and that proposal,
    simulated with the real 20 s start (`probetui simulate`'s model, `--set` as the what-if
    would), kills no more. The what-if screen shows the model's run and no replay (one could
    only repeat the last failure of a start it never saw finish)."""
    import re
    from datetime import UTC

    from probetui.prober.status import PodStatus
    from probetui.simulate import apply_overrides, simulate
    from probetui.simulate.scenario import App, Behaviour, Scenario
    from probetui.ui.app import ProbeApp
    from tests.lint.histories import probe, web
    from tests.lint.histories import simulate as history
    from tests.ui.fakes import FakeControls, FakeRuntime

    pod = web(liveness=probe(period=3, failure=3))
    slow = App(start_after=1.0, default=Behaviour(ready_after=20.0))
    store = Store()
    store.pod(pod, PodStatus(phase="Running"))
    for e in history(pod, slow, 120):
        store.event(e)
    app = ProbeApp(FakeControls(FakeRuntime()), store, now=lambda: 120.0, tz=UTC, run_engine=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = " ".join(findings_in(pane_text(app)))
        assert "no start has finished yet" in text
        assert "the longest survived 9 s before its kill" in text
        # the pane's fix, either form (the error's startupProbe comes first, worst first)
        match = re.search(
            r"fix: (?:livenessProbe\.failureThreshold: |add a startupProbe with periodSeconds "
            r"\d+ and failureThreshold )(\d+)",
            text,
        )
        assert match is not None, text
        threshold = int(match.group(1))
        await pilot.press("a")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        body = str(app.screen.query_one("#whatif-body", Static).render())
        proposed = f"liveness.failureThreshold={threshold}"
        assert f"observed-start-near-budget  propose {proposed}" in body
        assert f"with failureThreshold {threshold} no kill" in body
        assert "no counterfactual: no start killed before it finished has answers" in body
    scenario = Scenario(pod=pod, container="app", duration=300.0, app=slow)
    before = simulate(scenario)["summary"]
    after = simulate(apply_overrides(scenario, [proposed]))["summary"]
    assert before["kills"]["liveness"] >= 3
    assert after["kills"]["liveness"] == 0 and after["restarts"] == 0


async def test_the_advice_of_the_lines_next_to_the_cursor_is_worked_out_before_their_key() -> None:
    # a line's advice runs its model rules (simulations): worked out in a poll before j or k
    # selects it, the key's own frame draws the advice kept, as for a line selected before
    app, _, _ = make_app(observes_kubelet=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen)
        wl, advisor = screen.workloads, screen.threshold.advisor
        below = wl.rows[wl.cursor + 1].key
        assert below is not None
        screen.poll()
        screen.poll()
        assert advisor.last(below) is not None
        kept = advisor.last(below)
        await pilot.press("j")
        assert screen.selected == below
        assert screen.threshold.advice is kept
