"""Show a proposed fix replayed over the session's history: the what-if screen.

Opened from the threshold pane's advice for the selected probe (its key: `probetui.what-if`).
Each finding there that proposes a setting (`Hit.overrides`, in `simulate --set` terms) is
replayed through the counterfactual (`simulate/counterfactual.py`) over the pod's history as
the store holds it in memory (`lint.live.Advice.observed`: the same reading `lint --cluster`
makes): the recorded kills, restarts, seconds not ready and slowest start beside the model with
the recorded settings and the model with the proposal, side by side. The model is trusted only
when its self-check passes (it reproduces what the kubelet did); otherwise the screen says why
there is no what-if, and falls back to `probetui simulate`'s model over the probe's recent
attempts (`lint.live.model_what_if`): settings now against the proposal. A proposal the rule
already ran through the kubelet's model (`Hit.verified`: a start-up budget against the starts
seen) shows that run instead of the fallback, and one a replay cannot judge (`Hit.unreplayable`:
a start killed before it finished has no answers past its kill) is not replayed: the screen
says why. The replay runs on
the event loop in an async worker, one proposal at a time with a repaint between: it is bounded
by one pod's ring-buffered history (tens of milliseconds an hour), and nothing here reads the
store or does I/O.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from probetui.lint.live import Advice, ModelWhatIf, model_what_if
from probetui.lint.model import Finding
from probetui.simulate.counterfactual import Counterfactual
from probetui.simulate.report import render_counterfactual
from probetui.ui import glyphs as g
from probetui.ui import keys
from probetui.ui.textual_compat import PacedScreen

if TYPE_CHECKING:
    from probetui.ui.screens.main import MainScreen


Result = tuple[Counterfactual | str, ModelWhatIf | str | None]


def model_lines(m: ModelWhatIf) -> list[str]:
    """Return the fallback's side by side: the model with the settings now and with the proposal."""
    lines = [
        f"the model over the last {m.seconds / 60:.0f} min of this probe's attempts instead",
        "(coarser: each failure a failing stretch, each answer the median latency):",
        "",
        f"{'':<24}{'settings now':>14}{'proposal':>14}",
    ]

    def row(label: str, before: str, after: str) -> None:
        lines.append(f"{label:<24}{before:>14}{after:>14}")

    b, a = m.before, m.after
    row("kills", str(b.kills), str(a.kills))
    row("exits", str(b.exits), str(a.exits))
    row("seconds not ready", f"{b.not_ready_seconds:.0f}", f"{a.not_ready_seconds:.0f}")
    return lines


def result_text(finding: Finding, result: Result | None) -> Text:
    """Return one proposal: the finding, then the side-by-side table (or why there is none)."""
    text = Text()
    text.append(f"{finding.rule.id}", style="bold")
    text.append(f"  propose {', '.join(finding.hit.overrides)}\n", style="bold " + g.INFO)
    text.append(f"  {finding.hit.message}\n", style=g.DIM)
    if finding.hit.verified:
        text.append(f"  the kubelet's model, {finding.hit.verified}\n")
    if result is None:
        text.append("  replaying the history through the kubelet's model ...\n", style=g.DIM)
        return text
    cf, model = result
    if isinstance(cf, str):
        text.append(f"  no counterfactual: {cf}\n", style=g.WARN)
    else:
        for line in render_counterfactual(cf):
            style = g.WARN if "FAILED" in line else ""
            text.append(f"  {line}\n", style=style)
    if isinstance(model, str):
        text.append(f"  nor the model over the recent attempts: {model}\n", style=g.WARN)
    elif model is not None:
        text.append("\n")
        for line in model_lines(model):
            text.append(f"  {line}\n")
    return text


class WhatIfScreen(PacedScreen, ModalScreen[None]):
    CSS_PATH = str(Path(__file__).with_suffix(".tcss"))
    BINDINGS: ClassVar[list[BindingType]] = keys.WHAT_IF

    def __init__(self, advice: Advice, container: str, proposals: list[Finding]) -> None:
        super().__init__()
        self.advice = advice
        self.container = container
        self.proposals = proposals
        self.results: list[Result | None] = [None] * len(proposals)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="whatif-box") as box:
            history = self.advice.observed.histories[0]
            box.border_title = f"what-if: {history.pod.name}/{self.container}"
            box.border_subtitle = "esc closes"
            yield Static(self._text(), id="whatif-body")

    def on_mount(self) -> None:
        # CPU work over one pod's ring-bounded history (tens of ms an hour): on the loop, a
        # repaint between proposals; a thread would hold the same GIL and add a second path in
        # after the first paint, so the screen shows at once and each answer lays out anew
        self.call_after_refresh(
            lambda: self.run_worker(self._replay(), exclusive=True, group="what-if")
        )

    def _text(self) -> Text:
        history = self.advice.observed.histories[0]
        text = Text()
        text.append(
            f"over the {history.seconds / 60:.0f} min of history this session holds for the "
            "pod: recorded, the model with the recorded settings, the model with the "
            "proposal\n\n",
            style=g.DIM,
        )
        for finding, result in zip(self.proposals, self.results, strict=True):
            text.append_text(result_text(finding, result))
            text.append("\n")
        return text

    async def _replay(self) -> None:
        observed = self.advice.observed
        history = observed.histories[0]
        for i, finding in enumerate(self.proposals):
            await asyncio.sleep(0)  # the previous answer is drawn before the next is worked
            overrides = finding.hit.overrides
            if finding.hit.unreplayable:
                # a replay would mislead (the finding says why); its model run stands alone
                self._got(i, (finding.hit.unreplayable, None))
                continue
            cf = observed.what_if(history, self.container, overrides)
            model = None
            if (isinstance(cf, str) or cf.what_if is None) and not finding.hit.verified:
                # no counterfactual to trust: the coarser model over the recent attempts
                model = model_what_if(history, self.container, overrides)
            self._got(i, (cf, model))

    def _got(self, i: int, result: Result) -> None:
        self.results[i] = result
        if self.is_mounted:
            self.query_one("#whatif-body", Static).update(self._text())


def open_what_if(app: App[object], main: MainScreen | None) -> None:
    """Push the screen for the main screen's threshold pane, or say why there is nothing to try."""
    if main is None or app.screen is not main or isinstance(app.screen, WhatIfScreen):
        return
    pane = main.threshold
    proposals = pane.proposals()
    if pane.key is None or pane.advice is None or not pane.advice.observed.histories:
        app.notify("what-if: select a container first", timeout=5)
        return
    if not proposals:
        probe = pane.selected.key if pane.selected is not None else "this"
        app.notify(f"what-if: the advice proposes no setting for the {probe} probe", timeout=5)
        return
    app.push_screen(WhatIfScreen(pane.advice, pane.key.container, proposals))


__all__ = ["WhatIfScreen", "open_what_if", "result_text"]
