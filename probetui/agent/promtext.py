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
from collections.abc import Iterable
from dataclasses import dataclass, field

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


def parse(text: str, names: Iterable[str], known: Known | None = None) -> Parsed:
    """Return the samples of `names` in `text` (the text format, 0.0.4).

    With `known`, a line whose series the last read parsed costs a split and a lookup, not a
    parse: a scrape repeats the same series with new values. `known` is refilled with this
    read's series only, so it never outgrows one body.
    """
    wanted = tuple(names)
    out = Parsed()
    seen: Known = {}
    for line in lines_of(text, wanted):
        if len(line) > MAX_LINE:
            out.skipped += 1
            continue
        series, _, value = line.rstrip("\r").rpartition(" ")
        hit = known.get(series) if known is not None and value else None
        try:
            if hit is not None:
                sample = Sample(hit[0], hit[1], number(value))
            else:
                sample, timed = parse_sample(line)
                if known is not None and value and not timed:
                    hit = (sample.name, sample.labels)
        except PromTextError:
            out.skipped += 1
            continue
        if sample.name not in wanted:
            continue  # a longer name with a wanted one as its prefix
        if len(out.samples) >= MAX_SERIES:
            out.truncated = True
            break
        if hit is not None:
            seen[series] = hit
        out.samples.append(sample)
    if known is not None:
        known.clear()
        known.update(seen)
    return out


def lines_of(text: str, wanted: tuple[str, ...]) -> list[str]:
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
    return parse_sample(line)[0]


def parse_sample(line: str) -> tuple[Sample, bool]:
    """Return one sample line's sample, and whether the line carries a timestamp after its
    value (such a line's text up to its value is not the series alone)."""
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
    return Sample(name, labels, number(value)), stamp is not None


def number(text: str) -> float:
    """Read a sample's value as Go's ParseFloat does in the format: +Inf, -Inf, NaN and every
    float spelling."""
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
    "Sample",
    "escape",
    "exposition",
    "lines_of",
    "number",
    "parse",
    "parse_line",
    "parse_sample",
]
