"""Read the timeline's history beyond the in-memory rings back from the recording.

When a recording is being written (`--record FILE`), or replayed, the store's rings hold only
the last hour or so of each probe; scrolling the timeline further back asks this archive for
the older attempts of the probe on screen. Reads are slow next to a repaint (an index lookup
and a chunk to decode), so they never run on the screen's turn: `window` answers at once from
what it has, and when that does not cover the span asked for, it starts a read on a thread
(sqlite3 blocks; the connection lives in that one thread) and bumps `version` once the rows are
in, so the screen redraws. What is kept is bounded: the spans of the last few probes looked at.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from probetui.keys import ProbeKey

KEEP = 8  # probes whose span is kept
MARGIN = 3.0  # a read covers this many times the span asked for, back in time, for scrolling


@dataclass(slots=True)
class _Span:
    start: float
    end: float
    entries: list[tuple[float, int]]  # (t, prober.outcome.Kind), oldest first


class HistoryArchive:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.version = 0
        self._spans: OrderedDict[ProbeKey, _Span] = OrderedDict()
        self._pending: set[ProbeKey] = set()
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="probetui-archive")
        self._recording: object | None = None  # opened in the pool's thread, used only there
        self.failure: str | None = None

    def window(self, key: ProbeKey, start: float, end: float) -> list[tuple[float, int]]:
        """Return the recorded (t, kind) of `key` with start <= t < end, as far as they are read;
        a read of what is missing is started."""
        span = self._spans.get(key)
        if span is not None:
            self._spans.move_to_end(key)
            if span.start <= start and end <= span.end:
                return [e for e in span.entries if start <= e[0] < end]
        if self.failure is None and key not in self._pending:
            self._start_read(key, end - (end - start) * MARGIN, end)
        if span is None:
            return []
        return [e for e in span.entries if start <= e[0] < end]

    def _start_read(self, key: ProbeKey, start: float, end: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a test drawing once): nothing to wait for the read on
        self._pending.add(key)
        future = loop.run_in_executor(self._pool, self._read, key, start, end)
        future.add_done_callback(lambda f: self._done(key, start, end, f))

    def _read(self, key: ProbeKey, start: float, end: float) -> list[tuple[float, int]]:
        from probetui.record.reader import Recording, open_recording

        if self._recording is None:
            self._recording = open_recording(self.path)
        recording = self._recording
        assert isinstance(recording, Recording)
        return [
            # the kind is the part's: a recorded attempt builds no outcome of its numbers
            (r.t, r.steady.kind)
            for r in recording.attempts(key, start, end)
            if start <= r.t < end
        ]

    def _done(
        self,
        key: ProbeKey,
        start: float,
        end: float,
        future: asyncio.Future[list[tuple[float, int]]],
    ) -> None:
        self._pending.discard(key)
        if future.cancelled():
            return
        error = future.exception()
        if error is not None:
            self.failure = f"history from {self.path} not read: {error}"
            self.version += 1
            return
        self._spans[key] = _Span(start, end, future.result())
        self._spans.move_to_end(key)
        while len(self._spans) > KEEP:
            self._spans.popitem(last=False)
        self.version += 1

    def close(self) -> None:
        """Stop reading: what is queued is dropped, the connection closed in its own thread."""
        self._pool.submit(self._close_recording)
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _close_recording(self) -> None:
        recording = self._recording
        self._recording = None
        close = getattr(recording, "close", None)
        if close is not None:
            close()


__all__ = ["HistoryArchive"]
