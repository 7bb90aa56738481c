"""`probetui simulate` and `lint` playing a chosen kubelet release (docs/kubelet-versions.md):
what changes end to end, the flags, the notes, and the whole-pod kill order in simulate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from probetui.cli import main
from probetui.kubelet.profile import profile_for
from probetui.lint import simulated
from probetui.simulate import parse_scenario, simulate
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType
from tests.simulate.fixtures import HTTP, of

STARTUP_THEN_LIVENESS: dict[str, Any] = {
    "pod": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "x",
                    "startupProbe": {
                        "httpGet": {"path": "/", "port": 8080},
                        "periodSeconds": 10,
                        "failureThreshold": 30,
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/", "port": 8080},
                        "periodSeconds": 3,
                        "failureThreshold": 2,
                    },
                    "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 5},
                }
            ]
        },
    },
    "container": "app",
    "duration": 200,
    "app": {
        "start_after": 1,
        "ready_after": 25,
        "probes": {"liveness": {"ready_after": 25, "fail_between": [[60, 70]]}},
    },
}


def _before_startup(r: dict[str, Any]) -> list[tuple[float, str]]:
    """Liveness and readiness attempts between a restart and the next startup Success."""
    out = []
    gated = False
    for e in r["events"]:
        if e["type"] == "ContainerStarted" and e["restartCount"] > 0:
            gated = True
        elif e["type"] == "ResultChanged" and e["probe"] == "startup" and e["result"] == "Success":
            gated = False
        elif gated and e["type"] == "ProbeAttempt" and e["probe"] != "startup":
            out.append((e["t"], e["probe"]))
    return out


def test_started_kept_across_a_probe_kill_1_35_to_1_37_convertToAPIContainerStatuses() -> None:
    """kubelet_pods.go convertToAPIContainerStatuses, 1.35-1.37: a running container's Started
    is copied from the old status of that name, so the instance a liveness kill restarts in the
    same sync starts out Started (isContainerStarted has no startup result for its ID yet and
    trusts the status). Its liveness and readiness probe before its startup probe: here
    liveness kills it twice more before startup ever looks. 1.38 copies Started only for the
    same container ID, and 1.34 not at all: one kill, startup gates the new instance. The
    output says so where it happened."""
    scenario = parse_scenario(STARTUP_THEN_LIVENESS)
    for version in ("1.35", "1.36", "1.37"):
        r = simulate(scenario, profile_for(version))
        assert r["summary"]["kills"]["liveness"] == 3, version
        assert _before_startup(r)[:2] == [(64.0, "readiness"), (64.0, "readiness")], version
        assert len(r["notes"]) == 2 and r["notes"][0].startswith(f"kubelet {version}: from 64s")
    for version in ("1.34", "1.38"):
        r = simulate(scenario, profile_for(version))
        assert r["summary"]["kills"]["liveness"] == 1, version
        assert _before_startup(r) == [], version
        assert r["notes"] == []
        started = [e["t"] for e in of(r, "StartedChanged", started=True)]
        assert started == [30.0, 90.0], version


def test_whole_pod_kill_stops_the_sidecar_after_the_app_killContainersWithSyncResult() -> None:
    """In simulate too: a liveness failure under restartPolicy Never is a KillPod; the
    sidecar's Killing comes with the app's, naming whom it waits for, and its SIGTERM (and so
    its exit) only once the app, 3 s slow to stop, has exited (waitForTurn)."""
    doc = {
        "pod": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "job"},
            "spec": {
                "restartPolicy": "Never",
                "initContainers": [{"name": "proxy", "image": "x", "restartPolicy": "Always"}],
                "containers": [
                    {
                        "name": "app",
                        "image": "x",
                        "livenessProbe": {**HTTP, "periodSeconds": 5, "failureThreshold": 1},
                        "ports": [{"name": "http", "containerPort": 8080}],
                    }
                ],
            },
        },
        "container": "app",
        "duration": 60,
        "app": {"start_after": 1, "stop_seconds": 3, "probes": {"liveness": {"ready_after": 1e9}}},
    }
    r = simulate(parse_scenario(doc))
    kills = [(e["t"], e["container"], e.get("waitsFor")) for e in of(r, "Killing")]
    assert kills == [(5.0, "app", None), (5.0, "proxy", ["app"])]
    exits = [(e["t"], e["container"], e["exitCode"]) for e in of(r, "ContainerExited")]
    assert exits == [(8.0, "app", 143), (8.0, "proxy", 143)]


def test_cli_kubelet_version_and_feature_gates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--kubelet-version` and `--feature-gates`: named in the text's first line and in the
    JSON; the notes printed after the summary."""
    (tmp_path / "s.json").write_text(json.dumps(STARTUP_THEN_LIVENESS))
    path = str(tmp_path / "s.json")
    assert main(["simulate", path]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith(", kubelet 1.35")
    assert "\nnote: kubelet 1.35: from 64s" in out
    argv = ["simulate", path, "--kubelet-version", "v1.37.2", "--feature-gates"]
    assert main([*argv, "GRPCContainerProbeTLS=true", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kubelet"] == {"version": "1.37", "featureGates": {"GRPCContainerProbeTLS": True}}
    assert doc["notes"][0].startswith("kubelet 1.37 with GRPCContainerProbeTLS=true: ")
    assert main(["simulate", path, "--kubelet-version", "1.38", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--kubelet-version", "1.32"], "probetui models 1.33 to 1.38"),
        (["--feature-gates", "Bogus=true"], "feature gate Bogus: not one the kubelet model"),
        (["--feature-gates", "ExecProbeTimeout=false"], "locked to true"),
        (["--kubelet-version", "1.36", "--feature-gates", "H2CContainerProbe=true"], "unrecog"),
        (["--feature-gates", "ContainerRestartRules"], "missing bool value"),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "lint"])
def test_bad_version_or_gate_is_one_line_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    extra: list[str],
    said: str,
) -> None:
    (tmp_path / "s.json").write_text(json.dumps(STARTUP_THEN_LIVENESS))
    assert main([command, str(tmp_path / "s.json"), *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err


def test_lint_runs_play_the_chosen_release_ContainerRestartRules() -> None:
    """lint's simulations play `--kubelet-version`: a container restartPolicy Never makes a
    liveness kill a whole-pod kill from 1.35 (ContainerRestartRules), while 1.34 ignores it
    and restarts the container (the run stops at its first check once Ready)."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=5, failure_threshold=1)
    c = Container("app", restart_policy="Never", liveness_probe=live)
    pod = Pod("p", uid="p", containers=(c,))
    newer = simulated.failing(pod, c, ProbeType.LIVENESS)
    with simulated.playing(profile_for("1.34")):
        older = simulated.failing(pod, c, ProbeType.LIVENESS)
    assert len(newer.kills) == 1
    assert len(older.kills) >= 2


def test_back_off_retry_before_1_35_waits_for_the_pod_worker_completeWork() -> None:
    """pod_workers.go completeWork: since 1.35 a start held by back-off is requeued for the
    window's end (MinBackoffExpiration); before, after the pod worker's 10 s error back-off.
    With ReduceDefaultCrashLoopBackOffDecay (1 s, 2 s, ...) a crashing app restarts about
    every window under 1.35 and only every 10 s under 1.34."""
    doc = {
        "pod": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "crash"},
            "spec": {"containers": [{"name": "app", "image": "x"}]},
        },
        "container": "app",
        "duration": 40,
        "app": {"start_after": 0, "exit_after": 1, "exit_code": 1},
    }
    scenario = parse_scenario(doc)
    gates = {"ReduceDefaultCrashLoopBackOffDecay": True}
    new = simulate(scenario, profile_for("1.35", gates))
    old = simulate(scenario, profile_for("1.34", gates))
    starts_new = [e["t"] for e in of(new, "ContainerStarted")]
    starts_old = [e["t"] for e in of(old, "ContainerStarted")]
    assert starts_new[:6] == [0.0, 1.0, 3.0, 6.0, 11.0, 20.0]
    assert starts_old[:4] == [0.0, 1.0, 12.0, 23.0]
