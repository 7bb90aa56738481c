"""Encode a probe's items in a chunk: their shapes, and the few numbers each item adds to its shape.

An item is one per-probe event of the shadow, in the order the engine published it:

    A  a doProbe that ran the handler (ProbeAttempt, with its record)
    S  a doProbe that ran none (ProbeSkipped, with its record)
    N  a tick the runtime would not let run (ProbeSkipped, a WorkerState, no record)
    W  a worker paused, resumed or exited (WorkerState)
    R  the published result changed (ResultChanged naming its container)

A *shape* is everything about an item but its times, latency and result run: for A the
trigger, container ID, last result, published value, hold, pause, via, the outcome (result,
error, tries, event), the attempt (handler, target, result, output, error, status code,
body excerpt, timed out) and, for an attempt a node agent made, its node (last, absent
otherwise: a reader that knows nothing of it reads the shape as before). Shapes are interned (`shapes` table, a JSON array whose texts are ids
in `strings`), so a steady probe has one.

An item is a header byte and varints (`varint.py`), relative to the item before it in the
chunk; the first item of a chunk is relative to zeros, a keyframe, so a chunk decodes alone:

    header  bit 0: a new shape id follows (else the previous item's)
            bits 1-2 (A, S): result run: 0 previous + 1, 1 the same, 2 a varint follows, 3 zero
            bit 3 (A, S): the tick is off the grid: the step from the previous tick follows
                  (else it is the previous step: a ticker's period)
    A, S    [shape] [run] [step] lateness (µs, zig-zag: t - tick) [A: latency µs]
    N, W, R [shape] dt (µs, zig-zag, since the previous item)

A steady probe's attempt is a header, its lateness and its latency: 4-6 bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from probetui.prober.steady import head_of, try_of
from probetui.prober.worker import ProbeRecord
from probetui.record import varint
from probetui.timeline.events import PROBE_SKIPPED, RESULT_CHANGED, WORKER_STATE, Event

NEW_SHAPE = 1
RUN_INC, RUN_SAME, RUN_EXPLICIT, RUN_ZERO = 0, 2, 4, 6
RUN_MASK = 6
OFF_GRID = 8


class ItemKind(StrEnum):
    """Names the kinds of per-probe item (the table above); each member is the letter a stored
    shape begins with."""

    ATTEMPT = "A"
    SKIPPED = "S"
    NOT_RUN = "N"
    WORKER = "W"
    RESULT = "R"


# the letters as plain strings: a raw key must hold only values the cyclic collector stops
# tracking (an enum member is tracked), and the decode loops compare them per item (a member's
# lookup on its class costs several times the comparison)
ATTEMPT, SKIPPED, NOT_RUN, WORKER, RESULT = (kind._value_ for kind in ItemKind)
RECORD_KINDS = frozenset({ATTEMPT, SKIPPED})

US = 1_000_000


def us(t: float) -> int:
    return round(t * US)


Text = Callable[[str | None], int | None]


def raw_key(event: Event, via: str | None, node: str | None = None) -> tuple[Any, ...] | None:
    """What decides an item's shape, unmasked and not interned: the writer's cache key. None for
    an event that is not a per-probe item. A record's is made once per steady part of it, via
    and node, and kept on the part: the items of a steady probe share one key, the same object.

    Only str, int, float, bool and None, in one flat tuple (enum members as their values): the
    cyclic collector stops tracking such a tuple at the first collection it survives, so the keys
    held in the writer's cache, and the items waiting in the recorder's queue, add nothing to
    the old generation every full collection walks, where a large fleet's would be most of it."""
    type_ = event.type
    record = event.record
    if record is not None:
        part = record.steady
        kept = part.item
        if kept is not None and kept[0] == via and kept[1] == node:
            return kept[2]
        key = _record_key(record, via, node)
        part.item = (via, node, key)
        return key
    state = event.state
    if type_ == PROBE_SKIPPED and state is not None:
        return (NOT_RUN, event.fields.get("reason", ""), *_state(state))
    if type_ == WORKER_STATE and state is not None:
        return (WORKER, *_state(state))
    if type_ == RESULT_CHANGED and event.container is not None and event.probe is not None:
        return (RESULT, event.fields.get("result"), event.fields.get("containerID", ""))
    return None


