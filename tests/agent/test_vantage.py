"""`probetui check --pod NS/NAME --compare-vias`: one probe by every path, side by side.

The pod's IP is 127.0.0.1, where its server answers 200; the emulator's port-forward and
pods/proxy lead to another server that answers 500: the laptop's paths lie, the node's do not.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from probetui.cli import main
from probetui.runtime.kubernetes.config import ConnectOptions, resolve
from probetui.runtime.kubernetes.vantage import compare
from tests.agent.conftest import NODE, FakeKubelet
from tests.agent.reader_bench import installed_agent, viewer
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import HttpTarget

pytestmark = pytest.mark.slow


@pytest.fixture
async def broken() -> AsyncIterator[int]:
    """What the API server's paths reach instead of the pod: a server answering 500."""

    async def handle(request: web.Request) -> web.Response:
        return web.Response(status=500, text="not the pod")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


def _target(api: ApiEmulator, tmp_path: Path, token: str | None = None, read_only: bool = False):  # type: ignore[no-untyped-def]
    config = api.kubeconfig(tmp_path / "cmp-kubeconfig", token=token)
    return resolve(
        ConnectOptions(kubeconfig=str(config), read_only=read_only),
        environ={},
        service_account_dir=tmp_path / "no-sa",
    )


@contextlib.asynccontextmanager
async def _cluster(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    port: int,
    broken: int,
) -> AsyncIterator[None]:
    api.add_pod(
        make_pod(
            "web",
            node=NODE,
            containers=[
                container("app", ports=(port,), readiness=http_get_probe("/ready", port, period=2))
            ],
        )
    )
    api.map_port("web", port, broken)
    async with installed_agent(api, tmp_path, sa_dir, read_token, kubelet.port):
        yield


async def test_the_paths_side_by_side_show_where_the_laptop_lies(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    broken: int,
) -> None:
    async with _cluster(api, tmp_path, sa_dir, read_token, kubelet, http_target.port, broken):
        result = await compare(_target(api, tmp_path), "default", "web")
    by = {s.via: s for s in result.seen}
    assert list(by) == ["agent", "direct", "port-forward", "proxy"]
    assert (result.probe_type.key, result.container.name, result.node) == ("readiness", "app", NODE)
    assert by["agent"].result == "success" and by["agent"].node == NODE
    assert by["agent"].status_code == 200
    assert by["direct"].result == "success"
    assert by["port-forward"].result == "failure" and by["port-forward"].status_code == 500
    assert by["proxy"].result == "failure" and by["proxy"].status_code == 500
    assert not result.agree
    # the agent was asked to probe now: a POST of pods/proxy
    posts = [r for r in api.requests if r.method == "POST"]
    assert [(r.subresource, r.status) for r in posts] == [("proxy", 200)]


async def test_read_only_shows_the_agents_last_attempt_and_runs_no_api_path(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
    broken: int,
) -> None:
    token = viewer(api)
    async with _cluster(api, tmp_path, sa_dir, read_token, kubelet, http_target.port, broken):
        await asyncio.sleep(2.5)  # an attempt for the agent to keep
        result = await compare(_target(api, tmp_path, token, read_only=True), "default", "web")
    by = {s.via: s for s in result.seen}
    assert by["agent"].result == "success" and "its last attempt" in by["agent"].detail
    assert by["port-forward"].result is None and "read-only" in by["port-forward"].detail
    assert by["proxy"].result is None and "read-only" in by["proxy"].detail
    assert by["direct"].result == "success"
    assert result.agree
    mine = [r for r in api.requests if r.user == "alice"]
    assert {r.method for r in mine} == {"GET"}


def test_compare_vias_needs_a_pod_and_nothing_of_an_adhoc_probe(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--compare-vias"]) == 2
    assert "--compare-vias needs --pod NS/NAME" in capsys.readouterr().err
    assert main(["check", "--compare-vias", "--pod", "a/b", "--tcp", "1.2.3.4:80"]) == 2
    assert "drop --tcp" in capsys.readouterr().err
    assert main(["check", "--tcp", "127.0.0.1:1", "--context", "x"]) == 2
    assert "--context: only with --compare-vias" in capsys.readouterr().err
