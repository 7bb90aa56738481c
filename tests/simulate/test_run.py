"""`probetui simulate`: the classic probe failure modes, in virtual time.

The § items cited are those of docs/kubelet-behaviour.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from probetui.simulate import simulate
from tests.simulate.fixtures import HTTP, of, run


def test_slow_start_killed_by_liveness_without_startup_probe() -> None:
    """§6.2 / §11.1: 3 failures x 10 s kill an app that needs 45 s, again and again."""
    r = run({"livenessProbe": {**HTTP, "periodSeconds": 10}}, {"ready_after": 45})
    kills = of(r, "Killing")
    assert [e["t"] for e in kills[:2]] == [30.0, 60.0]
    assert kills[0]["message"] == "Container app failed liveness probe, will be restarted"
    assert r["summary"]["kills"]["liveness"] >= 4
    unhealthy = of(r, "Unhealthy")[0]
    assert unhealthy["message"] == ("Liveness probe failed: HTTP probe failed with statuscode: 503")


def test_slow_start_saved_by_startup_probe() -> None:
    """§5.10 / §7.2: liveness waits for startup; a 60 s startup budget lets it live."""
    r = run(
        {
            "livenessProbe": {**HTTP, "periodSeconds": 10},
            "readinessProbe": {**HTTP, "periodSeconds": 5},
            "startupProbe": {**HTTP, "periodSeconds": 2, "failureThreshold": 30},
        },
        {"ready_after": 45},
    )
    assert of(r, "Killing") == []
    assert r["summary"]["restarts"] == 0
    started = of(r, "StartedChanged", started=True)
    assert len(started) == 1
    # startup probes at t = 0, 2, 4, ...: the container runs from t=1, answers from t=46
    assert started[0]["t"] == 46.0
    # the readiness manual trigger fires on that status generation (§7.4)
    ready = of(r, "ReadyChanged", ready=True)
    assert ready[0]["t"] == 46.0
    assert r["summary"]["first_ready_at"] == 46.0
    assert not of(r, "ProbeAttempt", probe="liveness", t=44.0)


@pytest.mark.parametrize(("threshold", "not_ready", "unhealthy"), [(1, 1, 3), (3, 0, 2)])
def test_readiness_flapping_failure_threshold(
    threshold: int, not_ready: int, unhealthy: int
) -> None:
    """§5.14: with failureThreshold 3 a 10 s blip (two failed probes) never unreadies.

    The grid is 1, 6, 11, ... (the manual trigger at container start reset it). With threshold
    1 the failure at 101 unreadies the container, and the status generation that follows
    triggers readiness again at once (§10.4): a third failed attempt, a third event.
    """
    r = run(
        {"readinessProbe": {**HTTP, "periodSeconds": 5, "failureThreshold": threshold}},
        {"fail_between": [[100, 110]]},
        duration=200,
    )
    assert len(of(r, "ReadyChanged", ready=False)) == not_ready
    assert r["summary"]["final_ready"] is True
    # an event per failed attempt, whatever the threshold (§6.5)
    assert len(of(r, "Unhealthy")) == unhealthy
    if threshold == 1:
        assert [e["trigger"] for e in of(r, "ProbeAttempt", t=101.0)] == ["tick", "kubelet-manual"]


def test_latency_above_timeout_fails_as_timeout() -> None:
    """§13.6 / §13.8: the client timeout covers the whole request; a slow answer fails."""
    r = run(
        {"readinessProbe": {**HTTP, "periodSeconds": 5, "timeoutSeconds": 1}},
        {"latency_ms": 1500},
        duration=30,
    )
    attempts = of(r, "ProbeAttempt")
    assert attempts and all(a["outcome"] == "failure" and a.get("timedOut") for a in attempts)
    assert attempts[0]["latency_ms"] == 1000.0
    msg = of(r, "Unhealthy")[0]["message"]
    assert msg.startswith('Readiness probe failed: Get "http://10.0.0.10:8080/healthz": ')
    assert "Client.Timeout exceeded" in msg
    assert r["summary"]["first_ready_at"] is None


def test_exit_loop_goes_into_crash_loop_backoff() -> None:
    """kuberuntime doBackOff + flowcontrol.Backoff: 0, 10, 20, 40 s waits between restarts."""
    r = run(
        {"command": ["sh", "-c", "exit 1"], "livenessProbe": {"exec": {"command": ["true"]}}},
        {"exit_after": 5, "exit_code": 1},
        duration=200,
    )
    starts = [e["t"] for e in of(r, "ContainerStarted")]
    # exits at 6, 12, 28, 54: restart at once, then after 10, 20 and 40 s (+1 s to start)
    assert starts[:5] == [1.0, 7.0, 23.0, 49.0, 95.0]
    assert [e["delay"] for e in of(r, "BackOff")][:3] == [10.0, 20.0, 40.0]
    assert of(r, "ContainerExited")[0]["exitCode"] == 1
    assert of(r, "Killing") == []


def test_restart_counter_carry_over_spec_6_6() -> None:
    """§6.6: two liveness failures, a crash for another reason, one failure -> a kill."""
    r = run(
        {"livenessProbe": {**HTTP, "periodSeconds": 10, "failureThreshold": 3}},
        # fails from t=5; the app exits by itself 25 s after each start
        {"fail_between": [[5, 1000]], "exit_after": 25, "exit_code": 2},
        duration=45,
    )
    # failures at 10 and 20 (run 2), exit at 26, restart at 27, one failure at 30 -> Failure
    kills = of(r, "Killing")
    assert [e["t"] for e in kills] == [30.0]
    assert of(r, "ProbeAttempt", t=30.0)[0]["resultRun"] == 0  # hold resets the run


def test_restart_policy_never_kill_without_restart() -> None:
    """§11.2 / §11.7: under restartPolicy Never a liveness kill is not followed by a restart,
    and with the only container gone it is computePodActions' KillPod: "Stopping container",
    counted as the liveness kill it is."""
    r = run(
        {"livenessProbe": {**HTTP, "periodSeconds": 10, "failureThreshold": 1}},
        {"fail_between": [[15, 1000]]},
        duration=100,
        restart_policy="Never",
    )
    kill = of(r, "Killing")[0]
    assert (kill["message"], kill["probe"]) == ("Stopping container app", "liveness")
    assert r["summary"]["kills"]["liveness"] == 1
    assert len(of(r, "ContainerStarted")) == 1


def test_misnamed_port_never_kills() -> None:
    """§16.4: a port name that resolves to nothing errors; errors are discarded."""
    r = run(
        {"livenessProbe": {"httpGet": {"port": "nope"}, "periodSeconds": 10}},
        {"fail_between": [[0, 1000]]},
        duration=60,
    )
    assert of(r, "Killing") == []
    errors = of(r, "ProbeAttempt", outcome="error")
    assert errors
    assert of(r, "Unhealthy")[0]["message"].startswith(
        "Liveness probe errored and resulted in unknown state: "
    )


def test_24_hours_of_one_pod() -> None:
    """The simulator carries a day of virtual time (its speed is measured in benchmarks/)."""
    r = run(
        {
            "livenessProbe": {**HTTP, "periodSeconds": 10},
            "readinessProbe": {**HTTP, "periodSeconds": 5},
        },
        {"fail_between": [[3600, 3630]]},
        duration=86400,
    )
    assert r["summary"]["kills"]["liveness"] == 1
    assert len(of(r, "ProbeAttempt")) > 25_000


def test_bundled_example_runs_to_the_end() -> None:
    """Regression: float rounding at a back-off window's edge once kept the retry at one instant."""
    from probetui.simulate import load_scenario

    root = Path(__file__).resolve().parents[2]
    r = simulate(load_scenario(root / "examples" / "slow-start.yaml"))
    assert r["summary"]["kills"]["liveness"] >= 5
    assert r["events"][-1]["t"] <= 600


