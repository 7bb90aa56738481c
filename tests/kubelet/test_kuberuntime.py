"""Kill, restart and grace-period decisions (docs/kubelet-behaviour.md §11 and §5.7;
docs/test-vectors.md I and A20).

Each test names the upstream behaviour it pins: `computePodActions`,
`computeInitContainerActions`, `setTerminationGracePeriod` / `killContainer` in
`pkg/kubelet/kuberuntime`, and `ContainerShouldRestart` in `pkg/api/v1/pod/util.go`.
"""

from __future__ import annotations

import pytest

from probetui.kubelet.kuberuntime import (
    CRASH_LOOP_BACK_OFF,
    KillDecision,
    backoff_event_message,
    container_probe_action,
    crash_loop_message,
    created_message,
    init_container_blocks_next,
    kill_grace_period,
    kill_timing,
    restart_after_probe_kill,
    should_restart,
    started_message,
    stopping_message,
    termination_grace_period,
)
from probetui.kubelet.profile import profile_for
from probetui.prober.results import ResultValue
from probetui.spec.model import (
    Container,
    ContainerKind,
    ExecAction,
    Pod,
    Probe,
    RestartRule,
)

S, F, U = ResultValue.SUCCESS, ResultValue.FAILURE, ResultValue.UNKNOWN
EXEC = ExecAction(command=("true",))


def probe(tgps: int | None = None) -> Probe:
    return Probe(exec=EXEC, termination_grace_period_seconds=tgps)


def app(**kw: object) -> Container:
    fields: dict[str, object] = {"liveness_probe": probe(), "startup_probe": probe()}
    fields.update(kw)
    return Container(name="app", **fields)  # type: ignore[arg-type]


def sidecar(*, startup: bool = True, liveness: bool = True) -> Container:
    return Container(
        name="sc",
        kind=ContainerKind.INIT,
        restart_policy="Always",
        startup_probe=probe() if startup else None,
        liveness_probe=probe() if liveness else None,
    )


def pod(policy: str = "Always", tgps: int | None = 30, *containers: Container) -> Pod:
    return Pod(
        name="web",
        namespace="ns1",
        uid="u-1",
        containers=containers or (app(),),
        restart_policy=policy,
        termination_grace_period_seconds=tgps,
    )


# -- vectors I: regular containers (computePodActions) -----------------------------------------


def test_vector_i1_liveness_failure_kills_and_restarts_under_always() -> None:
    d = container_probe_action(app(), pod("Always"), running=True, liveness=F, startup=S)
    assert d == KillDecision(
        kill=True,
        restart=True,
        reason="liveness",
        message="Container app failed liveness probe, will be restarted",
    )


def test_vector_i2_liveness_failure_under_never_kills_only_shouldRestartOnFailure() -> None:
    d = container_probe_action(app(), pod("Never"), running=True, liveness=F, startup=S)
    assert d == KillDecision(
        kill=True, restart=False, reason="liveness", message="Container app failed liveness probe"
    )


def test_vector_i3_startup_failure_kills_and_restarts_under_on_failure() -> None:
    d = container_probe_action(app(), pod("OnFailure"), running=True, liveness=S, startup=F)
    assert d.kill and d.restart
    assert d.reason == "startup"
    assert d.message == "Container app failed startup probe, will be restarted"


def test_vector_i4_liveness_message_wins_over_startup() -> None:
    d = container_probe_action(app(), pod("Always"), running=True, liveness=F, startup=F)
    assert d.reason == "liveness"
    assert d.message == "Container app failed liveness probe, will be restarted"


@pytest.mark.parametrize("liveness", [F, S, U, None])
def test_vector_i5_non_running_container_is_never_killed_for_probes(
    liveness: ResultValue | None,
) -> None:
    d = container_probe_action(app(), pod("Always"), running=False, liveness=liveness, startup=F)
    assert d == KillDecision(kill=False, restart=False, reason=None, message=None)


@pytest.mark.parametrize(
    ("liveness", "startup"), [(S, S), (None, None), (U, U), (S, U), (None, S), (U, None)]
)
def test_computePodActions_keeps_container_without_cached_failure(
    liveness: ResultValue | None, startup: ResultValue | None
) -> None:
    d = container_probe_action(app(), pod(), running=True, liveness=liveness, startup=startup)
    assert not d.kill and d.message is None


def test_computePodActions_reads_the_cache_not_the_spec() -> None:
    """The liveness check is a results-cache lookup; it does not look at container.LivenessProbe."""
    bare = Container(name="app")
    d = container_probe_action(bare, pod(), running=True, liveness=F, startup=None)
    assert d.kill and d.reason == "liveness"


