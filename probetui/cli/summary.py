"""`--summary DURATION` writes a `WorkloadSummary` line per workload, headless, every DURATION.

It runs on the live modes, beside the event lines (`probetui.triage.report` writes them).

The live runner calls `summary_sink(args, headless)` before anything starts (a bad value is
one line and exit 2) and adds what it returns to the engine's sinks. The sink keeps a small
timeline store of its own: published results, holds, the last attempts' latencies and the
kubelet's marks are all a summary reads, so its rings hold a few dozen entries a probe, not
the screen's hour.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from probetui.cli.errors import UsageError

if TYPE_CHECKING:
    from probetui.prober.status import PodStatus
    from probetui.spec.model import Pod
    from probetui.timeline.events import Event

MIN_SECONDS = 1.0  # more often than this is a flood, not a summary
RING = 64  # entries a probe: more than the RECENT attempts the percentiles take


def add_summary_arguments(
    p: argparse.ArgumentParser | argparse._ArgumentGroup, prefix: str = ""
) -> None:
    p.add_argument(
        "--summary",
        dest=f"{prefix}summary",
        metavar="DURATION",
        help="headless: also a WorkloadSummary line per workload every DURATION (e.g. 30s, 1m)",
    )


def summary_sink(args: argparse.Namespace, headless: bool) -> SummarySink | None:
    """Return the `--summary` sink, or None without it; bad usage raises `UsageError`."""
    from probetui.record.timespec import TimeSpecError, parse_duration

    text = getattr(args, "summary", None)
    if text is None:
        return None
    if not headless:
        raise UsageError(
            "--summary: only headless (add --no-ui or --output jsonl); on the screen the "
            "workload lines and the workload's probe view carry the same summary"
        )
    try:
        every = parse_duration(text)
    except TimeSpecError as e:
        raise UsageError(f"--summary {e}") from None
    if every < MIN_SECONDS:
        raise UsageError(f"--summary {text!r}: at least {MIN_SECONDS:g}s between summaries")
    return SummarySink(every, sys.stdout)


class SummarySink:
    """Acts as an engine sink: feeds its own store, and every `every` seconds writes a line a
    workload.

    Its clock starts at the engine's first call, which comes on the event loop the live runner
    owns; from then on the loop's timer calls it, so quiet workloads get their lines too."""

    def __init__(self, every: float, out: TextIO) -> None:
        from probetui.timeline.store import Store

        self.every = every
        self.out = out
        self.store = Store(capacity=RING, detail=0)
        self.lines = 0
        self.broken = False
        self._timer: asyncio.Handle | None = None
        self._writing: Iterator[list[str]] | None = None  # the tick being written, in slices
        self._due = 0.0  # the loop's time of the next tick

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self._start()
        self.store.pod(pod, status)

    def event(self, event: Event) -> None:
        self._start()
        self.store.event(event)

    def _start(self) -> None:
        if self._timer is None:
            loop = asyncio.get_running_loop()
            self._due = loop.time() + self.every
            self._timer = loop.call_at(self._due, self._tick)

    def _tick(self) -> None:
        """Write a tick a slice at a time, serving the loop between slices, so that a large
        fleet's tick never holds back events and keys (guarded by benchmarks/triage.py)."""
        from probetui.triage.report import summary_slices

        self._writing = summary_slices(self.store, time.time())
        self._slice()

    def _slice(self) -> None:
        loop = asyncio.get_running_loop()
        writing = self._writing
        batch = next(writing, None) if writing is not None and not self.broken else None
        if batch is None:
            self._writing = None
            if not self.broken:
                # the next tick on time, or at once where this one took longer than the interval
                self._due = max(self._due + self.every, loop.time())
                self._timer = loop.call_at(self._due, self._tick)
            return
        try:
            for line in batch:
                self.out.write(line + "\n")
                self.lines += 1
            self.out.flush()
        except BrokenPipeError:
            self.broken = True  # the reader went away: the event writer sees it too
        self._timer = loop.call_soon(self._slice)


__all__ = ["SummarySink", "add_summary_arguments", "summary_sink"]
