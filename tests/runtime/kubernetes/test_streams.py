"""Port-forward and exec through the API emulator's websockets, to real loopback servers and
real processes, with probetui's own tcp/http/grpc/exec handlers on the near end."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from aiohttp import web
from grpc_health.v1 import health_pb2, health_pb2_grpc
from kubernetes_asyncio.client import CoreV1Api
from kubernetes_asyncio.stream import WsApiClient

from probetui.probe import exec as exec_probe
from probetui.probe import grpc_lean as grpc_probe
from probetui.probe import http_lean, tcp
from probetui.probe.base import MAX_OUTPUT_BYTES, Result
from probetui.probe.url import format_url
from probetui.runtime.kubernetes.proxy import (
    OneShotProxy,
    api_forbidden,
    api_path_error,
    unproxied_location,
)
from probetui.runtime.kubernetes.streams import (
    OneShotForward,
    StreamError,
    WsOpener,
    exec_in_pod,
)
from tests.kube.emulator import ApiEmulator, make_pod
from tests.kube.emulator.fixtures import EchoServer, HttpTarget


@pytest.fixture
async def ws_core(api: ApiEmulator) -> AsyncIterator[CoreV1Api]:
    api.add_pod(make_pod("web"))
    client = WsApiClient(configuration=api.configuration())
    try:
        yield CoreV1Api(client)
    finally:
        await client.close()


def forward_to(core: CoreV1Api, port: int, pod: str = "web") -> WsOpener:
    async def opener() -> Any:
        return await core.connect_get_namespaced_pod_portforward(
            pod, "default", ports=str(port), _preload_content=False
        )

    return opener


def exec_of(core: CoreV1Api, argv: list[str], pod: str = "web") -> Callable[[], Any]:
    async def opener() -> Any:
        return await core.connect_get_namespaced_pod_exec(
            pod,
            "default",
            command=argv,
            container="app",
            stderr=True,
            stdout=True,
            stdin=False,
            tty=False,
            _preload_content=False,
        )

    return opener


# -- port-forward --------------------------------------------------------------------------------


async def test_forward_carries_one_connection_to_a_loopback_server(
    api: ApiEmulator, ws_core: CoreV1Api, echo_server: EchoServer
) -> None:
    api.map_port("web", 8080, echo_server.port)
    forward = OneShotForward(forward_to(ws_core, 8080), timeout=1.0)
    host, port = await forward.start()
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"hello through the API server")
    await writer.drain()
    assert await asyncio.wait_for(reader.readexactly(28), 2) == b"hello through the API server"
    writer.close()
    await asyncio.wait_for(forward.done.wait(), 2)
    assert echo_server.connections == 1 and forward.error == ""
    # one stream, to the pod's port, over the v4 channel protocol
    (record,) = [r for r in api.requests if r.subresource == "portforward"]
    assert record.websocket and record.query["ports"] == ["8080"]
    assert record.headers["Sec-WebSocket-Protocol"] == "v4.channel.k8s.io"
    # a second connection of the same attempt (a redirect) gets a stream of its own
    forward.done.clear()
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"again")
    assert await asyncio.wait_for(reader.readexactly(5), 2) == b"again"
    writer.close()
    await asyncio.wait_for(forward.done.wait(), 2)
    assert api.count_requests(subresource="portforward") == 2
    assert echo_server.connections == 2


async def test_http_handler_through_the_forward(
    api: ApiEmulator, ws_core: CoreV1Api, http_target: HttpTarget
) -> None:
    api.map_port("web", 8080, http_target.port)
    for status, result in ((200, Result.SUCCESS), (503, Result.FAILURE)):
        http_target.status = status
        forward = OneShotForward(forward_to(ws_core, 8080), timeout=1.0)
        host, port = await forward.start()
        attempt = await http_lean.probe(format_url("http", host, port, "/healthz"), (), 1.0)
        assert attempt.result is result, attempt
        assert attempt.status_code == status and attempt.body == "ok /healthz"
        await asyncio.wait_for(forward.done.wait(), 2)
    method, path, headers = http_target.seen[0]
    assert (method, path) == ("GET", "/healthz")
    assert headers["User-Agent"].startswith("kube-probe/")
    assert api.count_requests(subresource="portforward") == 2  # one stream per attempt


async def test_a_redirect_followed_by_the_handler_opens_a_second_stream(
    api: ApiEmulator, ws_core: CoreV1Api
) -> None:
    async def old(_request: web.Request) -> web.Response:
        raise web.HTTPFound("/new")

    async def new(_request: web.Request) -> web.Response:
        return web.Response(text="moved here")

    app = web.Application()
    app.router.add_get("/old", old)
    app.router.add_get("/new", new)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        api.map_port("web", 8080, runner.addresses[0][1])
        forward = OneShotForward(forward_to(ws_core, 8080), timeout=1.0)
        host, port = await forward.start()
        attempt = await http_lean.probe(format_url("http", host, port, "/old"), (), 1.0)
        assert attempt.result is Result.SUCCESS and attempt.body == "moved here", attempt
        assert forward.connections == 2
        assert api.count_requests(subresource="portforward") == 2
    finally:
        await runner.cleanup()


async def test_tcp_handler_through_the_forward(
    api: ApiEmulator, ws_core: CoreV1Api, echo_server: EchoServer
) -> None:
    api.map_port("web", 8080, echo_server.port)
    forward = OneShotForward(forward_to(ws_core, 8080), timeout=1.0)
    attempt = await tcp.probe(*await forward.start(), 1.0)
    assert attempt.result is Result.SUCCESS
    await asyncio.wait_for(forward.done.wait(), 2)
    await asyncio.wait_for(echo_server.closed.wait(), 2)
    assert echo_server.connections == 1


async def test_nothing_listening_in_the_pod_fails_the_dial_as_the_kubelet_would(
    api: ApiEmulator, ws_core: CoreV1Api
) -> None:
    # port 9999 is mapped nowhere: the server reports "connection refused" on the error channel
    forward = OneShotForward(forward_to(ws_core, 9999), timeout=1.0)
    attempt = await tcp.probe(*await forward.start(), 1.0)
    assert attempt.result is Result.FAILURE and "connection refused" in attempt.output
    assert "failed to connect to localhost:9999" in forward.error
    forward = OneShotForward(forward_to(ws_core, 9999), timeout=1.0)
    host, port = await forward.start()
    attempt = await http_lean.probe(format_url("http", host, port, "/"), (), 1.0)
    assert attempt.result is Result.FAILURE and "connection refused" in attempt.output


class _Health(health_pb2_grpc.HealthServicer):
    async def Check(self, request: Any, context: Any) -> Any:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


async def test_grpc_handler_through_the_forward(api: ApiEmulator, ws_core: CoreV1Api) -> None:
    server = grpc.aio.server()
    health_pb2_grpc.add_HealthServicer_to_server(_Health(), server)
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        api.map_port("web", 9090, grpc_port)
        forward = OneShotForward(forward_to(ws_core, 9090), timeout=1.0)
        host, port = await forward.start()
        attempt = await grpc_probe.probe(host, port, "", 1.0)
        assert attempt.result is Result.SUCCESS, attempt
        await asyncio.wait_for(forward.done.wait(), 2)
    finally:
        await server.stop(None)


async def test_forward_forbidden_for_the_view_role_says_so_at_once(
    api: ApiEmulator, ws_core: CoreV1Api
) -> None:
    api.role = "view"
    forward = OneShotForward(forward_to(ws_core, 8080), timeout=1.0)
    began = time.monotonic()
    with pytest.raises(StreamError) as err:
        await forward.start()
    assert time.monotonic() - began < 1.0
    assert err.value.status == 403 and str(err.value).startswith("forbidden:")
    assert "pods/portforward" in str(err.value)


async def test_an_unused_forward_closes_itself(
    api: ApiEmulator, ws_core: CoreV1Api, echo_server: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("probetui.runtime.kubernetes.streams._ACCEPT_WINDOW", 0.0)
    api.map_port("web", 8080, echo_server.port)
    forward = OneShotForward(forward_to(ws_core, 0 + 8080), timeout=0.1)
    host, port = await forward.start()
    await asyncio.wait_for(forward.done.wait(), 2)
    with pytest.raises(OSError):
        await asyncio.open_connection(host, port)
    await asyncio.wait_for(echo_server.closed.wait(), 2)  # the pod side was closed too


# -- exec ---------------------------------------------------------------------------------------


async def test_exec_exit_codes_and_output(api: ApiEmulator, ws_core: CoreV1Api) -> None:
    out = await exec_in_pod(exec_of(ws_core, ["sh", "-c", "echo out; echo err >&2"]), 2.0)
    assert (out.exit_code, out.error, out.timed_out) == (0, None, False)
    assert b"out\n" in out.output and b"err\n" in out.output
    out = await exec_in_pod(exec_of(ws_core, ["sh", "-c", "echo failing; exit 3"]), 2.0)
    assert (out.exit_code, out.output) == (3, b"failing\n")
    (record, _) = [r for r in api.requests if r.subresource == "exec"]
    assert record.query["command"] == ["sh", "-c", "echo out; echo err >&2"]
    assert record.query["container"] == ["app"]


async def test_exec_output_is_capped_like_the_kubelet(ws_core: CoreV1Api) -> None:
    out = await exec_in_pod(exec_of(ws_core, ["sh", "-c", "head -c 30000 /dev/zero"]), 2.0)
    assert out.exit_code == 0 and len(out.output) == MAX_OUTPUT_BYTES


async def test_exec_timeout(ws_core: CoreV1Api) -> None:
    began = time.monotonic()
    out = await exec_in_pod(exec_of(ws_core, ["sleep", "5"]), 0.3)
    assert out.timed_out and out.exit_code is None
    assert time.monotonic() - began < 1.5


async def test_exec_of_a_missing_command_is_an_error(ws_core: CoreV1Api) -> None:
    out = await exec_in_pod(exec_of(ws_core, ["/no/such/probe"]), 2.0)
    assert out.exit_code is None and out.error is not None
    assert "executable file not found" in out.error or "no such file" in out.error.lower()


async def test_exec_probe_handler_over_pods_exec(ws_core: CoreV1Api) -> None:
    async def runner(argv: Any, timeout: float) -> Any:
        return await exec_in_pod(exec_of(ws_core, list(argv)), timeout)

    ok = await exec_probe.probe(["sh", "-c", "echo healthy"], 2.0, runner)
    assert ok.result is Result.SUCCESS and ok.output == "healthy\n"
    bad = await exec_probe.probe(["sh", "-c", "echo sick; exit 1"], 2.0, runner)
    assert bad.result is Result.FAILURE and bad.output == "sick\n"
    slow = await exec_probe.probe(["sleep", "5"], 0.3, runner)
    assert slow.result is Result.FAILURE and "timed out" in slow.output


async def test_exec_forbidden_for_the_view_role_says_so(
    api: ApiEmulator, ws_core: CoreV1Api
) -> None:
    api.role = "view"
    began = time.monotonic()
    out = await exec_in_pod(exec_of(ws_core, ["true"]), 2.0)
    assert time.monotonic() - began < 1.0
    assert out.exit_code is None and out.error is not None
    assert out.error.startswith("forbidden:") and "pods/exec" in out.error
    attempt = await exec_probe.probe(
        ["true"], 2.0, lambda argv, t: exec_in_pod(exec_of(ws_core, list(argv)), t)
    )
    assert attempt.result is Result.UNKNOWN and "forbidden" in (attempt.error or "")


# -- pods/proxy ---------------------------------------------------------------------------------


@pytest.fixture
async def core(api: ApiEmulator) -> AsyncIterator[CoreV1Api]:
    from kubernetes_asyncio.client import ApiClient

    api.add_pod(make_pod("web"))
    async with ApiClient(api.configuration()) as client:
        yield CoreV1Api(client)


async def test_http_handler_through_pods_proxy(
    api: ApiEmulator, core: CoreV1Api, http_target: HttpTarget
) -> None:
    api.map_port("web", 8080, http_target.port)
    for status, result in ((200, Result.SUCCESS), (500, Result.FAILURE)):
        http_target.status = status
        relay = OneShotProxy(core, "default", "web", 8080, 1.0)
        host, port = await relay.start()
        url = format_url("http", host, port, "/healthz?deep=1")
        attempt = await http_lean.probe(url, (("X-Probe", "yes"),), 1.0)
        assert attempt.result is result and attempt.status_code == status, attempt
        assert attempt.body == "ok /healthz"
    (record, _) = [r for r in api.requests if r.subresource == "proxy"]
    assert record.path == "/api/v1/namespaces/default/pods/web:8080/proxy/healthz"
    assert record.query == {"deep": ["1"]}
    method, path, headers = http_target.seen[0]
    assert (method, path) == ("GET", "/healthz?deep=1")
    assert headers["X-Probe"] == "yes" and headers["User-Agent"].startswith("kube-probe/")
    assert "Authorization" not in headers  # the API server's credentials stop there


async def test_proxy_to_a_port_nothing_listens_on_is_the_api_servers_503(
    core: CoreV1Api,
) -> None:
    relay = OneShotProxy(core, "default", "web", 9999, 1.0)
    host, port = await relay.start()
    attempt = await http_lean.probe(format_url("http", host, port, "/"), (), 1.0)
    assert attempt.result is Result.FAILURE and attempt.status_code == 503
    assert "error trying to reach service" in (attempt.body or "")


async def test_proxy_unreachable_pod_is_an_error_of_the_path_not_the_containers_failure(
    core: CoreV1Api,
) -> None:
    """The API server's 503 "error trying to reach service" (apimachinery's upgrade-aware
    handler's ErrorResponder) and its 401 are its own answers: the attempt is an error."""
    relay = OneShotProxy(core, "default", "web", 9999, 1.0)
    host, port = await relay.start()
    await http_lean.probe(format_url("http", host, port, "/"), (), 1.0)
    assert relay.path_error is not None
    assert relay.path_error.startswith("the API server could not reach the pod: error trying")
    unauthorized = (
        b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}'
    )
    assert (
        api_path_error(401, unauthorized) == "the API server refused the credentials: Unauthorized"
    )
    # the application's own 503 and 401 are answers of the container
    assert api_path_error(503, b"db down") is None
    assert api_path_error(401, b'{"error": "login"}') is None


