"""Serve one reader of `/v1/stream`: what it asked for, its replay, then its live frames.

A client asks with the request's query (`pods`, `summary`, `since`, `rows`: docs/agents.md)
what the shards' parent says in its hello. Its frames go through the shards' own `Sender`, so a
slow reader is handled the same way: the agent never waits for it, `event` frames and rows are
dropped and counted while more than `limit` bytes wait, and a `dropped` frame says so once it
has caught up. A reader that stays that far behind for `SLOW_CLOSE` seconds is sent a `fail`
frame and closed (`Hub.tick`); it resumes from the ring with `since`.

The replay: everything in the ring stamped after `since`, written straight to the response a
batch at a time (awaiting the reader, not holding the agent), then the switch to live frames. The
last look at the ring and the switch happen with no await between them, and every entry's stamp
is greater than the one before, so no frame is sent twice and none is missed. Until the switch
the live path sends only state (pods, counts, notes), which waits in the client's queue and
follows the replay; a `live` frame marks where the replay ended.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from probetui.agent.ring import BlobEntry, Ring, RowEntry
from probetui.prober.status import PodStatus
from probetui.spec.model import Pod
from probetui.stream.codec import PodWriter, event_frame
from probetui.stream.protocol import LIVE, MAX_FRAME, dumps
from probetui.stream.rows import ROWS, PodNames, RowReader, RowWriter
from probetui.stream.sender import Sender
from probetui.timeline.events import Event

if TYPE_CHECKING:
    from probetui.agent.summary import ProbeSummary
    from probetui.keys import ProbeKey

REPLAY_BATCH = 512  # ring entries encoded per write of a replay: a short hold of the loop
ROWS_PER_FRAME = 256  # rows in one replayed `rows` frame (bodies in the ring are cut to 1 KiB)
SLOW_CLOSE = 30.0  # seconds a reader may stay over its buffer before it is closed
# a frame waits this long to leave with the ones after it, so the agent makes far fewer
# writes while a reader through the API server hardly sees the delay
FLUSH_DELAY = 0.1
# seconds a probe's summary waits when only its counts moved: a probe changes at every
# attempt, and a reader's list shows only its state, which goes out at once (guarded by
# benchmarks/agents.py --mode fanin)
SUMMARY_REFRESH = 60.0


class QueueTransport:
    """Acts as the `Sender`'s transport for an HTTP response: bytes wait here for the writer task.

    `get_write_buffer_size` counts what waits here and what the socket still holds, which is
    what the sender's drop rule measures.
    """

    def __init__(self, downstream: Callable[[], int] = lambda: 0) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        self._ready = asyncio.Event()
        self._closing = False
        self._downstream = downstream

    def write(self, data: bytes) -> None:
        self._chunks.append(data)
        self._size += len(data)
        self._ready.set()

    def is_closing(self) -> bool:
        return self._closing

    def get_write_buffer_size(self) -> int:
        return self._size + self._downstream()

    def close(self) -> None:
        self._closing = True
        self._ready.set()

    async def take(self) -> bytes:
        """Tell what waits, once something does; b"" once closed and empty."""
        while not self._chunks and not self._closing:
            self._ready.clear()
            await self._ready.wait()
        return self.take_now()

    def take_now(self) -> bytes:
        """Tell what waits now (b"" for nothing)."""
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        return data


class _Encoded:
    """Holds an event's `event` frame with its stamp, encoded at most once for every client."""

    __slots__ = ("_data", "event", "stamp")

    def __init__(self, event: Event, stamp: float) -> None:
        self.event = event
        self.stamp = stamp
        self._data: bytes | None = None

    def data(self) -> bytes:
        if self._data is None:
            frame = event_frame(self.event)
            frame["at"] = self.stamp
            self._data = dumps(frame)
        return self._data


