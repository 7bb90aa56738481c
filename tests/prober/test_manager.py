"""Run loop and manager vectors (docs/test-vectors.md A13-A15, A24-A25, B1-B7) on a virtual
clock."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import pytest

from probetui.keys import ProbeKey
from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile, profile_for
from probetui.prober.clock import VirtualClock, sleep_on_grid
from probetui.prober.manager import Manager
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running, Terminated
from probetui.prober.worker import ProbeRecord, Trigger, Worker, tick_grid
from probetui.spec.model import Container, ContainerKind, Pod, ProbeType
from tests.prober.fixtures import (
    CONTAINER,
    CONTAINER_ID,
    count_records,
    outcome,
    pod_with,
    probe,
    running_status,
)

S, F = ResultValue.SUCCESS, ResultValue.FAILURE


@dataclass
class FakeKubelet:
    """Status cache + a fake prober whose answer and duration the test sets."""

    clock: VirtualClock
    statuses: dict[str, PodStatus] = field(default_factory=dict)
    answer: str = "S"
    duration: float = 0.0
    starts: list[float] = field(default_factory=list)
    records: list[ProbeRecord] = field(default_factory=list)
    block: bool = False
    cancelled: bool = False

    async def run_probe(self, worker: Worker, status: PodStatus) -> ProbeOutcome:
        self.starts.append(self.clock.now())
        try:
            if self.block:
                await self.clock.sleep(10_000)
            elif self.duration:
                await self.clock.sleep(self.duration)
        except BaseException:
            self.cancelled = True
            raise
        return outcome(worker.probe_type, self.answer)

    def manager(
        self,
        *,
        start: float = -3600.0,
        seed: int = 1,
        profile: KubeletProfile = DEFAULT_PROFILE,
        tick_align: float = 0.0,
    ) -> Manager:
        return Manager(
            self.clock,
            self.statuses.get,
            self.run_probe,
            start=start,
            listener=self.records.append,
            rng=random.Random(seed),
            profile=profile,
            tick_align=tick_align,
        )


@pytest.fixture
def kubelet() -> FakeKubelet:
    return FakeKubelet(VirtualClock(0.0))


def probed_pod(uid: str = "probe_pod") -> Pod:
    p = probe()
    return Pod(
        "probe_pod",
        uid=uid,
        containers=(
            Container("no_probes1"),
            Container("readiness", readiness_probe=p),
            Container("no_probes2"),
            Container("liveness", liveness_probe=p),
            Container("startup", startup_probe=p),
        ),
    )


def keys(m: Manager) -> set[tuple[str, str, ProbeType]]:
    return {tuple(k) for k in m.workers}  # type: ignore[misc]


async def test_b1_add_remove_pods(kubelet: FakeKubelet) -> None:
    """TestAddRemovePods: one worker per configured probe; RemovePod stops them, twice is a no-op."""
    m = kubelet.manager()
    empty = Pod("no_probe_pod", uid="no_probe_pod", containers=(Container("a"), Container("b")))
    m.add_pod(empty)
    assert keys(m) == set()
    pod = probed_pod()
    m.add_pod(pod)
    assert keys(m) == {
        ("probe_pod", "readiness", ProbeType.READINESS),
        ("probe_pod", "liveness", ProbeType.LIVENESS),
        ("probe_pod", "startup", ProbeType.STARTUP),
    }
    m.remove_pod(empty)
    assert len(m.workers) == 3
    m.remove_pod(pod)
    await kubelet.clock.advance(1.0)
    assert keys(m) == set()
    m.remove_pod(pod)
    await m.shutdown()


async def test_b2_add_pod_continues_after_existing_worker(kubelet: FakeKubelet) -> None:
    """TestAddPodContinuesAfterExistingWorker (1.37 on): an existing key is skipped with
    continue."""
    m = kubelet.manager(profile=profile_for("1.37"))
    p = probe()
    pod = Pod(
        "p",
        uid="u",
        containers=(Container("a", readiness_probe=p), Container("b", readiness_probe=p)),
    )
    m.add_pod(pod)
    m.workers[ProbeKey("u", "b", ProbeType.READINESS)].stop()
    await kubelet.clock.advance(1.0)
    assert keys(m) == {("u", "a", ProbeType.READINESS)}
    m.add_pod(pod)
    assert keys(m) == {("u", "a", ProbeType.READINESS), ("u", "b", ProbeType.READINESS)}
    await m.shutdown()


@pytest.mark.parametrize(("policy", "expected"), [(None, 0), ("Always", 3)])
async def test_b3_sidecar_workers(kubelet: FakeKubelet, policy: str | None, expected: int) -> None:
    """TestAddRemovePodsWithRestartableInitContainer: only sidecars get init-container workers."""
    p = probe()
    init = (
        Container("init", kind=ContainerKind.INIT),
        Container(
            "restartable-init",
            kind=ContainerKind.INIT,
            restart_policy=policy,
            liveness_probe=p,
            readiness_probe=p,
            startup_probe=p,
        ),
    )
    pod = Pod("p", uid="u", init_containers=init)
    m = kubelet.manager()
    m.add_pod(pod)
    assert len(m.workers) == expected
    m.remove_pod(pod)
    await kubelet.clock.advance(1.0)
    assert not m.workers


async def test_b4_cleanup_pods(kubelet: FakeKubelet) -> None:
    """TestCleanupPods / TestCleanupRepeated: only desired pods keep their workers."""
    m = kubelet.manager()
    m.add_pod(probed_pod("pod_cleanup"))
    m.add_pod(probed_pod("pod_keep"))
    m.cleanup_pods({"pod_keep"})
    await kubelet.clock.advance(1.0)
    assert {k.pod_uid for k in m.workers} == {"pod_keep"}
    for i in range(100):
        m.add_pod(probed_pod(f"pod{i}"))
    for _ in range(10):
        m.cleanup_pods(set())
    await kubelet.clock.advance(1.0)
    assert not m.workers


async def test_a13_cleanup_on_exit(kubelet: FakeKubelet) -> None:
    """TestCleanUp: stop() is idempotent; on exit the cached result is removed silently."""
    for t in ProbeType:
        pod = pod_with(t, probe())
        kubelet.statuses[pod.uid] = running_status(started=t is not ProbeType.STARTUP)
        m = kubelet.manager()
        m.add_pod(pod)
        await kubelet.clock.advance(0.5)
        results = m.results_for(t)
        assert results.get(CONTAINER_ID) is S
        updates: list[object] = []
        results.subscribe(updates.append)
        worker = m.workers[ProbeKey(pod.uid, CONTAINER, t)]
        for _ in range(10):
            worker.stop()
        await kubelet.clock.advance(0.5)
        assert results.get(CONTAINER_ID) is None
        assert updates == []
        assert not m.workers


async def test_a14_fixed_rate_schedule(kubelet: FakeKubelet) -> None:
    """TestProbeScheduleFeatureGate (gate off): probe starts are one period apart, not period+duration."""
    p = probe(period_seconds=10)
    pod = pod_with(ProbeType.READINESS, p)
    kubelet.statuses[pod.uid] = running_status()
    kubelet.duration = 3.0
    m = kubelet.manager(start=-3600.0)
    m.add_pod(pod)
    await kubelet.clock.advance(25.0)
    assert kubelet.starts[:3] == [0.0, 10.0, 20.0]
    await m.shutdown()


async def test_a14_slow_probe_pending_tick_runs_next_at_once(kubelet: FakeKubelet) -> None:
    """docs/kubelet-behaviour.md §4.4: a probe longer than the period runs the next one right after;
    extra ticks drop."""
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    kubelet.duration = 25.0
    m = kubelet.manager()
    m.add_pod(pod)
    await kubelet.clock.advance(60.0)
    # 0-25 runs; ticks at 10 and 20 collapse into one pending tick -> 25; then 30's tick
    # is pending at 50 -> 50
    assert kubelet.starts[:3] == [0.0, 25.0, 50.0]
    await m.shutdown()


async def test_records_are_built_only_for_a_listener_and_a_late_one_gets_them(
    kubelet: FakeKubelet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A manager no one listens to builds no doProbe record (a model run read only for the
    kubelet's doings, the counterfactual's, pays nothing for them); one added once workers run
    is told of every record from then on, and the schedule is the same either way."""
    built = count_records(monkeypatch)
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    m = Manager(kubelet.clock, kubelet.statuses.get, kubelet.run_probe, start=-3600.0)
    m.add_pod(pod)
    await kubelet.clock.advance(15.0)
    assert kubelet.starts[:2] == [0.0, 10.0]
    assert built == []
    records: list[ProbeRecord] = []
    m.add_listener(records.append)
    await kubelet.clock.advance(20.0)
    assert kubelet.starts[:4] == [0.0, 10.0, 20.0, 30.0]
    assert [r.t for r in records] == [20.0, 30.0]
    assert built == [20.0, 30.0]
    await m.shutdown()


