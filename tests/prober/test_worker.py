"""Worker decision vectors A1-A23 (docs/test-vectors.md), doProbe one step at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from probetui.kubelet.profile import profile_for
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.prober.worker import Skip, Worker
from probetui.spec.model import Container, ContainerKind, Pod, ProbeType
from tests.prober.fixtures import (
    CONTAINER,
    CONTAINER_ID,
    do_probe,
    new_worker,
    outcome,
    pod_with,
    probe,
    running_status,
    terminated_status,
    waiting_status,
)

S, F, U = ResultValue.SUCCESS, ResultValue.FAILURE, ResultValue.UNKNOWN
ALL = list(ProbeType)


def pub(w: Worker) -> ResultValue | None:
    return w.results.get(w.container_id or CONTAINER_ID)


def started_for(t: ProbeType) -> bool:
    return t is not ProbeType.STARTUP


# -- A1: TestDoProbe matrix ---------------------------------------------------------------


@pytest.mark.parametrize("t", ALL)
def test_a1_no_pod_status_keeps_going(t: ProbeType) -> None:
    """TestDoProbe: no status for the pod -> keep going, nothing published."""
    w = new_worker(t)
    assert do_probe(w, None) is True
    assert w.results.get(CONTAINER_ID) is None


@pytest.mark.parametrize("t", ALL)
def test_a1_pod_failed_exits(t: ProbeType) -> None:
    """TestDoProbe: pod phase Failed -> the worker exits without publishing."""
    w = new_worker(t)
    assert do_probe(w, replace(running_status(), phase="Failed")) is False
    assert w.results.get(CONTAINER_ID) is None


@pytest.mark.parametrize(
    ("t", "cont"),
    [(ProbeType.LIVENESS, False), (ProbeType.READINESS, True), (ProbeType.STARTUP, False)],
)
def test_a1_deletion_timestamp(t: ProbeType, cont: bool) -> None:
    """TestDoProbe: a deleting pod forces Success and stops liveness/startup; readiness probes."""
    w = new_worker(t, deletion_timestamp=1.0)
    assert do_probe(w, running_status(started=started_for(t))) is cont
    assert pub(w) is S


@pytest.mark.parametrize("t", ALL)
def test_a1_status_for_other_container(t: ProbeType) -> None:
    """TestDoProbe: only another container has a status -> keep going, nothing published."""
    w = new_worker(t)
    other = PodStatus(container_statuses=(ContainerStatus("other", "test://x", Running(0)),))
    assert do_probe(w, other) is True
    assert w.results.get(CONTAINER_ID) is None


@pytest.mark.parametrize("t", ALL)
def test_a1_waiting_container_publishes_failure(t: ProbeType) -> None:
    """TestDoProbe: a Waiting container -> Failure published, keep going."""
    w = new_worker(t)
    assert do_probe(w, waiting_status()) is True
    assert pub(w) is F


@pytest.mark.parametrize("t", ALL)
def test_a1_terminated_never_restart_exits(t: ProbeType) -> None:
    """TestDoProbe: Terminated under restartPolicy Never -> Failure published and exit."""
    w = new_worker(t)
    assert do_probe(w, terminated_status(0)) is False
    assert pub(w) is F


@pytest.mark.parametrize("t", ALL)
@pytest.mark.parametrize("delay", [0, -100])
def test_a1_running_probe_success(t: ProbeType, delay: int) -> None:
    """TestDoProbe: running (also with InitialDelaySeconds=-100) and probe S -> Success."""
    w = new_worker(t, probe(initial_delay_seconds=delay))
    assert do_probe(w, running_status(started=started_for(t))) is True
    assert pub(w) is S


# -- A2: TestInitialDelay -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "initial"), [(ProbeType.LIVENESS, S), (ProbeType.READINESS, F), (ProbeType.STARTUP, U)]
)
def test_a2_initial_delay_publishes_initial_value(t: ProbeType, initial: ResultValue) -> None:
    """TestInitialDelay: inside the delay the initial value is published; after it, the probe."""
    w = new_worker(t, probe(initial_delay_seconds=10))
    assert do_probe(w, running_status(0.0, started=started_for(t)), now=0.0)
    assert pub(w) is initial
    assert do_probe(w, running_status(-100.0, started=started_for(t)), now=0.0)
    assert pub(w) is S


# -- A3 / A4: thresholds ----------------------------------------------------------------------


def test_a3_readiness_failure_threshold() -> None:
    """TestFailureThreshold: three failures in a row are needed to flip readiness."""
    w = new_worker(ProbeType.READINESS, probe(success_threshold=1, failure_threshold=3))
    expected = [S, S, S, S, S, F, F, F]
    for _ in range(2):
        for code, want in zip("SSSFFFFF", expected, strict=True):
            do_probe(w, running_status(), code)
            assert pub(w) is want


def test_a4_readiness_success_threshold() -> None:
    """TestSuccessThreshold: three successes publish Success, one failure Failure."""
    w = new_worker(ProbeType.READINESS, probe(success_threshold=3, failure_threshold=1))
    w.results.set(CONTAINER_ID, F, w.pod.uid)
    for _ in range(2):
        for code, want, run in [
            ("S", F, 1),
            ("S", F, 2),
            ("S", S, 3),
            ("S", S, 4),
            ("S", S, 5),
            ("F", F, 1),
        ]:
            do_probe(w, running_status(), code)
            assert (pub(w), w.result_run) == (want, run)


# -- A5-A12: hold and startup gating ------------------------------------------------------


def test_a5_startup_success_threshold_holds() -> None:
    """TestStartupProbeSuccessThreshold: startup success publishes and puts the worker on hold."""
    w = new_worker(ProbeType.STARTUP, probe(success_threshold=1, failure_threshold=3))
    do_probe(w, running_status(started=False), "S")
    assert (pub(w), w.on_hold, w.result_run) == (S, True, 0)
    assert w.begin(running_status(started=False), 0.0).skip is Skip.ON_HOLD
    assert (pub(w), w.on_hold, w.result_run) == (S, True, 0)


def test_a6_startup_failure_threshold() -> None:
    """TestStartupProbeFailureThreshold: Unknown until the third failure, then Failure + hold."""
    w = new_worker(ProbeType.STARTUP, probe(success_threshold=1, failure_threshold=3))
    for want, run, hold in [(U, 1, False), (U, 2, False), (F, 0, True), (F, 0, True)]:
        do_probe(w, running_status(started=False), "F")
        assert (pub(w), w.result_run, w.on_hold) == (want, run, hold)


@pytest.mark.parametrize("t", [ProbeType.LIVENESS, ProbeType.STARTUP])
def test_a7_a8_hold_until_new_container(t: ProbeType) -> None:
    """TestOnHoldOnLivenessOrStartupCheckFailure: hold until the container ID changes."""
    w = new_worker(t)
    started = started_for(t)
    do_probe(w, running_status(started=started), "F")
    assert (pub(w), w.on_hold) == (F, True)
    do_probe(w, running_status(started=started), "S")  # held: not run
    assert (pub(w), w.on_hold) == (F, True)
    do_probe(w, running_status(started=started, cid="test://newCont_ID"), "S")
    assert w.results.get("test://newCont_ID") is S
    assert w.results.get(CONTAINER_ID) is None
    # liveness leaves hold; startup holds again after its success
    assert w.on_hold is (t is ProbeType.STARTUP)


def test_a9_liveness_result_run_resets_at_threshold() -> None:
    """TestResultRunOnLivenessCheckFailure: resultRun resets to 0 when liveness publishes Failure."""
    w = new_worker(ProbeType.LIVENESS, probe(success_threshold=1, failure_threshold=3))
    for code, want, run, hold in [
        ("S", S, 1, False),
        ("F", S, 1, False),
        ("F", S, 2, False),
        ("F", F, 0, True),
    ]:
        do_probe(w, running_status(), code)
        assert (pub(w), w.result_run, w.on_hold) == (want, run, hold)


def test_a10_startup_result_run() -> None:
    """TestResultRunOnStartupCheckFailure."""
    w = new_worker(ProbeType.STARTUP, probe(success_threshold=1, failure_threshold=3))
    for want, run in [(U, 1), (U, 2), (F, 0)]:
        do_probe(w, running_status(started=False), "F")
        assert (pub(w), w.result_run) == (want, run)


def test_a11_liveness_disabled_until_started() -> None:
    """TestLivenessProbeDisabledByStarted: no liveness probe until Started."""
    w = new_worker(ProbeType.LIVENESS)
    assert w.begin(running_status(started=False), 0.0).skip is Skip.NOT_STARTED
    assert pub(w) is S
    do_probe(w, running_status(started=True), "F")
    assert pub(w) is F


def test_a12_startup_disabled_once_started() -> None:
    """TestStartupProbeDisabledByStarted: startup stops probing once Started is true."""
    w = new_worker(ProbeType.STARTUP, probe(success_threshold=1, failure_threshold=2))
    do_probe(w, running_status(started=False), "F")
    assert pub(w) is U
    do_probe(w, running_status(started=False), "S")
    assert pub(w) is S
    w.on_hold = False  # even without the hold, Started alone stops it
    assert w.begin(running_status(started=True), 0.0).skip is Skip.STARTED
    assert pub(w) is S


# -- A16-A21: derived vectors -----------------------------------------------------------------


def test_a16_readiness_counters_carry_over_new_container() -> None:
    """docs/kubelet-behaviour.md §6.6: a new container ID resets neither resultRun nor lastResult
    (readiness)."""
    w = new_worker(ProbeType.READINESS, probe(success_threshold=3, failure_threshold=1))
    seen: list[tuple[str, ResultValue]] = []
    w.results.subscribe(lambda u: seen.append((u.container_id, u.result)))
    do_probe(w, running_status(cid="X"), "S")
    do_probe(w, running_status(cid="X"), "S")
    assert (w.results.get("X"), w.result_run) == (F, 2)
    do_probe(w, running_status(cid="Y"), "S")
    assert (w.results.get("Y"), w.result_run) == (S, 3)
    assert w.results.get("X") is None
    assert seen == [("X", F), ("Y", F), ("Y", S)]


def test_a17_liveness_counters_carry_over_new_container() -> None:
    """§6.6: two failures, a restart for another reason, one failure -> Failure (kill)."""
    w = new_worker(ProbeType.LIVENESS, probe(success_threshold=1, failure_threshold=3))
    do_probe(w, running_status(cid="X"), "F")
    do_probe(w, running_status(cid="X"), "F")
    assert (w.results.get("X"), w.result_run, w.on_hold) == (S, 2, False)
    seen: list[tuple[str, ResultValue]] = []
    w.results.subscribe(lambda u: seen.append((u.container_id, u.result)))
    do_probe(w, running_status(cid="Y"), "F")
    assert (w.results.get("Y"), w.result_run, w.on_hold) == (F, 0, True)
    assert seen == [("Y", S), ("Y", F)]


def test_a18_probe_errors_are_discarded() -> None:
    """§5.11 / §6.4: an errored probe changes nothing and counts nothing."""
    w = new_worker(ProbeType.READINESS)
    for _ in range(3):
        do_probe(w, running_status(), "E")
        assert (pub(w), w.result_run) == (F, 0)
    assert w.probe_total == {"successful": 0, "failed": 0, "unknown": 0}
    ev = outcome(ProbeType.READINESS, "E").event
    assert ev is not None
    assert ev.message == "Readiness probe errored and resulted in unknown state: boom"
    do_probe(w, running_status(), "S")
    assert pub(w) is S


def test_a19_initial_delay_truncates_to_whole_seconds() -> None:
    """§5.9: int32(seconds since startedAt) < initialDelaySeconds -> no probe."""
    w = new_worker(ProbeType.LIVENESS, probe(initial_delay_seconds=10))
    assert w.begin(running_status(0.0), 9.99).skip is Skip.INITIAL_DELAY
    assert pub(w) is S
    do_probe(w, running_status(0.0), "F", now=10.0)
    assert pub(w) is F


@pytest.mark.parametrize(
    ("pod_policy", "sidecar", "state", "code", "cont"),
    [
        ("Never", False, "waiting", None, True),
        ("Never", False, "terminated", 0, False),
        ("Always", False, "terminated", 0, True),
        ("OnFailure", False, "terminated", 1, True),
        ("OnFailure", False, "terminated", 0, False),
        ("Never", True, "terminated", 0, True),
    ],
)
def test_a20_non_running_continue_rules(
    pod_policy: str, sidecar: bool, state: str, code: int | None, cont: bool
) -> None:
    """§5.7: ContainerShouldRestart decides whether a worker of a stopped container goes on."""
    p = probe()
    if sidecar:
        c = Container(
            CONTAINER, kind=ContainerKind.INIT, restart_policy="Always", readiness_probe=p
        )
        pod = Pod("p", uid="u", init_containers=(c,), restart_policy=pod_policy)
    else:
        pod = pod_with(ProbeType.READINESS, p, restart_policy=pod_policy)
        c = pod.containers[0]
    from probetui.prober.results import ResultsManager

    w = Worker(pod, c, ProbeType.READINESS, ResultsManager())
    status = waiting_status() if state == "waiting" else terminated_status(code or 0)
    if sidecar:
        status = PodStatus(init_container_statuses=status.container_statuses)
    assert do_probe(w, status) is cont
    assert pub(w) is F


def test_a21_held_worker_ignores_termination() -> None:
    """§5.6 / §17.5: the onHold check comes before the non-running check."""
    w = new_worker(ProbeType.LIVENESS)
    do_probe(w, running_status(), "F")
    assert w.on_hold
    assert do_probe(w, terminated_status(137)) is True
    assert pub(w) is F


# -- A22, A23: kubelet restart preservation ---------------------------------------------------


def _restarted_worker(
    t: ProbeType, started_at: float, *, api_same_id: bool = True, **kw: object
) -> Worker:
    pod = pod_with(t, probe())
    c = pod.containers[0]
    api = running_status(started_at, cid=CONTAINER_ID if api_same_id else "test://old")
    from probetui.prober.results import ResultsManager

    return Worker(pod, c, t, ResultsManager(), manager_start=0.0, api_status=api, **kw)  # type: ignore[arg-type]


def test_a22_kubelet_restart_publishes_no_initial_value() -> None:
    """§8.2: a container running since before the manager started gets no initial value."""
    w = _restarted_worker(ProbeType.READINESS, -3600.0)
    step = w.begin(running_status(-3600.0), 0.0)
    assert w.results.get(CONTAINER_ID) is None
    assert step.probe
    w.finish(outcome(ProbeType.READINESS, "S"))
    assert pub(w) is S


def test_a22_inside_grace_publishes_initial_value() -> None:
    """§8.1: started 5 s before the manager (inside the 10 s grace) -> initial value."""
    w = _restarted_worker(ProbeType.READINESS, -5.0)
    w.begin(running_status(-5.0), 0.0)
    assert w.results.get(CONTAINER_ID) is F


def test_a22_replaced_container_does_not_inherit() -> None:
    """§8.3 (kubernetes#141487, 1.38 on): the API pod must list the same container ID to inherit
    state."""
    w = _restarted_worker(
        ProbeType.READINESS, -3600.0, api_same_id=False, profile=profile_for("1.38")
    )
    w.begin(running_status(-3600.0), 0.0)
    assert w.results.get(CONTAINER_ID) is F


def test_a23_restarted_sidecar_keeps_startup_success() -> None:
    """§8.4 (kubernetes#136910): a started sidecar's startup worker seeds Success on adoption."""
    c = Container(
        CONTAINER, kind=ContainerKind.INIT, restart_policy="Always", startup_probe=probe()
    )
    pod = Pod("p", uid="u", init_containers=(c,))
    status = PodStatus(
        init_container_statuses=(
            ContainerStatus(CONTAINER, CONTAINER_ID, Running(-3600.0), started=True),
        )
    )
    from probetui.prober.results import ResultsManager

    w = Worker(pod, c, ProbeType.STARTUP, ResultsManager(), manager_start=0.0, api_status=status)
    seen: list[ResultValue] = []
    w.results.subscribe(lambda u: seen.append(u.result))
    step = w.begin(status, 0.0)
    assert seen == [S]  # no Unknown after it: isRestart
    assert step.skip is Skip.STARTED
