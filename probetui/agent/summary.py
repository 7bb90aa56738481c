"""Sum one probe up in a few numbers, for a client that does not take its attempts.

A client of many nodes asks for the attempts of the pods it shows in full (`pods=`) and for
`summary` frames for the rest (`summary=1`): per probe, what its worker published and holds,
its doProbes counted by outcome since the agent started, and the latency of its last attempts.
Kept up to date by the hub as each record passes (no walk of the ring), sent when it changed.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from probetui.keys import ProbeKey
from probetui.prober.worker import ProbeRecord
from probetui.stream.protocol import SUMMARY
from probetui.stream.rows import PodNames
from probetui.triage.probes import percentile

_LAST_FIELDS = ("latency_ms", "statusCode", "output", "error")
LATENCIES = 20  # attempts whose latency the summary's percentiles read (as --summary's)


@dataclass(slots=True)
class ProbeSummary:
    key: ProbeKey
    names: PodNames
    version: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCIES))
    published: int | None = None
    run: int = 0
    hold: bool = False
    next_tick: float | None = None
    paused: bool = False
    # the last attempt that ran: (time, outcome word, its event's fields); its `last` object is
    # built when a frame is, not for every attempt
    _last: tuple[float, str, dict[str, Any]] | None = None

    def add(self, record: ProbeRecord, fields: dict[str, Any], word: str) -> None:
        """One doProbe record of this probe, with its event's fields and its outcome's name
        (`KIND_NAMES`)."""
        self.counts[word] += 1
        self.published = None if record.published is None else int(record.published)
        self.run = record.result_run
        self.hold = record.on_hold
        self.next_tick = record.next_tick
        self.paused = record.paused
        part = record.steady
        if part.probed:
            if part.tries:  # the last try's latency, off the record
                self.latencies.append(record.latency)
            self._last = (record.t, word, fields)
        self.version += 1

    @property
    def last(self) -> dict[str, Any] | None:
        """Return the last attempt that ran as a frame shows it: time, outcome, and what of
        latency, status, output and error its event said."""
        if self._last is None:
            return None
        t, word, fields = self._last
        last: dict[str, Any] = {"t": t, "outcome": word}
        for name in _LAST_FIELDS:
            if name in fields:
                last[name] = fields[name]
        return last

    def state(self) -> tuple[int | None, bool, bool]:
        """Return what a reader's list shows of the probe: published result, hold, pause."""
        return (self.published, self.hold, self.paused)

    def frame(self, now: float) -> dict[str, Any]:
        key, names = self.key, self.names
        out: dict[str, Any] = {
            "k": SUMMARY,
            "t": now,
            "uid": names.uid,
            "ns": names.namespace,
            "pod": names.name,
            "c": key.container,
            "probe": key.probe_type.key,
            "n": dict(self.counts),
            "pub": self.published,
            "run": self.run,
            "hold": self.hold,
            "next": self.next_tick,
            "last": self.last,
            "latency_ms": _percentiles(self.latencies),
        }
        if self.paused:
            out["paused"] = True
        return out


def _percentiles(values: deque[float]) -> dict[str, Any] | None:
    if not values:
        return None
    ordered = sorted(values)
    ms = {p: round((percentile(ordered, p) or 0.0) * 1000.0, 3) for p in (50, 90, 100)}
    return {"p50": ms[50], "p90": ms[90], "max": ms[100], "attempts": len(ordered)}


__all__ = ["LATENCIES", "ProbeSummary"]
