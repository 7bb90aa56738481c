"""The prober release by release (docs/kubelet-versions.md): worker.go's non-running rules under
ContainerRestartRules and RestartAllContainersOnContainerExits, kubelet-restart preservation
(1.35) and `canInheritProbeState` (1.38), AddPod's `return` before 1.37, and the sync context
the workers run under before 1.37. Cases from upstream's worker_test.go and
prober_manager_test.go, on the fixtures of common_test.go."""

from __future__ import annotations

import pytest

from probetui.keys import ProbeKey
from probetui.kubelet.profile import KubeletProfile, profile_for
from probetui.prober.clock import SimClock
from probetui.prober.manager import Manager, is_container_started
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultsManager, ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running, Terminated
from probetui.prober.worker import (
    EXEC_CONTEXT_CANCELED,
    ProbeRecord,
    Worker,
    can_inherit_probe_state,
)
from probetui.spec.model import Container, ContainerKind, Pod, ProbeType, RestartRule
from tests.prober.fixtures import (
    CONTAINER,
    CONTAINER_ID,
    do_probe,
    outcome,
    pod_with,
    probe,
    running_status,
    terminated_status,
)

S, F, U = ResultValue.SUCCESS, ResultValue.FAILURE, ResultValue.UNKNOWN
V134, V135, V136, V137, V138 = (profile_for(f"1.{m}") for m in range(34, 39))


def _worker(
    probe_type: ProbeType,
    profile: KubeletProfile,
    container: Container | None = None,
    *,
    pod_policy: str = "Never",
    others: tuple[Container, ...] = (),
) -> Worker:
    pod = pod_with(probe_type, probe(), restart_policy=pod_policy)
    if container is not None:
        pod = Pod(pod.name, uid=pod.uid, containers=(container, *others), restart_policy=pod_policy)
    return Worker(pod, pod.containers[0], probe_type, ResultsManager(), profile=profile)


def _container(probe_type: ProbeType, **fields: object) -> Container:
    attr = f"{probe_type.key}_probe"
    return Container(CONTAINER, **{attr: probe()}, **fields)  # type: ignore[arg-type]


RESTART_RULES_CASES = [
    # TestDoProbeWithContainerRestartRules: (container restartPolicy, rules, exit, continue)
    ("OnFailure", (), 1, True),
    ("OnFailure", (), 0, False),
    ("Always", (), 1, True),
    ("Always", (), 0, True),
    ("Never", (), 1, False),
    ("Never", (), 0, False),
    ("Never", (RestartRule("Restart", "In", (1,)),), 1, True),
    ("Never", (RestartRule("Restart", "In", (99,)),), 1, False),
]


@pytest.mark.parametrize("probe_type", list(ProbeType))
@pytest.mark.parametrize(("policy", "rules", "exit_code", "expected"), RESTART_RULES_CASES)
def test_container_restart_rules_TestDoProbeWithContainerRestartRules(
    probe_type: ProbeType, policy: str, rules: tuple, exit_code: int, expected: bool
) -> None:
    """worker_test.go TestDoProbeWithContainerRestartRules (pod restartPolicy Never): with
    ContainerRestartRules on, `ContainerShouldRestart` decides whether a terminated
    container's worker goes on."""
    c = _container(probe_type, restart_policy=policy, restart_policy_rules=rules)
    w = _worker(probe_type, V135, c)
    assert do_probe(w, terminated_status(exit_code)) is expected


@pytest.mark.parametrize("probe_type", list(ProbeType))
@pytest.mark.parametrize(("policy", "rules", "exit_code", "_"), RESTART_RULES_CASES)
def test_without_the_gate_only_the_pod_policy_counts_TestDoProbe(
    probe_type: ProbeType, policy: str, rules: tuple, exit_code: int, _: bool
) -> None:
    """worker.go before 1.35 (gate off): `c.State.Terminated == nil ||
    pod.Spec.RestartPolicy != Never || isRestartableInitContainer`; the pod here is Never and
    the container's own policy does not count."""
    c = _container(probe_type, restart_policy=policy, restart_policy_rules=rules)
    assert do_probe(_worker(probe_type, V134, c), terminated_status(exit_code)) is False
    assert do_probe(_worker(probe_type, V134, c, pod_policy="OnFailure"), terminated_status(0))


