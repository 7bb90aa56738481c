"""A client of the API server follows no redirect off the server: no request and no credential
(token or client certificate) ever reaches another host or port, read-only or not.

Go's http.Client, under client-go's REST client, follows redirects and drops Authorization on a
change of host, but its transport would still present the client certificate; aiohttp follows
redirects for `request` and `ws_connect` alike. probetui refuses the connection instead, at the
connector every request of every client (list, watch, exec and port-forward upgrades,
pods/proxy) asks for a connection. A redirect to the same scheme, host and port is followed.

The API server here answers every request with a 307 to a second listener on 127.0.0.1, a bare
TCP socket that counts the connections it accepts: it must accept none.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio.watch import Watch

from probetui.runtime.kubernetes.config import ClusterTarget, ConnectOptions, resolve
from probetui.runtime.kubernetes.streams import StreamError
from probetui.runtime.kubernetes.transport import RedirectRefused
from tests.runtime.kubernetes.paths import clients_of

TOKEN = "s3cret-t0ken"


@dataclass
class Elsewhere:
    """A TCP listener that is not the API server: counts what reaches it."""

    port: int = 0
    connections: int = 0


@dataclass
class Redirector:
    """The API server: every request answered 307 to `location` + the request's path."""

    port: int = 0
    location: str = ""
    seen: list[str] = field(default_factory=list)
    # path -> a JSON body answered 200 (the end of a same-server redirect)
    answers: dict[str, object] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
async def elsewhere() -> AsyncIterator[Elsewhere]:
    spot = Elsewhere()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        spot.connections += 1
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    spot.port = server.sockets[0].getsockname()[1]
    try:
        yield spot
    finally:
        server.close()
        await server.wait_closed()


@pytest.fixture
async def redirector(elsewhere: Elsewhere) -> AsyncIterator[Redirector]:
    front = Redirector(location=f"http://127.0.0.1:{elsewhere.port}")

    async def handle(request: web.Request) -> web.StreamResponse:
        front.seen.append(f"{request.method} {request.path}")
        if request.path in front.answers:
            return web.json_response(front.answers[request.path])
        raise web.HTTPTemporaryRedirect(front.location + request.path_qs)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    front.port = runner.addresses[0][1]
    try:
        yield front
    finally:
        await runner.cleanup()


def _target(server: str, directory: Path, *, read_only: bool = False) -> ClusterTarget:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "ctx",
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return resolve(
        ConnectOptions(kubeconfig=str(path), read_only=read_only),
        environ={"HOME": str(directory)},
        service_account_dir=directory / "no-service-account",
    )


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
async def test_no_client_follows_a_redirect_to_another_port(
    redirector: Redirector, elsewhere: Elsewhere, tmp_path: Path, read_only: bool
) -> None:
    target = _target(redirector.url, tmp_path, read_only=read_only)
    async with clients_of(target) as clients:
        # list
        with pytest.raises(RedirectRefused) as refused:
            await clients.core.list_namespaced_pod("default")
        message = str(refused.value)
        assert "\n" not in message
        assert f"127.0.0.1:{elsewhere.port}" in message and "redirect" in message
        assert TOKEN not in message
        # watch
        with pytest.raises(RedirectRefused):
            async with Watch() as w:
                async for _ in w.stream(clients.core.list_namespaced_pod, "default"):
                    pass
        # a raw session call, as any code holding the client could make
        session = clients.api.rest_client.pool_manager
        with pytest.raises(RedirectRefused):
            async with session.get(f"{redirector.url}/version"):
                pass
        if not read_only:
            # exec and port-forward upgrades (read-only never sends them)
            out = await clients.exec(["cat", "/tmp/ready"])
            assert out.error is not None and "redirect" in out.error
            with pytest.raises((StreamError, aiohttp.ClientError)):
                await clients.forward(8080)
            # the pods/proxy relay asks for no redirect itself: the 307 comes back to the probe
            assert await clients.relay(8080) == 307
            # the upgrades did reach the server (wss is https's server), only not beyond it
            for sub in ("/exec", "/portforward", "/proxy/"):
                assert any(sub in p for p in redirector.seen), (sub, redirector.seen)
    assert redirector.seen, "the API server saw nothing: the test proves nothing"
    assert elsewhere.connections == 0


async def test_a_redirect_to_the_same_server_is_followed(
    redirector: Redirector, elsewhere: Elsewhere, tmp_path: Path
) -> None:
    redirector.location = redirector.url + "/moved"
    redirector.answers["/moved/api/v1/namespaces/default/pods"] = {
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "1"},
        "items": [],
    }
    target = _target(redirector.url, tmp_path)
    async with clients_of(target) as clients:
        pods = await clients.core.list_namespaced_pod("default")
    assert pods.items == []
    assert redirector.seen == [
        "GET /api/v1/namespaces/default/pods",
        "GET /moved/api/v1/namespaces/default/pods",
    ]
    assert elsewhere.connections == 0
