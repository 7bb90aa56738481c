"""The once-a-second divergence walk over every observed pod (ClusterPods.check_divergence):
cut into steps with the event loop served between them, each pod checked once as it stands
when its step comes, and only the disagreements of containers no longer there forgotten."""

from __future__ import annotations

import asyncio
from typing import Any

from probetui.prober.status import PodSnapshot, PodStatus
from probetui.runtime.kubernetes.divergence import Divergence
from probetui.runtime.kubernetes.pods import DIVERGENCE_SLICE, ClusterPods
from probetui.spec.model import Pod


class Recorder(Divergence):
    """The real Divergence, its per-pod check recorded (which pods, in which loop turn)."""

    def __init__(self) -> None:
        super().__init__(via="direct", not_probed=lambda *_: None)
        self.checked: list[tuple[str, str, int]] = []
        self.turn = 0
        self.keep: Any = None

    def check_pod(self, host: Any, pod: Pod, status: PodStatus, now: float, live: Any) -> None:
        self.checked.append((pod.uid, status.phase, self.turn))
        live.add((pod.uid, "app", "readiness"))

    def forget(self, keep: Any) -> None:
        self.keep = keep
        super().forget(keep)


def cluster(n: int, divergence: Recorder) -> ClusterPods:
    pods = ClusterPods(
        selector=None,
        via="direct",
        nodes=None,  # type: ignore[arg-type]
        owners=None,  # type: ignore[arg-type]
        divergence=divergence,
        not_probed=lambda *_: None,
    )
    pods.host = object()  # type: ignore[assignment]
    for i in range(n):
        pod = Pod(name=f"p{i}", namespace="ns", uid=f"uid-{i}", containers=())
        pods.pods[pod.uid] = PodSnapshot(pod, PodStatus())
    return pods


async def test_the_walk_serves_the_loop_between_steps_and_checks_each_pod_once() -> None:
    div = Recorder()
    n = 3 * DIVERGENCE_SLICE + 7
    pods = cluster(n, div)

    async def count_turns() -> None:
        while True:
            div.turn += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count_turns())
    try:
        await pods.check_divergence()
    finally:
        counter.cancel()
    assert sorted(uid for uid, _, _ in div.checked) == sorted(pods.pods)
    turns = sorted({turn for _, _, turn in div.checked})
    assert len(turns) == 4  # one step per slice of pods, another task run between each


async def test_a_pod_changed_during_the_walk_is_checked_as_it_is_then() -> None:
    div = Recorder()
    pods = cluster(2 * DIVERGENCE_SLICE, div)
    last = f"uid-{2 * DIVERGENCE_SLICE - 1}"

    async def change() -> None:
        seen = pods.pods[last]
        pods.pods[last] = PodSnapshot(seen.pod, PodStatus(phase="Failed"))

    walk = asyncio.create_task(pods.check_divergence())
    await asyncio.sleep(0)  # the first step has run
    await change()
    await walk
    assert (last, "Failed", div.turn) in div.checked


async def test_only_disagreements_of_pods_gone_are_forgotten() -> None:
    div = Recorder()
    pods = cluster(DIVERGENCE_SLICE + 2, div)  # two steps, the one gone aside
    del pods.pods["uid-1"]  # gone before the walk
    walk = asyncio.create_task(pods.check_divergence())
    await asyncio.sleep(0)
    pods.pods["uid-new"] = pods.pods["uid-0"]  # come during it
    await walk
    key = ("app", "readiness")
    assert div.keep(("uid-0", *key)) and div.keep(("uid-new", *key))
    assert not div.keep(("uid-1", *key)) and not div.keep(("uid-never", *key))


async def test_after_the_first_walk_only_pods_whose_verdicts_may_have_moved_are_checked() -> None:
    """A verdict moves with a readiness or startup cache's `set` (changed or not: the worker's
    result becomes its own) or with time once a disagreement is open; the rest are skipped,
    and what they had is kept."""
    from types import SimpleNamespace

    from probetui.prober.results import ResultsManager, ResultValue
    from probetui.runtime.kubernetes.divergence import _Disagreement

    div = Recorder()
    pods = cluster(6, div)
    manager = SimpleNamespace(readiness=ResultsManager(), startup=ResultsManager())
    pods.host = SimpleNamespace(manager=manager)  # type: ignore[assignment]
    await pods.check_divergence()
    assert len(div.checked) == 6  # the first walk: every pod
    div.checked.clear()
    manager.readiness.set("c-1", ResultValue.SUCCESS, "uid-1")
    manager.startup.set("c-2", ResultValue.SUCCESS, "uid-2")
    manager.startup.set("c-2", ResultValue.SUCCESS, "uid-2")  # unchanged still counts
    div._disagree[("uid-4", "app", "readiness")] = _Disagreement(0.0)
    div._disagree[("uid-5", "app", "readiness")] = _Disagreement(0.0)
    await pods.check_divergence()
    assert sorted(uid for uid, _, _ in div.checked) == ["uid-1", "uid-2", "uid-4", "uid-5"]
    div.checked.clear()
    await pods.check_divergence()
    assert sorted(uid for uid, _, _ in div.checked) == ["uid-4", "uid-5"]
    assert div.keep(("uid-0", "app", "readiness"))  # skipped, not forgotten


def test_a_steady_workers_attempts_name_its_pod_only_when_its_verdict_may_move() -> None:
    """Worker.finish's set names the pod for the walk when the cached value changes or first
    becomes the worker's own result; the same own result again moves no verdict (the walk stays
    idle for a steady probe), where a set that is not a finish's still names it."""
    from probetui.prober.results import ResultValue
    from probetui.spec.model import ProbeType
    from tests.prober.fixtures import POD_UID, do_probe, new_worker, running_status

    worker = new_worker(ProbeType.READINESS)
    cache = worker.results
    assert cache.touched_pods() is None  # from here on the cache keeps them
    status = running_status()
    do_probe(worker, status, "S")  # the initial Failure, then its own Success
    assert cache.touched_pods() == {POD_UID}
    do_probe(worker, status, "S")
    do_probe(worker, status, "S")
    assert cache.touched_pods() == set()
    do_probe(worker, status, "F")
    assert cache.touched_pods() == {POD_UID}
    do_probe(worker, status, "F")
    assert cache.touched_pods() == set()
    cache.set(worker.container_id, ResultValue.FAILURE, POD_UID)  # not a finish's own
    assert cache.touched_pods() == {POD_UID}
