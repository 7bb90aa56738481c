"""Show the main screen over a recording, its clock a time cursor: the replay screen.

Everything the main screen draws comes from the store, which the `Player` keeps at the state of
the cursor; this screen adds the keys that move the cursor and the prompt for a time.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widgets import Input

from probetui.record.timespec import TimeSpecError, parse_time
from probetui.replay.player import NOTHING_RUNS, Player
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.screens.main import MainScreen


class ReplayScreen(MainScreen):
    BINDINGS: ClassVar[list[BindingType]] = keys.REPLAY

    def __init__(self, ctx: UIContext, player: Player) -> None:
        super().__init__(ctx)
        self.player = player
        player.clock_words = ctx.clock  # the top bar names a gap's ends in the screen's zone
        self.goto_box = Input(placeholder="go to: 03:10, -6h, +10m, 2026-03-01T03:10", id="goto")

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield self.goto_box

    def on_mount(self) -> None:
        super().on_mount()
        self.goto_box.display = False

    def _moved(self, what: str = "") -> None:
        # the store was refilled or fed: the next poll redraws what changed
        self.poll()
        if what:
            self.say(what)

    # -- the cursor ---------------------------------------------------------------------------

    def action_play(self) -> None:
        if self.player.toggle():
            self.say(f"playing at {self.player.speed:g}x")
        elif self.player.cursor >= self.player.last:
            self.say("at the end of the recording", warning=True)
        else:
            self.say("paused")

    def action_speed(self, speed: float) -> None:
        self.player.set_speed(float(speed))
        self.say(f"speed {float(speed):g}x" + ("" if self.player.playing else " (x plays)"))

    def action_step(self, seconds: float) -> None:
        self.player.step(float(seconds))
        self._moved()

    def action_notable(self, direction: int) -> None:
        t = self.player.jump(int(direction))
        if t is None:
            where = "after" if int(direction) > 0 else "before"
            self.say(f"no result flip, kill, back-off or divergence {where} the cursor", True)
            return
        self._moved(f"at {self.ctx.date_time(t)}")

    def action_goto(self) -> None:
        if self._pending is not self.goto_box:  # else armed by its key, what followed it typed in
            self.arm_prompt(self.goto_box)
        self.open_prompt(self.goto_box)

    def prompt_of(self, action: str) -> Input | None:
        return self.goto_box if action == "goto" else super().prompt_of(action)

    def arm_prompt(self, box: Input) -> None:
        if box is self.goto_box:
            box.value = ""

    @on(Input.Submitted, "#goto")
    def _goto_done(self, event: Input.Submitted) -> None:
        self._pending = None
        self.goto_box.display = False
        self.workloads.focus()
        text = event.value.strip()
        if not text:
            return
        try:
            t = parse_time(text, (self.player.first, self.player.last))
        except TimeSpecError as e:
            self.say(str(e), warning=True)
            return
        self.player.seek(t)
        self._moved(f"at {self.ctx.date_time(self.player.cursor)}")

    def action_back(self) -> None:
        if self.goto_box.has_focus:
            self._pending = None
            self.goto_box.display = False
            self.workloads.focus()
            return
        super().action_back()

    # -- what does nothing here ---------------------------------------------------------------

    def action_pause(self) -> None:
        self.say(f"pause: {NOTHING_RUNS}", warning=True)

    def action_probe_all(self) -> None:
        self.say(f"probe now: {NOTHING_RUNS}", warning=True)