async def test_proxy_gives_the_prober_the_pods_own_location_proxy_transport_rewriteURL(
    api: ApiEmulator, core: CoreV1Api, http_target: HttpTarget
) -> None:
    """The API server moves a same-host Location under `.../pods/NAME:PORT/proxy/`; followed as
    it came, the prober would ask for the proxy path twice (and 404). The relay undoes it."""
    api.map_port("web", 8080, http_target.port)
    http_target.redirects["/a"] = "/b?x=1"
    relay = OneShotProxy(core, "default", "web", 8080, 1.0)
    host, port = await relay.start()
    attempt = await http_lean.probe(format_url("http", host, port, "/a"), (), 1.0)
    assert attempt.result is Result.SUCCESS and attempt.body == "ok /b", attempt
    assert [p for _, p, _ in http_target.seen] == ["/a", "/b?x=1"]
    prefix = "/api/v1/namespaces/default/pods/web:8080/proxy"
    moved = f"https://10.0.0.1:6443{prefix}/b?x=1"
    assert unproxied_location(moved, prefix) == "/b?x=1"
    assert unproxied_location(f"https://10.0.0.1:6443{prefix}", prefix) == "/"
    # another host's Location and a relative one are left as the pod sent them
    assert unproxied_location("http://elsewhere.invalid/x", prefix) == "http://elsewhere.invalid/x"
    assert unproxied_location("b", prefix) == "b"


