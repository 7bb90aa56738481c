"""A reader that comes late: the ring's contents at once, then live, nothing twice or missing.

Reader A attaches first and stays; readers that come later, with or without `since`, as rows
or as `event` frames, must read exactly A's events from where they start, as the engine's sinks
got them (the ring's row rebuilt is the same Event).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.agent.bench import Reader, attempts, dump, read_stream, running_agent
from tests.agent.conftest import NODE, FakeKubelet
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import EchoServer, HttpTarget

pytestmark = pytest.mark.slow


def _key(e: Any) -> tuple[Any, ...]:
    return (e.type, e.pod, e.container, e.probe, e.t)


def _after(reader: Reader, at: float) -> list[Any]:
    """The events `reader` got after the frame stamped `at`."""
    out: list[Any] = []
    passed = False
    for stamp, event in reader.events:
        if passed:
            out.append(event)
        elif stamp == at:
            passed = True
    assert passed, f"no frame stamped {at}"
    return out


def _same_run(a: list[Any], b: list[Any]) -> int:
    """How long `a` and `b` agree from their starts; they must agree up to the shorter one."""
    n = min(len(a), len(b))
    for i in range(n):
        assert a[i] == b[i], (i, _key(a[i]), _key(b[i]))
    return n


async def test_a_late_reader_gets_the_ring_then_live_with_nothing_twice(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    echo_server: EchoServer,
) -> None:
    web = make_pod(
        "web",
        node=NODE,
        containers=[
            container(
                "app",
                readiness=http_get_probe("/ready", http_target.port, period=1),
                liveness={
                    "tcpSocket": {"port": echo_server.port},
                    "periodSeconds": 1,
                    "timeoutSeconds": 1,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
            )
        ],
    )
    other = make_pod(
        "other",
        node=NODE,
        containers=[container("app", readiness=http_get_probe("/x", http_target.port, period=1))],
    )
    api.add_pod(web)
    other_uid = api.add_pod(other)["metadata"]["uid"]
    async with running_agent(api, tmp_path, sa_dir, read_token, kubelet.port) as run:
        first = Reader()
        a = asyncio.create_task(read_stream(run.url, first, query="rows=1", timeout=6.0))
        await asyncio.sleep(3.0)
        # a cursor in the middle of what A has read
        ats = first.ats()
        cursor = ats[len(ats) // 2]
        late, late_events, everything, one_pod = Reader(), Reader(), Reader(), Reader()
        await asyncio.gather(
            read_stream(run.url, late, query=f"rows=1&since={cursor!r}", timeout=2.0),
            read_stream(run.url, late_events, query=f"since={cursor!r}", timeout=2.0),
            read_stream(run.url, everything, query="rows=1", timeout=2.0),
            read_stream(run.url, one_pod, query=f"rows=1&summary=1&pods={other_uid}", timeout=2.5),
        )
        await a

    # A's stamps only grow; so do each late reader's
    for r in (first, late, late_events, everything):
        ats = r.ats()
        assert ats == sorted(ats) and len(set(ats)) == len(ats), dump(r)
    # from the cursor on, the late readers read exactly what A read: nothing twice, none missing
    expected = _after(first, cursor)
    assert all(at > cursor for at in late.ats()) and all(at > cursor for at in late_events.ats())
    assert _same_run(expected, [e for _, e in late.events]) >= 4
    assert _same_run(expected, [e for _, e in late_events.events]) >= 4
    # rows or event frames: the same events
    assert late_events.of("rows") == [] and late_events.of("event")
    # the replay ends with a `live` frame stamped with the last entry it sent
    (live,) = late.of("live")
    replayed = [f for f in late.frames[: late.frames.index(live)] if f["k"] in ("rows", "event")]
    assert replayed and live["at"] == replayed[-1]["at"]
    # without `since`, everything the ring holds, which is all A saw
    assert _same_run([e for _, e in first.events], [e for _, e in everything.events]) >= 8
    # pods=: only that pod's attempts; summaries for the others' probes; other events for all
    assert {e.pod for e in attempts(one_pod)} == {"other"}
    summaries = one_pod.of("summary")
    assert {(s["pod"], s["probe"]) for s in summaries} == {
        ("web", "readiness"),
        ("web", "liveness"),
    }
    latest = summaries[-1]
    assert latest["n"]["success"] >= 1 and latest["last"]["outcome"] == "success"
    assert latest["latency_ms"]["attempts"] >= 1 and latest["pub"] in (0, None)
    assert {e.pod for _, e in one_pod.events if e.type == "ResultChanged"} == {"web", "other"}
