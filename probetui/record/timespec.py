"""Parse times and durations as a user types them about a recording.

They are `--since`, `--until`, `--retain` and the replay screen's jump-to-time.

A time is one of:

- an ISO-8601 time, `2026-03-01T03:10:00Z` or with an offset; without one it is local time;
- a wall-clock time `HH:MM` or `HH:MM:SS[.fff]`: the most recent such local time at or before
  the recording's end, which must fall within the recording;
- `-6h`, `-30m`, `-90s`, `-1h30m`: back from the recording's end; `+10m`: on from its start.

A duration is `24h`, `30m`, `90s`, `2d`, `1h30m` or plain seconds.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo
from datetime import time as clock_time

from probetui import durations

_CLOCK = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?$")


class TimeSpecError(ValueError):
    """Signals a time or duration that cannot be read; the text names the forms that can."""


def parse_duration(text: str) -> float:
    """Seconds, from `24h`, `30m`, `90s`, `2d`, `1h30m` or a plain number of seconds."""
    try:
        return durations.parse_duration(text)
    except durations.DurationError as e:
        raise TimeSpecError(str(e)) from None


def _is_duration(text: str) -> bool:
    try:
        durations.parse_duration(text)
    except durations.DurationError:
        return False
    return not text.strip().replace(".", "", 1).isdigit()


def parse_time(text: str, span: tuple[float, float] | None, tz: tzinfo | None = None) -> float:
    """Epoch seconds for `text` (module docstring); `span` is the recording's (first, last),
    `tz` the local zone (None: the system's)."""
    t = text.strip()
    if not t:
        raise TimeSpecError("empty time; give e.g. 03:10, -6h or 2026-03-01T03:10:00Z")
    if t[0] in "+-" and _is_duration(t[1:]):
        if span is None:
            raise TimeSpecError(f"{text!r}: the recording is empty: no end to count from")
        seconds = parse_duration(t[1:])
        return span[1] - seconds if t[0] == "-" else span[0] + seconds
    m = _CLOCK.match(t)
    if m:
        return _wall_clock(text, m, span, tz)
    try:
        stamp = datetime.fromisoformat(t.replace("z", "Z"))
    except ValueError:
        raise TimeSpecError(
            f"{text!r}: not a time; give HH:MM[:SS], -6h / -30m / -90s (back from the end), "
            "+10m (on from the start) or an ISO-8601 time"
        ) from None
    if stamp.tzinfo is None:
        stamp = _local(stamp, tz)
    return stamp.timestamp()


def _local(naive: datetime, tz: tzinfo | None) -> datetime:
    # without a zone, datetime.timestamp() reads a naive time as the system's local time
    return naive.replace(tzinfo=tz) if tz is not None else naive.astimezone()


def _wall_clock(
    text: str, m: re.Match[str], span: tuple[float, float] | None, tz: tzinfo | None
) -> float:
    hour, minute = int(m[1]), int(m[2])
    second = int(m[3] or 0)
    micro = round(float(m[4]) * 1e6) if m[4] else 0
    if hour > 23 or minute > 59 or second > 59:
        raise TimeSpecError(f"{text!r}: not a time of day")
    if span is None:
        raise TimeSpecError(f"{text!r}: the recording is empty: no day to put it on")
    first, last = span
    end_day = datetime.fromtimestamp(last, tz).date()
    for back in range(0, 400):
        day = end_day - timedelta(days=back)
        when = _local(
            datetime.combine(day, clock_time(hour, minute, second, micro)), tz
        ).timestamp()
        if when <= last:
            break
    if when < first:
        first_s = datetime.fromtimestamp(first, tz).isoformat(timespec="seconds")
        last_s = datetime.fromtimestamp(last, tz).isoformat(timespec="seconds")
        raise TimeSpecError(
            f"{text!r}: not within the recording ({first_s} to {last_s}); "
            "give a time in that span, or an ISO-8601 date and time"
        )
    return when


__all__ = ["TimeSpecError", "parse_duration", "parse_time"]
