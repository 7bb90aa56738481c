"""The Workloads list's row index, kept up to date from one listing to the next, answers as a
walk of every pod would."""

from __future__ import annotations

import dataclasses
import random

import pytest

from probetui.keys import ContainerKey
from probetui.probe.base import Result
from probetui.spec.model import Container, Pod
from probetui.timeline.store import Store
from probetui.triage.groups import group_id, problem_score
from probetui.ui.widgets.rows import SORTS, Listing, Row, RowIndex, build_rows
from tests.timeline.synth import T0, Synth
from tests.ui.fakes import R, build, build_fleet, http


def facts(pod: Pod) -> tuple:
    name = f"{pod.namespace}/{pod.owner_name}/{pod.name}".lower()
    shown = tuple((c, f"{name}/{c.name.lower()}") for c in pod.probed_containers())
    return (pod, group_id(pod), name, shown)


def oracle(
    store: Store,
    terms: list[str],
    sort: str,
    collapsed: set[str] | frozenset[str] = frozenset(),
) -> Listing:
    """build_rows as it was before RowIndex: every pod walked at each call."""
    units: dict[str, tuple[tuple, list[tuple[tuple, str, list[Row]]]]] = {}
    loose: list[tuple[tuple, list[Row]]] = []
    pods = containers = 0
    problems = sort == "problems"
    # a container's status is looked up only for the order that needs it: at 2,000 pods that is
    # a tenth of each filter keystroke's rebuild
    by_restarts = sort == "restarts"
    histories = store.containers
    for entry in store.pods.values():
        pod, gid, _, shown = facts(entry.pod)
        rows: list[Row] = []
        worst = restarts = 0
        lookup = entry.status.lookup
        for c, searched in shown:
            if terms and not all(t in searched for t in terms):
                continue
            rows.append(Row(pod.uid, c.name))
            if problems:
                worst = max(
                    worst, problem_score(entry, c, histories.get(ContainerKey(pod.uid, c.name)))
                )
            if by_restarts:
                cs = lookup(c.name)
                restarts += cs.restart_count if cs is not None else 0
        if not rows:
            continue
        pods += 1
        containers += len(rows)
        # a group sorts by its worst pod, among the bare pods, by the name it shows
        title = pod.owner_name if gid else pod.name
        if problems:
            order: tuple = (-worst, pod.namespace, title)
        elif sort == "restarts":
            order = (-restarts, pod.namespace, title)
        else:
            order = (pod.namespace, title)
        if not gid:
            loose.append((order, rows))
            continue
        unit = units.get(gid)
        if unit is None:
            units[gid] = (order, [(order, pod.name, rows)])
        else:
            unit[1].append((order, pod.name, rows))
            if sort != "name":
                units[gid] = (min(unit[0], order), unit[1])
    blocks: list[tuple[tuple, int, list[Row]]] = [(o, 1, r) for o, r in loose]
    members: dict[str, list[str]] = {}
    for gid, (order, replicas) in units.items():
        replicas.sort(key=lambda p: (p[0], p[1]))
        members[gid] = [rows[0].pod_uid for _, _, rows in replicas]
        block = [Row("", None, gid)]
        if gid not in collapsed:
            block += [row for _, _, rows in replicas for row in rows]
        blocks.append((order, 0, block))
    blocks.sort(key=lambda b: (b[0], b[1]))
    return Listing([row for _, _, rows in blocks for row in rows], members, pods, containers)


def same(a: Listing, b: Listing) -> None:
    assert a.rows == b.rows
    assert a.members == b.members
    assert (a.pods, a.containers) == (b.pods, b.containers)


