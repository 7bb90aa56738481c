"""The node agent's test bench: the API emulator, a kubelet's metrics endpoint, real targets.

- `kubelet`: a real HTTPS server on 127.0.0.1 (a trustme CA, a certificate for 127.0.0.1) that
  serves `/metrics/probes` and `/metrics` as a kubelet does, behind its bearer-token check: the
  ServiceAccount token it knows is allowed, `denied` tokens are authenticated and refused (403,
  with the kubelet's text), anything else is 401;
- `sa_dir`: a ServiceAccount mount (token, ca.crt) whose CA is the fake kubelet's;
- `read_token`: the agent's read token file;
- targets from the emulator's fixtures (HTTP, TCP) and the probe tests' gRPC health server.

Pods of "node-1" are the agent's; their IP is 127.0.0.1, where the targets listen.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trustme
from aiohttp import web

from tests.kube.emulator import ApiEmulator
from tests.kube.emulator.fixtures import api, echo_server, http_target
from tests.probe.conftest import grpc_server

if TYPE_CHECKING:
    from tests.agent.bench import Running
    from tests.agent.reader_bench import StartAgent

__all__ = ["api", "echo_server", "grpc_server", "http_target"]

SA_TOKEN = "agent-sa-token-0123456789"
READ_TOKEN = "read-token-0123456789abcdef"
NODE = "node-1"


@dataclass
class FakeKubelet:
    """What the fake kubelet serves; tests change it as they go."""

    port: int
    allowed: set[str] = field(default_factory=lambda: {SA_TOKEN})
    denied: set[str] = field(default_factory=set)
    # (pod uid, namespace, pod, container, probe type "Readiness") -> {result: count}
    counts: dict[tuple[str, str, str, str, str], dict[str, int]] = field(default_factory=dict)
    start: float = field(default_factory=lambda: time.time() - 600)
    version: str = "v1.35.4"
    status: int | None = None  # answer this instead (404 for a kubelet without the endpoint)
    seen: list[str] = field(default_factory=list)  # Authorization of each request

    def probes_text(self) -> str:
        lines = [
            "# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {self.start}",
            "# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
            "# TYPE prober_probe_total counter",
        ]
        for (uid, ns, pod, container, probe_type), results in sorted(self.counts.items()):
            for result, n in sorted(results.items()):
                lines.append(
                    f'prober_probe_total{{container="{container}",namespace="{ns}",pod="{pod}",'
                    f'pod_uid="{uid}",probe_type="{probe_type}",result="{result}"}} {n}'
                )
        return "\n".join(lines) + "\n"


def _refusal(request: web.Request, kubelet: FakeKubelet) -> web.Response | None:
    auth = request.headers.get("Authorization", "")
    kubelet.seen.append(auth)
    token = auth.removeprefix("Bearer ")
    if auth.startswith("Bearer ") and token in kubelet.denied:
        # server.go's InstallAuthFilter: authenticated, not authorized
        return web.Response(
            status=403,
            text="Forbidden (user=system:serviceaccount:probetui:probetui-agent, verb=get, "
            "resource=nodes, subresource=metrics)",
        )
    if not auth.startswith("Bearer ") or token not in kubelet.allowed:
        return web.Response(status=401, text="Unauthorized")
    if kubelet.status is not None:
        return web.Response(status=kubelet.status, text="404 page not found")
    return None


@pytest.fixture(scope="session")
def kubelet_ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def kubelet(kubelet_ca: trustme.CA) -> AsyncIterator[FakeKubelet]:
    fake = FakeKubelet(0)

    async def probes(request: web.Request) -> web.Response:
        refused = _refusal(request, fake)
        if refused is not None:
            return refused
        return web.Response(text=fake.probes_text(), content_type="text/plain")

    async def metrics(request: web.Request) -> web.Response:
        refused = _refusal(request, fake)
        if refused is not None:
            return refused
        text = (
            "# TYPE go_goroutines gauge\ngo_goroutines 123\n"
            "# TYPE kubernetes_build_info gauge\n"
            f'kubernetes_build_info{{build_date="2026-01-01T00:00:00Z",compiler="gc",'
            f'git_commit="abc",git_tree_state="clean",git_version="{fake.version}",'
            f'go_version="go1.25",major="1",minor="35",platform="linux/amd64"}} 1\n'
        )
        return web.Response(text=text, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics/probes", probes)
    app.router.add_get("/metrics", metrics)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    kubelet_ca.issue_cert("127.0.0.1").configure_cert(context)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    fake.port = runner.addresses[0][1]
    try:
        yield fake
    finally:
        await runner.cleanup()


@pytest.fixture
def sa_dir(tmp_path: Path, kubelet_ca: trustme.CA) -> Path:
    """A ServiceAccount mount: the token the fake kubelet allows, its CA as ca.crt."""
    d = tmp_path / "serviceaccount"
    d.mkdir()
    (d / "token").write_text(SA_TOKEN + "\n")
    kubelet_ca.cert_pem.write_to_path(str(d / "ca.crt"))
    (d / "namespace").write_text("probetui\n")
    return d


@pytest.fixture
def read_token(tmp_path: Path) -> Path:
    path = tmp_path / "read-token"
    path.write_text(READ_TOKEN + "\n")
    return path


@pytest.fixture
def start_agent(
    api: ApiEmulator, tmp_path: Path, sa_dir: Path, read_token: Path, kubelet: FakeKubelet
) -> StartAgent:
    """Start an agent for NODE behind an agent pod (`reader_bench.installed_agent`), its
    kubelet the fake one: `async with start_agent() as run`, or `start_agent(name)`."""
    # imported here: the benches import this module's constants
    from tests.agent.reader_bench import AGENT, installed_agent

    def start(name: str = AGENT) -> AbstractAsyncContextManager[Running]:
        return installed_agent(api, tmp_path, sa_dir, read_token, kubelet.port, name)

    return start
