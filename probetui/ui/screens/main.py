"""Lay out the main screen: workloads on the left, the selection's panes on the right.

The panes are timeline, threshold state and attempts, or, with the cursor on a workload's
line, that workload's probes across its replicas.

The screen owns the layout and the selection (container, probe). On each tick of the app's
timer it asks the store what changed since it last looked and redraws only that.
"""

from __future__ import annotations

import math
import time
from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input

from probetui.keys import ContainerKey, ProbeKey
from probetui.prober.results import ResultValue
from probetui.spec.model import Container, ProbeType
from probetui.timeline.events import EventType
from probetui.timeline.history import ProbeHistory
from probetui.timeline.store import ContainerHistory
from probetui.ui import keys
from probetui.ui.context import UIContext
from probetui.ui.messages import ContainerSelected
from probetui.ui.textual_compat import PacedScreen, QuietFocusScreen
from probetui.ui.widgets.attempts import AttemptLog
from probetui.ui.widgets.filter_box import FilterBox
from probetui.ui.widgets.footer import KeyFooter
from probetui.ui.widgets.header import DetailHeader, TopBar
from probetui.ui.widgets.pane import Pane
from probetui.ui.widgets.threshold import ThresholdPane
from probetui.ui.widgets.timeline import Timeline
from probetui.ui.widgets.workload_probes import WorkloadProbeView
from probetui.ui.widgets.workloads import SORTS, WorkloadHeader, WorkloadList

# the probe shown first for a container doing no harm: the one most often in trouble first
PREFERRED = (ProbeType.READINESS, ProbeType.LIVENESS, ProbeType.STARTUP)
KILLERS = (ProbeType.LIVENESS.key, ProbeType.STARTUP.key)  # a Killing mark's probe
CYCLE = (ProbeType.STARTUP, ProbeType.READINESS, ProbeType.LIVENESS)
# wall seconds between re-sorts when the order depends on live state; where a re-sort costs
# more than a 1/RESORT_SHARE share of that, they come that much further apart (a large replay
# playing fast changes every pod between two re-sorts)
RESORT_EVERY = 2.0
RESORT_SHARE = 100.0
WORKLOAD_EVERY = 1.0  # seconds between redraws of a workload's probe view as replicas change


def harmful_probe(container: Container, history: ContainerHistory | None) -> ProbeType | None:
    """The probe doing the container harm, to be shown first (docs/screen.md, The probe
    shown first): a liveness or startup probe that killed it (a kill of its kept, or its Failure
    published and held for the kill), the latest kill first; else a failing readiness
    probe; else a liveness or startup probe in a run of failures short of its threshold.
    None where no probe does harm."""
    if history is None:
        return None
    probes = {pt: h for pt, h in history.probes.items() if container.probe(pt) is not None}
    killed: dict[ProbeType, float] = {}
    for m in history.marks:
        if m.type == EventType.KILLING and m.probe in KILLERS:
            killed[ProbeType.parse(m.probe)] = m.t
    for pt, h in probes.items():
        if pt is not ProbeType.READINESS and h.on_hold and h.published is ResultValue.FAILURE:
            killed[pt] = math.inf  # the kill is pending now
    killed = {pt: t for pt, t in killed.items() if pt in probes}
    if killed:
        return max(killed, key=killed.__getitem__)
    readiness = probes.get(ProbeType.READINESS)
    if (
        readiness is not None
        and readiness.attempted()
        and (readiness.published is ResultValue.FAILURE or _failing(readiness))
    ):
        return ProbeType.READINESS
    for pt in (ProbeType.LIVENESS, ProbeType.STARTUP):
        h = probes.get(pt)
        if h is not None and _failing(h):
            return pt
    return None


def _failing(h: ProbeHistory) -> bool:
    """In a run of failures, published or not yet."""
    return h.last_result is ResultValue.FAILURE and h.in_run