async def test_a15_stop_does_not_cancel_in_flight(kubelet: FakeKubelet) -> None:
    """TestProbeStopFeatureGate (legacy): RemovePod leaves the in-flight probe running."""
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    m = kubelet.manager()
    m.add_pod(pod)
    await kubelet.clock.advance(0.0)
    kubelet.block = True
    await kubelet.clock.advance(10.0)  # second probe starts and blocks
    assert m.readiness.get(CONTAINER_ID) is S
    m.remove_pod(pod)
    await kubelet.clock.advance(100.0)
    assert not kubelet.cancelled
    assert m.readiness.get(CONTAINER_ID) is S
    assert ProbeKey(pod.uid, CONTAINER, ProbeType.READINESS) in m.workers
    await kubelet.clock.advance(10_000.0)  # the call returns; now the worker cleans up
    assert m.readiness.get(CONTAINER_ID) is None
    assert not m.workers


async def test_a24_manual_trigger_resets_ticker(kubelet: FakeKubelet) -> None:
    """§4.5 / §10.4: UpdatePodStatus triggers readiness now; the next tick is a period later."""
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    kubelet.answer = "F"
    m = kubelet.manager()
    m.add_pod(pod)
    await kubelet.clock.advance(3.0)
    assert kubelet.starts == [0.0]
    m.update_pod_status(pod, kubelet.statuses[pod.uid])  # queued in the buffer of one
    m.update_pod_status(pod, kubelet.statuses[pod.uid])  # buffer full: dropped
    assert m.dropped_triggers == 1
    await kubelet.clock.advance(0.0)
    assert kubelet.starts == [0.0, 3.0]
    await kubelet.clock.advance(10.0)
    assert kubelet.starts == [0.0, 3.0, 13.0]
    triggers = [r.trigger for r in kubelet.records]
    assert triggers[:3] == [Trigger.FIRST, Trigger.KUBELET, Trigger.TICK]
    await m.shutdown()


