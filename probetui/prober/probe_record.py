"""Define a doProbe's record: its probe, its own numbers and its steady part.

`ProbeRecord` is what a worker hands its listener for each doProbe (`Worker._emit`), and what
a recording's and a stream's readers make again; `Skip` and `Trigger` name why it ran no
handler and what woke it. The record's steady values live in its part (`probetui.prober.steady`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from probetui.keys import ProbeKey
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.steady import SteadyPart, outcome_of, part_of


class Skip(StrEnum):
    """Names why a doProbe call ran no handler; the UI draws these as `·`."""

    NO_STATUS = "no pod status"
    NOT_CREATED = "container not created"
    ON_HOLD = "on hold"
    NOT_RUNNING = "container not running"
    INITIAL_DELAY = "initial delay"
    NOT_STARTED = "waiting for startup probe"
    STARTED = "container started"
    DELETING = "pod deleting"
    POD_TERMINATED = "pod terminated"
    PAUSED = "paused"


class Trigger(StrEnum):
    FIRST = "first"  # the run loop's first doProbe, before any tick
    TICK = "tick"
    KUBELET = "kubelet-manual"  # manualTriggerCh from UpdatePodStatus (readiness only)
    USER = "user"  # probetui's own "probe now": counted like a tick, marked manual


# marks a steady value a record's maker left out: it is its part's, or the default
_UNSET: Any = object()


@dataclass(frozen=True, slots=True, init=False, eq=False, repr=False)
class ProbeRecord:
    """Records what one doProbe did, for the timeline: an attempt, a discarded error, or a skip.

    It holds its probe's key, its own numbers and its steady part (`probetui.prober.steady`),
    which alone holds the rest: the trigger, container ID, skip, outcome, results last and
    published, hold and pause are read off the part. It is made as it always was, from every
    value (`ProbeRecord(key=..., trigger=..., outcome=...)`); `steady` hands it a part to
    reuse where the values are the part's (the worker's last), or the part itself where the
    values are left out (a reader of recorded data, with the record's numbers). `replace`
    keeps the part where the changes leave the steady values as they were."""

    key: ProbeKey
    t: float  # when doProbe ran (the attempt's start)
    scheduled_at: float  # the tick it answered; t - scheduled_at is tick lateness
    finished_at: float | None
    result_run: int
    # the run loop as the record left it, for the UI: the tick armed next (None: the worker
    # has none, e.g. a recorded session)
    next_tick: float | None
    # the last try's latency and start (0.0 for a skip), then the tries' before it, flat
    latency: float
    started_at: float
    earlier: tuple[float, ...]
    steady: SteadyPart
    # the outcome the record was made with, or the one built of its part and its numbers
    _outcome: ProbeOutcome | None = field(init=False)

    def __init__(
        self,
        key: ProbeKey,
        t: float,
        scheduled_at: float,
        trigger: Trigger = _UNSET,
        container_id: str = _UNSET,
        skip: Skip | None = _UNSET,
        outcome: ProbeOutcome | None = _UNSET,
        finished_at: float | None = None,
        result_run: int = 0,
        last_result: ResultValue = _UNSET,
        published: ResultValue | None = _UNSET,
        on_hold: bool = _UNSET,
        next_tick: float | None = None,
        paused: bool = _UNSET,
        *,
        latency: float = 0.0,
        started_at: float = 0.0,
        earlier: tuple[float, ...] = (),
        steady: SteadyPart | None = None,
    ) -> None:
        _set(self, "key", key)
        _set(self, "t", t)
        _set(self, "scheduled_at", scheduled_at)
        _set(self, "finished_at", finished_at)
        _set(self, "result_run", result_run)
        _set(self, "next_tick", next_tick)
        part = steady
        if part is None or not (
            trigger is _UNSET
            and container_id is _UNSET
            and skip is _UNSET
            and outcome is _UNSET
            and last_result is _UNSET
            and published is _UNSET
            and on_hold is _UNSET
            and paused is _UNSET
        ):
            part, outcome = _part_for(
                part, trigger, container_id, skip, outcome, last_result, published, on_hold, paused
            )
        if outcome is not _UNSET:
            # an outcome given brings its tries' numbers
            latency = started_at = 0.0
            earlier = ()
            attempts = outcome.attempts if outcome is not None else ()
            if attempts:
                a = attempts[-1]
                latency, started_at = a.latency, a.started_at
                if len(attempts) > 1:
                    earlier = tuple(x for b in attempts[:-1] for x in (b.latency, b.started_at))
        else:
            outcome = None
        _set(self, "latency", latency)
        _set(self, "started_at", started_at)
        _set(self, "earlier", earlier)
        _set(self, "steady", part)
        _set(self, "_outcome", outcome)

    def with_part(self, part: SteadyPart) -> ProbeRecord:
        """Return a record of these numbers and `part`'s values (a masked part, say)."""
        return ProbeRecord(
            self.key,
            self.t,
            self.scheduled_at,
            finished_at=self.finished_at,
            result_run=self.result_run,
            next_tick=self.next_tick,
            latency=self.latency,
            started_at=self.started_at,
            earlier=self.earlier,
            steady=part,
        )

    @property
    def trigger(self) -> Trigger:
        return self.steady.trigger

    @property
    def container_id(self) -> str:
        return self.steady.container_id

    @property
    def skip(self) -> Skip | None:
        return self.steady.skip

    @property
    def last_result(self) -> ResultValue:
        return self.steady.last_result

    @property
    def published(self) -> ResultValue | None:
        return self.steady.published

    @property
    def on_hold(self) -> bool:
        return self.steady.on_hold

    @property
    def paused(self) -> bool:
        return self.steady.paused

    @property
    def outcome(self) -> ProbeOutcome | None:
        """Return the outcome: the one the record was made with, else one built of its part's
        values and its numbers, once."""
        o = self._outcome
        if o is None and self.steady.probed:
            o = outcome_of(self.steady.key, self._numbers())
            _set(self, "_outcome", o)
        return o

    def _numbers(self) -> tuple[float, ...]:
        """Return the latency and start of each try, flat (none for an outcome without one)."""
        if not self.steady.tries:
            return ()
        return (*self.earlier, self.latency, self.started_at)

    @property
    def manual(self) -> bool:
        return self.steady.trigger is Trigger.USER

    @property
    def discarded(self) -> bool:
        return self.steady.error is not None

    def _own(self) -> tuple[Any, ...]:
        return (
            self.key,
            self.t,
            self.scheduled_at,
            self.finished_at,
            self.result_run,
            self.next_tick,
            self.latency,
            self.started_at,
            self.earlier,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProbeRecord):
            return NotImplemented
        a, b = self.steady, other.steady
        return (a is b or a.key == b.key) and self._own() == other._own()

    def __hash__(self) -> int:
        return hash((self._own(), self.steady.key))

    def __repr__(self) -> str:
        return (
            f"ProbeRecord(key={self.key!r}, t={self.t!r}, scheduled_at={self.scheduled_at!r}, "
            f"trigger={self.trigger!r}, container_id={self.container_id!r}, "
            f"skip={self.skip!r}, outcome={self.outcome!r}, finished_at={self.finished_at!r}, "
            f"result_run={self.result_run!r}, last_result={self.last_result!r}, "
            f"published={self.published!r}, on_hold={self.on_hold!r}, "
            f"next_tick={self.next_tick!r}, paused={self.paused!r})"
        )


# sets a frozen record's fields as it is made
_set = object.__setattr__


def _part_for(
    last: SteadyPart | None,
    trigger: Any,
    container_id: Any,
    skip: Any,
    outcome: Any,
    last_result: Any,
    published: Any,
    on_hold: Any,
    paused: Any,
) -> tuple[SteadyPart, Any]:
    """Return the part of a record's steady values, those left out being `last`'s (or the
    defaults, without one), and the outcome given (`_UNSET`: none given)."""
    given = outcome
    if last is None:
        if trigger is _UNSET or container_id is _UNSET:
            raise TypeError("ProbeRecord needs a trigger and a container_id, or a steady part")
        if skip is _UNSET:
            skip = None
        if outcome is _UNSET:
            outcome = None
        if last_result is _UNSET:
            last_result = ResultValue.SUCCESS
        if published is _UNSET:
            published = None
        if on_hold is _UNSET:
            on_hold = False
        if paused is _UNSET:
            paused = False
    else:
        if trigger is _UNSET:
            trigger = last.trigger
        if container_id is _UNSET:
            container_id = last.container_id
        if skip is _UNSET:
            skip = last.skip
        if outcome is _UNSET:
            outcome = last.outcome
        if last_result is _UNSET:
            last_result = last.last_result
        if published is _UNSET:
            published = last.published
        if on_hold is _UNSET:
            on_hold = last.on_hold
        if paused is _UNSET:
            paused = last.paused
    part = part_of(
        last, trigger, container_id, skip, outcome, last_result, published, on_hold, paused
    )
    return part, given


__all__ = ["ProbeRecord", "Skip", "Trigger"]
