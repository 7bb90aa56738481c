"""The hub and its clients, without a network: stamps, what is kept, slow readers."""

from __future__ import annotations

from dataclasses import replace

import pytest

from probetui.agent.client import SLOW_CLOSE, SUMMARY_REFRESH, StreamClient
from probetui.agent.hub import Hub
from probetui.agent.ring import Ring
from probetui.prober.results import ResultValue
from probetui.prober.status import PodStatus
from probetui.prober.worker import WorkerState
from probetui.spec.model import ProbeType
from probetui.stream.protocol import loads
from probetui.timeline.events import not_probed_event, record_event, result_changed_event
from tests.agent.test_ring import KEY, POD, _attempt


def _frames(data: bytes) -> list[dict]:
    return [loads(line) for line in data.splitlines()]


def _clock(start: float = 1000.0) -> tuple[list[float], object]:
    now = [start]
    return now, lambda: now[0]


def test_stamps_only_grow_even_when_the_clock_does_not() -> None:
    now, clock = _clock()
    hub = Hub(Ring(3600, 10_000), clock=clock)  # type: ignore[arg-type]
    first = hub.stamp()
    second = hub.stamp()
    now[0] = 999.0  # the clock stepped back
    third = hub.stamp()
    assert first == 1000.0 < second < third


async def test_a_tick_of_a_probe_not_run_goes_out_live_and_is_not_kept() -> None:
    hub = Hub(Ring(3600, 10_000))
    client = StreamClient(pods=None, summary=False, rows=False, limit=1 << 20)
    client.live = True
    hub.attach(client)
    state = WorkerState(KEY, running=True)
    hub.event(not_probed_event(POD, state, 1.0, "not run: exec"))
    hub.event(result_changed_event(POD, "app", ProbeType.READINESS, ResultValue.SUCCESS, "c", 2.0))
    client.sender.flush()
    sent = _frames(client.queue.take_now())
    assert [f["e"]["type"] for f in sent] == ["ProbeSkipped", "ResultChanged"]
    assert "at" not in sent[0] and "at" in sent[1]
    assert [e.event_type for e in hub.ring.after(-1.0, 10)[0]] == ["ResultChanged"]  # type: ignore[union-attr]


async def test_a_client_far_behind_has_events_dropped_then_is_closed_with_a_frame() -> None:
    now, clock = _clock()
    hub = Hub(Ring(3600, 10_000), node="node-1", clock=clock)  # type: ignore[arg-type]
    held = [0]  # bytes the socket still holds: the reader does not read
    client = StreamClient(
        pods=None, summary=False, rows=True, limit=4096, downstream=lambda: held[0]
    )
    client.live = True
    hub.attach(client)
    hub.pod(POD, PodStatus(phase="Running"))
    held[0] = 10_000
    for i in range(5):
        hub.event(record_event(POD, _attempt(10.0 + i), "direct"))
    assert client.sender.dropped["ProbeAttempt"] == 5
    # state is never dropped: a pod frame still goes in
    hub.pod(POD, PodStatus(phase="Running"))
    hub.tick(now[0])
    assert client.behind_since == now[0] and client in hub.clients
    now[0] += SLOW_CLOSE
    hub.tick(now[0])
    assert client not in hub.clients and client.queue.is_closing()
    frames = _frames(client.queue.take_now())
    assert frames[-2] == {"k": "dropped", "n": 5, "by": {"ProbeAttempt": 5}}
    assert frames[-1]["k"] == "fail" and "since=" in frames[-1]["message"]
    assert "node-1" in frames[-1]["message"]


async def test_a_client_that_catches_up_is_told_what_it_missed() -> None:
    hub = Hub(Ring(3600, 10_000))
    held = [10_000]
    client = StreamClient(
        pods=None, summary=False, rows=True, limit=4096, downstream=lambda: held[0]
    )
    client.live = True
    hub.attach(client)
    hub.event(record_event(POD, _attempt(10.0), "direct"))
    held[0] = 0
    hub.event(record_event(POD, _attempt(11.0), "direct"))
    client.sender.flush()
    frames = _frames(client.queue.take_now())
    assert [f["k"] for f in frames] == ["wk", "dropped", "rows"]
    assert frames[1]["n"] == 1
    # the row after the gap carries its record's rest again: the reader never saw the first
    assert isinstance(frames[2]["r"][0][-1], list)