@pytest.mark.parametrize(
    ("pod_policy", "container_policy", "restart"),
    [
        ("Never", None, False),
        ("Always", None, True),
        ("OnFailure", None, True),
        ("", None, True),
        # v1.35 ContainerRestartRules beta (kubernetes#134631): a set container policy decides
        ("Never", "Always", True),
        ("Never", "OnFailure", True),
        ("Always", "Never", False),
    ],
)
def test_probe_kill_restart_follows_pod_then_container_policy_v135(
    pod_policy: str, container_policy: str | None, restart: bool
) -> None:
    c = app(restart_policy=container_policy)
    assert restart_after_probe_kill(c, pod(pod_policy, 30, c)) is restart
    d = container_probe_action(c, pod(pod_policy, 30, c), running=True, liveness=F, startup=S)
    assert d.restart is restart
    assert d.message is not None
    assert d.message.endswith(", will be restarted") is restart


def test_probe_kill_restart_ignores_restart_rules_because_container_has_not_exited() -> None:
    rules = (RestartRule(action="Restart", operator="In", values=(137, 143)),)
    c = app(restart_policy="Never", restart_policy_rules=rules)
    assert restart_after_probe_kill(c, pod("Always", 30, c)) is False


def test_plain_init_and_ephemeral_containers_are_not_probe_killed() -> None:
    init = Container(name="setup", kind=ContainerKind.INIT)
    eph = Container(name="debug", kind=ContainerKind.EPHEMERAL)
    for c in (init, eph):
        assert not container_probe_action(c, pod(), running=True, liveness=F, startup=F).kill


# -- vectors I: sidecars (computeInitContainerActions) -----------------------------------------


def test_vector_i6_sidecar_startup_failure_kills_and_restarts_even_under_never() -> None:
    d = container_probe_action(sidecar(), pod("Never"), running=True, liveness=S, startup=F)
    assert d == KillDecision(
        kill=True, restart=True, reason="startup", message="Init container sc failed startup probe"
    )
    assert init_container_blocks_next(sidecar(), running=True, startup=F)


@pytest.mark.parametrize("startup", [U, None])
@pytest.mark.parametrize("policy", ["Always", "OnFailure", "Never"])
def test_vector_i7_sidecar_without_startup_success_blocks_next_init_container(
    startup: ResultValue | None, policy: str
) -> None:
    d = container_probe_action(sidecar(), pod(policy), running=True, liveness=S, startup=startup)
    assert not d.kill
    assert init_container_blocks_next(sidecar(), running=True, startup=startup) is True


def test_vector_i8_sidecar_liveness_failure_kills_and_restarts_even_under_never() -> None:
    d = container_probe_action(sidecar(), pod("Never"), running=True, liveness=F, startup=S)
    assert d == KillDecision(
        kill=True,
        restart=True,
        reason="liveness",
        message="Init container sc failed liveness probe",
    )


def test_sidecar_startup_success_lets_next_init_container_start_liveness_never_gates() -> None:
    assert init_container_blocks_next(sidecar(), running=True, startup=S) is False
    # a failing or not-yet-run liveness probe does not hold the next init container back
    assert init_container_blocks_next(sidecar(startup=False), running=True, startup=None) is False


def test_sidecar_liveness_is_not_judged_until_startup_succeeds() -> None:
    """computeInitContainerActions breaks out before the liveness check while startup != Success."""
    for startup in (U, None):
        d = container_probe_action(sidecar(), pod(), running=True, liveness=F, startup=startup)
        assert not d.kill


def test_sidecar_without_startup_probe_ignores_startup_result_and_checks_liveness() -> None:
    sc = sidecar(startup=False)
    d = container_probe_action(sc, pod(), running=True, liveness=F, startup=F)
    assert d.reason == "liveness"


def test_sidecar_liveness_checked_only_when_it_has_a_liveness_probe() -> None:
    d = container_probe_action(sidecar(liveness=False), pod(), running=True, liveness=F, startup=S)
    assert not d.kill


def test_exited_sidecar_is_restarted_not_probe_killed_and_blocks_next() -> None:
    d = container_probe_action(sidecar(), pod(), running=False, liveness=F, startup=F)
    assert not d.kill
    assert init_container_blocks_next(sidecar(), running=False, startup=None)