def test_simulate_liveness_success_does_not_sync_pod_kubelet_go_syncLoopIteration() -> None:
    """simulate shares PodKubelet: the liveness worker's initial Success (its first tick after
    the start, at 3) fires no readiness manual trigger, so readiness keeps its grid from the
    start's trigger (0.5, 10.5, ...) and turns Ready at 10.5, not a period later."""
    r = run(
        {
            "readinessProbe": {**HTTP, "periodSeconds": 10},
            "livenessProbe": {**HTTP, "periodSeconds": 3, "failureThreshold": 3},
        },
        {"start_after": 0.5, "probes": {"readiness": {"ready_after": 4.5}}},
        duration=25,
    )
    readiness = [(e["t"], e["trigger"]) for e in of(r, "ProbeAttempt", probe="readiness")]
    assert readiness == [
        (0.5, "kubelet-manual"),
        (0.5, "kubelet-manual"),
        (10.5, "tick"),
        (20.5, "tick"),
    ]
    assert r["summary"]["first_ready_at"] == 10.5


def test_simulate_initial_delay_from_whole_second_start_status_manager_go_normalizeStatus() -> None:
    """simulate shares PodKubelet: StartedAt is cached in whole seconds (normalizeStatus), so
    a container that runs from 0.9 passes a 3 s initial delay at the tick at 3."""
    r = run(
        {"livenessProbe": {**HTTP, "periodSeconds": 1, "initialDelaySeconds": 3}},
        {"start_after": 0.9},
        duration=5,
    )
    assert [e["t"] for e in of(r, "ProbeAttempt", probe="liveness")] == [3.0, 4.0, 5.0]


