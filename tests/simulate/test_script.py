"""Scripted scenarios: HTTP and exec answers per window, redirects, exits, the preStop hook,
the pod's deletion, kubelet restarts, other containers' apps and the pod phase.

Each test names the upstream function whose behaviour it follows (v1.35.4: `pkg/probe/http`,
`pkg/probe/exec`, `pkg/kubelet/prober`, `pkg/kubelet/kuberuntime`, `pkg/kubelet`); the §
items are those of docs/kubelet-behaviour.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from probetui.simulate import parse_scenario, simulate
from tests.simulate.fixtures import HTTP, of, pod


def scripted(
    containers: list[dict[str, Any]] | dict[str, Any],
    duration: float = 120,
    restart_policy: str = "Always",
    spec: dict[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A run of a pod with `containers` (the first is the scenario's) and the scenario's keys."""
    manifest = pod(containers if isinstance(containers, dict) else containers[0], restart_policy)
    if isinstance(containers, list):
        base = manifest["spec"]["containers"][0]
        manifest["spec"]["containers"] += [{"image": "x", **c} for c in containers[1:]]
        assert base["name"] == "app"
    manifest["spec"].update(spec or {})
    return simulate(parse_scenario({"pod": manifest, "duration": duration, **top}))


READY_HTTP = {"readinessProbe": {**HTTP, "periodSeconds": 5, "failureThreshold": 1}}


# -- HTTP answers ------------------------------------------------------------------------------


def test_http_status_per_window_and_no_body_in_the_failure_do_http_probe() -> None:
    """DoHTTPProbe: 200-299 is Success with the body, any code from 400 a Failure whose output
    names the code and never the body (kubernetes#99425)."""
    r = scripted(
        READY_HTTP,
        duration=30,
        app={"http": [{"between": [0, 12], "status": 500, "body": "db down"}]},
    )
    failed = of(r, "Unhealthy")
    assert {e["message"] for e in failed} == {
        "Readiness probe failed: HTTP probe failed with statuscode: 500"
    }
    assert [e["t"] for e in of(r, "ReadyChanged", ready=True)] == [16.0]


def test_off_host_redirect_is_a_probe_warning_redirect_checker() -> None:
    """RedirectChecker(false): a Location on another hostname is not followed
    (http.ErrUseLastResponse), so the 3xx is the answer: DoHTTPProbe's Warning, "Probe
    terminated redirects, Response body: <body>", which the worker counts as Success and the
    prober reports as a ProbeWarning event."""
    r = scripted(
        READY_HTTP,
        duration=20,
        app={
            "http": [
                {
                    "between": [0, 100],
                    "status": 302,
                    "location": "http://login.example.com/",
                    "body": "moved",
                }
            ]
        },
    )
    warnings = of(r, "ProbeWarning")
    assert warnings and {e["message"] for e in warnings} == {
        "Readiness probe warning: Probe terminated redirects, Response body: moved"
    }
    assert of(r, "Unhealthy") == []
    assert of(r, "ReadyChanged", ready=True)[0]["t"] == 1.0
    assert {e["outcome"] for e in of(r, "ProbeAttempt")} == {"warning"}


@pytest.mark.parametrize(
    ("location", "fails", "outcome"),
    [("/elsewhere", False, "success"), ("http://10.0.0.10:9090/x", True, "failure")],
)
def test_same_host_redirect_is_followed_whatever_the_port_redirect_checker(
    location: str, fails: bool, outcome: str
) -> None:
    """RedirectChecker(false) compares hostnames only: a relative Location, or one to another
    port of the pod IP, is followed, and what that URL answers (the app's health: 200, or 503
    while it fails) is the verdict; no ProbeWarning."""
    app: dict[str, Any] = {"http": [{"between": [0, 100], "status": 307, "location": location}]}
    if fails:
        app["fail_between"] = [[0, 100]]
    r = scripted(READY_HTTP, duration=12, app=app)
    assert {e["outcome"] for e in of(r, "ProbeAttempt")} == {outcome}
    assert of(r, "ProbeWarning") == []
    if fails:
        assert of(r, "Unhealthy")[0]["message"] == (
            "Readiness probe failed: HTTP probe failed with statuscode: 503"
        )