def _record_key(record: ProbeRecord, via: str | None, node: str | None) -> tuple[Any, ...]:
    """A record's raw key: made once per steady part, via and node (`raw_key`)."""
    part = record.steady  # what the key holds is the part's alone
    outcome = part.outcome
    base = head_of(part)
    if outcome is None:
        skip = part.skip
        return (SKIPPED, *base, None if skip is None else skip._value_)
    a = outcome.attempt
    ev = outcome.event
    # flat, not a tuple of tuples: the collector untracks an inner tuple only after its
    # parent in the same pass, so each level of nesting costs one more collection, and
    # an item nested three deep reaches the old generation before it is untracked
    return (
        ATTEMPT,
        *base,
        via,
        outcome.result._value_,
        outcome.error,
        len(outcome.attempts),
        *((True, ev.type, ev.reason, ev.message) if ev is not None else _NO_EVENT),
        *((True, *try_of(a)) if a is not None else _NO_ATTEMPT),
        node,
    )


_NO_EVENT = (False, None, None, None)
_NO_ATTEMPT = (False, None, None, None, None, None, None, None, None)


def _state(state: Any) -> tuple[Any, ...]:
    return (state.running, state.paused, _int(state.published))


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def shape_body(key: tuple[Any, ...], text: Text, excerpt: Text) -> list[Any]:
    """The stored shape for a raw key: texts through `text` (interned), the HTTP body through
    `excerpt` (cut to what the store keeps; the engine masked it whole before: a secret cut in
    two would escape the mask)."""
    kind = key[0]
    if kind in RECORD_KINDS:
        head = [kind, *key[1:7]]
        if kind == SKIPPED:
            return [*head, key[7]]
        via, result, error, tries, has_event, ev_type, reason, message = key[7:15]
        event = [ev_type, reason, text(message)] if has_event else None
        attempt = None
        if key[15]:
            handler, target, res, output, err, code, body, timed_out = key[16:24]
            attempt = [
                handler,
                text(target),
                res,
                text(output),
                text(err),
                code,
                excerpt(body),
                timed_out,
            ]
        body = [*head, via, result, text(error), tries, event, attempt]
        if key[24] is not None:
            body.append(key[24])  # the node whose agent made the attempt
        return body
    if kind == NOT_RUN:
        return [NOT_RUN, text(key[1]), *key[2:5]]
    return list(key)


def shape_strings(body: list[Any]) -> tuple[int, ...]:
    """The string ids a stored shape refers to (a tuple of ints: the writer keeps one for every
    shape, out of the collector's sight)."""
    kind = body[0]
    if kind == NOT_RUN:
        return (body[1],) if body[1] is not None else ()
    if kind != ATTEMPT:
        return ()
    out = [body[9]]
    if body[11] is not None:
        out.append(body[11][2])
    a = body[12]
    if a is not None:
        out += [a[1], a[3], a[4], a[6]]
    return tuple(i for i in out if i is not None)


# -- items ----------------------------------------------------------------------------


# A chain is the previous item of a chunk, which the next is coded against: (shape, result
# run, tick, step, t), a new tuple per item rather than an object updated in place, because
# the cyclic collector stops tracking a tuple of ints (it tracks every instance of a class, and
# arrays too): the writer holds one chain per probe, 15,000 in a cluster
Chain = tuple[int, int, int, int, int]
KEYFRAME: Chain = (-1, 0, 0, 0, 0)


def put_record(
    out: bytearray, chain: Chain, shape: int, kind: str, t: int, tick: int, run: int, lat: int
) -> Chain:
    """Append one A or S item to `out`; the chain the next item is coded against."""
    vput, vput_signed = varint.put, varint.put_signed
    last_shape, last_run, last_tick, step, _ = chain
    at = len(out)
    out.append(0)
    header = 0
    if shape != last_shape:
        header = NEW_SHAPE
        vput(out, shape)
    if run == last_run + 1:
        pass
    elif run == last_run:
        header |= RUN_SAME
    elif run == 0:
        header |= RUN_ZERO
    else:
        header |= RUN_EXPLICIT
        vput(out, run)
    if tick - last_tick != step:
        step = tick - last_tick
        header |= OFF_GRID
        vput_signed(out, step)
    vput_signed(out, t - tick)
    if kind == ATTEMPT:
        vput(out, lat)
    out[at] = header
    return (shape, run, tick, step, t)


# -- marks: where a chunk can be decoded from ----------------------------------------------

