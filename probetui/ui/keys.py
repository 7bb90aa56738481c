"""Every key of the app, as Bindings with ids so a keymap can remap them (`App.set_keymap`).

The help screen and the command palette list these same bindings, so what they show is what
the keys do.
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

APP: list[BindingType] = [
    Binding("q", "quit", "quit", id="probetui.quit"),
    Binding("question_mark", "help", "help", id="probetui.help"),
    Binding("s", "screenshot_svg", "screenshot", id="probetui.screenshot"),
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
    Binding("left", "scroll_time(-1)", "earlier", show=False, id="probetui.earlier"),
    Binding("right", "scroll_time(1)", "later", show=False, id="probetui.later"),
    Binding("plus,equals_sign", "zoom(-1)", "zoom in", show=False, id="probetui.zoom-in"),
    Binding("minus", "zoom(1)", "zoom out", show=False, id="probetui.zoom-out"),
    Binding("escape", "back", "back", show=False, id="probetui.back"),
]

# the help screen's order: what people came for first, then moving around, then the timeline
ORDER = (
    "probe_now",
    "probe_all",
    "pause",
    "filter",
    "follow",
    "details",
    "screenshot_svg",
    "quit",
    "help",
    "cursor(1)",
    "cursor(-1)",
    "page(1)",
    "page(-1)",
    "jump(0)",
    "jump(-1)",
    "next_probe",
    "prev_probe",
    "output",
    "sort",
    "scroll_time(-1)",
    "scroll_time(1)",
    "zoom(-1)",
    "zoom(1)",
    "back",
)

# what the help screen says about keys whose action name says too little
EXPLAIN = {
    "probe_now": "probe now: the selected probe (marked manual)",
    "probe_all": "probe now: every probe of the container",
    "pause": "pause / resume the selected probe's worker",
    "filter": "filter workloads by pod, container, namespace",
    "follow": "timeline: follow now / stay put",
    "details": "details: full width, two lines an attempt",
    "next_probe": "select the next probe (▶)",
    "prev_probe": "select the previous probe",
    "output": "bottom pane: attempts / container output",
    "sort": "sort: name, problems first, restarts",
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
}