def test_redirect_loop_stops_after_10_redirects_net_http_client_do() -> None:
    """RedirectChecker: with 10 requests in the chain the next redirect is an error, which
    Client.do reports against the Location it refused (`ue.URL = loc`); DoHTTPProbe makes a
    client error a Failure with its text."""
    r = scripted(
        READY_HTTP,
        duration=3,
        app={"http": [{"between": [0, 100], "status": 301, "location": "/healthz"}]},
    )
    assert of(r, "Unhealthy")[0]["message"] == (
        'Readiness probe failed: Get "/healthz": stopped after 10 redirects'
    )


# -- exec answers ------------------------------------------------------------------------------


def test_exec_exit_code_and_output_reach_the_event_exec_prober_probe() -> None:
    """pkg/probe/exec Probe: a non-zero exit is Failure with the command's output, which the
    prober puts in its event ("Liveness probe failed: <output>"); exit 0 is Success whatever
    it prints. Two failures in a row kill the container."""
    r = scripted(
        {
            "livenessProbe": {
                "exec": {"command": ["check"]},
                "periodSeconds": 5,
                "failureThreshold": 2,
            }
        },
        duration=40,
        app={
            "exec": [
                {"between": [0, 20], "exit_code": 0, "output": "fine"},
                {"between": [20, 30], "exit_code": 3, "output": "queue depth 9000 > 5000"},
            ]
        },
    )
    assert [e["message"] for e in of(r, "Unhealthy")][:2] == [
        "Liveness probe failed: queue depth 9000 > 5000"
    ] * 2
    assert [e["t"] for e in of(r, "Killing")] == [25.0]


# -- exits, SIGTERM, preStop -------------------------------------------------------------------


def test_exit_at_a_time_with_its_code_restarts_as_the_policy_says_container_should_restart() -> (
    None
):
    """ContainerShouldRestart: under OnFailure an exit 3 restarts and an exit 0 does not; with
    no regular container left the pod completes, Succeeded (getPhase)."""
    r = scripted(
        {"livenessProbe": {"exec": {"command": ["check"]}}},
        restart_policy="OnFailure",
        app={"exits": [{"at": 10, "exit_code": 3}, {"at": "1m", "exit_code": 0}]},
    )
    exits = [(e["t"], e["exitCode"]) for e in of(r, "ContainerExited")]
    assert exits == [(10.0, 3), (60.0, 0)]
    assert [e["t"] for e in of(r, "ContainerStarted")] == [1.0, 11.0]
    assert r["summary"]["phase"] == "Succeeded"


@pytest.mark.parametrize(("stop", "code", "after"), [(4, 0, 4.0), (40, 137, 30.0)])
def test_stop_seconds_after_sigterm_within_the_grace_period_kill_container(
    stop: float, code: int, after: float
) -> None:
    """killContainer / StopContainer: the app's own exit after SIGTERM, with its code, if it
    comes within the grace period (the pod's 30 s for a liveness kill without a probe
    value); else SIGKILL at its end, 137."""
    r = scripted(
        {"livenessProbe": {**HTTP, "periodSeconds": 10, "failureThreshold": 1}},
        app={"fail_between": [[15, 1000]], "stop_seconds": stop, "stop_exit_code": 0},
        duration=80,
    )
    kill = of(r, "Killing")[0]
    exited = of(r, "ContainerExited")[0]
    assert (exited["t"] - kill["t"], exited["exitCode"]) == (after, code)


def _pre_stop_run(pre_stop: float, stop: float, grace: int) -> tuple[float, int]:
    r = scripted(
        {
            "livenessProbe": {**HTTP, "periodSeconds": 10, "failureThreshold": 1},
            "lifecycle": {"preStop": {"exec": {"command": ["drain"]}}},
        },
        spec={"terminationGracePeriodSeconds": grace},
        app={"fail_between": [[15, 1000]], "pre_stop_seconds": pre_stop, "stop_seconds": stop},
        duration=100,
    )
    kill = of(r, "Killing")[0]
    exited = of(r, "ContainerExited")[0]
    return round(exited["t"] - kill["t"], 6), exited["exitCode"]


def test_pre_stop_hook_runs_before_sigterm_and_its_whole_seconds_leave_the_grace_kill_container() -> (
    None
):
    """killContainer: executePreStopHook runs first, SIGTERM only after it; the whole seconds
    it took are taken off the grace period. A 5.5 s hook and a 30 s grace leave 25 s: an app
    that needs 3 s exits at 8.5 s (143), one that needs 26 s is SIGKILLed at 5.5 + 25 s."""
    assert _pre_stop_run(5.5, 3, 30) == (8.5, 143)
    assert _pre_stop_run(5.5, 26, 30) == (30.5, 137)


