"""The steady part of a doProbe record (`probetui.prober.steady`): interned by the worker, masked
once by the engine, and the consumers' wire forms kept on it."""

from __future__ import annotations

import gc
from dataclasses import replace
from enum import Enum
from itertools import pairwise

import pytest

from probetui.agent.ring import CHUNK, Ring
from probetui.engine import masked_record
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.clock import VirtualClock
from probetui.prober.outcome import kind_of_outcome
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.steady import Key, SteadyPart, make_key, outcome_of
from probetui.prober.worker import ProbeRecord, Trigger
from probetui.record import codec
from probetui.redact import MASK, Redactor
from probetui.spec.model import Container, EnvVar, Pod, ProbeType
from probetui.stream.rows import row_parts
from probetui.timeline.events import _attempt_fields, attempt_fields, record_event
from tests.prober.fixtures import pod_with, probe, running_status
from tests.prober.test_manager import FakeKubelet

SECRET = "hunter2-sEcReT"
KEY = ProbeKey("uid-1", "app", ProbeType.READINESS)


def _record(
    t: float, run: int, target: str = "http://10.0.0.7:8080/ready", part: SteadyPart | None = None
) -> ProbeRecord:
    """A record; with `part`, the worker's interning: it carries `part` where it says the same."""
    a = Attempt("http", target, Result.SUCCESS, "ok", None, 0.001 * run, t, 200, "ok")
    outcome = ProbeOutcome(ResultValue.SUCCESS, None, (a,), None)
    return ProbeRecord(
        KEY, t, t, Trigger.TICK, "containerd://1", outcome=outcome, finished_at=t + 0.01,
        result_run=run, published=ResultValue.SUCCESS, next_tick=t + 10, steady=part,
    )  # fmt: skip


def key_of(record: ProbeRecord) -> Key:
    """Every value of `record` but its numbers, flat, made again from the values it reads:
    what its part's key must equal."""
    return make_key(
        record.trigger,
        record.container_id,
        record.skip,
        record.outcome,
        record.last_result,
        record.published,
        record.on_hold,
        record.paused,
    )


async def test_a_steady_probes_records_share_one_part_until_what_they_say_changes() -> None:
    kubelet = FakeKubelet(VirtualClock(0.0))
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    m = kubelet.manager()
    m.add_pod(pod)
    await kubelet.clock.advance(55.0)
    kubelet.answer = "F"
    await kubelet.clock.advance(30.0)
    await m.shutdown()
    records = kubelet.records
    assert len(records) >= 8
    for a, b in pairwise(records):
        # one part exactly where the two say the same but for their numbers
        assert (a.steady is b.steady) == (key_of(a) == key_of(b))
        assert a.steady is not None and a.steady.key == key_of(a)
    steady = records[1:6]  # ticks of one answer: their runs differ, nothing else
    assert len({r.result_run for r in steady}) == len(steady)
    assert all(r.steady is steady[0].steady for r in steady)
    assert records[-1].steady is not steady[0].steady


def test_replace_gives_a_record_of_other_values_a_part_of_its_own() -> None:
    record = _record(100.0, 1)
    part = record.steady
    assert record.steady is part and part.key == key_of(record)
    other = replace(record, outcome=None)
    assert other.steady is not part and other.outcome is None and other.latency == 0.0
    assert other.steady.key == key_of(other) != part.key
    # other numbers, the same steady values: the same part, and the record's own numbers
    later = replace(record, t=200.0, result_run=2)
    assert later.steady is part and later.t == 200.0 and later.outcome == record.outcome
    slower = replace(record, outcome=_record(100.0, 5).outcome)
    assert slower.steady is part and slower.latency == 0.005
    assert slower.outcome is not None and slower.outcome.attempts[0].latency == 0.005


def test_a_record_of_a_part_and_its_numbers_builds_its_outcome_once() -> None:
    first, later = _record(100.0, 1), _record(110.0, 7)
    part = first.steady
    same = ProbeRecord(KEY, 100.0, 100.0, latency=0.001, started_at=100.0, steady=part)
    assert same.outcome == first.outcome and same.trigger is Trigger.TICK
    other = ProbeRecord(KEY, 110.0, 110.0, latency=0.007, started_at=110.0, steady=part)
    assert other.steady is part and other.outcome == later.outcome
    assert other.outcome is other.outcome


def _outcome(*tries: Attempt, error: str | None = None, event: bool = False) -> ProbeOutcome:
    ev = ProbeEvent("Warning", "Unhealthy", "Readiness probe failed: no") if event else None
    result = ResultValue.SUCCESS if tries and tries[-1].result is Result.SUCCESS else None
    return ProbeOutcome(result or ResultValue.FAILURE, error, tries, ev)


def _try(result: Result, n: int, timed_out: bool = False) -> Attempt:
    return Attempt("http", "http://10.0.0.7/", result, "out", None, n * 0.1, n, 503, "b", timed_out)


