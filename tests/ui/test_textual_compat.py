"""`ui/textual_compat.py`: each override still fits the Textual it replaces or relies on.

A Textual upgrade that changes an overridden function fails here, naming the override to
re-check; once re-checked (and adapted), the new source hash goes in `ADAPTED_TO`.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import textual.keys
from textual import _time, events
from textual.app import App
from textual.message_pump import MessagePump
from textual.reactive import Reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget

from probetui.ui import textual_compat
from probetui.ui.textual_compat import (
    STRIP_ORIGINALS,
    PacedScreen,
    PacedTimer,
    QuietFocusScreen,
    QuietFocusWidget,
    install_strips,
)


def _textual(name: str) -> Callable[..., Any]:
    """Textual's own function `name` ("Class.method"), not a patch of ours."""
    install_strips()
    owner, attr = name.split(".")
    if owner == "Strip":
        return STRIP_ORIGINALS[attr]
    if owner == "keys":
        return getattr(textual.keys, attr)
    cls = {"Timer": Timer, "Screen": Screen, "Widget": Widget}[owner]
    found = cls.__dict__[attr]
    return found.fget if isinstance(found, property) else found


def _source_hash(fn: Callable[..., Any]) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


# Textual's function -> (its source hash when the override was last checked, the override)
ADAPTED_TO = {
    "Timer._run": ("60c942a84c1a8765", "PacedTimer._run"),
    "Screen._update_timer": ("6736ab93692ef9ed", "PacedScreen._update_timer"),
    "Screen._on_timer_update": ("421401660de142c5", "PacedScreen._on_timer_update"),
    "Widget._on_focus": ("5319a4d73a1e3881", "QuietFocusWidget.on_focus"),
    "Widget._on_blur": ("fff76a4c61b96628", "QuietFocusWidget.on_blur"),
    "Strip.divide": ("f6764f25c39e144b", "install_strips (divide_no_cycle)"),
    "Strip.crop_extend": ("5e83b1f823fcb361", "install_strips (crop_extend_no_cycle)"),
    "keys._character_to_key": ("422e0a6af915a9c4", "character_to_key"),
}


@pytest.mark.parametrize("name", sorted(ADAPTED_TO))
def test_overridden_textual_function_is_the_one_adapted_to(name: str) -> None:
    expected, override = ADAPTED_TO[name]
    assert _source_hash(_textual(name)) == expected, (
        f"Textual changed {name}: re-check textual_compat.{override}, then update ADAPTED_TO"
    )


def test_timer_privates_the_paced_timer_uses_are_there() -> None:
    where = "re-check textual_compat.PacedTimer"
    tick = inspect.signature(Timer._tick)
    assert list(tick.parameters) == ["self", "next_timer", "count"], (
        f"Textual changed Timer._tick: {where}"
    )
    assert all(
        p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in tick.parameters.items() if n != "self"
    ), f"Textual changed Timer._tick: {where}"
    assert inspect.iscoroutinefunction(Timer._tick), f"Textual changed Timer._tick: {where}"
    assert list(inspect.signature(Timer._start).parameters) == ["self"], (
        f"Textual changed Timer._start: {where}"
    )
    assert "def _active(self) -> Event:" in inspect.getsource(Timer), (
        f"Textual changed Timer._active: {where}"
    )
    init = inspect.getsource(Timer.__init__)
    for attr in ("self._interval = interval", "self._repeat = repeat"):
        assert attr in init, f"Textual changed Timer.__init__ ({attr}): {where}"
    assert callable(_time.get_time) and inspect.iscoroutinefunction(_time.sleep), (
        f"Textual changed textual._time: {where}"
    )


def test_the_screen_reaches_its_update_timer_through_the_property_alone() -> None:
    # PacedScreen replaces the property; a use of Textual's private slot behind it would
    # bypass the paced timer
    where = "re-check textual_compat.PacedScreen._update_timer"
    source = inspect.getsource(Screen)
    assert len(re.findall(r"self\.__update_timer\b", source)) == 4, (
        f"Textual changed how Screen reaches its update timer: {where}"
    )
    assert "self._timers: WeakSet[Timer] = WeakSet()" in inspect.getsource(MessagePump.__init__), (
        f"Textual changed MessagePump._timers: {where}"
    )
    assert "Timer._stop_all(self._timers)" in inspect.getsource(MessagePump), (
        f"Textual no longer stops MessagePump._timers with the screen: {where}"
    )


