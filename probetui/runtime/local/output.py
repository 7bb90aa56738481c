"""Keep a container's output for the local runtime: the tail of each stream, as lines.

Each stream keeps its last `tail_bytes` (64 KiB unless told) as timestamped lines; the oldest
fall out and are counted. A line longer than `max_line_bytes` (16 KiB) is split, as the CRI log
writer splits one into partial ("P") entries; a line still waiting for its newline is shown
with `partial` set.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

# how much of each stream output_tail() keeps
DEFAULT_TAIL_BYTES = 64 * 1024
# longer lines are split, as the CRI log writer splits them into partial ("P") entries
DEFAULT_MAX_LINE_BYTES = 16 * 1024


@dataclass(frozen=True)
class OutputLine:
    """Holds one line of output, without its newline; `partial` when it was split or had no
    newline."""

    stream: str  # "stdout" or "stderr"
    time: float  # time.time() when it was read
    data: bytes
    partial: bool = False

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


class Tail:
    """Keeps the last `max_bytes` of one stream, as timestamped lines."""

    def __init__(self, stream: str, max_bytes: int, max_line: int) -> None:
        self.stream = stream
        self.max_bytes = max_bytes
        self.max_line = max_line
        self.lines: deque[OutputLine] = deque()
        self.size = 0
        self.pending = bytearray()
        self.pending_since = 0.0
        self.dropped = 0

    def feed(self, chunk: bytes, now: float) -> None:
        if not self.pending:
            self.pending_since = now
        self.pending += chunk
        while True:
            end = self.pending.find(b"\n")
            if end != -1 and end <= self.max_line:
                self._keep(bytes(self.pending[:end]), partial=False)
                del self.pending[: end + 1]
            elif len(self.pending) > self.max_line:
                self._keep(bytes(self.pending[: self.max_line]), partial=True)
                del self.pending[: self.max_line]
            else:
                break
            self.pending_since = now

    def close(self) -> None:
        if self.pending:
            self._keep(bytes(self.pending), partial=True)
            self.pending.clear()

    def _keep(self, data: bytes, partial: bool) -> None:
        self.lines.append(OutputLine(self.stream, self.pending_since, data, partial))
        self.size += len(data) + 1
        while self.size > self.max_bytes and self.lines:
            self.size -= len(self.lines.popleft().data) + 1
            self.dropped += 1

    def snapshot(self) -> list[OutputLine]:
        out = list(self.lines)
        if self.pending:
            out.append(OutputLine(self.stream, self.pending_since, bytes(self.pending), True))
        return out


__all__ = ["DEFAULT_MAX_LINE_BYTES", "DEFAULT_TAIL_BYTES", "OutputLine", "Tail"]