# a mark every this many items of a chunk: a seek decodes a chunk from the last mark before
# what it wants, not from the chunk's start, so it decodes a fraction of the items
# (guarded by benchmarks/replay.py)
MARK_EVERY = 11
# a mark as the writer keeps it while the chunk is open: where its item begins in the data,
# every item before it stamped at or before key (µs), the chain that item is coded against
_OPEN_MARK = struct.Struct("<Hqqqqqq")  # at, key, shape, run, tick, step, t
# a mark as stored, after a count byte: where its item begins, its key from the chunk's t0
# (µs), where its state (the chain, in varints) begins after the index; read by
# struct, so that finding the mark costs a few µs, not the decoding it saves
_MARK = struct.Struct("<HIB")
_LIMITS = (1 << 16, 1 << 32, 1 << 8)
# which marks a chunk has: (the chunk's t0 in seconds, as stored; the marks' bytes)
Marks = tuple[float, bytes]


def open_mark(out: bytearray, at: int, chain: Chain, key: int) -> None:
    """Keep a mark while the chunk is open: the item at byte `at` is coded against `chain`,
    and every item before it was stamped at or before `key` (µs)."""
    shape, run, tick, step, t = chain
    out += _OPEN_MARK.pack(at, key, shape, run, tick, step, t)


def close_marks(kept: bytes, t0: float) -> bytes | None:
    """The marks kept while the chunk was open (`open_mark`), as stored for a chunk whose
    first time is `t0`; a mark out of the stored ranges is left out with those after it
    (the reader then decodes from the mark before, as from a chunk's start)."""
    base = us(t0)
    index, states = bytearray(), bytearray()
    count = 0
    for at, key, shape, run, tick, step, t in _OPEN_MARK.iter_unpack(kept):
        pos = len(states)
        fields = (at, key - base, pos)
        if count >= 255 or any(not 0 <= v < lim for v, lim in zip(fields, _LIMITS, strict=True)):
            break
        if shape < 0 or run < 0:
            break
        index += _MARK.pack(*fields)
        varint.put(states, shape)
        varint.put(states, run)
        varint.put_signed(states, tick - key)
        varint.put_signed(states, step)
        varint.put_signed(states, t - key)
        count += 1
    if not count:
        return None
    return bytes((count,)) + bytes(index) + bytes(states)


def start_before(marks: Marks | None, lo: int) -> ScanState | None:
    """Where `scan` may begin for items stamped at or after `lo` (µs): the last mark with every
    item before it stamped before `lo` (None: from the chunk's start)."""
    if marks is None or not marks[1]:
        return None
    t0, blob = marks
    base = us(t0)
    count = blob[0]
    found = None
    unpack = _MARK.unpack_from
    size = _MARK.size
    for j in range(count):
        at, key, pos = unpack(blob, 1 + j * size)
        if base + key >= lo:
            break
        found = (at, base + key, pos)
    if found is None:
        return None
    at, key, pos = found
    get, get_signed = varint.get, varint.get_signed
    i = 1 + count * size + pos
    shape, i = get(blob, i)
    run, i = get(blob, i)
    d, i = get_signed(blob, i)
    tick = key + d
    step, i = get_signed(blob, i)
    d, i = get_signed(blob, i)
    return (at, shape, run, tick, step, key + d, key, None)


def put_other(out: bytearray, chain: Chain, shape: int, t: int) -> Chain:
    """Append one N, W or R item to `out`; the chain the next item is coded against."""
    last_shape, run, tick, step, last_t = chain
    if shape != last_shape:
        out.append(NEW_SHAPE)
        varint.put(out, shape)
    else:
        out.append(0)
    varint.put_signed(out, t - last_t)
    return (shape, run, tick, step, t)


@dataclass(frozen=True, slots=True)
class Item:
    shape: int
    t: int  # µs
    tick: int  # µs, records only
    run: int  # records only
    latency: int  # µs, attempts only


def items(data: bytes, kind_of: Callable[[int], str]) -> Iterator[Item]:
    """Decode a chunk; `kind_of(shape id)` says which fields an item of that shape carries."""
    get, get_signed = varint.get, varint.get_signed
    shape, run, tick, step, t = -1, 0, 0, 0, 0
    i, n = 0, len(data)
    while i < n:
        header = data[i]
        i += 1
        if header & NEW_SHAPE:
            shape, i = get(data, i)
        kind = kind_of(shape)
        if kind in RECORD_KINDS:
            mode = header & RUN_MASK
            if mode == RUN_INC:
                run += 1
            elif mode == RUN_ZERO:
                run = 0
            elif mode == RUN_EXPLICIT:
                run, i = get(data, i)
            if header & OFF_GRID:
                step, i = get_signed(data, i)
            tick += step
            late, i = get_signed(data, i)
            t = tick + late
            lat = 0
            if kind == ATTEMPT:
                lat, i = get(data, i)
            yield Item(shape, t, tick, run, lat)
        else:
            dt, i = get_signed(data, i)
            t += dt
            yield Item(shape, t, t, 0, 0)


