"""SVG snapshots of the threshold pane with lint findings and with divergence reasons, and of
the what-if screen (pytest-textual-snapshot), from the synthetic store.

The pane is drawn alone in a small app of its own, at the height the main screen gives it, so
these baselines change only with the pane (the workload list beside it has its own). The
baselines were looked at before they were accepted; `pytest --snapshot-update
tests/ui/test_advice_snapshots.py` rewrites them after a deliberate change.
"""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from probetui.keys import ContainerKey
from probetui.spec.model import ProbeType
from probetui.ui.context import UIContext
from probetui.ui.screens.whatif import WhatIfScreen
from probetui.ui.widgets.threshold import ThresholdPane
from tests.ui.fakes import make_app
from tests.ui.test_advice import API, CRASHY, diverge

SIZE = (140, 11)


class PaneApp(App[None]):
    CSS = """
    #threshold { height: 11; border: round $primary; border-title-style: bold; padding: 0 1; }
    """

    def __init__(self, ctx: UIContext, key: ContainerKey, probe: ProbeType) -> None:
        super().__init__()
        self.ctx, self.key, self.probe = ctx, key, probe
        self.threshold = ThresholdPane(ctx, id="threshold")

    def compose(self) -> ComposeResult:
        yield self.threshold

    def on_mount(self) -> None:
        self.threshold.show(self.key, self.probe)


def _pane(key: ContainerKey, probe: ProbeType, divergence: bool = False) -> PaneApp:
    app, store, _ = make_app()
    if divergence:
        diverge(store)
    return PaneApp(app.ctx, key, probe)


def test_threshold_pane_with_findings(snap_compare: Any) -> None:
    """crashy/worker: the liveness block, then its findings worst first (the observed timeouts,
    a warning, before the manifest's infos); the border offers the what-if."""
    assert snap_compare(_pane(CRASHY, ProbeType.LIVENESS), terminal_size=SIZE)


def test_threshold_pane_with_divergence_reasons(snap_compare: Any) -> None:
    """api/api's readiness diverged: the disagreement and each likely reason on its own line,
    the liveness probe on one line to make room."""
    assert snap_compare(_pane(API, ProbeType.READINESS, divergence=True), terminal_size=SIZE)


def test_what_if_screen(snap_compare: Any) -> None:
    """The what-if of crashy/worker's proposed timeoutSeconds, once its replay is done: the
    self-check that refuses the counterfactual on this synthetic history, then the coarser
    model's settings now and proposal side by side."""
    app = _pane(CRASHY, ProbeType.LIVENESS)

    async def run_before(pilot: Any) -> None:
        await pilot.pause()
        pane = pilot.app.threshold
        assert pane.advice is not None and pane.key is not None
        pilot.app.push_screen(WhatIfScreen(pane.advice, pane.key.container, pane.proposals()))
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, run_before=run_before, terminal_size=(140, 30))
