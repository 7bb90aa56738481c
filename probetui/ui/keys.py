"""Define every key of the app, as Bindings with ids so a keymap can remap them.

The help screen and the command palette list these same bindings, so what they show is what
the keys do.
"""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding, BindingType

APP: list[BindingType] = [
    Binding("q", "quit", "quit", id="probetui.quit"),
    Binding("question_mark", "help", "help", id="probetui.help"),
    Binding("s", "screenshot_svg", "screenshot", id="probetui.screenshot"),
    Binding("a", "what_if", "what-if", show=False, id="probetui.what-if"),
]

MAIN: list[BindingType] = [
    Binding("t", "probe_now", "probe now", id="probetui.probe-now"),
    Binding("T", "probe_all", "all probes", id="probetui.probe-all"),
    Binding("space", "pause", "pause/resume", id="probetui.pause"),
    Binding("slash", "filter", "filter", id="probetui.filter"),
    Binding("f", "follow", "follow", id="probetui.follow"),
    Binding("enter", "details", "details", id="probetui.details"),
    Binding("p", "next_probe", "next probe", show=False, id="probetui.next-probe"),
    Binding("P", "prev_probe", "previous probe", show=False, id="probetui.prev-probe"),
    Binding("o", "output", "output/attempts", show=False, id="probetui.output"),
    Binding("S", "sort", "sort", show=False, id="probetui.sort"),
    Binding("n", "problem(1)", "next problem", show=False, id="probetui.next-problem"),
    Binding("N", "problem(-1)", "previous problem", show=False, id="probetui.prev-problem"),
    Binding("left", "scroll_time(-1)", "earlier", show=False, id="probetui.earlier"),
    Binding("right", "scroll_time(1)", "later", show=False, id="probetui.later"),
    Binding("plus,equals_sign", "zoom(-1)", "zoom in", show=False, id="probetui.zoom-in"),
    Binding("minus", "zoom(1)", "zoom out", show=False, id="probetui.zoom-out"),
    Binding("escape", "back", "back", show=False, id="probetui.back"),
]

# the replay's time cursor, on top of MAIN
REPLAY: list[BindingType] = [
    Binding("x", "play", "play/pause", id="probetui.replay.play"),
    Binding("comma", "step(-10)", "-10s", show=False, id="probetui.replay.back"),
    Binding("full_stop", "step(10)", "+10s", show=False, id="probetui.replay.on"),
    Binding("less_than_sign", "step(-300)", "-5m", show=False, id="probetui.replay.back-far"),
    Binding("greater_than_sign", "step(300)", "+5m", show=False, id="probetui.replay.on-far"),
    Binding("left_square_bracket", "notable(-1)", "previous event", id="probetui.replay.prev"),
    Binding("right_square_bracket", "notable(1)", "next event", id="probetui.replay.next"),
    Binding("1", "speed(1)", "1x", show=False, id="probetui.replay.1x"),
    Binding("2", "speed(10)", "10x", show=False, id="probetui.replay.10x"),
    Binding("3", "speed(100)", "100x", show=False, id="probetui.replay.100x"),
    Binding("at", "goto", "go to time", id="probetui.replay.goto"),
]

# the workload list's cursor (the focused widget's, so they come before the screen's)
WORKLOADS: list[BindingType] = [
    Binding("down,j", "cursor(1)", "down", show=False, id="probetui.cursor-down"),
    Binding("up,k", "cursor(-1)", "up", show=False, id="probetui.cursor-up"),
    Binding("pagedown", "page(1)", "page down", show=False, id="probetui.page-down"),
    Binding("pageup", "page(-1)", "page up", show=False, id="probetui.page-up"),
    Binding("home,g", "jump(0)", "first", show=False, id="probetui.first"),
    Binding("end,G", "jump(-1)", "last", show=False, id="probetui.last"),
    Binding("z", "fold", "fold workload", show=False, id="probetui.fold"),
    Binding("Z", "fold_all", "fold all workloads", show=False, id="probetui.fold-all"),
    Binding("w", "worst", "worst replica", show=False, id="probetui.worst-replica"),
]

# the help screen's own, over everything else: it may reuse keys of the screens below it
HELP: list[BindingType] = [
    Binding("escape,q,question_mark", "dismiss", "close", id="probetui.help-close"),
]
# the what-if screen's, likewise
WHAT_IF: list[BindingType] = [
    Binding("escape,q,a", "dismiss", "close", id="probetui.what-if-close"),
]

