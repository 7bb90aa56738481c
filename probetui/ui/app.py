"""The Textual app wires the engine, the store and the screens together.

`run(engine)` is the entry point the CLI calls. The engine runs as an asyncio task the app owns;
it feeds the `Store` synchronously (no message per event reaches Textual), and the app polls
the store on a timer, at most ten times a second, redrawing only what changed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import App
from textual.binding import BindingType
from textual.screen import Screen

from probetui.memory import GcPacer
from probetui.runtime.base import RuntimeFailure
from probetui.timeline.store import Store
from probetui.ui import keys
from probetui.ui.commands import ProbeCommands
from probetui.ui.context import UIContext
from probetui.ui.controls import Controls
from probetui.ui.screens.help import HelpScreen, key_rows
from probetui.ui.screens.main import MainScreen
from probetui.ui.textual_compat import PacedScreen, install_strips
from probetui.ui.themes import DEFAULT_THEME, PROBETUI_THEMES

if TYPE_CHECKING:
    from probetui.engine import Engine
    from probetui.record.archive import HistoryArchive

log = logging.getLogger(__name__)

POLL_SECONDS = 0.1  # at most ten repaints a second
STOP_SECONDS = 5.0  # how long quitting waits for the engine to clean up


class ProbeApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "probetui"
    BINDINGS: ClassVar[list[BindingType]] = keys.APP
    COMMANDS: ClassVar = App.COMMANDS | {ProbeCommands}

    def __init__(
        self,
        controls: Controls,
        store: Store,
        *,
        now: Callable[[], float] | None = None,
        tz: tzinfo | None = None,
        screenshot_dir: str | Path | None = None,
        keymap: dict[str, str] | None = None,
        theme: str | None = None,
        run_engine: bool = True,
        poll_seconds: float = POLL_SECONDS,
        pace_gc: bool = True,
        notices: list[Callable[[], str | None]] | None = None,
        make_screen: Callable[[UIContext], MainScreen] | None = None,
        archive: HistoryArchive | None = None,
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__()
        # every line drawn would otherwise be freed only by the cyclic collector
        install_strips()
        self.make_screen = make_screen or MainScreen
        # polled with the store: a line to show once (the recorder's full disk, say)
        self.notices = list(notices or [])
        # what headless says on stderr at the start, shown on the screen instead
        self.notes = tuple(notes)
        self.controls = controls
        self.store = store
        self.ctx = UIContext(store, controls, now or time.time, tz, archive=archive)
        self.screenshot_dir = Path(screenshot_dir) if screenshot_dir is not None else Path.cwd()
        self.run_engine = run_engine
        self.poll_seconds = poll_seconds
        self.failure: str | None = None
        self.runtime_failure: RuntimeFailure | None = None
        self.exit_code = 0
        self._engine_task: asyncio.Task[None] | None = None
        self._main: MainScreen | None = None
        self.gc_pacer = GcPacer() if pace_gc else None
        for own in PROBETUI_THEMES:
            self.register_theme(own)
        # registered first: the palette's Theme command lists probetui's with Textual's
        self.theme = theme or DEFAULT_THEME
        # what the hints in titles read (keys.shown); Textual's own copy is private
        self.keymap_in_force = dict(keymap or {})
        if keymap:
            self.set_keymap(keymap)

    # -- wiring -----------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        self._main = self.make_screen(self.ctx)
        return self._main

    def on_mount(self) -> None:
        for text in self.notes:
            self.notify(text, timeout=10)
        if self.run_engine:
            self._engine_task = asyncio.create_task(self._run_engine(), name="probetui-engine")
        self.set_interval(self.poll_seconds, self._poll, name="probetui-poll")

    def _poll(self) -> None:
        main = self._main
        if main is not None and main.is_mounted and self.return_code is None:
            main.poll()
        if self.gc_pacer is not None:
            self.gc_pacer.tick(self.store.layout_version)
        for notice in self.notices:
            text = notice()
            if text:
                self.notify(text, severity="error", timeout=30)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key):
            if self.gc_pacer is not None:
                self.gc_pacer.key_pressed()
            screen = self.screen if self.screen_stack else None
            if isinstance(screen, PacedScreen):
                screen.hasten()
        await super().on_event(event)

    async def _run_engine(self) -> None:
        try:
            await self.controls.run()
        except asyncio.CancelledError:
            raise
        except RuntimeFailure as exc:
            # the command line reports it as headless does (bad input, one line): `run` raises it
            self.runtime_failure = exc
            self._fail(str(exc))
        except (
            Exception
        ) as exc:  # the engine is gone: say so in one line, keep the trace in the log
            log.exception("the engine stopped")
            self._fail(f"probetui: the engine stopped: {exc}")
        else:
            self.notify("the runtime has stopped: what is shown no longer changes", timeout=10)

    def _fail(self, message: str) -> None:
        self.failure = message
        self.exit_code = 1
        self.exit(return_code=1)

    async def stop_engine(self) -> None:
        task = self._engine_task
        if task is None or task.done():
            return
        task.cancel()
        # the runtime reaps its processes on cancellation; do not hang on one that does not
        await asyncio.wait({task}, timeout=STOP_SECONDS)

    # -- app-wide actions -------------------------------------------------------------------

    async def action_quit(self) -> None:
        await self.stop_engine()
        self.exit(return_code=self.exit_code)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        rows = key_rows(self.screen.active_bindings, self.get_key_display)
        self.push_screen(HelpScreen(rows, self.ctx.read_only))

    def action_what_if(self) -> None:
        """The what-if screen for the threshold pane's proposals (`screens/whatif.py`)."""
        from probetui.ui.screens.whatif import open_what_if

        open_what_if(self, self._main)

    def action_screenshot_svg(self) -> None:
        name = f"probetui-{datetime.now():%Y%m%d-%H%M%S}.svg"
        try:
            self.screenshot_dir.mkdir(parents=True, exist_ok=True)
            path = self.save_screenshot(name, str(self.screenshot_dir))
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc}", severity="error")
            return
        self.last_screenshot = os.path.abspath(path)
        if self._main is not None and self.screen is self._main:
            self._main.say(f"screenshot saved to {self.last_screenshot}")
        else:
            self.notify(f"screenshot saved to {self.last_screenshot}", timeout=8)