def test_exec_timeout_text_is_cri_client_exec_sync_v1_as_the_handler_writes_it() -> None:
    """A synthetic exec timeout reads as the exec handler's: cri-client execSyncV1's
    `command timed out: %q timed out after %s`, from the same function."""
    from probetui.probe.gotext import exec_timed_out

    argv = ["sh", "-c", 'test -f "/tmp/ready"']
    r = run(
        {"livenessProbe": {"exec": {"command": argv}, "periodSeconds": 5, "timeoutSeconds": 2}},
        {"latency_ms": 2500},
        duration=12,
    )
    attempt = of(r, "ProbeAttempt")[0]
    assert attempt["outcome"] == "failure" and attempt.get("timedOut")
    text = r'command timed out: "sh -c test -f \"/tmp/ready\"" timed out after 2s'
    assert exec_timed_out(argv, 2.0) == text
    assert of(r, "Unhealthy")[0]["message"] == f"Liveness probe failed: {text}"


def test_a_run_that_lists_no_probes_makes_the_same_kubelet_decisions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`SimKubelet.lists_probes` off (the counterfactual's model runs) builds no attempt, result
    or prober event, and no doProbe record: the kubelet's own events (starts, exits, kills,
    back-offs, Started and Ready changes) are those of the listing run, in the same order, over
    a startup-gated app that flaps Ready and is killed and restarted by liveness twice."""
    from probetui.simulate import SimKubelet, parse_scenario
    from tests.prober.fixtures import count_records
    from tests.simulate.fixtures import pod

    built = count_records(monkeypatch)

    container = {
        "startupProbe": {**HTTP, "periodSeconds": 5, "failureThreshold": 6},
        "readinessProbe": {**HTTP, "periodSeconds": 3, "failureThreshold": 1},
        "livenessProbe": {**HTTP, "periodSeconds": 10, "failureThreshold": 3},
    }
    app = {
        "start_after": 2,
        "ready_after": 12,
        "probes": {
            "readiness": {"fail_between": [[40, 50], [70, 75]]},
            "liveness": {"fail_between": [[100, 140], [160, 200]]},
        },
    }
    scenario = parse_scenario({"pod": pod(container), "duration": 400, "app": app})

    class Lean(SimKubelet):
        lists_probes = False

    listing, lean = SimKubelet(scenario), Lean(scenario)
    listing.run()
    assert built  # the listing run builds its doProbe records through the counted class
    built.clear()
    lean.run()
    prober = {"ProbeAttempt", "ResultChanged", "Unhealthy", "ProbeWarning"}
    assert {e.type for e in lean.events}.isdisjoint(prober)
    assert lean.manager.workers
    assert built == []
    kubelet = [(e.t, e.type, e.probe, e.fields) for e in listing.events if e.type not in prober]
    assert [(e.t, e.type, e.probe, e.fields) for e in lean.events] == kubelet
    assert [(t, p) for t, type_, p, _ in kubelet if type_ == "Killing"] == [
        (120.0, "liveness"),
        (180.0, "liveness"),
    ]
    assert sum(1 for _, type_, _, _ in kubelet if type_ == "ReadyChanged") == 9