# bindings active at the same time, so two of them on one key would clash (a keymap's check)
SCOPES: tuple[tuple[list[BindingType], ...], ...] = (
    (APP, MAIN, WORKLOADS, REPLAY),
    (HELP,),
    (WHAT_IF,),
)
# keys Textual itself holds on every screen
RESERVED = {
    "ctrl+p": "the command palette",
    "ctrl+q": "Textual's quit",
    "ctrl+c": "Textual's copy and quit hint",
    "tab": "moving the focus",
    "shift+tab": "moving the focus",
}


def shown(app: App[object], binding_id: str) -> str:
    """Return the first key in force for `binding_id` as the footer writes it (`^t`), for the hints
    that name a key in a title or the top bar, so a remapped key is named as remapped."""
    keymap: dict[str, str] = getattr(app, "keymap_in_force", {})
    keys = keymap.get(binding_id)
    if keys is None:
        keys = next(
            (
                b.key
                for scope in SCOPES
                for bindings in scope
                for b in bindings
                if isinstance(b, Binding) and b.id == binding_id
            ),
            "",
        )
    first = keys.split(",")[0].strip()
    return app.get_key_display(Binding(first, "")) if first else "?"


# the help screen's order: what people came for first, then moving around, then the timeline
ORDER = (
    "probe_now",
    "probe_all",
    "pause",
    "filter",
    "follow",
    "details",
    "what_if",
    "screenshot_svg",
    "quit",
    "help",
    "cursor(1)",
    "cursor(-1)",
    "page(1)",
    "page(-1)",
    "jump(0)",
    "jump(-1)",
    "fold",
    "fold_all",
    "worst",
    "next_probe",
    "prev_probe",
    "output",
    "sort",
    "problem(1)",
    "problem(-1)",
    "scroll_time(-1)",
    "scroll_time(1)",
    "zoom(-1)",
    "zoom(1)",
    "back",
    "play",
    "step(-10)",
    "step(10)",
    "step(-300)",
    "step(300)",
    "notable(-1)",
    "notable(1)",
    "speed(1)",
    "speed(10)",
    "speed(100)",
    "goto",
)

# what the help screen says about keys whose action name says too little
EXPLAIN = {
    "probe_now": "probe now: the selected probe (marked manual)",
    "probe_all": "probe now: every probe of the container",
    "pause": "pause / resume the selected probe's worker",
    "filter": "filter workloads by pod, container, namespace",
    "what_if": "what-if: replay the advice's proposed setting over this session's history",
    "follow": "timeline: follow now / stay put",
    "details": "details: full width, two lines an attempt",
    "next_probe": "select the next probe (▶)",
    "prev_probe": "select the previous probe",
    "output": "bottom pane: attempts / container output",
    "sort": "sort: name, problems first, restarts",
    "problem(1)": "next container with something wrong",
    "problem(-1)": "previous container with something wrong",
    "scroll_time(-1)": "timeline and attempts: scroll back in time",
    "scroll_time(1)": "timeline: forward (back at now: follow)",
    "zoom(-1)": "timeline: zoom in",
    "zoom(1)": "timeline: zoom out",
    "back": "leave filter or details",
    "quit": "quit",
    "help": "this help",
    "screenshot_svg": "save an SVG screenshot (says where)",
    "cursor(1)": "next container",
    "cursor(-1)": "previous container",
    "page(1)": "page down",
    "page(-1)": "page up",
    "jump(0)": "first container",
    "jump(-1)": "last container",
    "fold": "fold / unfold the workload under its line",
    "fold_all": "fold / unfold every workload",
    "worst": "the workload's worst replica: its line and timeline",
    "play": "replay: play / pause",
    "step(-10)": "replay: cursor 10 s back",
    "step(10)": "replay: cursor 10 s on",
    "step(-300)": "replay: cursor 5 min back",
    "step(300)": "replay: cursor 5 min on",
    "notable(-1)": "replay: previous result flip, kill, back-off, divergence or gap end",
    "notable(1)": "replay: next result flip, kill, back-off, divergence or gap end",
    "speed(1)": "replay: play at 1x",
    "speed(10)": "replay: play at 10x",
    "speed(100)": "replay: play at 100x",
    "goto": "replay: go to a time (03:10, -6h, +10m, ISO)",
}
