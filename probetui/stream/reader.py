"""Read frames off a byte stream a chunk at a time: the client's end of the stream.

`StreamReader.readline` deletes each line from the front of its buffer, a copy of everything
behind it: with a writer that sends a turn of its loop's frames in one write, the buffer holds
hundreds of frames and reading them one line at a time costs the square of their number, so a
shard's stream falls behind (guarded by benchmarks/shards.py). Reading 64 KiB and splitting it
costs one pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from probetui.stream.protocol import MAX_FRAME, ProtocolError

CHUNK = 1 << 16


async def lines(reader: asyncio.StreamReader) -> AsyncIterator[list[bytes]]:
    """The stream's lines (frames, without their newline), in the batches they arrived in."""
    rest = b""
    while True:
        chunk = await reader.read(CHUNK)
        if not chunk:
            if rest.strip():
                raise ProtocolError("the stream ended inside a frame")
            return
        got = (rest + chunk).split(b"\n") if rest else chunk.split(b"\n")
        rest = got.pop()
        if len(rest) > MAX_FRAME:
            raise ProtocolError(f"a frame over the {MAX_FRAME} byte limit")
        if got:
            yield got


__all__ = ["CHUNK", "lines"]
