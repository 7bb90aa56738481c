"""Say what one doProbe did in one vocabulary: its code, its word and its glyph.

Every place that names or draws an attempt reads it from here: the timeline store's `kind`
column, the attempt log and timeline on the screen, the JSON of `check`, `simulate` and the
headless output, and `simulate`'s text timeline. The glyphs are here rather than with the
screen's styles because `simulate` prints them too; each is one terminal cell wide (see
`probetui/ui/glyphs.py` for why these and not others).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probetui.probe.base import Result

if TYPE_CHECKING:
    from probetui.prober.prober import ProbeOutcome


class Kind:
    """Names what one doProbe did; the store's `kind` column. 0 is never stored."""

    SUCCESS = 1
    WARNING = 2
    FAILURE = 3
    TIMEOUT = 4  # a failure whose last try ran out of time
    ERROR = 5  # a prober error the worker discarded (docs/kubelet-behaviour.md §5.11)
    SKIP = 6  # no handler ran: initial delay, startup gating, on hold, paused, read-only ...

    ATTEMPTS = (SUCCESS, WARNING, FAILURE, TIMEOUT, ERROR)


KIND_NAMES = {
    Kind.SUCCESS: "success",
    Kind.WARNING: "warning",
    Kind.FAILURE: "failure",
    Kind.TIMEOUT: "timeout",
    Kind.ERROR: "error",
    Kind.SKIP: "skipped",
}

KIND_GLYPH = {
    Kind.SUCCESS: "●",
    Kind.WARNING: "◐",
    Kind.FAILURE: "✖",
    Kind.TIMEOUT: "◷",
    Kind.ERROR: "?",
    Kind.SKIP: "·",
}

# the JSON word of an attempt: a timeout is a failure there, with `timedOut` beside it
_LABEL = {**KIND_NAMES, Kind.TIMEOUT: "failure"}
# and back, for readers of that JSON (simulate's text timeline)
LABEL_KIND = {label: kind for kind, label in _LABEL.items() if kind != Kind.TIMEOUT}


def kind_of_outcome(outcome: ProbeOutcome | None) -> int:
    """The code of a doProbe: SKIP when no handler ran (no outcome)."""
    if outcome is None:
        return Kind.SKIP
    attempt = outcome.attempt
    if outcome.error is not None or attempt is None:
        return Kind.ERROR
    if attempt.timed_out:
        return Kind.TIMEOUT
    if attempt.result is Result.SUCCESS:
        return Kind.SUCCESS
    if attempt.result is Result.WARNING:
        return Kind.WARNING
    return Kind.FAILURE  # failure, and unknown without an error (counted as failure)


def outcome_label(outcome: ProbeOutcome) -> str:
    """One word for an attempt in JSON: success, warning, failure or error.

    `error` is a handler error the worker discarded (§5.11); an Unknown without an error
    counts as a failure, as the worker counts it.
    """
    return _LABEL[kind_of_outcome(outcome)]


__all__ = [
    "KIND_GLYPH",
    "KIND_NAMES",
    "LABEL_KIND",
    "Kind",
    "kind_of_outcome",
    "outcome_label",
]
