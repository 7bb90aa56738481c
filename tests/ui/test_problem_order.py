"""The list in "problems" order follows the store: a workload whose replicas start failing and
diverging after it was listed healthy comes first (docs/screen.md, Workloads)."""

from __future__ import annotations

from datetime import UTC

from probetui.keys import ContainerKey
from probetui.probe.base import Result
from probetui.spec.model import Container, Pod
from probetui.timeline.store import Store
from probetui.ui.app import ProbeApp
from probetui.ui.screens.main import MainScreen
from probetui.ui.widgets.rows import RowIndex
from probetui.ui.widgets.workloads import WorkloadList
from tests.timeline.synth import T0, Synth
from tests.ui.fakes import FakeControls, FakeRuntime, R, http

# five Deployments, 48 pods; the one that fails sorts last by name
WORKLOADS = ("api", "billing", "cart", "search", "workers")
FAILING = "shop/Deployment/workers"


def cluster(store: Store) -> tuple[Synth, list[Pod]]:
    """48 healthy replicas of five Deployments, each listed and Ready."""
    s = Synth(store)
    pods = []
    for i in range(48):
        name = WORKLOADS[i % len(WORKLOADS)]
        pod = s.add_pod(
            Pod(
                name=f"{name}-7d9f8b6c4-{i:05d}",
                namespace="shop",
                uid=f"uid-{i}",
                containers=(Container(name="app", readiness_probe=http(8080, "/ready")),),
                owner_kind="Deployment",
                owner_name=name,
            ),
            T0,
        )
        s.start(pod, "app", T0 + 1)
        s.attempt(pod, "app", R, T0 + 2)
        s.set_ready(pod, "app", True, T0 + 2)
        pods.append(pod)
    return s, pods


def diverge(s: Synth, pods: list[Pod], t: float) -> None:
    """The workers' readiness fails for the shadow while the kubelet keeps six replicas Ready."""
    failing = [p for p in pods if p.owner_name == "workers"]
    for k in range(3):
        for pod in failing:
            s.attempt(pod, "app", R, t + k, Result.FAILURE)
    for pod in failing[:6]:
        s.kubelet(
            pod,
            "app",
            "Divergence",
            t + 5,
            source="shadow",
            message="kubelet says ready, shadow says not ready for 4s",
        )


def heads(rows: list) -> list[str]:  # type: ignore[type-arg]
    return [r.group for r in rows if r.group]


async def test_a_workload_that_diverges_after_it_was_listed_comes_first() -> None:
    # the changes were caught up while a re-sort was not yet due; nothing changed after them,
    # and the list was sorted again only when something did: the failing workload stayed last
    store = Store()
    s, pods = cluster(store)
    controls = FakeControls(FakeRuntime(observes_kubelet=True))  # the cluster view: problems
    app = ProbeApp(controls, store, now=lambda: T0 + 30, tz=UTC, run_engine=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen)
        wl = app.query_one(WorkloadList)
        assert wl.sort == "problems" and heads(wl.rows)[-1] == FAILING
        screen._resort_at = float("inf")  # a re-sort not yet due while the changes come
        diverge(s, pods, T0 + 10)
        await pilot.pause(0.25)  # polls catch the list's index up
        assert screen._version == store.version and heads(wl.rows)[-1] == FAILING
        screen._resort_at = 0.0  # the re-sort is due; nothing changes any more
        await pilot.pause(0.25)
        assert heads(wl.rows)[0] == FAILING
        # the failing, diverged replicas head their workload
        at = wl.rows.index(next(r for r in wl.rows if r.group == FAILING))
        first = wl.rows[at + 1].key
        assert first is not None and store.containers[first].divergences == 1


def test_each_thing_the_order_depends_on_moves_it_after_a_catch_up() -> None:
    """Divergence, readiness, a probe's results and restarts: each, caught up between two
    listings, marks the order moved and lists the workload first."""
    for change in ("divergence", "not ready", "failing", "restart"):
        store = Store()
        s, pods = cluster(store)
        index = RowIndex(store)
        assert heads(index.listing([], "problems").rows)[-1] == FAILING
        since = store.version
        pod = next(p for p in pods if p.owner_name == "workers")
        if change == "divergence":
            s.kubelet(pod, "app", "Divergence", T0 + 10, source="shadow", message="differs")
        elif change == "not ready":
            s.set_ready(pod, "app", False, T0 + 10)
        elif change == "failing":
            s.attempt(pod, "app", R, T0 + 10, Result.FAILURE)
        else:
            s.exit(pod, "app", T0 + 10, 1)
            s.start(pod, "app", T0 + 11)
            s.attempt(pod, "app", R, T0 + 12)
            s.set_ready(pod, "app", True, T0 + 12)
        index.catch_up(store.changed_since(since), since)
        assert index.moved("problems"), change
        rows = index.listing([], "problems").rows
        assert heads(rows)[0] == FAILING, change
        assert not index.moved("problems")
        assert ContainerKey(pod.uid, "app") == rows[1].key, change