def test_on_failure_exit_0_differs_between_the_two_rules() -> None:
    """§5.7: a pod under OnFailure whose container exited 0 ends the worker with the gate on
    (1.35) and keeps it with the gate off (1.34)."""
    c = _container(ProbeType.READINESS)
    assert (
        do_probe(
            _worker(ProbeType.READINESS, V135, c, pod_policy="OnFailure"), terminated_status(0)
        )
        is False
    )
    assert (
        do_probe(
            _worker(ProbeType.READINESS, V134, c, pod_policy="OnFailure"), terminated_status(0)
        )
        is True
    )


def test_1_34_alpha_gate_keeps_every_terminated_worker_worker_go() -> None:
    """worker.go at v1.34.4 with ContainerRestartRules on: `c.State.Terminated != nil ||
    IsContainerRestartable`, so a terminated container's worker always goes on, even under
    restartPolicy Never, and a waiting one only if the container is restartable."""
    p = profile_for("1.34", {"ContainerRestartRules": True})
    c = _container(ProbeType.READINESS, restart_policy="Never")
    assert do_probe(_worker(ProbeType.READINESS, p, c), terminated_status(0)) is True
    waiting = PodStatus(container_statuses=(ContainerStatus(CONTAINER, CONTAINER_ID),))
    assert do_probe(_worker(ProbeType.READINESS, p, c), waiting) is False


@pytest.mark.parametrize("probe_type", list(ProbeType))
def test_restart_all_containers_TestDoProbeWithContainerRestartAllContainers(
    probe_type: ProbeType,
) -> None:
    """worker_test.go TestDoProbeWithContainerRestartAllContainers (pod restartPolicy Never):
    the container's own RestartAllContainers rule matching its exit keeps the worker, and so
    does another container's ("container terminated by restartAllContainers",
    ShouldAllContainersRestart); with the gate off (1.35's default) neither does."""
    rule = (RestartRule("RestartAllContainers", "In", (1,)),)
    own = _container(probe_type, restart_policy="Never", restart_policy_rules=rule)
    assert do_probe(_worker(probe_type, V136, own), terminated_status(1)) is True
    assert do_probe(_worker(probe_type, V135, own), terminated_status(1)) is False

    trigger = Container("trigger", restart_policy="Never", restart_policy_rules=rule)
    status = PodStatus(
        container_statuses=(
            *terminated_status(1).container_statuses,
            ContainerStatus("trigger", "test://trigger", Terminated(1)),
        )
    )
    victim = _container(probe_type)
    assert do_probe(_worker(probe_type, V136, victim, others=(trigger,)), status) is True
    assert do_probe(_worker(probe_type, V135, victim, others=(trigger,)), status) is False


# -- after a kubelet restart -------------------------------------------------------------


def _survivor(
    probe_type: ProbeType, profile: KubeletProfile, api: PodStatus | None, **kw: object
) -> Worker:
    pod = pod_with(probe_type, probe())
    return Worker(
        pod,
        pod.containers[0],
        probe_type,
        ResultsManager(),
        manager_start=0.0,
        api_status=api,
        profile=profile,
    )


def test_no_preservation_before_1_35_TestChangeContainerStatusOnKubeletRestart() -> None:
    """worker_test.go TestChangeContainerStatusOnKubeletRestart: with the gate on, or before it
    existed (1.34), a container running since long before the kubelet started gets its
    initial value like any other; from 1.35 (gate off) it gets none."""
    api = running_status(-3600.0)
    for profile in (V134, profile_for("1.35", {"ChangeContainerStatusOnKubeletRestart": True})):
        w = _survivor(ProbeType.READINESS, profile, api)
        w.begin(running_status(-3600.0), 0.0)
        assert w.results.get(CONTAINER_ID) is F
    w = _survivor(ProbeType.READINESS, V135, api)
    w.begin(running_status(-3600.0), 0.0)
    assert w.results.get(CONTAINER_ID) is None