def run(
    engine: Engine,
    *,
    store: Store | None = None,
    keymap: dict[str, str] | None = None,
    theme: str | None = None,
    screenshot_dir: str | Path | None = None,
    notices: list[Callable[[], str | None]] | None = None,
    archive: HistoryArchive | None = None,
    notes: Sequence[str] = (),
) -> int:
    """Run the UI over `engine` until the user quits; returns the process exit code.
    `archive`: the recording being written, for the timeline's history past the rings."""
    if store is None:
        store = Store()
    if store not in engine.sinks:
        engine.sinks.append(store)
    app = ProbeApp(
        engine,
        store,
        keymap=keymap,
        theme=theme,
        screenshot_dir=screenshot_dir,
        notices=notices,
        archive=archive,
        notes=notes,
    )
    try:
        app.run()
    finally:
        if archive is not None:
            archive.close()
    if app.runtime_failure is not None:
        raise app.runtime_failure
    if app.failure:
        print(app.failure, file=sys.stderr)
    return app.exit_code if app.return_code is None else max(app.exit_code, app.return_code)


def run_replay(
    path: str,
    *,
    start: str | None = None,
    keymap: dict[str, str] | None = None,
    theme: str | None = None,
    screenshot_dir: str | Path | None = None,
) -> int:
    """The replay screen over the recording at `path`, its cursor at `start` (a time as
    `--since` takes it; default: the recording's end)."""
    from probetui.record.archive import HistoryArchive
    from probetui.record.reader import open_recording
    from probetui.record.timespec import parse_time
    from probetui.replay.player import Player
    from probetui.ui.screens.replay import ReplayScreen

    with open_recording(path) as recording:
        span = recording.span()
        at = parse_time(start, span) if start and span is not None else None
        player = Player(recording, start=at)
        app = ProbeApp(
            player,
            player.store,
            now=player.now,
            keymap=keymap,
            theme=theme,
            screenshot_dir=screenshot_dir,
            make_screen=lambda ctx: ReplayScreen(ctx, player),
            archive=HistoryArchive(path),
        )
        try:
            app.run()
        finally:
            app.ctx.archive.close()  # type: ignore[union-attr]
    if app.failure:
        print(app.failure, file=sys.stderr)
    return app.exit_code if app.return_code is None else max(app.exit_code, app.return_code)


__all__ = ["ProbeApp", "run", "run_replay"]