def test_quiet_focus_differs_from_textual_focused_in_repaint_alone() -> None:
    ours, textual = QuietFocusScreen.__dict__["focused"], Screen.__dict__["focused"]
    assert isinstance(textual, Reactive), (
        "Textual changed Screen.focused: re-check textual_compat.QuietFocusScreen"
    )
    differ = {
        k
        for k in vars(textual).keys() | vars(ours).keys()
        if k != "_owner" and vars(textual).get(k) != vars(ours).get(k)
    }
    assert differ == {"_repaint"}, (
        f"Textual changed Screen.focused ({sorted(differ)}): re-check "
        "textual_compat.QuietFocusScreen"
    )


def test_every_module_but_textual_compat_leaves_textual_privates_alone() -> None:
    # an import of a private Textual module, or a private name read off a Textual object,
    # belongs in textual_compat (where its test is)
    root = Path(textual_compat.__file__).parents[1]
    private_import = re.compile(
        r"from textual(\.\w+)* import .*\b_[a-z]|from textual\._|import textual\._"
    )
    textual_private = re.compile(
        r"\._(update_timer|on_timer_update|timers|exit|screen_stack)\b|def _on_[a-z_]+\("
    )
    patches = re.compile(r"\b(Strip|Screen|Widget|App|Timer)\.\w+ = ")
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "textual_compat.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if private_import.search(line) or patches.search(line):
                found.append(f"{path.relative_to(root.parent)}:{n}: {line.strip()}")
            if path.parent.name in ("ui", "screens", "widgets") and textual_private.search(line):
                found.append(f"{path.relative_to(root.parent)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


class _Counted(Widget, can_focus=True):
    """A focusable widget that counts its refreshes of the whole widget."""

    whole = 0

    def refresh(self, *regions: Any, **kwargs: Any) -> _Counted:
        if not regions:
            self.whole += 1
        return super().refresh(*regions, **kwargs)


class _Quiet(QuietFocusWidget, _Counted):
    repaints: list[bool]

    def focus_repaint(self) -> None:
        self.repaints.append(self.has_focus)


class _Told(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.told: list[str] = []

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self.told.append("focus")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self.told.append("blur")


async def _blur_and_focus(widget: _Counted) -> tuple[int, list[str]]:
    """Focus `widget`, then blur and focus it again; return its whole refreshes in those
    two moves and what its parent was told of all three."""
    app = _Told()
    async with app.run_test() as pilot:
        await app.mount(widget)
        widget.focus()
        await pilot.pause()
        before = widget.whole
        app.set_focus(None)
        await pilot.pause()
        assert not widget.has_focus
        widget.focus()
        await pilot.pause()
        assert widget.has_focus
        return widget.whole - before, app.told


async def test_quiet_focus_does_what_textual_does_but_the_whole_repaint() -> None:
    quiet = _Quiet()
    quiet.repaints = []
    quiet_whole, quiet_told = await _blur_and_focus(quiet)
    textual_whole, textual_told = await _blur_and_focus(_Counted())
    assert quiet_told == textual_told == ["focus", "blur", "focus"]
    assert quiet.repaints[:3] == [True, False, True]  # (then a blur as the app closes)
    # Textual's focus and blur handlers refresh the whole widget once each
    assert textual_whole - quiet_whole == 2, (
        "Textual changed Widget._on_focus/_on_blur or prevent_default: re-check "
        "textual_compat.QuietFocusWidget"
    )


async def test_paced_screen_draws_on_a_paced_timer_stopped_with_the_screen() -> None:
    class Paced(PacedScreen, Screen[None]):
        pass

    app = App[None]()
    async with app.run_test() as pilot:
        screen = Paced()
        await app.push_screen(screen)
        await pilot.pause()
        timer = screen._update_timer
        assert isinstance(timer, PacedTimer)
        assert timer in screen._timers
        drawn: list[bool] = []
        screen.after_frame(lambda: drawn.append(True))
        await pilot.pause(0.1)
        assert drawn == [True]
        app.pop_screen()
        await pilot.pause(0.1)
    assert timer._task is None or timer._task.done()