@pytest.mark.parametrize("rows", [True, False])
async def test_pods_limits_attempts_not_other_events(rows: bool) -> None:
    hub = Hub(Ring(3600, 10_000))
    client = StreamClient(pods=frozenset({"other"}), summary=True, rows=rows, limit=1 << 20)
    hub.attach(client)
    hub.event(record_event(POD, _attempt(10.0), "direct"))
    client.live = True
    hub.went_live(client)
    hub.event(record_event(POD, _attempt(11.0), "direct"))
    hub.event(result_changed_event(POD, "app", ProbeType.READINESS, ResultValue.SUCCESS, "c", 2.0))
    client.sender.flush()
    frames = _frames(client.queue.take_now())
    kinds = [f["k"] for f in frames]
    assert "rows" not in kinds and "wk" not in kinds
    assert [f["e"]["type"] for f in frames if f["k"] == "event"] == ["ResultChanged"]
    (summary,) = [f for f in frames if f["k"] == "summary"]
    assert summary["n"] == {"success": 1} and summary["pod"] == "web"


async def test_a_summary_goes_out_at_once_for_its_state_and_seldom_for_its_counts() -> None:
    # StreamClient.summaries: a reader's list shows a probe's published result, hold and
    # pause; its counts move at every attempt and wait SUMMARY_REFRESH
    now, clock = _clock()
    hub = Hub(Ring(3600, 10_000), clock=clock)  # type: ignore[arg-type]
    client = StreamClient(pods=frozenset({"other"}), summary=True, rows=True, limit=1 << 20)
    hub.attach(client)
    hub.event(record_event(POD, _attempt(10.0), "direct"))
    client.live = True
    hub.went_live(client)

    def summaries(at: float) -> list[dict]:
        now[0] = at
        hub.tick(at)
        client.sender.flush()
        return [f for f in _frames(client.queue.take_now()) if f["k"] == "summary"]

    assert [s["n"] for s in summaries(1000.0)] == [{"success": 1}]
    hub.event(record_event(POD, _attempt(11.0), "direct"))
    assert summaries(1001.0) == []  # only the counts moved
    (again,) = summaries(1000.0 + SUMMARY_REFRESH)
    assert again["n"] == {"success": 2}
    assert summaries(1000.0 + SUMMARY_REFRESH + 1) == []
    failed = replace(_attempt(12.0), published=ResultValue.FAILURE)
    hub.event(record_event(POD, failed, "direct"))
    (state,) = summaries(1000.0 + SUMMARY_REFRESH + 2)  # the state: at once
    assert state["pub"] == int(ResultValue.FAILURE) and state["n"] == {"success": 3}


def test_a_note_is_said_once_and_cleared() -> None:
    hub = Hub(Ring(3600, 10_000), node="node-1")
    hub.note("kubelet-counts", "403")
    hub.note("kubelet-counts", "403")
    assert hub.notes["kubelet-counts"]["text"] == "403"
    hub.note("kubelet-counts", "")
    assert hub.notes == {}


async def test_a_burst_is_written_as_its_last_probe_in_flight_ends() -> None:
    """`FlushAfterBurst`, after the hub among the engine's sinks: rows wait while probes are
    in flight and go out with the attempt that leaves none running; a skip alone waits for
    the flush delay."""
    from probetui.agent.run import FlushAfterBurst
    from tests.agent.test_ring import _skip

    hub = Hub(Ring(3600, 10_000))
    client = StreamClient(pods=None, summary=False, rows=True, limit=1 << 20)
    client.live = True
    hub.attach(client)
    in_flight = [2]
    after = FlushAfterBurst(hub, lambda: in_flight[0])
    for t, left in ((1.0, 1), (1.1, 0)):
        event = record_event(POD, _attempt(t))
        in_flight[0] = left
        hub.event(event)
        after.event(event)
        written = client.queue.take_now()
        assert bool(written) is (left == 0)
    rows = _frames(written)
    assert [f["k"] for f in rows if f["k"] == "rows"] == ["rows"] and len(rows[-1]["r"]) == 2
    skip = record_event(POD, _skip(1.2))
    hub.event(skip)
    after.event(skip)
    assert not client.queue.take_now()
    client.sender.flush()