class MainScreen(PacedScreen, QuietFocusScreen, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = keys.MAIN
    # no auto focus: Textual's gives the focus back, when a screen over this one closes, to
    # the first focusable widget, which is the filter's box even where details hide it (and
    # the next `q` was typed into it); `on_screen_resume` puts it where it belongs
    AUTO_FOCUS = ""

    def __init__(self, ctx: UIContext) -> None:
        super().__init__()
        self.ctx = ctx
        self.selected: ContainerKey | None = None
        self.group = ""  # the workload whose line the cursor is on: its probe view shows
        self._swap_due = False  # a swap of the workload view and the panes is asked for
        self._panes_due = False  # the panes are to follow the list's next frame
        self._workload_stale = False  # a replica of the shown workload changed
        self._workload_at = 0.0
        self.probe = ProbeType.READINESS
        # the container whose probe the user chose with p / P: it is not moved to the harm
        self._chosen: ContainerKey | None = None
        self.details = False
        self._version = -1
        self._layout = -1
        self._resort_at = 0.0  # when the order may be computed again (monotonic)
        self._second = -1
        self._archive_version = 0
        # the prompt just opened: keys typed before it has focus go to it (see on_key)
        self._pending: Input | None = None
        self._offered: tuple[bool | None, bool | None] | None = None  # t and T, read-only
        ctx = self.ctx

        # the parts the timer updates, kept at hand (no query on every tick)
        self.topbar = TopBar(ctx, id="topbar")
        self.filter_box = FilterBox(placeholder="/ filter: pod, container, namespace", id="filter")
        self.workloads_pane = Pane(id="workloads-pane")
        self.workloads = WorkloadList(ctx, id="workloads")
        self.workloads_header = WorkloadHeader(self.workloads, id="workloads-header")
        self.header = DetailHeader(ctx, id="detail-header")
        self.timeline = Timeline(ctx, id="timeline")
        self.threshold = ThresholdPane(ctx, id="threshold")
        self.attempts = AttemptLog(ctx, id="attempts")
        self.workload_view = WorkloadProbeView(ctx, id="workload-probes")
        self.workloads.on_select = self._selected  # at once, in the key's own turn

    def compose(self) -> ComposeResult:
        yield self.topbar
        with Horizontal(id="body"):
            with self.workloads_pane:
                yield self.filter_box
                yield self.workloads_header
                yield self.workloads
            with Vertical(id="details"):
                yield self.header
                yield self.timeline
                yield self.threshold
                yield self.attempts
                yield self.workload_view
        yield KeyFooter()

    def on_mount(self) -> None:
        self.workloads.focus()
        self.poll()

    def on_screen_resume(self) -> None:
        """A screen over this one closed: the focus goes back where it was if that is shown,
        else to the list where it is shown, else nowhere (the screen's keys still work)."""
        focused = self.focused
        if focused is not None and self._shown(focused):
            return
        if self.workloads_pane.display:
            self.workloads.focus()
        else:
            self.set_focus(None)

    def _shown(self, widget: Widget) -> bool:
        """Whether `widget` and every container it is in are displayed."""
        node: object = widget
        while isinstance(node, Widget) and node is not self:
            if not node.display:
                return False
            node = node.parent
        return True

    # -- the timer --------------------------------------------------------------------------

    def poll(self) -> None:
        """Bring the screen up to date with the store: only what changed is redrawn."""
        store = self.ctx.store
        now = self.ctx.now()
        wl = self.workloads
        details_dirty = workload_dirty = False
        if store.layout_version != self._layout:
            self._layout = store.layout_version
            self._rebuild()
            self._pane_title()
            self.workloads_header.refresh()  # a namespace column may come or go
            details_dirty = workload_dirty = True
        elif store.version != self._version:
            if wl.sort != "name" and time.monotonic() >= self._resort_at:
                self._rebuild()
                workload_dirty = True
            else:
                changed = store.changed_since(self._version)
                wl.refresh_keys(changed)
                wl.catch_up(changed, self._version)
                workload_dirty = bool(self.group) and self.workload_view.covers(changed)
            if self.selected is not None:
                history = store.containers.get(self.selected)
                details_dirty = history is not None and history.version > self._version
        elif wl.sort != "name" and time.monotonic() >= self._resort_at and wl.out_of_order():
            # changes caught up while a re-sort was not yet due moved a pod: sorted now, not
            # only when some later change comes (a quiet cluster left it out of order for good)
            self._rebuild()
            workload_dirty = True
        self._version = store.version
        archive = self.ctx.archive
        if archive is not None and archive.version != self._archive_version:
            # older history came in from the recording
            self._archive_version = archive.version
            details_dirty = True
        if details_dirty:
            self._refresh_details()
        self._workload_stale = self._workload_stale or workload_dirty
        if self._workload_stale and self.group:
            # a DaemonSet's hundreds of replicas change every poll: at most once a second
            mono = time.monotonic()
            if mono - self._workload_at >= WORKLOAD_EVERY:
                self._workload_at, self._workload_stale = mono, False
                self.workload_view.show(self.group, wl.members.get(self.group, []))
        self.topbar.tick()
        self.timeline.tick()
        self.threshold.tick()
        self.attempts.poll_output()
        second = int(now)
        if second != self._second:
            self._second = second
            self.header.update()
            self._focus()
        self._advise_ahead()

    def _advise_ahead(self) -> None:
        """Work out, one a poll, the advice of a line next to the cursor's where none is kept:
        the frame of the j or k that selects it then draws the advice kept, as it does for a
        container selected before, rather than working it out (its model rules simulate)."""
        wl = self.workloads
        advisor = self.threshold.advisor
        for step in (1, -1):
            key = wl.selection_at(wl.cursor + step)
            if key is not None and advisor.last(key) is None and advisor.advice(key) is not None:
                return

    def _focus(self) -> None:
        """Tell the runtime which pods the screen shows in full: the list's lines, the
        selection, a selected workload's replicas (a node agent's stream then carries their
        attempts and summaries of the rest)."""
        pods = self.workloads.shown_pods()
        if self.selected is not None:
            pods.add(self.selected.pod_uid)
        if self.group:
            pods.update(self.workloads.members.get(self.group, ()))
        self.ctx.controls.runtime.focus(pods)

    def _rebuild(self) -> None:
        """The list's rows anew, and when the next re-sort may come: on the wall clock, not
        the screen's (a replay's cursor runs at 100x)."""
        start = time.monotonic()
        self.workloads.rebuild()
        done = time.monotonic()
        self._resort_at = done + max(RESORT_EVERY, RESORT_SHARE * (done - start))

    def _refresh_details(self) -> None:
        if self._follow_harm():
            return  # shown anew, with the probe doing harm
        # each redraws only the lines that read differently now: most of a container's
        # changes show in one lane and one probe's lines (and a poll's frame then leaves a
        # key's frame little to wait for)
        self.header.update()
        self.timeline.update()
        self.threshold.tick()
        self.attempts.update()

    def _pane_title(self) -> None:
        wl = self.workloads
        pane = self.workloads_pane
        pods = wl.pods
        title = (
            f"Workloads ({pods} pod{'s' if pods != 1 else ''}, "
            f"{wl.containers} container{'s' if wl.containers != 1 else ''})"
        )
        if wl.filter:
            title += f" /{wl.filter}"
        pane.border_title = title
        pane.border_subtitle = f"sort: {wl.sort} ({keys.shown(self.app, 'probetui.sort')})"

    # -- selection --------------------------------------------------------------------------

    @on(ContainerSelected)
    def _selected(self, message: ContainerSelected) -> None:
        before, self.selected = self.selected, message.key
        if message.key != before:
            self._chosen = None
        # on a workload's line its probes across replicas take the place of one container's
        self.group = message.group
        spec = self.ctx.container_spec(message.key) if message.key is not None else None
        harm = None
        if spec is not None and message.key != before:
            # another container: the probe doing it harm first; the same one announced
            # again (a re-sort, a filter) keeps the probe the user chose with p
            harm = harmful_probe(spec[1], self.ctx.store.containers.get(message.key))
        if harm is not None:
            self.probe = harm
        elif spec is not None and spec[1].probe(self.probe) is None:
            for pt in PREFERRED:
                if spec[1].probe(pt) is not None:
                    self.probe = pt
                    break
        if message.rebuilt:
            # a filter, a re-sort or a clearing escape moved the cursor: the list is what is
            # looked at, drawn first, and the panes come with the frame after it (they are
            # most of a filter character's frame, guarded by benchmarks.fleet); the selection
            # itself is here at once, for the keys
            if not self._panes_due:
                self._panes_due = True
                self.after_frame(self._panes_follow)
            return
        self._draw_selection(swap_now=False)

    def _follow_harm(self) -> bool:
        """The selected container changed: where a probe now does it harm and the user has
        not chosen one with p, show that one (the first screen was drawn before liveness
        killed anything). True where the probe shown changed."""
        key = self.selected
        if key is None or key == self._chosen or self.group:
            return False
        spec = self.ctx.container_spec(key)
        harm = harmful_probe(spec[1], self.ctx.store.containers.get(key)) if spec else None
        if harm is None or harm is self.probe:
            return False
        self.probe = harm
        self._show()
        return True

    def _panes_follow(self) -> None:
        self._panes_due = False
        self._draw_selection(swap_now=True)

    def _draw_selection(self, swap_now: bool) -> None:
        """The panes for the selection as it stands."""
        on = bool(self.group)
        if self.workload_view.display != on:
            if swap_now:
                self._show_workload_view()
            elif not self._swap_due:
                # the swap is a layout of the whole screen: after the frame that draws the
                # list, so the list's new cursor is not held back by it (guarded by
                # benchmarks.fleet's filter figure); the panes follow a frame later, as the
                # selection then stands
                self._swap_due = True
                self.after_frame(self._show_workload_view)
        if on:
            members = self.workloads.members.get(self.group, [])
            self.workload_view.show(self.group, members)
            self._workload_stale = False  # drawn from the store as it is now
        self._show()
        if self.ctx.read_only:
            # only read-only mode hides actions per selection, and a footer redraw is not cheap
            # (guarded by benchmarks/fleet.py): only when what is offered changes
            offered = (self.check_action("probe_now", ()), self.check_action("probe_all", ()))
            if offered != self._offered:
                self._offered = offered
                self.refresh_bindings()

    def _show_workload_view(self) -> None:
        """The workload's probe view in place of one container's panes where a workload's
        line is selected, or back. Each pane's `display`, not a class on the screen: a screen
        class restyles every widget on it, a whole-screen layout on each `n`/`N` between a
        workload's line and a container's."""
        self._swap_due = False
        on = bool(self.group)
        if self.workload_view.display == on:
            return
        self.workload_view.display = on
        for pane in (self.header, self.timeline, self.threshold, self.attempts):
            pane.display = not on

    def _show(self) -> None:
        key, probe = self.selected, self.probe
        self.header.show(key)
        self.timeline.show(key, probe)
        self.threshold.show(key, probe)
        self.attempts.show(key, probe)

    def _probe_key(self) -> ProbeKey | None:
        if self.selected is None:
            return None
        return ProbeKey(self.selected.pod_uid, self.selected.container, self.probe)

    def _probe_types(self) -> list[ProbeType]:
        if self.selected is None:
            return []
        spec = self.ctx.container_spec(self.selected)
        if spec is None:
            return []
        return [pt for pt in CYCLE if spec[1].probe(pt) is not None]

    # -- read-only ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in ("probe_now", "probe_all") or not self.ctx.read_only:
            return True
        # read-only: offer "probe now" only where the runtime would run the probe
        if self.selected is None:
            return False
        if action == "probe_now":
            key = self._probe_key()
            return key is not None and self.ctx.not_probed(key) is None
        return any(
            self.ctx.not_probed(ProbeKey(self.selected.pod_uid, self.selected.container, pt))
            is None
            for pt in self._probe_types()
        )

    # -- actions ------------------------------------------------------------------------------

    def say(self, message: str, warning: bool = False) -> None:
        """Feedback in the top bar: a toast would cost a layout, and keys must stay quick."""
        self.topbar.flash(message, "yellow" if warning else "")

    def action_probe_now(self) -> None:
        key = self._probe_key()
        if key is None or self.probe not in self._probe_types():
            self.say("no probe selected", warning=True)
            return
        refused = self.ctx.controls.runtime.probe_now_refused(key)
        if refused is not None:
            # said before anything is sent (read-only and an agent's probe: a POST)
            self.say(f"{key.probe_type.key} of {key.container} not probed: {refused}", warning=True)
            return
        reason = self.ctx.not_probed(key)
        if self.ctx.controls.probe_now(key):
            self.say(f"{key.probe_type.key} of {key.container}: attempt queued")
        else:
            why = reason or "no worker, or an attempt is already queued"
            self.say(f"{key.probe_type.key} of {key.container} not probed: {why}", warning=True)

    def action_probe_all(self) -> None:
        if self.selected is None:
            return
        runtime = self.ctx.controls.runtime
        for pt in self._probe_types():
            refused = runtime.probe_now_refused(
                ProbeKey(self.selected.pod_uid, self.selected.container, pt)
            )
            if refused is not None:
                self.say(f"{self.selected.container} not probed: {refused}", warning=True)
                return
        n = self.ctx.controls.probe_container(self.selected.pod_uid, self.selected.container)
        self.say(f"{self.selected.container}: {n} probe{'s' if n != 1 else ''} queued")

    def action_pause(self) -> None:
        key = self._probe_key()
        h = self.ctx.store.probe(key) if key is not None else None
        # a running worker's records carry its next tick; a stopped one's state clears it
        if key is None or h is None or h.next_tick is None:
            self.say("no running worker for this probe", warning=True)
            return
        paused = not h.paused
        if not self.ctx.controls.set_paused(key, paused):
            self.say("no running worker for this probe", warning=True)
            return
        self.say(f"{key.probe_type.key} of {key.container} {'paused' if paused else 'resumed'}")
        self._refresh_details()

    def action_filter(self) -> None:
        self.open_prompt(self.filter_box)

    def open_prompt(self, box: Input) -> None:
        box.display = True
        self.set_focus(box)
        # keys typed right after "/" may be handled before the box has them: they must not
        # reach the bindings meanwhile ("/flap" would toggle follow with its "f"; on_key)
        self._pending = box

    def prompt_of(self, action: str) -> Input | None:
        """The prompt a binding's action opens, if any."""
        return self.filter_box if action == "filter" else None

    def arm_prompt(self, box: Input) -> None:
        """A prompt's key was seen, its action still to run: make it ready for what follows."""

    def on_key(self, event: events.Key) -> None:
        box = self._pending
        if box is None:
            # keys that arrive together ("/web" in one read, a paste) are all handed to the
            # screen before the first one's binding runs: the prompt's key is seen here, so
            # that the ones after it go to the prompt, not to the list's bindings
            found = self.active_bindings.get(event.key)
            box = self.prompt_of(found.binding.action) if found is not None else None
            if box is not None:
                self._pending = box
                self.arm_prompt(box)
            return
        if box.has_focus:
            self._pending = None
            return
        if event.is_printable and event.character:
            box.insert_text_at_cursor(event.character)
        elif event.key == "backspace":
            box.action_delete_left()
        else:
            return
        event.stop()
        event.prevent_default()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.workloads.set_filter(event.value)
        self._pane_title()

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._pending = None
        self.workloads.focus()

    def action_back(self) -> None:
        self._pending = None
        box = self.filter_box
        if box.has_focus or box.value:
            box.value = ""
            self.workloads.set_filter("")
            self._pane_title()
            self.workloads.focus()
        elif self.details:
            self.action_details()

    def action_follow(self) -> None:
        self.timeline.set_follow(not self.timeline.follow)
        self._attempts_follow_timeline()

    def action_details(self) -> None:
        self.details = not self.details
        # the class says the mode (app.tcss hides the list with it), but setting it with a
        # restyle recomputes the CSS of every widget on the screen in the frame of each
        # `enter` (guarded by benchmarks/ui.py): the one style it changes is set here directly
        self.set_class(self.details, "-details", update=False)
        self.workloads_pane.display = not self.details
        self.attempts.set_mode(details=self.details)
        self.threshold.set_whole(self.details)
        if not self.details:
            self.workloads.focus()

    def action_next_probe(self, step: int = 1) -> None:
        types = self._probe_types()
        if not types:
            return
        i = types.index(self.probe) if self.probe in types else -1
        self.probe = types[(i + step) % len(types)]
        self._chosen = self.selected  # the user's choice holds on this container
        self._show()
        if self.ctx.read_only:
            self.refresh_bindings()

    def action_prev_probe(self) -> None:
        self.action_next_probe(-1)

    def action_output(self) -> None:
        self.attempts.set_mode(output=not self.attempts.output)
        self.attempts.poll_output()

    def action_sort(self) -> None:
        wl = self.workloads
        wl.sort = SORTS[(SORTS.index(wl.sort) + 1) % len(SORTS)]
        self._resort_at = time.monotonic() + RESORT_EVERY
        self._pane_title()

    def action_problem(self, step: int) -> None:
        if not self.workloads.next_problem(step):
            self.say("nothing wrong in the list")

    def action_scroll_time(self, direction: int) -> None:
        self.timeline.scroll_by(direction * max(1, self.timeline.cells // 4))
        self._attempts_follow_timeline()

    def _attempts_follow_timeline(self) -> None:
        """Scrolling the timeline back scrolls the attempt log with it: the log then lists the
        attempts up to the timeline's right edge, so every attempt kept can be read."""
        t = self.timeline
        self.attempts.set_until(None if t.follow or t.end is None else t.end)

    def action_zoom(self, step: int) -> None:
        self.timeline.zoom_by(step)