def test_1_35_to_1_37_inherit_a_replaced_container_TestDoProbe_NewContainerOnKubeletRestart() -> (
    None
):
    """Before canInheritProbeState (1.38) StartedAt alone decides: a container the runtime
    replaced while the API server was out of reach (the API pod still lists the old ID) is
    taken for a survivor and published nothing, the flaw worker_test.go
    TestDoProbe_NewContainerOnKubeletRestart holds fixed in 1.38."""
    api = running_status(-3600.0, cid="test://old")
    for profile, expected in ((V135, None), (V137, None), (V138, F)):
        w = _survivor(ProbeType.READINESS, profile, api)
        w.begin(running_status(-3600.0), 0.0)
        assert w.results.get(CONTAINER_ID) is expected, profile.version


@pytest.mark.parametrize(
    ("api_id", "runtime_id", "expected"),
    [
        ("test://a", "test://a", True),
        ("test://a", "test://b", False),
        ("", "test://b", True),
        ("test://a", "", True),
        (None, "test://b", True),
    ],
)
def test_can_inherit_probe_state_TestCanInheritProbeState(
    api_id: str | None, runtime_id: str, expected: bool
) -> None:
    """prober_manager_test.go TestCanInheritProbeState: no listing or an empty ID on either
    side does not stop inheritance; two different IDs do."""
    api = None if api_id is None else running_status(0.0, cid=api_id)
    assert can_inherit_probe_state(api, CONTAINER, runtime_id) is expected


def test_1_38_seeds_sidecar_startup_only_for_a_survivor_worker_go() -> None:
    """worker.go at v1.38.0-beta.0: the restarted sidecar's startup Success is seeded only when
    isRestart, and a replacement (the API pod lists another ID) gets the initial Unknown;
    1.35-1.37 take the replacement for a survivor and seed Success."""
    c = Container(
        CONTAINER, kind=ContainerKind.INIT, restart_policy="Always", startup_probe=probe()
    )
    pod = Pod("p", uid="u", init_containers=(c,))
    runtime = PodStatus(
        init_container_statuses=(
            ContainerStatus(CONTAINER, CONTAINER_ID, Running(-3600.0), started=True),
        )
    )
    api = PodStatus(
        init_container_statuses=(
            ContainerStatus(CONTAINER, "test://old", Running(-3600.0), started=True),
        )
    )
    seen: dict[str, list[ResultValue]] = {}
    for profile in (V137, V138):
        w = Worker(
            pod,
            c,
            ProbeType.STARTUP,
            ResultsManager(),
            manager_start=0.0,
            api_status=api,
            profile=profile,
        )
        seen[profile.version] = []
        w.results.subscribe(lambda u, v=profile.version: seen[v].append(u.result))
        w.begin(runtime, 0.0)
    assert seen == {"1.37": [S], "1.38": [U]}


def test_is_container_started_status_fallback_only_from_1_35_isContainerStarted() -> None:
    """prober_manager.go isContainerStarted: the status's Started=true counts before any
    result only with ChangeContainerStatusOnKubeletRestart off (1.35 on)."""
    c = running_status(0.0).container_statuses[0]
    worker = object()
    assert is_container_started(c, None, worker, keeps_state=True) is True  # type: ignore[arg-type]
    assert is_container_started(c, None, worker, keeps_state=False) is False  # type: ignore[arg-type]


def test_ready_kept_on_kubelet_restart_only_from_1_35_TestUpdatePodStatusOnKubeletRestart() -> None:
    """prober_manager_test.go TestUpdatePodStatusOnKubeletRestart: setReadyStateOnKubeletRestart
    keeps a survivor Ready while the API pod is Ready (1.35); 1.34 has no such step, and 1.38
    refuses a container the API pod does not list under that ID."""
    clock = SimClock()
    results: dict[str, bool] = {}
    for profile, api_id in ((V134, CONTAINER_ID), (V135, CONTAINER_ID), (V138, "test://old")):
        pod = pod_with(ProbeType.READINESS, probe(period_seconds=10))
        status = running_status(-3600.0)
        m = Manager(clock, lambda _: None, launch=lambda w, s, d: None, start=0.0, profile=profile)
        m.add_pod(pod, api_status=running_status(-3600.0, cid=api_id))
        ready_api = PodStatus(container_statuses=status.container_statuses, ready_condition=True)
        results[profile.version] = m.update_pod_status(pod, ready_api).container_statuses[0].ready
    assert results == {"1.34": False, "1.35": True, "1.38": False}