def test_pre_stop_hook_longer_than_the_grace_period_execute_pre_stop_hook() -> None:
    """executePreStopHook stops waiting at time.After(gracePeriod): SIGTERM comes at the
    grace period's end, and minimumGracePeriodInSeconds leaves the app 2 s before SIGKILL."""
    assert _pre_stop_run(40, 100, 10) == (12.0, 137)


# -- deletion ----------------------------------------------------------------------------------


def test_deletion_stops_liveness_and_startup_while_readiness_goes_on_sync_terminating_pod() -> None:
    """SyncTerminatingPod: StopLivenessAndStartup, then killPod with the deletion grace period
    ("Stopping container"), readiness probing on until RemovePod once nothing runs. The app
    stops 5 s after SIGTERM, exit 143: the terminal phase is Failed (getPhase, podIsTerminal)."""
    r = scripted(
        {
            "livenessProbe": {**HTTP, "periodSeconds": 3},
            "readinessProbe": {**HTTP, "periodSeconds": 2},
        },
        app={"stop_seconds": 5},
        deletion={"at": 20, "grace_period": 10},
        duration=60,
    )
    assert of(r, "PodDeleted")[0] == {
        "t": 20.0,
        "type": "PodDeleted",
        "container": "",
        "gracePeriod": 10,
    }
    assert of(r, "Killing") == [
        {"t": 20.0, "type": "Killing", "container": "app", "message": "Stopping container app"}
    ]
    assert of(r, "ContainerExited")[0]["t"] == 25.0
    liveness = [e["t"] for e in of(r, "ProbeAttempt", probe="liveness")]
    readiness = [e["t"] for e in of(r, "ProbeAttempt", probe="readiness")]
    assert max(liveness) < 20 < 25 >= max(readiness) > 20
    assert r["summary"]["phase"] == "Failed"
    assert of(r, "ContainerStarted")[-1]["t"] == 1.0  # nothing starts again


def test_deletion_grace_period_defaults_to_the_pods_check_graceful_delete() -> None:
    """CheckGracefulDelete: no gracePeriodSeconds on the delete takes the pod's
    terminationGracePeriodSeconds; an app that ignores SIGTERM is SIGKILLed at its end, and an
    app that exits 0 on SIGTERM leaves the pod Succeeded."""
    slow = scripted(
        {"readinessProbe": HTTP},
        spec={"terminationGracePeriodSeconds": 45},
        app={"stop_seconds": 1000},
        deletion="30s",
        duration=100,
    )
    assert of(slow, "PodDeleted")[0]["gracePeriod"] == 45
    assert [(e["t"], e["exitCode"]) for e in of(slow, "ContainerExited")] == [(75.0, 137)]
    clean = scripted({"readinessProbe": HTTP}, app={"stop_exit_code": 0}, deletion=30, duration=100)
    assert clean["summary"]["phase"] == "Succeeded"


def test_deletion_kills_again_a_container_still_stopping_after_a_probe_kill_kill_pod() -> None:
    """killPod stops every running container: one still stopping after a liveness kill (the
    probe's 60 s grace period) gets killContainer again with the deletion's 10 s, and the
    shorter ends it."""
    r = scripted(
        {
            "livenessProbe": {
                **HTTP,
                "periodSeconds": 10,
                "failureThreshold": 1,
                "terminationGracePeriodSeconds": 60,
            }
        },
        app={"fail_between": [[15, 1000]], "stop_seconds": 100},
        deletion={"at": 25, "grace_period": 10},
        duration=100,
    )
    assert [(e["t"], e["message"]) for e in of(r, "Killing")] == [
        (20.0, "Container app failed liveness probe, will be restarted"),
        (25.0, "Stopping container app"),
    ]
    assert [(e["t"], e["exitCode"]) for e in of(r, "ContainerExited")] == [(35.0, 137)]
    assert len(of(r, "ContainerStarted")) == 1


def test_deletion_grace_period_0_still_gives_2_s_calculate_effective_grace_period() -> None:
    """calculateEffectiveGracePeriod supplies at least 1 s and killContainer raises what it gets
    to minimumGracePeriodInSeconds: a delete with grace 0 SIGKILLs a stubborn app 2 s on."""
    r = scripted(
        {"readinessProbe": HTTP},
        app={"stop_seconds": 60},
        deletion={"at": 10, "grace_period": "0s"},
        duration=30,
    )
    assert [(e["t"], e["exitCode"]) for e in of(r, "ContainerExited")] == [(12.0, 137)]


