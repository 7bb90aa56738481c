"""Write frames onto a transport that never blocks the engine: the engine's end of the stream.

A slow reader must not slow the prober (its ticks would run late and its verdicts be wrong),
so nothing here awaits the reader: frames go into the transport's write buffer, and while that
buffer holds more than `limit` bytes, event frames (and attempt rows) are dropped and counted by
event type. Once the reader has taken the buffer below half the limit, a `dropped` frame with
the totals so far goes out ahead of the next frame, so the reader knows what it missed and how
much. Frames that are not events (pods, acks, the end) are never dropped: they are few, and a
reader without them would misread everything after.

Frames are not written one by one: what the engine sends is gathered for FLUSH_DELAY and
written in one write, the attempt rows among it (`rows.py`) as one frame. A pipe write is a
system call that wakes the reader, and one write per turn of the shard's loop would wake the
UI's process for a handful of rows; every 10 ms it is at most 100 a second, and a row waits at
most that long, less than a screen frame (guarded by benchmarks/shards.py). Order is kept: a
frame that is not a row closes the rows gathered before it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from probetui.prober.status import PodStatus
from probetui.spec.model import Pod
from probetui.stream.codec import PodWriter, event_frame
from probetui.stream.protocol import DROPPED, EVENT, dumps
from probetui.stream.rows import ROW_BYTES, ROWS, RowWriter, is_row_event
from probetui.timeline.events import Event

DEFAULT_LIMIT = 4 << 20  # bytes the reader may fall behind by before events are dropped
# gathered bytes that are written at once, without waiting for FLUSH_DELAY
FLUSH_BYTES = 64 << 10
FLUSH_DELAY = 0.010  # seconds a frame may wait to leave with the ones after it


class Sender:
    def __init__(
        self,
        transport: asyncio.WriteTransport,
        limit: int = DEFAULT_LIMIT,
        delay: float = FLUSH_DELAY,
    ) -> None:
        self.transport = transport
        self.limit = limit
        # how long a frame may wait to leave with the ones after it (a reader over a network
        # can take a longer wait for fewer writes)
        self.delay = delay
        self.dropped: Counter[str] = Counter()
        self._unreported = False
        self.frames = 0
        self._pending: list[bytes] = []
        self._rows: list[list[Any]] = []
        # the publication stamp of the last row gathered, carried by their `rows` frame as `at`
        # (an agent's resume cursor, docs/stream.md); None: no stamp
        self._rows_at: float | None = None
        self._bytes = 0  # gathered, not yet written (rows guessed at ROW_BYTES and their texts)
        self._row_bytes = 0  # the rows' share of it
        self._flush_soon: asyncio.TimerHandle | None = None

    def _queued(self) -> int:
        return self.transport.get_write_buffer_size() + self._bytes

    def send(self, frame: dict[str, Any]) -> bool:
        """Queue `frame`; False when it was an event dropped for a reader too far behind."""
        kind = frame["k"]
        return self.send_encoded(dumps(frame), frame["e"]["type"] if kind == EVENT else None)

    def send_encoded(self, data: bytes, event_type: str | None = None) -> bool:
        """Queue one frame already encoded (`dumps`); `event_type` names an `event` frame, which
        is dropped for a reader too far behind (False) as `send` drops it."""
        if self.transport.is_closing():
            return False
        size = self._queued()
        if event_type is not None and size > self.limit:
            self.dropped[event_type] += 1
            self._unreported = True
            return False
        self._close_rows()
        if self._unreported and size <= self.limit // 2:
            self._unreported = False
            self._add(dumps(self.dropped_frame()))
        self._add(data)
        self.frames += 1
        return True

    def send_row(self, event_type: str, row: list[Any], at: float | None = None) -> bool:
        """Queue one attempt row (`rows.py`); False when dropped, as an event frame would be.
        `at`: the row's publication stamp, which its `rows` frame carries when it is the last."""
        if self.transport.is_closing():
            return False
        size = self._queued()
        if size > self.limit:
            self.dropped[event_type] += 1
            self._unreported = True
            return False
        if self._unreported and size <= self.limit // 2:
            self._close_rows()
            self._unreported = False
            self._add(dumps(self.dropped_frame()))
        self._rows.append(row)
        if at is not None:
            self._rows_at = at
        size = ROW_BYTES + _rest_bytes(row[-1])
        self._bytes += size
        self._row_bytes += size
        self.frames += 1
        self._later()
        return True

    def _add(self, data: bytes) -> None:
        self._pending.append(data)
        self._bytes += len(data)
        if self._bytes >= FLUSH_BYTES:
            self.flush()
        else:
            self._later()

    def _later(self) -> None:
        if self._flush_soon is None:
            try:
                self._flush_soon = asyncio.get_running_loop().call_later(self.delay, self.flush)
            except RuntimeError:  # no loop (an exit handler): now, then
                self.flush()
        elif self._bytes >= FLUSH_BYTES:
            self.flush()

    def _close_rows(self) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            self._bytes -= self._row_bytes
            self._row_bytes = 0
            frame: dict[str, Any] = {"k": ROWS, "r": rows}
            if self._rows_at is not None:
                frame["at"] = self._rows_at
                self._rows_at = None
            data = dumps(frame)
            self._pending.append(data)
            self._bytes += len(data)

    def flush(self) -> None:
        """Write what is gathered now (FLUSH_DELAY after the first of it, or on the way out)."""
        if self._flush_soon is not None:
            self._flush_soon.cancel()
            self._flush_soon = None
        self._close_rows()
        if not self._pending:
            return
        data = b"".join(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending.clear()
        self._bytes = 0
        if not self.transport.is_closing():
            self.transport.write(data)

    def dropped_frame(self) -> dict[str, Any]:
        return {"k": DROPPED, "n": sum(self.dropped.values()), "by": dict(self.dropped)}

    def flush_report(self) -> None:
        """Say what was dropped now, whatever the buffer holds, and write everything gathered
        (on the way out)."""
        self._close_rows()
        if self._unreported and not self.transport.is_closing():
            self._unreported = False
            self._pending.append(dumps(self.dropped_frame()))
        self.flush()


def _rest_bytes(cell: Any) -> int:
    """The text a row's rest carries (outputs, errors, bodies: up to 10 KiB a try), so that
    the rows gathered for one write stay far below MAX_FRAME when every attempt's body differs
    (a clock in it); a row without its rest is its numbers alone."""
    if not isinstance(cell, tuple):
        return 0
    out = cell[-1]
    if out is None:
        return 0
    return sum(len(t[1] or "") + len(t[3] or "") + len(t[6] or "") for t in out[3])


class StreamSink:
    """Acts as an engine sink that streams every event and pod snapshot through a `Sender`; with
    `rows`, the shadow's attempts and skips as rows (the client asked for them in its hello)."""

    def __init__(self, sender: Sender, rows: bool = False) -> None:
        self.sender = sender
        self.pods = PodWriter()
        self.rows = RowWriter() if rows else None

    def event(self, event: Event) -> None:
        rows = self.rows
        if rows is not None and is_row_event(event):
            declare, row = rows.encode(event)
            if declare is not None:
                self.sender.send(declare)
            if not self.sender.send_row(event.type, row):
                rows.forget(event)
            return
        self.sender.send(event_frame(event))

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.sender.send(self.pods.frame(pod, status))


__all__ = ["DEFAULT_LIMIT", "FLUSH_BYTES", "FLUSH_DELAY", "Sender", "StreamSink"]