OUTCOMES = [
    None,
    _outcome(_try(Result.SUCCESS, 1)),
    _outcome(_try(Result.WARNING, 1)),
    _outcome(_try(Result.FAILURE, 1), event=True),
    _outcome(_try(Result.UNKNOWN, 1)),
    _outcome(_try(Result.FAILURE, 1, timed_out=True), event=True),
    _outcome(_try(Result.UNKNOWN, 1), _try(Result.UNKNOWN, 2), _try(Result.FAILURE, 3)),
    _outcome(_try(Result.UNKNOWN, 1), error="dial: refused"),
    _outcome(),
]


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_a_part_reads_its_outcome_off_its_key(outcome: ProbeOutcome | None) -> None:
    """What a part says of its outcome is what the outcome says (`kind_of_outcome`, the error,
    the tries), and the outcome made again of its key and the tries' numbers is the same."""
    record = ProbeRecord(KEY, 5.0, 5.0, Trigger.TICK, "containerd://1", outcome=outcome)
    part = record.steady
    assert part.kind == kind_of_outcome(outcome)
    assert part.probed == (outcome is not None)
    assert part.error == (outcome.error if outcome else None)
    assert part.tries == (len(outcome.attempts) if outcome else 0)
    numbers = (
        tuple(x for a in outcome.attempts for x in (a.latency, a.started_at)) if outcome else ()
    )
    assert outcome_of(part.key, numbers) == outcome
    # a reader's record of the part and the numbers says the same
    read = ProbeRecord(
        KEY, 5.0, 5.0, latency=record.latency, started_at=record.started_at,
        earlier=record.earlier, steady=part,
    )  # fmt: skip
    assert read.outcome == outcome and read.discarded == record.discarded


def test_a_part_holds_no_object_the_cyclic_collector_tracks_per_probe() -> None:
    """Each of 15,000 probes holds its part while it stays steady: the part's outcome is its
    key's plain values, not outcome objects every full pass of the collector would walk."""
    part = _record(100.0, 1).steady
    gc.collect()
    assert not gc.is_tracked(part.key)
    held = [v for v in gc.get_referents(part) if gc.is_tracked(v)]
    assert not [v for v in held if not isinstance(v, type | Enum)], held


def test_the_engine_masks_a_part_once_and_its_records_carry_the_masked_part() -> None:
    container = Container("app", env=(EnvVar("DB_PASSWORD", SECRET),))
    pod = Pod("p", namespace="ns", uid=KEY.pod_uid, containers=(container,))
    redactor = Redactor()
    shown = redactor.pod(pod)
    raw = _record(100.0, 1, f"http://10.0.0.7:8080/ready?pw={SECRET}")
    # the worker's interning: both records say the same
    raw2 = _record(110.0, 2, f"http://10.0.0.7:8080/ready?pw={SECRET}", raw.steady)
    first = masked_record(redactor, shown, raw)
    second = masked_record(redactor, shown, raw2)
    assert first is not raw and second is not raw2
    assert first.steady is not None and first.steady is second.steady
    assert SECRET not in repr(first.steady.key) and MASK in repr(first.steady.key)
    # every consumer's form of the masked part is free of the secret
    for record in (first, second):
        event = record_event(shown.pod, record, "direct")
        assert SECRET not in repr(row_parts(event)) and SECRET not in event.to_line()
        assert SECRET not in repr(codec.raw_key(event, "direct"))
    # a part found clean for a pod's copy is handed on as it is, record and all
    clean = _record(120.0, 3)
    assert masked_record(redactor, shown, clean) is clean
    assert masked_record(redactor, shown, clean) is clean
    # a new spec with the target's text as its secret masks the same part again
    leaky = Container("app", env=(EnvVar("DB_PASSWORD", "10.0.0.7:8080"),))
    shown2 = redactor.pod(replace(pod, containers=(leaky,)))
    assert shown2 is not shown
    again = masked_record(redactor, shown2, clean)
    assert again is not clean and "10.0.0.7:8080" not in repr(again.steady)


def test_each_consumers_form_of_a_part_is_what_it_builds_afresh() -> None:
    first = _record(100.0, 1)
    later = _record(110.0, 7, part=first.steady)
    pod = Pod("p", namespace="ns", uid=KEY.pod_uid)
    for via in ("direct", None, "proxy"):
        e1, e2 = record_event(pod, first, via), record_event(pod, later, via)
        assert e2.fields == _attempt_fields(later, via)
        assert list(e2.fields) == list(_attempt_fields(later, via))
        assert attempt_fields(later, via) is not attempt_fields(later, via)
        # the rows of one part share their rest, the recorder's items their raw key
        assert row_parts(e1)[3] is row_parts(e2)[3]
        assert row_parts(e2)[2] == [110.0, 110.0, 110.01, 120.0, 7, 0.007, 110.0]
        assert codec.raw_key(e1, via) is codec.raw_key(e2, via)
        assert codec.raw_key(e2, via, "node-1") == codec._record_key(later, via, "node-1")


def test_the_ring_finds_a_parts_rest_by_identity_and_never_one_evicted() -> None:
    pod = Pod("p", namespace="ns", uid=KEY.pod_uid)
    other = ProbeKey("uid-2", "app", ProbeType.LIVENESS)
    ring = Ring(retain=1e9, capacity=CHUNK)
    first = _record(0.0, 1)
    part = first.steady
    rows = []
    for n in range(CHUNK):
        r = _record(float(n), n + 1, part=part)
        rows.append(row_parts(record_event(pod, r, "direct")))
    for stamp, (key, names, head, rest) in enumerate(rows):
        ring.add_row(float(stamp), key, names, head, rest)
    assert ring.stats()["rests"] == 1
    # another probe fills two chunks: the first probe's rows, worker and rest are evicted
    for n in range(2 * CHUNK):
        r = replace(_record(float(CHUNK + n), 1, "http://10.0.0.9/other"), key=other)
        key, names, head, rest = row_parts(record_event(pod, r, "direct"))
        ring.add_row(float(CHUNK + n), key, names, head, rest)
    assert ring.stats()["workers"] == 1
    key, names, head, rest = rows[-1]
    ring.add_row(float(3 * CHUNK), key, names, head, rest)
    last = list(ring)[-1]
    assert last.key == KEY and last.rest == rest
    assert ring.stats()["rests"] == 2