async def test_user_trigger_counts_like_tick_and_keeps_schedule(kubelet: FakeKubelet) -> None:
    """probetui's "probe now" (not kubelet behaviour): runs at once, ticker unchanged, marked manual."""
    pod = pod_with(ProbeType.LIVENESS, probe(period_seconds=10, failure_threshold=3))
    kubelet.statuses[pod.uid] = running_status()
    kubelet.answer = "F"
    m = kubelet.manager()
    m.add_pod(pod)
    await kubelet.clock.advance(4.0)
    assert m.probe_now(ProbeKey(pod.uid, CONTAINER, ProbeType.LIVENESS))
    await kubelet.clock.advance(7.0)
    assert kubelet.starts == [0.0, 4.0, 10.0]
    assert [r.manual for r in kubelet.records] == [False, True, False]
    assert m.liveness.get(CONTAINER_ID) is F  # the manual attempt counted toward the threshold
    await m.shutdown()


async def test_a25_startup_jitter(kubelet: FakeKubelet) -> None:
    """§4.2: a manager younger than the period delays the first probe by rand*[0, period)."""
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    m = kubelet.manager(start=-2.0, seed=7)
    m.add_pod(pod)
    await kubelet.clock.advance(10.0)
    expected = random.Random(7).random() * 10
    assert kubelet.starts[0] == pytest.approx(expected)
    await m.shutdown()
    kubelet.starts.clear()
    m2 = kubelet.manager(start=-3600.0)
    m2.add_pod(pod)
    await kubelet.clock.advance(0.0)
    assert kubelet.starts[0] == kubelet.clock.now()
    await m2.shutdown()


# -- B5-B7: UpdatePodStatus ---------------------------------------------------------------


def _cs(name: str, *, running: bool = True, exit_code: int | None = None) -> ContainerStatus:
    state = Running(0.0) if running else Terminated(exit_code or 0)
    return ContainerStatus(name, f"test://{name}_id", state)


