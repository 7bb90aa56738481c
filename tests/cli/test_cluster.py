"""`probetui` with no subcommand: the cluster view, headless, against the API emulator.

The emulator runs in the test's event loop on a loopback port; `probetui` is a real subprocess
that connects to it with a kubeconfig. The lines it prints and the emulator's request log are
what is checked. Bad kubeconfigs and unreachable servers run in-process (fast).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from probetui.cli import main
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import HttpTarget, http_target
from tests.processes import in_a_terminal

__all__ = ["http_target"]  # a fixture, used by name

ROOT = Path(__file__).resolve().parents[2]
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
async def api() -> AsyncIterator[ApiEmulator]:
    async with ApiEmulator() as emulator:
        yield emulator
        assert not emulator.errors, emulator.errors[0]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # nothing from the user's own cluster set-up, and every byte on loopback
    for name in (*_PROXY_VARS, "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "POD_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _PROXY_VARS and k != "KUBECONFIG"}
    env["PYTHONPATH"] = str(ROOT)
    return env


async def run_probetui(*args: str, timeout: float = 20.0) -> tuple[int, list[dict[str, Any]], str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "probetui.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    lines = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return proc.returncode, lines, err.decode()


def _pod(port: int) -> dict[str, Any]:
    return make_pod(
        "web",
        containers=[
            container(
                "app",
                ports=(port,),
                readiness=http_get_probe("/ready", port, period=1),
                liveness={
                    "exec": {"command": ["sh", "-c", "echo alive"]},
                    "periodSeconds": 1,
                    "timeoutSeconds": 1,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
            )
        ],
    )


async def _play_the_kubelet(api: ApiEmulator) -> None:
    """Once probetui watches, say something as the kubelet would."""
    await api.wait_for_watch("pods", timeout=10)
    await api.wait_for_watch("events", timeout=10)
    api.record_event(
        "web", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 500"
    )
    api.edit_pod("web", lambda p: p["status"]["containerStatuses"][0].update(ready=False))


@pytest.mark.slow
async def test_headless_cluster_view_prints_shadow_and_kubelet_lines(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    api.add_pod(_pod(http_target.port))
    api.map_port("web", http_target.port, http_target.port)
    config = api.kubeconfig(tmp_path / "kubeconfig")
    args = ("-n", "default", "--no-ui", "--output", "jsonl", "--duration", "3")
    run = asyncio.create_task(run_probetui(*args, "--kubeconfig", str(config)))
    await _play_the_kubelet(api)
    code, lines, err = await run
    assert code == 0, err
    assert all(line["namespace"] == "default" and line["pod"] == "web" for line in lines)
    attempts = [x for x in lines if x["type"] == "ProbeAttempt"]
    ready = [x for x in attempts if x["probe"] == "readiness"]
    assert ready and all(x["source"] == "shadow" and x["via"] == "port-forward" for x in ready)
    assert ready[0]["outcome"] == "success" and ready[0]["statusCode"] == 200
    live = [x for x in attempts if x["probe"] == "liveness"]
    assert live and live[0]["handler"] == "exec" and live[0]["output"] == "alive\n"
    kubelet = {x["type"] for x in lines if x["source"] == "kubelet"}
    assert {"ContainerStarted", "ReadyChanged", "Unhealthy"} <= kubelet
    (unhealthy,) = [x for x in lines if x["type"] == "Unhealthy"]
    assert unhealthy["probe"] == "readiness" and unhealthy["container"] == "app"
    started = next(x for x in lines if x["type"] == "ContainerStarted")
    assert started["restartCount"] == 0
    # through the API server: one port-forward stream per HTTP attempt, pods/exec for exec
    assert api.count_requests(subresource="portforward") >= len(ready)
    assert api.count_requests(subresource="exec") >= len(live)
    assert "via port-forward" in err  # the note on where the shadow's path differs


@pytest.mark.slow
async def test_read_only_run_sends_only_get_list_watch(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    api.role = "view"
    api.add_pod(_pod(http_target.port))
    api.map_port("web", http_target.port, http_target.port)
    config = api.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    args = ("--read-only", "--no-ui", "--output", "jsonl", "--duration", "2.5")
    run = asyncio.create_task(run_probetui(*args, "--kubeconfig", str(config)))
    await _play_the_kubelet(api)
    code, lines, err = await run
    assert code == 0, err
    assert api.non_read_requests() == []
    for sub in ("exec", "portforward", "proxy"):
        assert api.count_requests(subresource=sub) == 0
    assert {r.method for r in api.requests} == {"GET"}
    assert not [x for x in lines if x["type"] == "ProbeAttempt"]
    assert http_target.seen == []
    not_run = {x["probe"]: x["reason"] for x in lines if x["type"] == "ProbeNotRun"}
    assert "exec" in not_run["liveness"] and "read-only" in not_run["liveness"]
    assert "port-forward" in not_run["readiness"]
    # the kubelet's side is all there
    assert {"ReadyChanged", "Unhealthy"} <= {x["type"] for x in lines}
    assert "read-only" in err


# -- bad input: one line, exit 2 ----------------------------------------------------------------


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("probetui: error: ")
    return err


def test_missing_kubeconfig(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--kubeconfig", str(tmp_path / "nope"), "--no-ui"]) == 2
    assert "not found" in _one_error_line(capsys)


def test_unknown_context(api_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--kubeconfig", str(api_config), "--context", "prod", "--no-ui"]) == 2
    err = _one_error_line(capsys)
    assert 'context "prod" not found' in err and "emulator" in err


def test_no_kubeconfig_at_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--no-ui"]) == 2
    assert "no kubeconfig found" in _one_error_line(capsys)


def test_unreachable_api_server(api_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # api_config points at an emulator that has stopped: nothing listens there any more
    assert main(["--kubeconfig", str(api_config), "--no-ui", "--duration", "5"]) == 2
    err = _one_error_line(capsys)
    assert "cannot list pods" in err and "is the API server up" in err


@pytest.mark.slow
def test_unreachable_api_server_with_a_screen_exits_as_headless(api_config: Path) -> None:
    # the screen and headless report the same bad input the same way: one line, exit 2
    status, err = in_a_terminal(
        [sys.executable, "-m", "probetui", "--kubeconfig", str(api_config)], cwd=ROOT
    )
    assert status == 2, err
    assert "cannot list pods" in err and "is the API server up" in err


def test_namespace_and_all_namespaces_conflict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-n", "x", "-A", "--no-ui"]) == 2
    assert "pick one" in _one_error_line(capsys)


def test_cluster_flags_before_a_subcommand_are_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `--read-only` before `local` would otherwise be dropped in silence
    assert main(["--read-only", "local", "pod.yaml"]) == 2
    assert "--read-only before 'local'" in _one_error_line(capsys)


@pytest.fixture
def api_config(tmp_path: Path) -> Path:
    """A kubeconfig for an emulator that ran and stopped (its port now refuses)."""

    async def make() -> Path:
        async with ApiEmulator() as gone:
            return gone.kubeconfig(tmp_path / "kubeconfig")

    return asyncio.run(make())


async def test_refused_credentials(api: ApiEmulator, tmp_path: Path) -> None:
    config = api.kubeconfig(tmp_path / "kubeconfig", token="stale-token")
    code, lines, err = await run_probetui("--kubeconfig", str(config), "--no-ui")
    assert code == 2 and lines == []
    assert err.count("\n") == 1 and "credentials were refused" in err


async def test_read_only_refuses_a_server_url_into_a_pods_proxy(
    api: ApiEmulator, tmp_path: Path
) -> None:
    """A kubeconfig's server `.../pods/web/proxy` would make every request a pods/proxy one:
    one line, exit 2, nothing sent."""
    api.add_pod(_pod(8080))
    doc = api.kubeconfig_dict(namespace="default")
    doc["clusters"][0]["cluster"]["server"] = api.url + "/api/v1/namespaces/default/pods/web/proxy"
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps(doc))
    code, lines, err = await run_probetui(
        "--read-only", "--no-ui", "--duration", "2", "--kubeconfig", str(config)
    )
    assert code == 2 and lines == []
    assert err.count("\n") == 1 and err.startswith("probetui: error: ")
    assert "names an API path" in err and "/api/v1/namespaces/default/pods/web/proxy" in err
    assert not api.requests
