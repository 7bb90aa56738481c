"""Parse durations as kubectl and Go write them: `90s`, `5m`, `1h30m`, `1.5h`, `300ms`, plus `2d`.

Every flag and scenario key that takes a duration reads it here, so one spelling works
everywhere; a bare number is seconds, as those flags and keys always took.
"""

from __future__ import annotations

import math
import re

# Go's time.ParseDuration units, and `d`, which Go lacks and users of --retain type
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)"
_UNIT = r"(?:ns|us|µs|μs|ms|s|m|h|d)"
_GO = re.compile(rf"^(?:{_NUMBER}{_UNIT})+$")
_PART = re.compile(rf"({_NUMBER})({_UNIT})")
EXAMPLES = "90s, 5m, 1h30m or seconds"


class DurationError(ValueError):
    """Signals a duration that cannot be read; the text names the forms that can."""


def parse_duration(text: str | float | int, *, allow_zero: bool = False) -> float:
    """Seconds from a Go duration (`1h30m`, `300ms`), `2d`, or a bare number of seconds.

    Raises DurationError for anything else, for a negative, infinite or NaN value, and for 0
    unless `allow_zero`."""
    if isinstance(text, bool):
        raise DurationError(f"{text!r}: not a duration; give e.g. {EXAMPLES}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        t = text.strip()
        try:
            value = float(t)
        except ValueError:
            if not _GO.match(t):
                raise DurationError(f"{text!r}: not a duration; give e.g. {EXAMPLES}") from None
            value = sum(float(n) * _UNITS[u] for n, u in _PART.findall(t))
    if math.isnan(value) or math.isinf(value):
        raise DurationError(f"{text!r}: not a finite duration; give e.g. {EXAMPLES}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = "0 or more" if allow_zero else "more than 0"
        raise DurationError(f"{text!r}: must be {bound} seconds")
    return value


def duration_arg(text: str) -> float:
    """Return an argparse `type=` for a duration flag: seconds (0 too: the command says whether 0 is
    allowed, naming its flag), or argparse's one-line error."""
    import argparse

    try:
        return parse_duration(text, allow_zero=True)
    except DurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


__all__ = ["EXAMPLES", "DurationError", "duration_arg", "parse_duration"]