def fleet(store: Store, pods: int = 60) -> Synth:
    """Replicas of a few workloads (one of them a sidecar's pod) beside the small cluster's."""
    s = build(store)
    build_fleet(s)
    for i in range(pods):
        g = i % 6
        kind = "StatefulSet" if g == 5 else "Deployment"
        cs = [Container(name="app", readiness_probe=http(8080, "/ready"))]
        if i % 7 == 3:
            cs.append(Container(name="envoy", readiness_probe=http(8081, "/ready")))
        pod = s.add_pod(
            Pod(
                name=f"svc-{g}-{i:03d}",
                namespace="shop" if g != 4 else "edge",
                uid=f"uid-svc-{i}",
                containers=tuple(cs),
                owner_kind=kind,
                owner_name=f"svc-{g}",
            ),
            T0,
        )
        for c in cs:
            s.start(pod, c.name, T0 + 1)
    return s


FILTERS = ["", "s", "sv", "svc", "svc-", "svc-3", "svc-3 envoy", "envoy", "app", "shop", "x", "p"]


def test_the_index_lists_what_a_walk_of_every_pod_lists_as_the_store_changes() -> None:
    """Pods failing, restarting, diverging, renamed owners, pods gone and new, between
    listings in every order and under narrowing, widening and unrelated filters."""
    rng = random.Random(16)
    store = Store()
    s = fleet(store)
    index = RowIndex(store)
    collapsed: set[str] = set()
    polled = -1
    n, t = 1000, T0 + 10
    for _ in range(300):
        t += 1
        pods = [store.pods[u].pod for u in store.pods]
        pod = rng.choice(pods)
        c = rng.choice(pod.probed_containers()).name
        what = rng.randrange(10)
        if what < 3 and pod.container(c).readiness_probe is not None:
            s.attempt(pod, c, R, t, rng.choice([Result.FAILURE, Result.SUCCESS]), latency=0.001)
        elif what == 3:
            s.exit(pod, c, t, 1)
            s.start(pod, c, t + 0.5)
        elif what == 4:
            s.kubelet(pod, c, "Divergence", t, source="kubelet", message="differs")
        elif what == 5 and pod.owner_kind:
            moved = dataclasses.replace(pod, owner_name=rng.choice(["svc-1", "billing"]))
            s.pods[pod.uid] = moved
            store.pod(moved, store.pods[pod.uid].status)
        elif what == 6 and len(store.pods) > 10:
            store.pod(pod, None)
        elif what == 7:
            n += 1
            new = s.add_pod(
                Pod(name=f"svc-{n % 6}-{n}", namespace="shop", uid=f"uid-new-{n}",
                    containers=(Container(name="app", readiness_probe=http(8080, "/r")),),
                    owner_kind="Deployment" if n % 3 else "", owner_name=f"svc-{n % 6}"),
                t,
            )  # fmt: skip
            s.start(new, "app", t)
        elif what == 8:
            gid = group_id(pod)
            if gid:
                collapsed ^= {gid}
        if rng.randrange(3) == 0:
            # a poll between two listings, with what it read of the store since the last one
            index.catch_up(store.changed_since(polled), polled)
            polled = store.version
            if rng.randrange(2):
                continue
        terms = rng.choice(FILTERS).split()
        sort = rng.choice(SORTS)
        same(index.listing(terms, sort, collapsed), oracle(store, terms, sort, collapsed))