def test_regular_init_container_blocks_until_it_exits_zero() -> None:
    init = Container(name="setup", kind=ContainerKind.INIT)
    assert init_container_blocks_next(init, running=True, startup=None)
    assert init_container_blocks_next(init, running=False, startup=None, exit_code=1)
    assert init_container_blocks_next(init, running=False, startup=None)
    assert not init_container_blocks_next(init, running=False, startup=None, exit_code=0)


# -- vectors I: grace period (setTerminationGracePeriod, killContainer) -----------------------


def test_vector_i_grace_pod_tgps_30_no_probe_tgps_no_prestop() -> None:
    assert kill_grace_period(pod(tgps=30), app(), "liveness") == 30.0


def test_vector_i_grace_probe_tgps_5_wins_over_pod() -> None:
    c = app(liveness_probe=probe(5))
    assert kill_grace_period(pod(tgps=30), c, "liveness") == 5.0


def test_vector_i_grace_deletion_grace_period_wins_over_both() -> None:
    c = app(liveness_probe=probe(5))
    assert kill_grace_period(pod(tgps=30), c, "liveness", deletion_grace_period=10) == 10.0


def test_vector_i_grace_prestop_time_subtracted_then_floored_at_two() -> None:
    c = app(liveness_probe=probe(5), has_pre_stop=True)
    assert kill_grace_period(pod(tgps=30), c, "liveness", pre_stop_seconds=4.0) == 2.0


def test_grace_probe_tgps_used_only_for_matching_reason() -> None:
    c = app(liveness_probe=probe(5), startup_probe=probe(7))
    assert kill_grace_period(pod(tgps=30), c, "startup") == 7.0
    assert kill_grace_period(pod(tgps=30), c, "liveness") == 5.0
    assert kill_grace_period(pod(tgps=30), c, None) == 30.0


def test_grace_probe_tgps_may_exceed_pod_tgps() -> None:
    """isProbeTerminationGracePeriodSecondsSet only logs when the probe value is larger."""
    c = app(liveness_probe=probe(120))
    assert kill_grace_period(pod(tgps=30), c, "liveness") == 120.0


def test_grace_without_pod_tgps_is_the_minimum_and_ignores_probe_tgps() -> None:
    c = app(liveness_probe=probe(5))
    assert kill_grace_period(pod(tgps=None), c, "liveness") == 2.0


def test_grace_prestop_elapsed_truncated_to_whole_seconds() -> None:
    c = app(has_pre_stop=True)
    assert kill_grace_period(pod(tgps=30), c, "liveness", pre_stop_seconds=4.7) == 26.0


def test_grace_prestop_cut_off_at_grace_period_then_floor() -> None:
    c = app(has_pre_stop=True)
    assert kill_grace_period(pod(tgps=30), c, None, pre_stop_seconds=100.0) == 2.0


def test_grace_prestop_seconds_ignored_without_a_hook() -> None:
    assert kill_grace_period(pod(tgps=30), app(), "liveness", pre_stop_seconds=4.0) == 30.0


def test_grace_floor_applies_without_prestop_even_for_deletion_grace_zero() -> None:
    """killContainer: 'always give containers a minimal shutdown window'."""
    c = app(liveness_probe=probe(1), has_pre_stop=True)
    assert kill_grace_period(pod(), c, "liveness") == 2.0
    assert kill_grace_period(pod(), c, "liveness", deletion_grace_period=0, pre_stop_seconds=5) == 2


@pytest.mark.parametrize(
    ("tgps", "deletion", "reason", "expected"),
    [
        (30, None, "liveness", 5),
        (30, None, None, 30),
        (None, None, "liveness", 2),
        (30, 0, None, 0),
    ],
)
def test_termination_grace_period_is_set_termination_grace_period_before_the_floor(
    tgps: int | None, deletion: int | None, reason: str | None, expected: int
) -> None:
    """setTerminationGracePeriod: deletion grace, else the probe's (for its kill), else the
    pod's, else 2; no floor yet, so a deletion grace of 0 stays 0 (no preStop hook runs)."""
    c = app(liveness_probe=probe(5))
    got = termination_grace_period(pod(tgps=tgps), c, reason, deletion_grace_period=deletion)
    assert got == expected


