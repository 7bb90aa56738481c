"""`--since` / `--until` / `--retain` forms, and `-l` label selectors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from probetui.record.selector import SelectorError, parse_selector
from probetui.record.timespec import TimeSpecError, parse_duration, parse_time

TZ = timezone(timedelta(hours=2))
END = datetime(2026, 3, 2, 8, 0, tzinfo=TZ).timestamp()
SPAN = (END - 86400.0, END)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-6h", END - 6 * 3600),
        ("-30m", END - 1800),
        ("-90s", END - 90),
        ("-1h30m", END - 5400),
        ("+10m", SPAN[0] + 600),
        ("03:10", datetime(2026, 3, 2, 3, 10, tzinfo=TZ).timestamp()),
        ("09:15:30", datetime(2026, 3, 1, 9, 15, 30, tzinfo=TZ).timestamp()),  # yesterday's
        ("2026-03-02T01:10:00Z", datetime(2026, 3, 2, 1, 10, tzinfo=UTC).timestamp()),
        ("2026-03-02T03:10:00", datetime(2026, 3, 2, 3, 10, tzinfo=TZ).timestamp()),
    ],
)
def test_time_forms(text: str, expected: float) -> None:
    assert parse_time(text, SPAN, TZ) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "soon", "25:00", "3h", "-6x"])
def test_bad_times(text: str) -> None:
    with pytest.raises(TimeSpecError):
        parse_time(text, SPAN, TZ)


def test_a_wall_time_outside_the_recording_is_refused() -> None:
    with pytest.raises(TimeSpecError, match="not within the recording"):
        parse_time("07:30", (END - 600, END), TZ)


def test_durations() -> None:
    assert parse_duration("24h") == 86400
    assert parse_duration("1h30m") == 5400
    assert parse_duration("90") == 90
    for bad in ("0", "-1h", "h", "tomorrow"):
        with pytest.raises(TimeSpecError):
            parse_duration(bad)


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("", {}, True),
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "2"}, False),
        ("a!=1", {}, True),
        ("a in (1, 2)", {"a": "2"}, True),
        ("a notin (1,2)", {}, True),
        ("a,!b", {"a": "x", "b": ""}, False),
        ("example.com/tier=front", {"example.com/tier": "front"}, True),
        ("n>3", {"n": "4"}, True),
        ("n<3", {"n": "x"}, False),
        ("a=", {"a": ""}, True),
    ],
)
def test_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(selector).matches(labels) is expected


@pytest.mark.parametrize("selector", ["a in 1", "a=(1)", "!", "a in (1", "n>x", "a b"])
def test_bad_selectors(selector: str) -> None:
    with pytest.raises(SelectorError):
        parse_selector(selector)
