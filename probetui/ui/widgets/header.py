"""Draw the top bar (source, clock, READ-ONLY or REPLAY) and the selected container's summary."""

from __future__ import annotations

import time

from rich.text import Text
from textual.widget import Widget

from probetui.keys import ContainerKey
from probetui.prober.lateness import BEHIND, behind_words
from probetui.prober.status import ContainerStatus
from probetui.timeline.events import EventType
from probetui.timeline.store import ContainerHistory
from probetui.triage.groups import RESTARTING_SECONDS, Fleet, FleetCount
from probetui.ui import glyphs as g
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.describe import duration
from probetui.ui.widgets.lines import LineCached

# the fleet's "restarting": pods restarted within the window, or waiting to start again
RESTARTED = f"restarted in {duration(RESTARTING_SECONDS)}"


class TopBar(Widget):
    DEFAULT_CSS = """
    TopBar { height: 1; dock: top; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    FLASH_SECONDS = 5.0
    # the fleet summary counts every pod: where that costs more than FLEET_FREE seconds, it
    # is counted again only after FLEET_SHARE times as long, so that a large fleet all changed
    # at every poll (a replay playing fast) is not counted again in each frame
    FLEET_FREE = 0.004
    FLEET_SHARE = 100.0

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self._second = -1
        self.message = ""
        self._message_style = ""
        self._message_until = 0.0
        self._fleet: tuple[tuple[int, int], Fleet] | None = None
        self._fleet_at = 0.0  # when the summary may be counted again (monotonic)
        self._fleet_count = FleetCount(ctx.store)

    def flash(self, message: str, style: str = "") -> None:
        """Say something for a few seconds (cheaper than a toast: no widget, no layout). What
        does not fit the bar's room is also said whole in a toast, which wraps."""
        self.message, self._message_style = message, style or g.INFO
        self._message_until = time.monotonic() + self.FLASH_SECONDS
        if self.is_mounted and self.size.width > 0 and len(message) > self._room():
            severity = "information" if self._message_style == g.INFO else "warning"
            self.app.notify(message, severity=severity, timeout=self.FLASH_SECONDS + 3)
        self.refresh()

    def _room(self) -> int:
        """Return the cells the bar has left for a message, between the fleet and the right side."""
        return self.size.width - self._left().cell_len - self._right().cell_len - 4

    def tick(self) -> None:
        second = int(self.ctx.now())
        if self.message and time.monotonic() > self._message_until:
            self.message = ""
            self.refresh()
        if second != self._second:
            self._second = second
            self.refresh()

    def render(self) -> Text:
        left, right = self._left(), self._right()
        if self.message:
            # cut to its room, so the right side stays; said whole in a toast (`flash`)
            room = self.size.width - left.cell_len - right.cell_len - 4
            message = self.message
            if len(message) > room:
                message = message[: max(0, room - 1)] + "…" if room > 1 else ""
            left.append("   ")
            left.append(message, style=self._message_style)
        width = self.size.width
        gap = max(1, width - left.cell_len - right.cell_len)
        return left + Text(" " * gap) + right

    def _left(self) -> Text:
        """Where, when, and the fleet summed up."""
        runtime = self.ctx.controls.runtime
        left = Text(no_wrap=True, overflow="ellipsis")
        left.append(" probetui ", style="bold reverse")
        left.append(f"  {runtime.source or '?'}", style="bold")
        if runtime.via and runtime.via != "loopback":
            left.append(f"  via {runtime.via}", style=g.DIM)
        # a replay's controls say where the cursor is and whether it plays; live ones do not
        status = getattr(self.ctx.controls, "status", None)
        if status is not None:
            left.append("  ")
            left.append(f" {status()} ", style="bold reverse " + g.INFO)
            left.append(f"  {self.ctx.date_time(self.ctx.now())}", style="bold")
        else:
            left.append(f"  {self.ctx.clock(self.ctx.now())}")
        left.append("   ")
        room = self.size.width - left.cell_len - self._right().cell_len - 1
        left.append_text(self._fleet_text(room))
        return left

    def _right(self) -> Text:
        """Return the badges and the help key."""
        right = Text(no_wrap=True)
        late = self.ctx.controls.lateness()
        if late >= BEHIND:
            # past what one process can probe on time: its verdicts are not the containers'
            right.append(f" {behind_words(late)} ", style="bold reverse " + g.BAD)
            right.append("  ")
        if self.ctx.read_only:
            right.append(" READ-ONLY ", style="bold reverse " + g.WARN)
            # why: a flag, a context rule, a lock; so nobody wonders how to lift it
            reason = self.ctx.controls.runtime.read_only_reason
            if reason:
                right.append(f" {reason}", style=g.WARN)
            right.append("  ")
        right.append(f"{keys.shown(self.app, 'probetui.help')} help ", style=g.DIM)
        return right

    def _fleet_text(self, room: int) -> Text:
        """ "63 pods · 6 not ready · 6 ≠ · 0 restarted in 10m": whether anything is wrong, and how
        much, before any line of the list is read."""
        now = self.ctx.now()
        stamp = (self.ctx.store.version, int(now))
        if self._fleet is None or (self._fleet[0] != stamp and time.monotonic() >= self._fleet_at):
            start = time.monotonic()
            self._fleet = (stamp, self._fleet_count.count(now))
            took = time.monotonic() - start
            self._fleet_at = start + took * self.FLEET_SHARE if took > self.FLEET_FREE else 0.0
        f = self._fleet[1]
        text = Text()
        text.append(f"{f.pods} pod{'s' if f.pods != 1 else ''}")
        text.append(" · ")
        text.append(f"{f.not_ready} not ready", style=g.BAD if f.not_ready else "")
        text.append(" · ")
        text.append(f"{f.divergent} {g.DIVERGE}", style="magenta" if f.divergent else "")
        text.append(" · ")
        # the words say the window the count is over; a bar without room for them (80
        # columns, a replay's long file name) has the glyph (the help's legend says what ↺ is)
        count = str(f.restarting)
        word = RESTARTED if text.cell_len + len(count) + 1 + len(RESTARTED) <= room else g.RESTARTS
        text.append(f"{count} {word}", style=g.WARN if f.restarting else "")
        return text


