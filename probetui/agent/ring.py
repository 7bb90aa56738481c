"""The agent's ring remembers what it published: the last `--retain` of frames, in order.

A client that attaches late asks for everything published after a stamp (`since`) and gets it
at once, then the live frames, with nothing twice: every entry carries its publication stamp,
strictly increasing across the whole ring, and the client's replay walks the ring by stamp
until it has caught up (`probetui.agent.client`).

What is kept, per entry:

- a shadow attempt or skip (a row event, `probetui.stream.rows`): its row's numbers in one
  `array("d")` (stamp, time, tick, finished, next tick, result run, and each try's latency and
  start), its worker as a small number (`_Workers`: the probe key and the pod's names, counted
  by reference) and the rest of its record as a small number into an intern table (`_Rests`):
  nearly every attempt of a worker says what its last one said, so a steady attempt costs 105
  bytes and no Python object;
- any other event (a result change, the kubelet's changes the pod watch shows, a divergence, a
  probe not run): its `event` frame, encoded once, as bytes.

Bounded three ways: entries older than `retain` go, the oldest go past `capacity` entries (both
a chunk of 1,024 at a time), and HTTP bodies are cut to `BODY` characters, and dropped while the
distinct rests hold more than `TEXT_BUDGET` bytes of text (an answer whose body changes on every
attempt, a clock in it, would otherwise keep one body per attempt). The live stream carries the
full body; a replayed attempt the kept excerpt.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from probetui.keys import ProbeKey
from probetui.prober.prober import MAX_PROBE_RETRIES
from probetui.stream.rows import PodNames

CHUNK = 1024  # entries per chunk: the unit of eviction
# one row's numbers: stamp, t, at, fin, next, run, then (latency, started) per try
_HEAD = 6
STRIDE = _HEAD + 2 * MAX_PROBE_RETRIES
BODY = 1024  # characters of an HTTP body kept per replayed attempt
TEXT_BUDGET = 16 << 20  # bytes of text the distinct rests may hold before bodies are dropped
BLOB = -1  # the worker number of an entry that is an encoded event frame
_NAN = math.nan
# zeros that fill a row's numbers up to STRIDE, by how many are missing
_PAD = tuple(array("d", [0.0] * n) for n in range(STRIDE))


@dataclass(frozen=True, slots=True)
class RowEntry:
    """Holds a kept shadow attempt or skip: what `RowWriter.encode_parts` takes, and its stamp."""

    stamp: float
    key: ProbeKey
    names: PodNames
    head: list[Any]
    rest: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class BlobEntry:
    """Holds a kept event frame, encoded, with its stamp, its pod's UID and its event type."""

    stamp: float
    uid: str
    event_type: str
    data: bytes


class _Chunk:
    __slots__ = ("blobs", "n", "nums", "rest", "tries", "worker")

    def __init__(self) -> None:
        self.nums = array("d")
        self.worker = array("i")
        self.rest = array("i")
        self.tries = array("B")
        self.blobs: dict[int, tuple[str, str, bytes]] = {}
        self.n = 0

    def stamp(self, i: int) -> float:
        return self.nums[i * STRIDE]

    def last_stamp(self) -> float:
        return self.nums[(self.n - 1) * STRIDE]

    def first_after(self, cursor: float) -> int:
        """Return the index of the first entry stamped after `cursor` (`n` when none is)."""
        lo, hi = 0, self.n
        nums = self.nums
        while lo < hi:
            mid = (lo + hi) // 2
            if nums[mid * STRIDE] <= cursor:
                lo = mid + 1
            else:
                hi = mid
        return lo


class _Workers:
    """Keeps probe keys and their pods' names by a small number, freed when no entry names them."""

    def __init__(self) -> None:
        self._ids: dict[ProbeKey, int] = {}
        self._items: list[tuple[ProbeKey, PodNames] | None] = []
        self._refs: list[int] = []
        self._free: list[int] = []

    def add(self, key: ProbeKey, names: PodNames) -> int:
        i = self._ids.get(key)
        if i is None:
            if self._free:
                i = self._free.pop()
                self._items[i] = (key, names)
                self._refs[i] = 0
            else:
                i = len(self._items)
                self._items.append((key, names))
                self._refs.append(0)
            self._ids[key] = i
        self._refs[i] += 1
        return i

    def release(self, i: int) -> bool:
        """Drop one reference to worker `i`; True when that was its last (`i` is free)."""
        self._refs[i] -= 1
        if self._refs[i] == 0:
            item = self._items[i]
            assert item is not None
            del self._ids[item[0]]
            self._items[i] = None
            self._free.append(i)
            return True
        return False

    def __getitem__(self, i: int) -> tuple[ProbeKey, PodNames]:
        item = self._items[i]
        assert item is not None
        return item

    def __len__(self) -> int:
        return len(self._ids)


