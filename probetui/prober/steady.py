"""Intern the steady part of a doProbe record: what a steady probe's records all say alike.

A `ProbeRecord` is its probe's key, its own numbers (time, tick, end, result run, next tick,
each try's latency and start) and everything else: trigger, container ID, skip, the outcome's
result, error and event, each try's handler, target, result, output, error, status code, body
and timeout, the last and published results, hold and pause. That rest is the same on every
attempt of a steady probe, so the worker makes it once (`intern`: one `SteadyPart` per distinct
rest of a probe, reused while its records say the same) and each record carries it.

The consumers downstream of the engine (the store's history, the recorder, the stream's rows,
the agent's ring, the headless output) each turn a record into a wire form of their own; the
part of that form which depends on the steady part alone is made once and kept on the part (a
slot per consumer), so a steady attempt costs them a look-up, not a rebuild and a comparison
of its values.

A record's part holds exactly that record's values: `dataclasses.replace` on a record drops it
(a record with other values must not carry the old part), and the engine hands its sinks a
masked record with the part of its masked values (`probetui.redact`), never the worker's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from probetui.probe.base import Attempt
    from probetui.prober.worker import ProbeRecord

# a record's values its part is made of, flat: only str, int, bool and None (enum members as
# their values), which the cyclic collector stops tracking
Key = tuple[Any, ...]


class SteadyPart:
    """Holds the interning key of a record's steady part and the consumers' wire forms of it.

    One slot per consumer, each None until that consumer first meets the part, then its form
    with what else it was made of (`via`, `node`, the pod's masked copy): a slot, not a dict,
    since 15,000 probes hold one part each."""

    __slots__ = ("fields", "item", "key", "masked", "masked_for", "rest")

    def __init__(self, key: Key) -> None:
        self.key = key
        # the engine's: the pod's masked copy this part was last masked for, and the masked
        # part (None: nothing needed masking); two slots, not a tuple the collector would track
        self.masked_for: Any = None
        self.masked: SteadyPart | None = None
        # the headless output's: (via, an attempt's field names, their values)
        self.fields: tuple[str | None, tuple[str, ...], tuple[Any, ...]] | None = None
        # the stream's rows' and the agent ring's: (via, a row's rest)
        self.rest: tuple[str | None, tuple[Any, ...]] | None = None
        # the recorder's: (via, node, an item's raw key)
        self.item: tuple[str | None, str | None, tuple[Any, ...]] | None = None

    def __repr__(self) -> str:
        return f"SteadyPart({self.key!r})"


def head_of(record: ProbeRecord) -> tuple[Any, ...]:
    """Return what a skip's and an attempt's record both hold but their numbers: the trigger,
    the container, the results last and published, the hold and the pause, as plain values."""
    published = record.published
    return (
        record.trigger._value_,
        record.container_id,
        record.last_result._value_,
        None if published is None else published._value_,
        record.on_hold,
        record.paused,
    )


def try_of(a: Attempt) -> tuple[Any, ...]:
    """Return what one try of an attempt says but its numbers (latency, start), as plain
    values."""
    return (
        a.handler,
        a.target,
        a.result._value_,
        a.output,
        a.error,
        a.status_code,
        a.body,
        a.timed_out,
    )


def key_of(record: ProbeRecord) -> Key:
    """Return every value of `record` but its numbers, flat: a skip's key (7 values) is shorter
    than any attempt's (12 and 8 a try), so the two never meet."""
    head = head_of(record)
    outcome = record.outcome
    if outcome is None:
        skip = record.skip
        return (*head, None if skip is None else skip._value_)
    ev = outcome.event
    attempts = outcome.attempts
    head = (
        *head,
        outcome.result._value_,
        outcome.error,
        *((None, None, None) if ev is None else (ev.type, ev.reason, ev.message)),
        len(attempts),
    )
    if len(attempts) == 1:  # nearly every attempt: one try, one tuple built at once
        return (*head, *try_of(attempts[0]))
    return head + tuple(value for a in attempts for value in try_of(a))


def intern(record: ProbeRecord, last: SteadyPart | None) -> SteadyPart:
    """Return `last` where `record` says what it says but for its numbers, else a new part."""
    key = key_of(record)
    if last is not None and last.key == key:
        return last
    return SteadyPart(key)


# sets a frozen record's part, the one field a record may gain after it is made: a cache of its
# own values, compared by no one
_set = object.__setattr__


def attach(record: ProbeRecord, part: SteadyPart) -> None:
    """Give `record` its part (`intern`'s, or one the caller made of its values)."""
    _set(record, "steady", part)


def steady_of(record: ProbeRecord) -> SteadyPart:
    """Return the part `record` carries; a record made without one (a test's, a `replace`'s)
    is given a new part of its values, shared with no other record."""
    part = record.steady
    if part is None:
        part = SteadyPart(key_of(record))
        _set(record, "steady", part)
    return part


__all__ = ["Key", "SteadyPart", "attach", "head_of", "intern", "key_of", "steady_of", "try_of"]