def window(
    data: bytes,
    kind_of: Callable[[int], str],
    lo: int,
    hi: int,
    stop: int,
    start: ScanState | None = None,
) -> list[tuple[int, Item]]:
    """`scan` at once: what a seek keeps of one chunk."""
    return list(scan(data, kind_of, lo, hi, stop, start))


# where a scan stopped: (position after the item that stopped it, shape, run, tick, step,
# t, key, kind), from which `scan` goes on as if it had never stopped
ScanState = tuple[int, int, int, int, int, int, int, str | None]


def scan(
    data: bytes,
    kind_of: Callable[[int], str],
    lo: int,
    hi: int,
    stop: int,
    start: ScanState | None = None,
    stopped: list[tuple[int, Item | None, ScanState]] | None = None,
) -> Iterator[tuple[int, Item]]:
    """The items of a chunk with lo <= t <= hi (µs), each with the latest t of the chunk up to
    it (the reader's merge key); decoding ends at the first item stamped after `stop`.

    `items` unrolled for a seek, which decodes one chunk of each of 15,000 probes: the varints
    of one and two bytes (most of a steady probe's) inline, an `Item` only for what is kept,
    and no more of the chunk than can still hold an item up to `hi` (within a probe items are
    published in order and stamped when they began, so one stamped past `hi` by more than an
    attempt can last is followed by none at or before `hi`).

    `stopped`, given, receives where decoding stopped at `stop`: the stopping item's key, the
    item and the state after it, from which a later scan goes on
    (`start`): a replay's seek decodes each chunk to its step's end, and playing on from
    there reads the rest without decoding the chunk from its start again."""
    get = varint.get
    if start is None:
        shape, run, tick, step, t = -1, 0, 0, 0, 0
        key = -(1 << 62)
        kind: str | None = None
        i = 0
    else:
        i, shape, run, tick, step, t, key, kind = start
    n = len(data)
    while i < n:
        header = data[i]
        i += 1
        if header & NEW_SHAPE:
            b = data[i]
            if b < 0x80:
                shape = b
                i += 1
            else:
                shape, i = get(data, i)
            kind = kind_of(shape)
        elif kind is None:
            kind = kind_of(shape)
        lat = 0
        if kind in RECORD_KINDS:
            mode = header & RUN_MASK
            if mode == RUN_INC:
                run += 1
            elif mode == RUN_ZERO:
                run = 0
            elif mode == RUN_EXPLICIT:
                run, i = get(data, i)
            if header & OFF_GRID:
                z, i = get(data, i)
                step = (z >> 1) if not z & 1 else -((z + 1) >> 1)
            tick += step
            b = data[i]
            if b < 0x80:
                z = b
                i += 1
            else:
                c = data[i + 1]
                if c < 0x80:
                    z = (b & 0x7F) | c << 7
                    i += 2
                else:
                    z, i = get(data, i)
            t = tick + ((z >> 1) if not z & 1 else -((z + 1) >> 1))
            if kind == ATTEMPT:
                b = data[i]
                if b < 0x80:
                    lat = b
                    i += 1
                else:
                    c = data[i + 1]
                    if c < 0x80:
                        lat = (b & 0x7F) | c << 7
                        i += 2
                    else:
                        lat, i = get(data, i)
            at, item_run = tick, run
        else:
            z, i = get(data, i)
            t += (z >> 1) if not z & 1 else -((z + 1) >> 1)
            at, item_run = t, 0
        if t > key:
            key = t
        if t > stop:
            if stopped is not None:
                # the item itself whatever `hi` (a scan going on has none)
                item = Item(shape, t, at, item_run, lat)
                stopped.append((key, item, (i, shape, run, tick, step, t, key, kind)))
            break
        if lo <= t <= hi:
            yield key, Item(shape, t, at, item_run, lat)


__all__ = [
    "KEYFRAME",
    "MARK_EVERY",
    "RECORD_KINDS",
    "Chain",
    "Item",
    "Marks",
    "ScanState",
    "close_marks",
    "items",
    "open_mark",
    "put_other",
    "put_record",
    "raw_key",
    "scan",
    "shape_body",
    "shape_strings",
    "start_before",
    "us",
    "window",
]