class _Rests:
    """Holds the rests of rows (`row_parts`), interned with reference counts and their text
    counted."""

    def __init__(self) -> None:
        self._ids: dict[tuple[Any, ...], int] = {}
        self._items: list[tuple[Any, ...] | None] = []
        self._refs = array("I")
        self._sizes = array("I")
        self._free: list[int] = []
        self.text = 0  # bytes of text the distinct rests hold (about: characters)

    def add(self, rest: tuple[Any, ...]) -> int:
        i = self._ids.get(rest)
        if i is None:
            size = _text_size(rest)
            if self._free:
                i = self._free.pop()
                self._items[i] = rest
                self._refs[i] = 0
                self._sizes[i] = size
            else:
                i = len(self._items)
                self._items.append(rest)
                self._refs.append(0)
                self._sizes.append(size)
            self._ids[rest] = i
            self.text += size
        self._refs[i] += 1
        return i

    def again(self, i: int, rest: tuple[Any, ...]) -> bool:
        """Add one more reference to rest `i` if it still holds `rest` itself (True)."""
        if self._items[i] is not rest:
            return False
        self._refs[i] += 1
        return True

    def release(self, i: int) -> None:
        left = self._refs[i] - 1
        self._refs[i] = left
        if left == 0:
            rest = self._items[i]
            assert rest is not None
            del self._ids[rest]
            self._items[i] = None
            self.text -= self._sizes[i]
            self._free.append(i)

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        rest = self._items[i]
        assert rest is not None
        return rest

    def __len__(self) -> int:
        return len(self._ids)


def _text_size(rest: tuple[Any, ...]) -> int:
    size = len(rest[1] or "")  # the container ID
    out = rest[8]
    if out is not None:
        size += len(out[1] or "")
        if out[2] is not None:
            size += len(out[2][2] or "")
        for t in out[3]:
            size += len(t[1] or "") + len(t[3] or "") + len(t[4] or "") + len(t[6] or "")
    return size


def _kept_rest(rest: tuple[Any, ...], drop_bodies: bool) -> tuple[Any, ...]:
    """`rest` with each try's body cut to BODY characters (or dropped): the same object where
    nothing is cut, so that a steady attempt builds nothing."""
    out = rest[8]
    if out is None:
        return rest
    tries = out[3]
    limit = 0 if drop_bodies else BODY
    if all(t[6] is None or len(t[6]) <= limit for t in tries):
        return rest
    cut = tuple(
        t if t[6] is None or len(t[6]) <= limit else (*t[:6], t[6][:limit] if limit else None, t[7])
        for t in tries
    )
    return (*rest[:8], (out[0], out[1], out[2], cut))