# -- kubelet restarts --------------------------------------------------------------------------

SLOW_START = {
    "startupProbe": {**HTTP, "periodSeconds": 2, "failureThreshold": 30},
    "readinessProbe": {**HTTP, "periodSeconds": 10},
    "livenessProbe": {**HTTP, "periodSeconds": 10},
}


def _restart(at: float, **kw: Any) -> dict[str, Any]:
    return scripted(SLOW_START, duration=200, kubelet_restarts=[at], **kw)


def test_survivor_keeps_ready_and_gets_no_initial_values_worker_do_probe_is_restart() -> None:
    """A container started more than kubeletRestartGracePeriod (10 s) before the kubelet came
    back: doProbe's isRestart publishes no initial value, setReadyStateOnKubeletRestart keeps it
    Ready (the API pod is Ready), and the first results come only from probes."""
    r = _restart("100s", app={"ready_after": 20})
    after = [e for e in r["events"] if e["t"] >= 100]
    assert after[0]["type"] == "KubeletRestarted"
    assert of(r, "ReadyChanged", ready=False) == []
    assert [e["result"] for e in after if e["type"] == "ResultChanged"] == ["Success", "Success"]
    assert r["summary"]["final_ready"] is True


def test_restarted_workers_start_after_a_seeded_offset_worker_run() -> None:
    """worker.run: a manager younger than the period sleeps rand.Float64() x period before the
    first doProbe. The simulation draws it from `seed`: the same seed, the same offsets, each
    within [0, period); another seed, other offsets."""

    def firsts(seed: int) -> dict[str, float]:
        r = _restart(100, app={"ready_after": 20}, seed=seed)
        out: dict[str, float] = {}
        for e in of(r, "ProbeAttempt"):
            if e["t"] >= 100:
                out.setdefault(e["probe"], e["t"])
        return out

    one, again, other = firsts(1), firsts(1), firsts(2)
    assert one == again != other
    assert all(100 <= t < 110 for t in one.values())


def test_first_sync_after_restart_has_no_workers_sync_pod_before_add_pod() -> None:
    """SyncPod generates the status (UpdatePodStatus) before probeManager.AddPod: a restarted
    kubelet's first status has no worker to ask, so a running container is Started
    (isContainerStarted: no startup worker) and, if it started less than 10 s before, Ready (no
    readiness worker). The new startup worker then publishes Unknown for it (not a survivor)
    and it is not Started, nor Ready, until its startup probe succeeds again."""
    r = _restart(10, app={"ready_after": 30})
    at_10 = [(e["type"], e.get("started", e.get("ready"))) for e in r["events"] if e["t"] == 10.0]
    assert at_10 == [("KubeletRestarted", None), ("StartedChanged", True), ("ReadyChanged", True)]
    startup = of(r, "ResultChanged", probe="startup")
    assert startup[1]["result"] == "Unknown" and 10 < startup[1]["t"] < 12
    lost = of(r, "ReadyChanged", ready=False)[0]
    assert lost["t"] == startup[1]["t"]  # not Started: not Ready (convertToAPIContainerStatuses)
    assert (
        of(r, "ReadyChanged", ready=True)[-1]["t"] == of(r, "StartedChanged", started=True)[-1]["t"]
    )


def test_survivor_with_readiness_probe_held_to_the_pods_ready_condition_set_ready_state_on_kubelet_restart() -> (
    None
):
    """setReadyStateOnKubeletRestart runs for a container with no readiness worker too: a
    survivor with a readiness probe is Ready only if the API pod's Ready condition is True.
    The pod was not Ready (its app never answers): the first status keeps it not Ready."""
    r = _restart(100, app={"ready_after": 1000})
    assert of(r, "ReadyChanged") == []


def test_restart_during_a_slow_start_makes_the_survivor_started_is_container_started() -> None:
    """isContainerStarted with no startup worker and no cached result says started, and the
    status then carries Started=true (convertToAPIContainerStatuses keeps it for a running
    container): the new startup worker adopts a survivor without an initial value and skips
    it as started, so liveness probes an app that is still starting, and kills it."""
    r = _restart(20, app={"ready_after": 90})
    assert of(r, "StartedChanged", started=True)[0]["t"] == 20.0
    kill = of(r, "Killing")[0]
    assert kill["probe"] == "liveness" and 40 < kill["t"] < 60