async def test_b5_update_pod_status(kubelet: FakeKubelet) -> None:
    """TestUpdatePodStatus: Ready and Started per container, with a readiness trigger when unready."""
    p = probe()
    names = {
        "unprobed_container": {"liveness_probe": p},
        "probed_container_ready": {"readiness_probe": p},
        "probed_container_pending": {"readiness_probe": p},
        "probed_container_unready": {"readiness_probe": p},
        "not_started_container_no_readiness": {"startup_probe": p},
        "started_container_no_readiness": {"startup_probe": p},
        "terminated_container": {"readiness_probe": p},
    }
    pod = Pod("p", uid="u", containers=tuple(Container(n, **kw) for n, kw in names.items()))  # type: ignore[arg-type]
    statuses = [_cs(n, running=n != "terminated_container") for n in names]
    status = PodStatus(container_statuses=tuple(statuses))
    m = kubelet.manager()
    m.add_pod(pod)
    m.readiness.set("test://probed_container_ready_id", S, "u")
    m.readiness.set("test://probed_container_unready_id", F, "u")
    m.startup.set("test://started_container_no_readiness_id", S, "u")
    m.readiness.set("test://terminated_container_id", S, "u")
    out = {
        c.name: (c.ready, c.started) for c in m.update_pod_status(pod, status).container_statuses
    }
    assert out == {
        "unprobed_container": (True, True),
        "probed_container_ready": (True, True),
        "probed_container_pending": (False, True),
        "probed_container_unready": (False, True),
        "not_started_container_no_readiness": (False, False),
        "started_container_no_readiness": (True, True),
        "terminated_container": (False, False),
    }
    # the readiness trigger of each unready container is queued (none dropped) and runs that
    # worker's probe at once, the others' not before their period
    assert m.dropped_triggers == 0
    await kubelet.clock.advance(0.0)
    triggered = {r.key.container for r in kubelet.records if r.trigger is Trigger.KUBELET}
    assert triggered == {"probed_container_pending", "probed_container_unready"}
    await m.shutdown()


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (
            None,
            {"not_started": (False, False), "started": (False, True), "terminated": (True, False)},
        ),
        (
            "Always",
            {"not_started": (False, False), "started": (True, True), "terminated": (False, False)},
        ),
    ],
)
async def test_b6_update_pod_status_init_containers(
    kubelet: FakeKubelet, policy: str | None, expected: dict[str, tuple[bool, bool]]
) -> None:
    """TestUpdatePodStatusWithInitContainers: plain init containers are ready only by exiting 0."""
    p = probe()
    init = tuple(
        Container(n, kind=ContainerKind.INIT, restart_policy=policy, startup_probe=p)
        for n in ("not_started", "started", "terminated")
    )
    pod = Pod("p", uid="u", init_containers=init)
    status = PodStatus(
        init_container_statuses=(
            _cs("not_started"),
            _cs("started"),
            _cs("terminated", running=False, exit_code=0),
        )
    )
    m = kubelet.manager()
    m.add_pod(pod)
    # plain init containers get no workers; the startup result is seeded directly
    m.startup.set("test://started_id", S, "u")
    if policy is None:
        # without a worker a plain init container counts as started when running (§10.2)
        m_status = m.update_pod_status(pod, status)
        out = {c.name: (c.ready, c.started) for c in m_status.init_container_statuses}
        assert out["terminated"] == expected["terminated"]
        assert out["started"] == expected["started"]
    else:
        out = {
            c.name: (c.ready, c.started)
            for c in m.update_pod_status(pod, status).init_container_statuses
        }
        assert out == expected
    await m.shutdown()


async def test_b7_readiness_end_to_end(kubelet: FakeKubelet) -> None:
    """TestUpdateReadiness: readiness updates flow into the status; S -> Ready, F -> not Ready."""
    pod = pod_with(ProbeType.READINESS, probe())
    kubelet.statuses[pod.uid] = running_status()
    m = kubelet.manager()

    def on_update(u: object) -> None:
        kubelet.statuses[pod.uid] = m.update_pod_status(pod, kubelet.statuses[pod.uid])

    m.readiness.subscribe(on_update)
    m.add_pod(pod)
    await kubelet.clock.advance(2.0)
    assert kubelet.statuses[pod.uid].container_statuses[0].ready is True
    kubelet.answer = "F"
    await kubelet.clock.advance(3.0)
    assert kubelet.statuses[pod.uid].container_statuses[0].ready is False
    await m.shutdown()


