"""Hold the steady part of a doProbe record: what a steady probe's records all say alike.

A `ProbeRecord` is its probe's key, its own numbers (time, tick, end, result run, next tick,
each try's latency and start) and its `SteadyPart`: everything else, held there alone as the
record's values (trigger, container ID, skip, the outcome with its result, error, event and
each try's handler, target, result, output, error, status code, body and timeout, the last and
published results, hold and pause). Those are the same on every attempt of a steady probe, so
the worker makes a part once and hands it on (`part_of`: the probe's last part where its values
are the same, else a new one), and each record carries it.

A part keeps no outcome object, only its values in its key: a record made without its outcome
(a reader's, of recorded data or a stream) builds one of its part's key and its own numbers
when asked, once (`ProbeRecord.outcome`). A consumer that wants an attempt's numbers reads them
off the record (`latency`, `started_at`), never off a built outcome.

The consumers downstream of the engine (the store's history, the recorder, the stream's rows,
the agent's ring, the headless output) each turn a record into a wire form of their own; the
part of that form which depends on the steady part alone is made once and kept on the part (a
slot per consumer), so a steady attempt costs them a look-up, not a rebuild and a comparison
of its values.

A record's part holds exactly that record's values: `dataclasses.replace` on a record with
other values gives it a part of them, and the engine hands its sinks a masked record with the
part of its masked values (`probetui.engine.masked_record`), never the worker's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from probetui.probe.base import Attempt, Result
from probetui.prober.outcome import kind_of_outcome
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue

if TYPE_CHECKING:
    from probetui.prober.probe_record import ProbeRecord, Skip, Trigger
    from probetui.timeline.history import RecordShape

# a record's values its part is made of, flat: only str, int, bool and None (enum members as
# their values), which the cyclic collector stops tracking
Key = tuple[Any, ...]

# where the key holds what: the head (6 values), then a skip's reason (a skip's key ends there)
# or the outcome's result, error, event type, reason and message and its number of tries, then
# each try's 8 values (`try_of`)
_SKIP_KEY = 7
_RESULT = 6
_ERROR = 7
_EVENT = 8
_TRIES = 11
_FIRST_TRY = 12
_TRY = 8


class SteadyPart:
    """Holds a record's steady values, their interning key and the consumers' wire forms of them.

    One slot per consumer, each None until that consumer first meets the part, then its form
    with what else it was made of (`via`, `node`, the pod's masked copy): a slot, not a dict,
    since 15,000 probes hold one part each."""

    __slots__ = (
        "container_id",
        "fields",
        "item",
        "key",
        "kind",
        "last_result",
        "masked",
        "masked_for",
        "on_hold",
        "paused",
        "published",
        "rest",
        "shape",
        "skip",
        "trigger",
    )

    def __init__(
        self,
        key: Key,
        trigger: Trigger,
        container_id: str,
        skip: Skip | None,
        outcome: ProbeOutcome | None,
        last_result: ResultValue,
        published: ResultValue | None,
        on_hold: bool,
        paused: bool,
    ) -> None:
        self.key = key
        self.trigger = trigger
        self.container_id = container_id
        self.skip = skip
        # what the doProbe did, the one outcome value read per record that its key holds
        # only spread over the tries: worked out once, by the rule every other reader uses
        self.kind = kind_of_outcome(outcome)
        self.last_result = last_result
        self.published = published
        self.on_hold = on_hold
        self.paused = paused
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
        # the store's: what a record adds to its probe's history but its numbers
        self.shape: RecordShape | None = None

    def __repr__(self) -> str:
        return f"SteadyPart({self.key!r})"

    # the outcome's values are read off the key, never kept as the outcome's objects: those
    # would be three or more objects a probe that the cyclic collector tracks and each of its
    # full passes walks (benchmarks.engine at 15,000 workers: its `gc` field's `tracked`)

    @property
    def probed(self) -> bool:
        """Whether a handler ran: an attempt (or a discarded error), not a skip."""
        return len(self.key) > _SKIP_KEY

    @property
    def error(self) -> str | None:
        """The error of a discarded attempt (None for any other record)."""
        return self.key[_ERROR] if len(self.key) > _SKIP_KEY else None

    @property
    def tries(self) -> int:
        """How many tries the attempt made (0 for a skip)."""
        return self.key[_TRIES] if len(self.key) > _SKIP_KEY else 0

    @property
    def outcome(self) -> ProbeOutcome | None:
        """Return the outcome of these values, each try's latency and start 0.0, made anew
        on each call (None for a skip)."""
        return outcome_of(self.key, ())


def outcome_of(key: Key, numbers: tuple[float, ...]) -> ProbeOutcome | None:
    """Return the outcome a part's `key` holds, with each try's latency and start from
    `numbers` (flat, in try order; empty: 0.0 each), or None for a skip's key."""
    if len(key) == _SKIP_KEY:
        return None
    attempts = []
    for i in range(key[_TRIES]):
        at = _FIRST_TRY + _TRY * i
        handler, target, result, output, error, status_code, body, timed_out = key[at : at + _TRY]
        latency, started_at = numbers[2 * i : 2 * i + 2] if numbers else (0.0, 0.0)
        attempts.append(
            Attempt(
                handler,
                target,
                Result(result),
                output,
                error,
                latency,
                started_at,
                status_code,
                body,
                timed_out,
            )
        )
    event = None if key[_EVENT] is None else ProbeEvent(*key[_EVENT : _EVENT + 3])
    return ProbeOutcome(ResultValue(key[_RESULT]), key[_ERROR], tuple(attempts), event)


def head_of(record: ProbeRecord | SteadyPart) -> tuple[Any, ...]:
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


def make_key(
    trigger: Trigger,
    container_id: str,
    skip: Skip | None,
    outcome: ProbeOutcome | None,
    last_result: ResultValue,
    published: ResultValue | None,
    on_hold: bool,
    paused: bool,
) -> Key:
    """Return a record's steady values flat: a skip's key (7 values) is shorter than any
    attempt's (12 and 8 a try), so the two never meet."""
    head = (
        trigger._value_,
        container_id,
        last_result._value_,
        None if published is None else published._value_,
        on_hold,
        paused,
    )
    if outcome is None:
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


def part_of(
    last: SteadyPart | None,
    trigger: Trigger,
    container_id: str,
    skip: Skip | None,
    outcome: ProbeOutcome | None,
    last_result: ResultValue,
    published: ResultValue | None,
    on_hold: bool,
    paused: bool,
) -> SteadyPart:
    """Return `last` where these values are the ones it holds, else a new part of them."""
    key = make_key(trigger, container_id, skip, outcome, last_result, published, on_hold, paused)
    if last is not None and last.key == key:
        return last
    return SteadyPart(
        key, trigger, container_id, skip, outcome, last_result, published, on_hold, paused
    )


__all__ = [
    "Key",
    "SteadyPart",
    "head_of",
    "make_key",
    "outcome_of",
    "part_of",
    "try_of",
]