class StreamClient:
    def __init__(
        self,
        *,
        pods: frozenset[str] | None,
        summary: bool,
        rows: bool,
        limit: int,
        downstream: Callable[[], int] = lambda: 0,
        pod_frames: bool = True,
    ) -> None:
        self.pods = pods  # None: every pod's attempts
        self.summary = summary
        self.pod_frames = pod_frames  # False: the reader watches the pods itself
        self.queue = QueueTransport(downstream)
        self.sender = Sender(self.queue, limit, FLUSH_DELAY)  # type: ignore[arg-type]
        self.rows = RowWriter() if rows else None
        self._pod_writer = PodWriter()
        self.live = False
        self.behind_since: float | None = None
        self.closing_reason: str | None = None
        # per probe, the summary sent last: its version, the state it showed, when
        self._summaries: dict[ProbeKey, tuple[int, tuple[int | None, bool, bool], float]] = {}
        # a replay without rows rebuilds each attempt's event from the ring's row
        self._replay_rows: tuple[RowWriter, RowReader] | None = None

    def wants(self, uid: str) -> bool:
        """Tell whether this client takes the attempts of pod `uid` (else, at most, summaries)."""
        return self.pods is None or uid in self.pods

    # -- the live path (the hub calls these as the engine publishes) ----------------------

    def row(
        self,
        event: Event,
        parts: tuple[ProbeKey, PodNames, list[Any], tuple[Any, ...]],
        encoded: _Encoded,
    ) -> None:
        if not self.live or not self.wants(event.pod_uid):
            return
        rows = self.rows
        if rows is None:
            self.sender.send_encoded(encoded.data(), event.type)
            return
        declare, row = rows.encode_parts(*parts)
        if declare is not None:
            self.sender.send(declare)
        if not self.sender.send_row(event.type, row, encoded.stamp):
            rows.forget_key(parts[0])

    def blob(self, uid: str, event_type: str, data: bytes) -> None:
        if self.live:
            self.sender.send_encoded(data, event_type)

    def transient(self, event: Event) -> None:
        """An event the ring does not keep (a tick of a probe the agent does not run)."""
        if self.live and self.wants(event.pod_uid):
            self.sender.send(event_frame(event))

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        if self.pod_frames:
            self.sender.send(self._pod_writer.frame(pod, status))

    def send(self, frame: dict[str, Any]) -> None:
        self.sender.send(frame)

    def send_encoded(self, data: bytes) -> None:
        """A frame that is state (never dropped), encoded once for every client."""
        self.sender.send_encoded(data)

    def summaries(self, table: dict[ProbeKey, ProbeSummary], now: float) -> None:
        """Send a `summary` frame for each probe whose attempts this client does not take: at
        once where its state changed since the last one sent, after SUMMARY_REFRESH where only
        its counts did."""
        if not self.summary or not self.live:
            return
        sent = self._summaries
        for key, s in table.items():
            if self.wants(key.pod_uid):
                continue
            last = sent.get(key)
            state = s.state()
            if last is not None and (
                last[0] == s.version or (last[1] == state and now - last[2] < SUMMARY_REFRESH)
            ):
                continue
            sent[key] = (s.version, state, now)
            self.sender.send(s.frame(now))

    def forget_summary(self, key: ProbeKey) -> None:
        self._summaries.pop(key, None)

    # -- the replay -----------------------------------------------------------------------

    async def replay(
        self,
        ring: Ring,
        since: float,
        not_before: float | None,
        write: Callable[[bytes], Awaitable[None]],
        on_live: Callable[[], None],
    ) -> int:
        """Write what `ring` holds after `since`, then go live; how many entries were sent."""
        cursor = since
        sent = 0
        while True:
            entries, last = ring.after(cursor, REPLAY_BATCH, not_before=not_before)
            if not entries:
                # no await since the look: nothing published in between
                self.live = True
                # the last stamp sent, for a reader to resume from; null before any (JSON has
                # no infinity)
                self.sender.send({"k": LIVE, "at": cursor if math.isfinite(cursor) else None})
                on_live()
                return sent
            data, n = self._encode(entries)
            sent += n
            cursor = last
            if data:
                await write(data)
            else:
                await asyncio.sleep(0)  # a batch of other pods' attempts: let the agent run

    def _encode(self, entries: list[RowEntry | BlobEntry]) -> tuple[bytes, int]:
        out: list[bytes] = []
        rows: list[list[Any]] = []
        rows_at = 0.0
        n = 0

        def close_rows() -> None:
            nonlocal rows
            if rows:
                out.append(dumps({"k": ROWS, "r": rows, "at": rows_at}))
                rows = []

        for e in entries:
            if isinstance(e, BlobEntry):
                # every pod's: results, the kubelet's changes, divergences (`pods=` limits rows)
                close_rows()
                out.append(e.data)
                n += 1
                continue
            if not self.wants(e.names.uid):
                continue
            n += 1
            if self.rows is None:
                out.append(self._replayed_event(e))
                continue
            declare, row = self.rows.encode_parts(e.key, e.names, e.head, e.rest)
            if declare is not None:
                close_rows()
                out.append(dumps(declare))
            rows.append(row)
            rows_at = e.stamp
            if len(rows) >= ROWS_PER_FRAME:
                close_rows()
        close_rows()
        return b"".join(out), n

    def _replayed_event(self, e: RowEntry) -> bytes:
        """Return the `event` frame of a kept attempt: the row decoded as a client decodes it."""
        if self._replay_rows is None:
            self._replay_rows = (RowWriter(), RowReader())
        writer, reader = self._replay_rows
        declare, row = writer.encode_parts(e.key, e.names, e.head, e.rest)
        if declare is not None:
            reader.declare(declare)
        if isinstance(row[-1], tuple):
            row[-1] = list(row[-1])  # the rest, as a reader finds it after JSON
        (event,) = reader.events({"r": [row]})
        frame = event_frame(event)
        frame["at"] = e.stamp
        data = dumps(frame)
        return data if len(data) <= MAX_FRAME else b""

    # -- the way out ----------------------------------------------------------------------

    def close(self, reason: str | None = None) -> None:
        """Stop this client: `reason`, when given, goes out as its last frame (`fail`)."""
        if self.closing_reason is None and reason is not None:
            self.closing_reason = reason
            self.sender.flush_report()
            self.queue.write(dumps({"k": "fail", "message": reason}))
        self.sender.flush()
        self.queue.close()


__all__ = ["REPLAY_BATCH", "SLOW_CLOSE", "QueueTransport", "StreamClient"]