# -- the manager --------------------------------------------------------------------------


def test_add_pod_returns_at_an_existing_worker_before_1_37_AddPod() -> None:
    """prober_manager.go AddPod before 1.37: `return` at the first key that has a worker, so a
    later container whose worker ended gets no new one in that sync (the bug
    TestAddPodContinuesAfterExistingWorker pins fixed in 1.37)."""
    p = probe()
    pod = Pod(
        "p",
        uid="u",
        containers=(Container("a", readiness_probe=p), Container("b", readiness_probe=p)),
    )
    for profile, expected in ((V136, {"a"}), (V137, {"a", "b"})):
        clock = SimClock()
        m = Manager(
            clock, lambda _: None, launch=lambda w, s, d: None, start=-3600.0, profile=profile
        )
        m.add_pod(pod)
        m.workers[ProbeKey("u", "b", ProbeType.READINESS)].stop()
        m.add_pod(pod)
        assert {k.container for k in m.workers} == expected, profile.version


def _probe_through_termination(profile: KubeletProfile) -> tuple[int, list[ProbeOutcome]]:
    """A readiness exec probe ticking every second; the pod begins terminating at 0.5 s.
    Returns how many attempts reached the handler and every outcome."""
    clock = SimClock()
    pod = pod_with(ProbeType.READINESS, probe(), restart_policy="Always")
    status = running_status(-10.0)
    launched: list[float] = []

    def launch(w: Worker, s: PodStatus, done: object) -> None:
        launched.append(clock.now())
        clock.call_at(clock.now(), lambda: done(outcome(ProbeType.READINESS, "F")))  # type: ignore[operator]

    records: list[ProbeRecord] = []
    m = Manager(
        clock,
        lambda _: status,
        launch=launch,
        start=-3600.0,
        profile=profile,
        listener=records.append,
    )
    m.add_pod(pod)
    clock.run_until(0.5)
    m.pod_terminating(pod)
    clock.run_until(3.5)
    return len(launched), [r.outcome for r in records if r.outcome is not None]


def test_exec_probes_error_once_the_pod_terminates_before_1_37_TestProbeWorkersSurviveSyncContextCancellation() -> (
    None
):
    """prober_manager_test.go TestProbeWorkersSurviveSyncContextCancellation (1.37): the
    workers run under `context.WithoutCancel`, so the pod worker's cancel as the pod begins
    terminating leaves them probing. Before, an exec probe then runs under a cancelled
    context: every try errors and the result is discarded, after one "errored" event."""
    launched, outcomes = _probe_through_termination(V136)
    assert launched == 1
    cancelled = outcomes[1:]
    assert len(cancelled) == 3
    for o in cancelled:
        assert o.error == EXEC_CONTEXT_CANCELED and len(o.attempts) == 3
        assert o.event is not None and o.event.message == (
            "Readiness probe errored and resulted in unknown state: " + EXEC_CONTEXT_CANCELED
        )
    launched, outcomes = _probe_through_termination(V137)
    assert launched == 4
    assert all(o.error is None for o in outcomes)


def test_a_pod_plays_its_own_nodes_kubelet() -> None:
    """One manager, pods on nodes of different releases: `add_pod(profile=...)` gives a pod's
    workers and its status generation its node's release; the others keep the manager's."""
    p = probe()
    old = Pod("old", uid="old", containers=(Container("a", readiness_probe=p),))
    new = Pod("new", uid="new", containers=(Container("a", readiness_probe=p),))
    m = Manager(SimClock(), lambda _: None, launch=lambda w, s, d: None, start=-3600.0)
    m.add_pod(old, profile=V134)
    m.add_pod(new)
    assert m.workers[ProbeKey("old", "a", ProbeType.READINESS)].profile is V134
    assert m.workers[ProbeKey("new", "a", ProbeType.READINESS)].profile == V135
    assert m.profile_of("old") is V134 and m.profile_of("new") == V135
    m.add_pod(old)  # a later sync without a profile keeps the pod's
    assert m.profile_of("old") is V134
    m.remove_pod(old)
    assert m.profile_of("old") == V135