def test_a_keystroke_in_the_filter_touches_only_the_pods_it_lets_in_or_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The filter is matched over a flat list of names; only pods whose match changed are
    touched (their workload's lines with them): none where a keystroke changes nothing."""
    store = Store()
    fleet(store)
    index = RowIndex(store)
    index.listing([], "problems")
    touched: list[str] = []
    original = index._set_matched

    def spy(uid, e, matched):  # type: ignore[no-untyped-def]
        touched.append(uid)
        original(uid, e, matched)

    monkeypatch.setattr(index, "_set_matched", spy)

    def lines(text: str) -> set[Row]:
        return {r for r in oracle(store, text.split(), "problems").rows if r.container}

    last = ""
    for text in ("s", "sv", "svc", "svc-", "svc-3", "svc-3 envoy", "envoy", ""):
        touched.clear()
        listing = index.listing(text.split(), "problems")
        same(listing, oracle(store, text.split(), "problems"))
        changed = {r.pod_uid for r in lines(text) ^ lines(last)}
        assert sorted(touched) == sorted(changed), text
        last = text
    assert not {r.pod_uid for r in lines("svc") ^ lines("svc-")}  # one of the steps


def test_a_listing_looks_again_only_at_the_pods_that_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between two listings in the same order, a pod's problems are scored again only where
    the pod or its history changed since (a re-sort every 2 s at 2,000 pods walked them all)."""
    from probetui.ui.widgets import rows

    store = Store()
    s = fleet(store)
    index = RowIndex(store)
    index.listing([], "problems")
    scored: list[str] = []

    def counted(entry, c, history):  # type: ignore[no-untyped-def]
        scored.append(entry.pod.uid)
        return problem_score(entry, c, history)

    monkeypatch.setattr(rows, "problem_score", counted)
    assert index.listing([], "problems").rows == oracle(store, [], "problems").rows
    assert scored == []
    pod = store.pods["uid-svc-7"].pod
    s.attempt(pod, "app", R, T0 + 20, Result.FAILURE, latency=0.001)
    s.kubelet(pod, "app", "Divergence", T0 + 20, source="kubelet", message="differs")
    listing = index.listing([], "problems")
    assert scored == ["uid-svc-7"]
    same(listing, oracle(store, [], "problems"))
    # its workload leads the healthy ones now, the replica at its head
    heads = [r.group for r in listing.rows if r.group.startswith("shop/")]
    assert heads[0] == "shop/Deployment/svc-1"
    at = listing.rows.index(Row("", None, heads[0]))
    assert listing.rows[at + 1] == Row("uid-svc-7", "app")


def test_build_rows_is_the_index_listed_once() -> None:
    store = Store()
    fleet(store)
    for sort in SORTS:
        for text in FILTERS:
            same(build_rows(store, text.split(), sort), oracle(store, text.split(), sort))
    assert build_rows(store, [], "name").rows[0] == Row("uid-api", "api")


def test_a_pod_that_changed_while_filtered_out_comes_back_in_its_new_place() -> None:
    """The filter leaves a workload out, one of its replicas starts failing meanwhile, and
    the filter is cleared: the workload's kept order is not trusted, it comes back first."""
    store = Store()
    s = fleet(store)
    index = RowIndex(store)
    for sort in SORTS:
        index.listing([], sort)  # every order known, every block kept
    assert index.listing(["svc-2"], "problems").rows[0] == Row("", None, "shop/Deployment/svc-2")
    pod = store.pods["uid-svc-9"].pod  # a replica of svc-3, filtered out now
    s.exit(pod, "app", T0 + 30, 1)
    s.kubelet(pod, "app", "Divergence", T0 + 30, source="kubelet", message="differs")
    index.listing(["svc-2"], "problems")
    for sort in SORTS:
        listing = index.listing([], sort)
        same(listing, oracle(store, [], sort))
    heads = [r.group for r in index.listing([], "problems").rows if r.group.startswith("shop/")]
    assert heads[0] == "shop/Deployment/svc-3"


def test_a_poll_s_catch_up_leaves_the_next_sort_only_what_changed_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pods changed between two listings are looked at by the poll's catch-up: an `S`
    then scores no pod again (it scored every changed one, in every order, before)."""
    from probetui.ui.widgets import rows

    store = Store()
    s = fleet(store)
    index = RowIndex(store)
    index.listing([], "problems")
    index.listing([], "name")
    before = store.version
    for i, uid in enumerate(["uid-svc-7", "uid-svc-8"]):
        pod = store.pods[uid].pod
        s.attempt(pod, "app", R, T0 + 20 + i, Result.FAILURE, latency=0.001)
    index.catch_up(store.changed_since(before), before)
    scored: list[str] = []

    def counted(entry, c, history):  # type: ignore[no-untyped-def]
        scored.append(entry.pod.uid)
        return problem_score(entry, c, history)

    monkeypatch.setattr(rows, "problem_score", counted)
    same(index.listing([], "problems"), oracle(store, [], "problems"))
    assert scored == []