def test_restart_forgets_crash_loop_back_off_kubelet_backoff_in_memory() -> None:
    """klet.backOff lives in the kubelet's memory: a container waiting in CrashLoopBackOff is
    started by the restarted kubelet's first sync, doBackOff finding no entry."""
    r = scripted(
        {"livenessProbe": {"exec": {"command": ["check"]}}},
        app={"exit_after": 5},
        kubelet_restarts=[30],
        duration=40,
    )
    # exits at 6, 12, 28: restarts at once, then after 10 s (at 22, +1 to run), then in the
    # 20 s window the kubelet restart at 30 forgets; its next exit, at 36, opens a new 10 s one
    starts = [e["t"] for e in of(r, "ContainerStarted")]
    assert starts == [1.0, 7.0, 23.0, 31.0]
    assert [(e["t"], e["delay"]) for e in of(r, "BackOff")] == [
        (12.0, 10.0),
        (28.0, 20.0),
        (36.0, 10.0),
    ]


# -- the other containers, the phase, kubelet logs ---------------------------------------------


def test_apps_script_another_container_and_the_phase_reads_all_of_them_get_phase() -> None:
    """Each container runs its own app: the helper exits 1 at 10 s and is restarted (Always);
    under Never the same exit leaves it Terminated, and the pod, its other container still
    running, stays Running until that one exits 0: then Failed (one failure)."""
    containers = [
        {"livenessProbe": {"exec": {"command": ["check"]}}},
        {"name": "helper", "readinessProbe": {"exec": {"command": ["ready"]}}},
    ]
    always = scripted(containers, apps={"helper": {"exits": [{"at": 10}]}}, duration=30)
    assert [(e["t"], e["container"]) for e in of(always, "ContainerStarted")] == [
        (1.0, "app"),
        (1.0, "helper"),
        (11.0, "helper"),
    ]
    never = scripted(
        containers,
        restart_policy="Never",
        app={"exits": [{"at": 20, "exit_code": 0}]},
        apps={"helper": {"exits": [{"at": 10}]}},
        duration=30,
    )
    assert never["summary"]["phase"] == "Failed"
    assert len(of(never, "ContainerStarted")) == 2


def test_failed_to_trigger_a_manual_run_is_a_kubelet_log_line_update_pod_status() -> None:
    """UpdatePodStatus sends each not-ready readiness worker a trigger; when its channel is
    full (the worker is probing, one trigger already queued) it logs "Failed to trigger a
    manual run" (klog Info): no event, a line in the kubelet's log. Here readiness takes 3 s
    (attempts at 1 and 4, the second for the Failure the first published), and the helper's
    exit at 5 and its start at 6 make two syncs during the second: the first trigger queues,
    the second is dropped."""
    r = scripted(
        [
            {"readinessProbe": {**HTTP, "periodSeconds": 10, "timeoutSeconds": 5}},
            {"name": "helper"},
        ],
        app={"latency_ms": 3000, "ready_after": 100},
        apps={"helper": {"exits": [{"at": 5}]}},
        duration=20,
    )
    logs = of(r, "KubeletLog")
    assert logs == [
        {
            "t": 6.0,
            "type": "KubeletLog",
            "container": "app",
            "probe": "readiness",
            "message": "Failed to trigger a manual run",
        }
    ]


def test_phase_is_in_the_summary_and_the_text_summary() -> None:
    """The pod phase at the end: a new key of the summary and a row of the text summary."""
    from probetui.simulate import render_summary

    r = scripted({"readinessProbe": HTTP}, duration=10)
    assert r["summary"]["phase"] == "Running"
    assert render_summary(r["summary"])[-1] == "  pod phase          Running"


def test_bundled_example_gives_the_same_events_and_summary() -> None:
    """examples/slow-start.yaml: what it printed before scripting, plus the phase."""
    from pathlib import Path

    from probetui.simulate import load_scenario

    root = Path(__file__).resolve().parents[2]
    r = simulate(load_scenario(root / "examples" / "slow-start.yaml"))
    assert len(r["events"]) == 232
    assert r["summary"] == {
        "restarts": 7,
        "kills": {"liveness": 8, "readiness": 0, "startup": 0},
        "first_ready_at": None,
        "ready_seconds": 0.0,
        "unhealthy_events": 80,
        "final_ready": False,
        "phase": "Running",
    }