async def test_a22_ready_kept_on_kubelet_restart(kubelet: FakeKubelet) -> None:
    """§8.5 setReadyStateOnKubeletRestart: a Ready container stays Ready until probed."""
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    m = kubelet.manager(start=0.0)
    status = running_status(-3600.0)
    m.add_pod(pod, api_status=status)
    ready_api = PodStatus(container_statuses=status.container_statuses, ready_condition=True)
    assert m.update_pod_status(pod, ready_api).container_statuses[0].ready is True
    not_ready_api = PodStatus(container_statuses=status.container_statuses, ready_condition=False)
    assert m.update_pod_status(pod, not_ready_api).container_statuses[0].ready is False
    await m.shutdown()


# -- the agent's tick grid (not kubelet behaviour: probetui's node agent) -------------------


async def test_tick_grid_puts_every_tick_on_the_grid_a_period_apart(kubelet: FakeKubelet) -> None:
    """A worker started between grid points waits for the next one, then keeps its period."""
    await kubelet.clock.advance(0.3)
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    m = kubelet.manager(seed=7, tick_align=1.0)
    m.add_pod(pod)
    await kubelet.clock.advance(25.0)
    assert kubelet.starts == [1.0, 11.0, 21.0]
    await m.shutdown()


async def test_tick_grid_rounds_the_start_up_jitter_up(kubelet: FakeKubelet) -> None:
    """§4.2's jitter still spreads a young agent's first probes, each on a grid point."""
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    m = kubelet.manager(start=-2.0, seed=7, tick_align=0.5)
    m.add_pod(pod)
    await kubelet.clock.advance(10.0)
    jitter = random.Random(7).random() * 10
    first = kubelet.starts[0]
    assert first % 0.5 == 0 and jitter <= first < jitter + 0.5
    await m.shutdown()


async def test_tick_grid_keeps_a_manual_trigger_at_once_and_grids_the_next_tick(
    kubelet: FakeKubelet,
) -> None:
    """§4.5's trigger still probes at once; the ticker it restarts lands on the grid."""
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
    kubelet.statuses[pod.uid] = running_status()
    kubelet.answer = "F"
    m = kubelet.manager(seed=7, tick_align=1.0)
    m.add_pod(pod)
    await kubelet.clock.advance(3.25)
    m.update_pod_status(pod, kubelet.statuses[pod.uid])
    await kubelet.clock.advance(11.0)
    assert kubelet.starts == [0.0, 3.25, 14.0]
    await m.shutdown()


def test_tick_grid_leaves_a_tick_just_past_a_grid_point_on_it() -> None:
    """A timer fires a little late: the next tick must not slip a whole slot for it."""
    assert tick_grid(110.004, 1.0) == 110.0
    assert tick_grid(110.5, 1.0) == 111.0
    assert tick_grid(110.25, 0.0) == 110.25


async def test_a_chore_sleeping_on_the_grid_wakes_with_the_ticks(kubelet: FakeKubelet) -> None:
    """A node agent's once-a-second chores (`sleep_on_grid`) wake on the grid points its
    workers' ticks are on, so they share the ticks' wake-ups; without a grid, `delay` after."""
    await kubelet.clock.advance(0.3)
    pod = pod_with(ProbeType.READINESS, probe(period_seconds=2))
    kubelet.statuses[pod.uid] = running_status()
    m = kubelet.manager(seed=7, tick_align=1.0)
    m.add_pod(pod)
    woke: list[float] = []

    async def chores(align: float) -> None:
        while True:
            await sleep_on_grid(kubelet.clock, 1.0, align)
            woke.append(kubelet.clock.now())

    on_grid = asyncio.create_task(chores(1.0))
    await kubelet.clock.advance(4.0)
    on_grid.cancel()
    assert woke == [2.0, 3.0, 4.0]
    assert set(kubelet.starts) <= set(woke) | {1.0}
    woke.clear()
    free = asyncio.create_task(chores(0.0))
    await kubelet.clock.advance(0.75)
    await kubelet.clock.advance(1.0)
    free.cancel()
    assert woke == [5.3]
    await m.shutdown()