def state_words(cs: ContainerStatus | None, now: float) -> tuple[str, str]:
    """(words, style) for a container's state: Running 2m10s, Waiting: CrashLoopBackOff ..."""
    if cs is None:
        return "not created", g.DIM
    if cs.running is not None:
        return f"Running {duration(max(0.0, now - cs.running.started_at))}", g.OK
    if cs.terminated is not None:
        t = cs.terminated
        return f"Terminated: {t.reason or 'exit'} {t.exit_code}", g.BAD
    waiting = cs.state
    reason = getattr(waiting, "reason", "") or "Waiting"
    return f"Waiting: {reason}", g.WARN


def _back_off_ends(history: ContainerHistory | None, cs: ContainerStatus | None) -> float | None:
    """When the current back-off ends, from the last BackOff mark, while the container waits."""
    if history is None or cs is None or cs.running is not None or cs.terminated is not None:
        return None
    for mark in reversed(history.marks):
        if mark.type == EventType.BACK_OFF:
            delay = mark.fields.get("delay")
            return mark.t + float(delay) if delay else None
        if mark.type in (EventType.CONTAINER_STARTED, EventType.CONTAINER_EXITED):
            break
    return None


class DetailHeader(LineCached):
    """Shows one line: `pod / container  Ready ✗  Started ✓  restarts 2  Running 1m20s`"""

    DEFAULT_CSS = """
    DetailHeader { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(self, ctx: UIContext, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.ctx = ctx
        self.key: ContainerKey | None = None

    def show(self, key: ContainerKey | None) -> None:
        if key == self.key:
            self.update()  # the same container again: redrawn only if it reads differently
            return
        self.key = key
        self.refresh()

    def update(self) -> None:
        """Redraw if the line reads differently (the poll asks every second and on every
        change of the container; its uptime moves by the minute)."""
        if self._lines is None:
            return  # drawn in the next frame anyway
        self.show_lines(self.render())

    def render(self) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        if self.key is None:
            text.append(" no container selected: pick one on the left (j/k, ↑/↓)", style=g.DIM)
            return text
        entry = self.ctx.pod_entry(self.key.pod_uid)
        if entry is None:
            text.append(" the pod is gone", style=g.DIM)
            return text
        c = entry.pod.container(self.key.container)
        cs = entry.status.lookup(self.key.container)
        text.append(f" {entry.pod.namespace}/{entry.pod.name}", style="bold")
        text.append(" / ")
        text.append(self.key.container, style="bold")
        if c is not None and c.is_restartable_init:
            text.append(f" {g.SIDECAR}sidecar", style=g.DIM)
        ready = cs is not None and cs.ready
        started = cs is not None and bool(cs.started)
        text.append("   Ready ")
        text.append(g.YES if ready else g.NO, style=g.OK if ready else g.BAD)
        text.append("  Started ")
        text.append(g.YES if started else g.NO, style=g.OK if started else g.WARN)
        restarts = cs.restart_count if cs is not None else 0
        text.append("  restarts ")
        text.append(str(restarts), style=g.WARN if restarts else "")
        now = self.ctx.now()
        words, style = state_words(cs, now)
        history = self.ctx.store.containers.get(self.key)
        retry = _back_off_ends(history, cs)
        if retry is not None and retry > now:
            words += f", next start in {duration(retry - now)}"
        text.append("   ")
        text.append(words, style=style)
        if history is not None and history.divergences:
            text.append(f"   {g.DIVERGE} {history.last_divergence}", style="magenta")
        return text
