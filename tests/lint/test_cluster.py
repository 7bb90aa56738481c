"""`probetui lint --cluster`: a real subprocess watches the API emulator read-only, then lints
what it saw. The emulator plays a kubelet whose Ready flips; its request log shows that lint
sent nothing but reads."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod

ROOT = Path(__file__).resolve().parents[2]
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture
async def api() -> AsyncIterator[ApiEmulator]:
    async with ApiEmulator() as emulator:
        yield emulator
        assert not emulator.errors, emulator.errors[0]


def _env(home: Path) -> dict[str, str]:
    drop = {*_PROXY_VARS, "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "POD_NAMESPACE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home))
    return env


async def _lint(home: Path, *args: str, timeout: float = 30.0) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "probetui.cli",
        "lint",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(home),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _flap(api: ApiEmulator, times: int) -> None:
    await api.wait_for_watch("pods", timeout=15)
    for _ in range(times):
        for ready in (False, True):
            api.edit_pod(
                "web", lambda p, r=ready: p["status"]["containerStatuses"][0].update(ready=r)
            )
            await asyncio.sleep(0.3)


@pytest.mark.slow
async def test_lint_cluster_watches_read_only_and_lints_what_it_saw(
    api: ApiEmulator, tmp_path: Path
) -> None:
    api.role = "view"  # as a locked-down user: a write would be refused, and logged
    api.add_pod(
        make_pod(
            "web",
            containers=[container("app", ports=(8080,), readiness=http_get_probe("/ready", 8080))],
        )
    )
    config = api.kubeconfig(tmp_path / "kubeconfig")
    args = ("--cluster", "-n", "default", "--for", "5s", "--kubeconfig", str(config))
    run = asyncio.create_task(_lint(tmp_path, *args, "-o", "json"))
    await _flap(api, 4)
    code, out, err = await run
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["objects"] == 1
    (flaps,) = [f for f in doc["findings"] if f["rule"] == "readiness-flapping"]
    assert flaps["object"] == {"kind": "Pod", "namespace": "default", "name": "web"}
    assert "lost Ready 4 times" in flaps["message"]
    # read-only: the shadow probed nothing, so there was no attempt to replay the proposal
    assert "no shadow attempts were recorded" in flaps["message"]
    assert api.non_read_requests() == []
    assert {r.method for r in api.requests} == {"GET"}
    for sub in ("exec", "portforward", "proxy"):
        assert api.count_requests(subresource=sub) == 0


@pytest.mark.slow
async def test_lint_cluster_via_direct_probes_the_pods_and_reads_their_answers(
    api: ApiEmulator, tmp_path: Path
) -> None:
    """With --via direct the shadow probes each pod's IP (still only GETs to the API server):
    a readiness probe on a port name the container does not declare errors on every attempt,
    which the kubelet drops silently, and lint says so from what it measured."""
    api.role = "view"
    api.add_pod(
        make_pod(
            "web",
            containers=[
                container("app", ports=(8080,), readiness=http_get_probe("/", "http", period=1))
            ],
        )
    )
    config = api.kubeconfig(tmp_path / "kubeconfig")
    args = ("--cluster", "-n", "default", "--for", "5s", "--via", "direct")
    code, out, err = await _lint(tmp_path, *args, "--kubeconfig", str(config), "-o", "json")
    assert code == 1, err  # named-port-not-declared is an error of the manifest itself
    (dropped,) = [f for f in json.loads(out)["findings"] if f["rule"] == "probe-errors-dropped"]
    assert "attempts errored" in dropped["message"]
    # the words of the error are the handler's, as the kubelet would log them
    assert 'strconv.Atoi: parsing "http": invalid syntax' in dropped["message"]
    assert {r.method for r in api.requests} == {"GET"}
    for sub in ("exec", "portforward", "proxy"):
        assert api.count_requests(subresource=sub) == 0


async def test_lint_cluster_bad_input_is_one_line(tmp_path: Path) -> None:
    code, _, err = await _lint(tmp_path, "--cluster", "--kubeconfig", str(tmp_path / "nope"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not found" in err
    code, _, err = await _lint(tmp_path, "--cluster", "--for", "soon")
    assert code == 2 and err.strip().startswith("probetui: error: --for")
