"""The engine's end of the stream: frames onto a transport that never blocks the engine.

A slow reader must not slow the prober (its ticks would run late and its verdicts be wrong),
so nothing here awaits the reader: frames go into the transport's write buffer, and while that
buffer holds more than `limit` bytes, event frames are dropped and counted by event type. Once
the reader has taken the buffer below half the limit, a `dropped` frame with the totals so far
goes out ahead of the next frame, so the reader knows what it missed and how much. Frames that
are not events (pods, acks, the end) are never dropped: they are few, and a reader without them
would misread everything after.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from probetui.prober.status import PodStatus
from probetui.spec.model import Pod
from probetui.stream.codec import PodWriter, event_frame
from probetui.stream.protocol import DROPPED, EVENT, dumps
from probetui.timeline.events import Event

DEFAULT_LIMIT = 4 << 20  # bytes the reader may fall behind by before events are dropped


class Sender:
    def __init__(self, transport: asyncio.WriteTransport, limit: int = DEFAULT_LIMIT) -> None:
        self.transport = transport
        self.limit = limit
        self.dropped: Counter[str] = Counter()
        self._unreported = False
        self.frames = 0

    def send(self, frame: dict[str, Any]) -> bool:
        """Queue `frame`; False when it was an event dropped for a reader too far behind."""
        if self.transport.is_closing():
            return False
        size = self.transport.get_write_buffer_size()
        if frame["k"] == EVENT and size > self.limit:
            self.dropped[frame["e"]["type"]] += 1
            self._unreported = True
            return False
        if self._unreported and size <= self.limit // 2:
            self._unreported = False
            self.transport.write(dumps(self.dropped_frame()))
        self.transport.write(dumps(frame))
        self.frames += 1
        return True

    def dropped_frame(self) -> dict[str, Any]:
        return {"k": DROPPED, "n": sum(self.dropped.values()), "by": dict(self.dropped)}

    def flush_report(self) -> None:
        """Say what was dropped now, whatever the buffer holds (on the way out)."""
        if self._unreported and not self.transport.is_closing():
            self._unreported = False
            self.transport.write(dumps(self.dropped_frame()))


class StreamSink:
    """An engine sink that streams every event and pod snapshot through a `Sender`."""

    def __init__(self, sender: Sender) -> None:
        self.sender = sender
        self.pods = PodWriter()

    def event(self, event: Event) -> None:
        self.sender.send(event_frame(event))

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.sender.send(self.pods.frame(pod, status))


__all__ = ["DEFAULT_LIMIT", "Sender", "StreamSink"]