@pytest.mark.parametrize(
    ("hook", "deletion", "pre_stop", "grace"),
    [
        (4.7, None, 4.7, 26.0),  # the hook, then what its whole seconds leave
        (100.0, None, 30.0, 2.0),  # cut at the grace period, then the 2 s floor
        (5.0, 0, 0.0, 2.0),  # grace 0: executePreStopHook is not run at all
        (5.0, 1, 1.0, 2.0),
    ],
)
def test_kill_timing_runs_the_hook_within_the_grace_then_stop_container_killContainer(
    hook: float, deletion: int | None, pre_stop: float, grace: float
) -> None:
    """killContainer: executePreStopHook (only with a hook and a grace period above 0) waits at
    most the grace period before StopContainer; StopContainer gets the rest, floored at 2 s,
    the same number kill_grace_period gives."""
    c = app(has_pre_stop=True)
    timing = kill_timing(
        pod(tgps=30), c, None, deletion_grace_period=deletion, pre_stop_seconds=hook
    )
    assert (timing.pre_stop, timing.grace) == (pre_stop, grace)
    expected = kill_grace_period(
        pod(tgps=30), c, None, deletion_grace_period=deletion, pre_stop_seconds=hook
    )
    assert timing.grace == expected


def test_kill_timing_without_a_hook_signals_at_once() -> None:
    timing = kill_timing(pod(tgps=30), app(), "liveness", pre_stop_seconds=9.0)
    assert (timing.pre_stop, timing.grace) == (0.0, 30.0)


# -- ContainerShouldRestart (§5.7, vector A20, TestContainerShouldRestart) -----------------


@pytest.mark.parametrize(
    ("pod_policy", "container", "exit_code", "expected"),
    [
        ("Never", Container(name="c"), 0, False),
        ("Always", Container(name="c"), 0, True),
        ("OnFailure", Container(name="c"), 1, True),
        ("OnFailure", Container(name="c"), 0, False),
        ("Never", sidecar(), 0, True),
        ("", Container(name="c"), 0, True),
    ],
)
def test_vector_a20_container_should_restart(
    pod_policy: str, container: Container, exit_code: int, expected: bool
) -> None:
    assert should_restart(container, pod(pod_policy, 30, container), exit_code) is expected


@pytest.mark.parametrize(
    ("policy", "rules", "exit_code", "expected"),
    [
        # a matching Restart rule wins over a Never container policy
        ("Never", (RestartRule("Restart", "In", (42,)),), 42, True),
        ("Never", (RestartRule("Restart", "In", (42,)),), 1, False),
        ("Never", (RestartRule("Restart", "NotIn", (0,)),), 3, True),
        ("Never", (RestartRule("Restart", "NotIn", (0,)),), 0, False),
        # first match decides; a non-Restart action falls through to the container policy
        ("Never", (RestartRule("Other", "In", (7,)), RestartRule("Restart", "In", (7,))), 7, False),
        # an unsupported operator never matches; later rules are still tried
        (
            "Never",
            (RestartRule("Restart", "Bogus", (7,)), RestartRule("Restart", "In", (7,))),
            7,
            True,
        ),
        ("OnFailure", (), 0, False),
        ("OnFailure", (), 2, True),
        ("Always", (), 0, True),
    ],
)
def test_container_rules_then_container_policy(
    policy: str, rules: tuple[RestartRule, ...], exit_code: int, expected: bool
) -> None:
    c = Container(name="c", restart_policy=policy, restart_policy_rules=rules)
    assert should_restart(c, pod("Always", 30, c), exit_code) is expected


def test_container_rules_ignored_without_container_restart_policy() -> None:
    """ContainerShouldRestart consults the rules only when container.RestartPolicy is set."""
    c = Container(name="c", restart_policy_rules=(RestartRule("Restart", "In", (1,)),))
    assert should_restart(c, pod("Never", 30, c), 1) is False


def test_unknown_container_policy_falls_back_to_pod_policy() -> None:
    c = Container(name="c", restart_policy="Sometimes")
    assert should_restart(c, pod("Never", 30, c), 1) is False
    assert should_restart(c, pod("Weird", 30, c), 1) is True


# -- event texts ------------------------------------------------------------------------------


def test_event_texts_match_upstream() -> None:
    p = pod()
    assert stopping_message("app") == "Stopping container app"
    # startContainer before 1.35 (kuberuntime_container.go at v1.34.4)
    assert created_message("app", profile_for("1.34")) == "Created container: app"
    assert started_message("app", profile_for("1.34")) == "Started container app"
    assert backoff_event_message("app", p) == (
        "Back-off restarting failed container app in pod web_ns1(u-1)"
    )
    assert crash_loop_message(40.0, "app", p) == (
        "back-off 40s restarting failed container=app pod=web_ns1(u-1)"
    )
    assert crash_loop_message(300.0, "app", p).startswith("back-off 5m0s ")
    assert CRASH_LOOP_BACK_OFF == "CrashLoopBackOff"
