"""Define the screen's glyphs and colours (docs/screen.md), in one place for widgets and help.

Colour repeats what the glyph says and is never the only carrier of it: the screen reads in
monochrome. Every glyph is one terminal cell wide, so a timeline column is one cell. The
timeout glyph is therefore the clock face `◷` rather than an hourglass `⌛`, which terminals draw
two cells wide (an emoji), breaking the grid; and kill/restart is `↺` rather than `⟲`, which
common monospace fonts (DejaVu Sans Mono) lack.
"""

from __future__ import annotations

from probetui.prober.outcome import KIND_GLYPH, Kind
from probetui.prober.results import ResultValue
from probetui.timeline.events import EventType

OK, WARN, BAD, DIM, INFO = "green", "yellow", "red", "bright_black", "cyan"

KIND_STYLE = {
    Kind.SUCCESS: OK,
    Kind.WARNING: WARN,
    Kind.FAILURE: BAD,
    Kind.TIMEOUT: BAD,
    Kind.ERROR: WARN,
    Kind.SKIP: DIM,
}
# which of several attempts in one timeline cell is shown: the most alarming
KIND_RANK = {
    Kind.SKIP: 0,
    Kind.SUCCESS: 1,
    Kind.WARNING: 2,
    Kind.ERROR: 3,
    Kind.FAILURE: 4,
    Kind.TIMEOUT: 5,
}

CHANGED_DOWN, CHANGED_UP = "▼", "▲"  # the published result changed (to Failure / to Success)

# published result of a probe, in the workload list
RESULT_GLYPH = {
    ResultValue.SUCCESS: KIND_GLYPH[Kind.SUCCESS],
    ResultValue.FAILURE: KIND_GLYPH[Kind.FAILURE],
    ResultValue.UNKNOWN: KIND_GLYPH[Kind.ERROR],
}
RESULT_STYLE = {ResultValue.SUCCESS: OK, ResultValue.FAILURE: BAD, ResultValue.UNKNOWN: WARN}
NO_PROBE, NOT_YET = "·", "○"

# kubelet lane: (glyph, label, style) by event type; Ready/Started changes depend on the value
START, KILL, EXIT, BACKOFF, DIVERGE, REPORT = "│", "↺", "■", "B", "≠", "!"
MARK_RANK = {
    EventType.KILLING: 6,
    EventType.CONTAINER_EXITED: 5,
    EventType.CONTAINER_STARTED: 4,
    EventType.BACK_OFF: 3,
    EventType.DIVERGENCE: 3,
    EventType.READY_CHANGED: 2,
    EventType.STARTED_CHANGED: 1,
    EventType.UNHEALTHY: 0,
    EventType.PROBE_WARNING: 0,
}

YES, NO = "✓", "✗"
SIDECAR = "◇"
RESTARTS = "↺"
PAUSED = "‖"
SPARK = "▁▂▃▄▅▆▇█"

# the help screen's key to the glyphs above, each taken from its table
LEGEND = (
    (KIND_GLYPH[Kind.SUCCESS], KIND_STYLE[Kind.SUCCESS], "success"),
    (KIND_GLYPH[Kind.WARNING], KIND_STYLE[Kind.WARNING], "warning (counts as success)"),
    (KIND_GLYPH[Kind.FAILURE], KIND_STYLE[Kind.FAILURE], "failure"),
    (KIND_GLYPH[Kind.TIMEOUT], KIND_STYLE[Kind.TIMEOUT], "timeout (a failure)"),
    (KIND_GLYPH[Kind.ERROR], KIND_STYLE[Kind.ERROR], "prober error, discarded (not counted)"),
    (
        KIND_GLYPH[Kind.SKIP],
        KIND_STYLE[Kind.SKIP],
        "skipped (initial delay, gating, on hold, paused)",
    ),
    (f"{CHANGED_DOWN} {CHANGED_UP}", "", "published result changed to Failure / Success"),
    (START, INFO, "container started"),
    (EXIT, BAD, "container exited"),
    (KILL, BAD, "killed for a probe (restart follows)"),
    (BACKOFF, WARN, "back-off before the next restart"),
    (DIVERGE, "magenta", "the shadow and the kubelet disagree"),
    (REPORT, WARN, "the kubelet reported Unhealthy / ProbeWarning"),
    (NOT_YET, DIM, "no result published yet"),
    (SIDECAR, "", "sidecar (init container with restartPolicy Always)"),
    (f"{YES} {NO}", "", "Ready / Started yes or no"),
)