async def test_proxy_forbidden_is_told_apart_from_the_applications_403(
    api: ApiEmulator, core: CoreV1Api, http_target: HttpTarget
) -> None:
    api.map_port("web", 8080, http_target.port)
    http_target.status = 403  # the application's own 403: relayed, nothing remembered
    seen: list[str] = []
    relay = OneShotProxy(core, "default", "web", 8080, 1.0, on_forbidden=seen.append)
    host, port = await relay.start()
    attempt = await http_lean.probe(format_url("http", host, port, "/"), (), 1.0)
    assert attempt.status_code == 403 and seen == []
    api.role = "view"
    relay = OneShotProxy(core, "default", "web", 8080, 1.0, on_forbidden=seen.append)
    host, port = await relay.start()
    await http_lean.probe(format_url("http", host, port, "/"), (), 1.0)
    assert len(seen) == 1 and "pods/proxy" in seen[0] and "forbidden" in seen[0]
    assert api_forbidden(403, b"not json") is None


# -- what RBAC a refusal asks for ---------------------------------------------------------------


def test_rbac_hint_follows_the_servers_version() -> None:
    from probetui.runtime.kubernetes.streams import rbac_needs

    assert rbac_needs("pods/exec", (1, 30)).startswith("get on pods/exec")
    assert "create" not in rbac_needs("pods/exec", (1, 34))
    assert rbac_needs("pods/portforward", (1, 35)).startswith("get and create on pods/portforward")
    assert "AuthorizePodWebsocketUpgradeCreatePermission" in rbac_needs("pods/exec", (1, 36))
    unknown = rbac_needs("pods/exec", None)
    assert unknown.startswith("get on pods/exec") and "1.35 create too" in unknown


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"major": "1", "minor": "35+", "gitVersion": "v1.35.1-gke.100"}, (1, 35)),
        ({"major": "", "minor": "", "gitVersion": "v1.31.4-eks-2d5f260"}, (1, 31)),
        ({"major": "", "minor": "", "gitVersion": "unknown"}, None),
    ],
)
async def test_server_version_as_providers_write_it(
    answer: dict[str, str], expected: tuple[int, int] | None
) -> None:
    from kubernetes_asyncio.client import ApiClient, Configuration

    from probetui.runtime.kubernetes.runtime import fetch_server_version

    async def version(request: web.Request) -> web.Response:
        return web.json_response({**answer, "platform": "linux/amd64"})

    app = web.Application()
    app.router.add_get("/version/", version)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        async with ApiClient(Configuration(host=url)) as client:
            assert await fetch_server_version(client) == expected
    finally:
        await runner.cleanup()