class Ring:
    """Keeps the published frames of the last `retain` seconds (at most `capacity` entries)."""

    def __init__(self, retain: float, capacity: int) -> None:
        self.retain = retain
        self.capacity = max(capacity, CHUNK)
        self._chunks: deque[_Chunk] = deque()
        self._workers = _Workers()
        self._rests = _Rests()
        # per worker number: its last row's rest as given, whether bodies were dropped, the
        # rest as kept and its number: the rows of a steady probe share one rest object, so
        # the next row finds its number without hashing the rest again
        self._last: dict[int, tuple[tuple[Any, ...], bool, tuple[Any, ...], int]] = {}
        self.entries = 0
        self.evicted = 0

    # -- adding ---------------------------------------------------------------------------

    def _slot(self) -> _Chunk:
        chunks = self._chunks
        if not chunks or chunks[-1].n == CHUNK:
            chunks.append(_Chunk())
        return chunks[-1]

    def add_row(
        self, stamp: float, key: ProbeKey, names: PodNames, head: list[Any], rest: tuple[Any, ...]
    ) -> None:
        tries = (len(head) - _HEAD + 1) // 2
        if tries > MAX_PROBE_RETRIES:
            return  # the prober never tries more often; nothing here could hold it
        chunk = self._slot()
        nums = chunk.nums
        nums.append(stamp)
        nums.extend([_NAN if v is None else v for v in head])
        nums.extend(_PAD[STRIDE - 1 - len(head)])
        w = self._workers.add(key, names)
        chunk.worker.append(w)
        rests = self._rests
        drop = rests.text > TEXT_BUDGET
        last = self._last.get(w)
        if (
            last is not None
            and last[0] is rest
            and last[1] == drop
            and rests.again(last[3], last[2])
        ):
            i = last[3]
        else:
            kept = _kept_rest(rest, drop)
            i = rests.add(kept)
            self._last[w] = (rest, drop, kept, i)
        chunk.rest.append(i)
        chunk.tries.append(tries)
        chunk.n += 1
        self._added(stamp)

    def add_blob(self, stamp: float, uid: str, event_type: str, data: bytes) -> None:
        chunk = self._slot()
        chunk.nums.append(stamp)
        chunk.nums.extend([0.0] * (STRIDE - 1))
        chunk.worker.append(BLOB)
        chunk.rest.append(0)
        chunk.tries.append(0)
        chunk.blobs[chunk.n] = (uid, event_type, data)
        chunk.n += 1
        self._added(stamp)

    def _added(self, stamp: float) -> None:
        self.entries += 1
        if self.entries > self.capacity + CHUNK:
            self._drop_oldest()
        self.prune(stamp)

    def prune(self, now: float) -> None:
        """Drop the chunks whose newest entry is older than `retain`."""
        chunks = self._chunks
        cutoff = now - self.retain
        while len(chunks) > 1 and chunks[0].last_stamp() < cutoff:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        chunk = self._chunks.popleft()
        for i in range(chunk.n):
            w = chunk.worker[i]
            if w != BLOB:
                if self._workers.release(w):
                    self._last.pop(w, None)
                self._rests.release(chunk.rest[i])
        self.entries -= chunk.n
        self.evicted += chunk.n

    # -- reading --------------------------------------------------------------------------

    @property
    def oldest(self) -> float | None:
        """Return the stamp of the oldest entry kept, or None."""
        return self._chunks[0].stamp(0) if self._chunks else None

    @property
    def newest(self) -> float | None:
        return self._chunks[-1].last_stamp() if self._chunks else None

    def after(
        self, cursor: float, limit: int, *, not_before: float | None = None
    ) -> tuple[list[RowEntry | BlobEntry], float]:
        """Up to `limit` entries stamped after `cursor` (and at or after `not_before`, the
        retain window), oldest first, and the stamp of the last one returned (`cursor` when
        none is)."""
        if not_before is not None:
            cursor = max(cursor, math.nextafter(not_before, -math.inf))
        out: list[RowEntry | BlobEntry] = []
        for chunk in self._chunks:
            if chunk.n == 0 or chunk.last_stamp() <= cursor:
                continue
            for i in range(chunk.first_after(cursor), chunk.n):
                out.append(self._entry(chunk, i))
                if len(out) >= limit:
                    return out, out[-1].stamp
        return out, out[-1].stamp if out else cursor

    def _entry(self, chunk: _Chunk, i: int) -> RowEntry | BlobEntry:
        base = i * STRIDE
        nums = chunk.nums
        w = chunk.worker[i]
        if w == BLOB:
            uid, event_type, data = chunk.blobs[i]
            return BlobEntry(nums[base], uid, event_type, data)
        key, names = self._workers[w]
        t, at, fin, nxt, run = nums[base + 1 : base + _HEAD]
        head: list[Any] = [
            t,
            at,
            None if math.isnan(fin) else fin,
            None if math.isnan(nxt) else nxt,
            int(run),
        ]
        head.extend(nums[base + _HEAD : base + _HEAD + 2 * chunk.tries[i]])
        return RowEntry(nums[base], key, names, head, self._rests[chunk.rest[i]])

    def __iter__(self) -> Iterator[RowEntry | BlobEntry]:
        for chunk in self._chunks:
            for i in range(chunk.n):
                yield self._entry(chunk, i)

    def stats(self) -> dict[str, int]:
        """Entries kept, distinct workers and rests, the rests' text bytes (for /metrics)."""
        return {
            "entries": self.entries,
            "workers": len(self._workers),
            "rests": len(self._rests),
            "text_bytes": self._rests.text,
            "evicted": self.evicted,
        }


__all__ = ["BODY", "CHUNK", "TEXT_BUDGET", "BlobEntry", "Ring", "RowEntry"]
