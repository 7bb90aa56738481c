"""Read the few lines of Prometheus text exposition the agent needs, and write the text it serves.

Reading: the kubelet's `/metrics/probes` (`compbasemetrics.HandlerFor` over a registry with
`process_start_time_seconds`, `prober_probe_total` and `prober_probe_duration_seconds`, in the
text format 0.0.4). Only samples of the names asked for are parsed; a line of another metric
costs one `startswith`. Bounded: lines over `MAX_LINE` characters and series past `MAX_SERIES`
are skipped and counted, a label value's escapes (`\\\\`, `\\"`, `\\n`) are read as the format
writes them, and a line of a wanted metric that does not parse is skipped and counted, not
fatal: one odd series must not hide the others.

Writing: `exposition` renders the agent's own `/metrics` (HELP, TYPE, samples).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

MAX_LINE = 64 << 10  # characters of one line
MAX_SERIES = 200_000  # samples of the wanted names read from one body
MAX_LABELS = 32  # labels of one sample


@dataclass(slots=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


@dataclass(slots=True)
class Parsed:
    samples: list[Sample] = field(default_factory=list)
    skipped: int = 0  # lines of a wanted name that were too long or did not parse
    truncated: bool = False  # MAX_SERIES reached


class PromTextError(ValueError):
    """Signals a line that is not a sample; the message says where."""


# a series' text (a sample line up to its value) -> its name and labels, as the last read of
# the same source parsed them
Known = dict[str, tuple[str, dict[str, str]]]

T = TypeVar("T")
_UNKNOWN: Any = object()


@dataclass(slots=True)
class Reading(Generic[T]):
    """Holds what `read` made of the samples of the names asked for: each one's meaning and
    value, in order."""

    items: list[tuple[T, float]] = field(default_factory=list)
    skipped: int = 0  # lines of a wanted name that were too long or did not parse
    truncated: bool = False  # MAX_SERIES reached


def read(
    text: str,
    names: Iterable[str],
    meaning: Callable[[Sample], T],
    known: dict[str, T] | None = None,
) -> Reading[T]:
    """Return `meaning` of each sample of `names` in `text` (the text format, 0.0.4), with its
    value.

    With `known`, a line whose series the last read worked out costs a split, a lookup and its
    value, not a parse and a `meaning`: a scrape repeats the same series with new values.
    `known` is refilled with this read's series only, so it never outgrows one body; a line
    with a timestamp is never remembered, since its text up to the value is not the series.
    """
    wanted = tuple(names)
    out: Reading[T] = Reading()
    seen: dict[str, T] = {}
    for line in _lines_of(text, wanted):
        if len(line) > MAX_LINE:
            out.skipped += 1
            continue
        series, _, value = line.rstrip("\r").rpartition(" ")
        remember = known is not None and bool(value)
        what = known.get(series, _UNKNOWN) if remember else _UNKNOWN  # type: ignore[union-attr]
        try:
            if what is not _UNKNOWN:
                number = _value(value)
            else:
                sample, timed = _parse_line(line)
                if sample.name not in wanted:
                    continue  # a longer name with a wanted one as its prefix
                what, number, remember = meaning(sample), sample.value, remember and not timed
        except PromTextError:
            out.skipped += 1
            continue
        if len(out.items) >= MAX_SERIES:
            out.truncated = True
            break
        if remember:
            seen[series] = what
        out.items.append((what, number))
    if known is not None:
        known.clear()
        known.update(seen)
    return out


def parse(text: str, names: Iterable[str], known: Known | None = None) -> Parsed:
    """Return the samples of `names` in `text` (the text format, 0.0.4); `known` as `read`'s."""
    reading = read(text, names, _name_and_labels, known)
    samples = [Sample(name, labels, value) for (name, labels), value in reading.items]
    return Parsed(samples, reading.skipped, reading.truncated)


def _name_and_labels(sample: Sample) -> tuple[str, dict[str, str]]:
    return sample.name, sample.labels


def _lines_of(text: str, wanted: tuple[str, ...]) -> list[str]:
    """Return the lines of `text` that start with one of `wanted`, in order. Each name is found
    by `str.find`, so the lines of other metrics (the kubelet's duration histogram, most of the
    body) are passed over in C (benchmarks.agents' scrape guards it)."""
    starts: set[int] = set()
    for name in wanted:
        if text.startswith(name):
            starts.add(0)
        needle = "\n" + name
        at = text.find(needle)
        while at >= 0:
            starts.add(at + 1)
            at = text.find(needle, at + len(needle))
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        lines.append(text[start:] if end < 0 else text[start:end])
    return lines


# a sample: its name, its label block (quoted values may hold braces), its value, a timestamp
_SAMPLE = re.compile(
    r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^"{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"{}]*)*)\})?'
    r"[ \t]+(\S+)(?:[ \t]+(\S+))?[ \t]*"
)
# one label pair of the block and the comma after it; a value's escapes are \\, \" and \n
_PAIR_TEXT = r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\]*(?:\\.[^"\\]*)*)"[ \t]*(?:,|$)'
_PAIR = re.compile(_PAIR_TEXT)
_BLOCK = re.compile(f"(?:{_PAIR_TEXT})*[ \t]*")
_ESCAPE = re.compile(r"\\(.)")


def parse_line(line: str) -> Sample:
    """Return one sample line: `name{label="value",...} value [timestamp]`."""
    return _parse_line(line)[0]


def _parse_line(line: str) -> tuple[Sample, bool]:
    # the sample, and whether the line carries a timestamp after its value
    m = _SAMPLE.fullmatch(line.rstrip("\r"))
    if m is None:
        raise PromTextError(f"not a sample line: {line[:60]!r}")
    name, block, value, stamp = m.groups()
    labels: dict[str, str] = {}
    if block:
        # findall, checked whole by one fullmatch: a Match object a pair costs six times more
        if _BLOCK.fullmatch(block) is None:
            raise PromTextError(f'{name}: a label is not name="value"')
        pairs = _PAIR.findall(block)
        if len(pairs) > MAX_LABELS:
            raise PromTextError("too many labels")
        for label, text in pairs:
            if "\\" in text:
                text = _ESCAPE.sub(lambda e: "\n" if e.group(1) == "n" else e.group(1), text)
            labels[label] = text
    return Sample(name, labels, _value(value)), stamp is not None


def _value(text: str) -> float:
    # Go's ParseFloat as the format uses it: +Inf, -Inf, NaN and every float spelling
    try:
        return float(text)
    except ValueError:
        raise PromTextError(f"value {text[:40]!r} is not a number") from None


# -- writing ------------------------------------------------------------------------------------


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


@dataclass(slots=True)
class Family:
    """Holds one metric's HELP, TYPE and samples (labels, value)."""

    name: str
    kind: str  # counter, gauge
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)


def exposition(families: Iterable[Family]) -> str:
    lines: list[str] = []
    for f in families:
        lines.append(f"# HELP {f.name} {f.help}")
        lines.append(f"# TYPE {f.name} {f.kind}")
        for labels, value in f.samples:
            if labels:
                inner = ",".join(f'{k}="{escape(v)}"' for k, v in sorted(labels.items()))
                lines.append(f"{f.name}{{{inner}}} {_number(value)}")
            else:
                lines.append(f"{f.name} {_number(value)}")
    return "\n".join(lines) + "\n"


__all__ = [
    "MAX_LINE",
    "MAX_SERIES",
    "Family",
    "Parsed",
    "PromTextError",
    "Reading",
    "Sample",
    "escape",
    "exposition",
    "parse",
    "parse_line",
    "read",
]
