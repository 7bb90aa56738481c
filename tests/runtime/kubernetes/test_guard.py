"""`--read-only` with a real kubernetes-asyncio client against a real recording server.

The server accepts every forbidden call too (writes, exec/attach/port-forward websockets,
proxy), so the control test shows an unguarded client reaching it; the guarded client must
leave no trace of those calls in the server's log.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api
from kubernetes_asyncio.stream import WsApiClient
from kubernetes_asyncio.watch import Watch

from probetui.runtime.kubernetes.guard import (
    ReadOnlyViolation,
    install_read_only_guard,
    refusal,
)
from tests.runtime.kubernetes.conftest import Recorder

NS = "shop"
POD = "web-7d4b9c8f6d-x2kqp"


def _configuration(url: str) -> Configuration:
    configuration = Configuration(host=url)
    configuration.api_key["BearerToken"] = "Bearer t0ken"
    return configuration


@pytest.fixture
async def clients(api_server: Recorder) -> AsyncIterator[tuple[ApiClient, WsApiClient]]:
    api = ApiClient(_configuration(api_server.url))
    ws = WsApiClient(configuration=_configuration(api_server.url))
    install_read_only_guard(api)
    install_read_only_guard(ws)
    try:
        yield api, ws
    finally:
        await api.close()
        await ws.close()


# --- the rule, without a network -------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces/shop/pods",
        "/api/v1/namespaces/shop/pods/web",
        "/api/v1/pods",
        "/api/v1/namespaces/shop/events",
        "/apis/events.k8s.io/v1/namespaces/shop/events",
        "/api/v1/watch/namespaces/shop/pods",
        "/api/v1/namespaces/shop/pods/web/log",
        "/api/v1/namespaces/shop/pods/web/status",
        "/api/v1/namespaces/proxy/pods",  # a namespace called "proxy"
        "/api/v1/namespaces/shop/pods/exec",  # a pod called "exec"
        "/api/v1/namespaces/exec",
        "/api/v1/namespaces/shop/status",
        "/api",
        "/apis",
        "/apis/apps",
        "/version",
        "/openapi/v2",
        "/",
    ],
)
def test_refusal_lets_get_list_watch_and_discovery_through(path: str) -> None:
    assert refusal("GET", path, {}) is None


@pytest.mark.parametrize(
    ("method", "path", "headers", "word"),
    [
        ("POST", "/api/v1/namespaces/shop/pods", {}, "POST"),
        ("DELETE", "/api/v1/namespaces/shop/pods/web", {}, "DELETE"),
        ("PATCH", "/api/v1/namespaces/shop/pods/web", {}, "PATCH"),
        ("PUT", "/api/v1/namespaces/shop/pods/web", {}, "PUT"),
        ("HEAD", "/api/v1/namespaces/shop/pods", {}, "HEAD"),
        ("OPTIONS", "/api/v1/namespaces/shop/pods", {}, "OPTIONS"),
        ("GET", "/api/v1/namespaces/shop/pods/web/exec", {}, "exec"),
        ("GET", "/api/v1/namespaces/shop/pods/web/attach", {}, "attach"),
        ("GET", "/api/v1/namespaces/shop/pods/web/portforward", {}, "portforward"),
        ("GET", "/api/v1/namespaces/shop/pods/web/proxy", {}, "proxy"),
        ("GET", "/api/v1/namespaces/shop/pods/web:8080/proxy/healthz", {}, "proxy"),
        ("GET", "/api/v1/namespaces/shop/services/https:web:443/proxy/", {}, "proxy"),
        ("GET", "/api/v1/nodes/node-a/proxy/metrics", {}, "proxy"),
        ("GET", "/api/v1/proxy/namespaces/shop/pods/web", {}, "proxy"),
        ("GET", "/api/v1/namespaces/shop/pods/web/%65xec", {}, "exec"),  # percent-encoded
        ("GET", "/api/v1/namespaces/shop/pods/web%2Fexec", {}, "exec"),  # an encoded slash
        ("GET", "/api/v1/namespaces/shop/pods/web/exec/../log", {}, "dot"),
        ("GET", "/api/v1//namespaces/shop/pods", {}, "empty"),
        ("GET", "/api/v1/namespaces/shop/pods", {"Upgrade": "websocket"}, "upgrade"),
        ("GET", "/api/v1/namespaces/shop/pods", {"Connection": "Upgrade"}, "upgrade"),
        ("GET", "/api/v1/namespaces/shop/pods", {"upgrade": "SPDY/3.1"}, "upgrade"),
    ],
)
def test_refusal_stops_writes_streams_and_proxies(
    method: str, path: str, headers: dict[str, str], word: str
) -> None:
    reason = refusal(method, path, headers)
    assert reason is not None
    assert word in reason


# --- a real client against a real server ----------------------------------------------------


async def test_guarded_client_lists_gets_and_watches_pods_and_events(
    api_server: Recorder, clients: tuple[ApiClient, WsApiClient]
) -> None:
    api, _ = clients
    v1 = CoreV1Api(api)
    pods = await v1.list_namespaced_pod(NS)
    assert [p.metadata.name for p in pods.items] == [POD]
    raw = await v1.list_namespaced_pod(NS, _preload_content=False)
    assert (await raw.json())["items"][0]["metadata"]["uid"]
    pod = await v1.read_namespaced_pod(POD, NS)
    assert pod.status.pod_ip == "10.244.1.23"
    events = await v1.list_namespaced_event(NS)
    assert events.items[0].reason == "Unhealthy"

    seen = []
    async with Watch() as w:
        async for e in w.stream(v1.list_namespaced_pod, NS, timeout_seconds=5):
            seen.append((e["type"], e["object"].metadata.resource_version))
    assert seen == [("ADDED", "48213"), ("MODIFIED", "90001")]
    async with Watch() as w:
        types = [e["type"] async for e in w.stream(v1.list_namespaced_event, NS, timeout_seconds=5)]
    assert types == ["ADDED", "MODIFIED"]

    assert {r.method for r in api_server.requests} == {"GET"}
    assert len(api_server.requests) == 6  # 2 lists, 1 get, 1 event list, 2 watches
    assert all(r.authorization == "Bearer t0ken" for r in api_server.requests)


def _forbidden(api: ApiClient, ws: WsApiClient) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    v1, v1ws = CoreV1Api(api), CoreV1Api(ws)
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}
    session = api.rest_client.pool_manager
    base = api.configuration.host
    return [
        ("create pod", lambda: v1.create_namespaced_pod(NS, body)),
        ("delete pod", lambda: v1.delete_namespaced_pod(POD, NS)),
        ("patch pod", lambda: v1.patch_namespaced_pod(POD, NS, {"metadata": {"labels": {}}})),
        ("replace pod", lambda: v1.replace_namespaced_pod(POD, NS, body)),
        (
            "exec via WsApiClient",
            lambda: v1ws.connect_get_namespaced_pod_exec(
                POD, NS, command=["cat", "/tmp/ready"], stderr=True, stdout=True
            ),
        ),
        (
            "exec via WsApiClient, no preload",
            lambda: v1ws.connect_get_namespaced_pod_exec(
                POD, NS, command=["true"], stdout=True, _preload_content=False
            ),
        ),
        (
            "exec POST via WsApiClient",
            lambda: v1ws.connect_post_namespaced_pod_exec(POD, NS, command=["true"], stdout=True),
        ),
        ("exec GET via CoreV1Api", lambda: v1.connect_get_namespaced_pod_exec(POD, NS)),
        ("exec POST via CoreV1Api", lambda: v1.connect_post_namespaced_pod_exec(POD, NS)),
        (
            "portforward via WsApiClient",
            lambda: v1ws.connect_get_namespaced_pod_portforward(
                POD, NS, ports="8080", _preload_content=False
            ),
        ),
        ("portforward POST", lambda: v1.connect_post_namespaced_pod_portforward(POD, NS)),
        (
            "attach via WsApiClient",
            lambda: v1ws.connect_get_namespaced_pod_attach(POD, NS, stdout=True),
        ),
        ("attach POST", lambda: v1ws.connect_post_namespaced_pod_attach(POD, NS, stdout=True)),
        ("proxy GET", lambda: v1.connect_get_namespaced_pod_proxy(POD, NS)),
        (
            "proxy GET with path",
            lambda: v1.connect_get_namespaced_pod_proxy_with_path(POD, NS, "healthz"),
        ),
        ("proxy POST", lambda: v1.connect_post_namespaced_pod_proxy(POD, NS)),
        ("proxy HEAD", lambda: v1.connect_head_namespaced_pod_proxy(POD, NS)),
        ("service proxy", lambda: v1.connect_get_namespaced_service_proxy("web", NS)),
        ("node proxy", lambda: v1.connect_get_node_proxy("node-a")),
        # below the generated API: the session itself, even opting out of middlewares
        (
            "raw session POST",
            lambda: session.post(f"{base}/api/v1/namespaces/{NS}/pods", data=b"{}", middlewares=()),
        ),
        (
            "raw session websocket",
            lambda: session.ws_connect(f"{base}/api/v1/namespaces/{NS}/pods/{POD}/exec"),
        ),
        (
            "raw websocket on a readable path",
            lambda: session.ws_connect(f"{base}/api/v1/namespaces/{NS}/pods"),
        ),
        ("raw rest_client DELETE", lambda: api.rest_client.DELETE(f"{base}/api/v1/pods")),
    ]


async def test_every_forbidden_call_raises_before_a_byte_is_sent(
    api_server: Recorder, clients: tuple[ApiClient, WsApiClient]
) -> None:
    api, ws = clients
    calls = _forbidden(api, ws)
    for label, call in calls:
        with pytest.raises(ReadOnlyViolation, match="read-only: refused"):
            result = await call()
            # a context manager that got this far would open a connection when entered
            async with result:
                pass
        assert api_server.requests == [], f"{label} reached the server"
    # and the guarded clients still read afterwards
    pods = await CoreV1Api(api).list_namespaced_pod(NS, _preload_content=False)
    assert pods.status == 200
    assert api_server.paths() == [f"GET /api/v1/namespaces/{NS}/pods"]


async def test_unguarded_client_does_reach_the_recorder(api_server: Recorder) -> None:
    """The control: without the guard the same calls arrive, so an empty log means something."""
    async with (
        ApiClient(_configuration(api_server.url)) as api,
        WsApiClient(configuration=_configuration(api_server.url)) as ws,
    ):
        await CoreV1Api(api).create_namespaced_pod(NS, {"apiVersion": "v1", "kind": "Pod"})
        out = await CoreV1Api(ws).connect_get_namespaced_pod_exec(
            POD, NS, command=["cat", "/tmp/ready"], stdout=True
        )
        assert out == "hello\n"
        proxied = await CoreV1Api(api).connect_get_namespaced_pod_proxy(POD, NS)
        assert proxied == "proxied"
    assert [(r.method, r.path.rsplit("/", 1)[-1], r.upgrade) for r in api_server.requests] == [
        ("POST", "pods", False),
        ("GET", "exec", True),
        ("GET", "proxy", False),
    ]


async def test_guard_is_idempotent_and_counts_refusals(api_server: Recorder) -> None:
    async with ApiClient(_configuration(api_server.url)) as api:
        guard = install_read_only_guard(api)
        assert install_read_only_guard(api) is guard
        with pytest.raises(ReadOnlyViolation) as caught:
            await CoreV1Api(api).delete_namespaced_pod(POD, NS)
        assert guard.refused_total == 1
        assert guard.refused[-1].method == "DELETE"
        message = str(caught.value)
        assert "\n" not in message
        assert f"DELETE /api/v1/namespaces/{NS}/pods/{POD}" in message
        assert "run without it" in message
    assert api_server.requests == []


# --- a server URL with a path prefix (Rancher's /k8s/clusters/ID) -----------------------------

PREFIX = "/k8s/clusters/c-m-4xq7z"


@pytest.mark.parametrize(
    ("path", "refused"),
    [
        (f"{PREFIX}/api/v1/namespaces/{NS}/pods", False),
        (f"{PREFIX}/api/v1/watch/namespaces/{NS}/pods", False),
        (f"{PREFIX}/apis/events.k8s.io/v1/events", False),
        (f"{PREFIX}/version", False),
        (f"{PREFIX}/api", False),
        (PREFIX, False),
        (f"{PREFIX}/api/v1/namespaces/{NS}/pods/{POD}/exec", True),
        (f"{PREFIX}/api/v1/namespaces/{NS}/pods/{POD}/attach", True),
        (f"{PREFIX}/api/v1/namespaces/{NS}/pods/{POD}/portforward", True),
        (f"{PREFIX}/api/v1/namespaces/{NS}/pods/{POD}:8080/proxy/healthz", True),
        (f"{PREFIX}/api/v1/proxy/namespaces/{NS}/pods/{POD}", True),
        (f"{PREFIX}/api/v1/nodes/node-a/proxy", True),
        # percent-encoded as sent: decoded before the prefix is compared
        ("/k8s/clusters/c-m-4xq7z/api/v1/namespaces/shop/pods/web/%65xec", True),
        # another cluster behind the same Rancher is not this server's API
        (f"/k8s/clusters/c-other/api/v1/namespaces/{NS}/pods", True),
        (f"/api/v1/namespaces/{NS}/pods/{POD}/exec", True),
    ],
)
def test_refusal_strips_the_servers_path_prefix_first(path: str, refused: bool) -> None:
    """The API server behind a prefixing proxy sees the path without it (RequestInfoFactory
    classifies from /api or /apis): so does the guard."""
    assert (refusal("GET", path, {}, PREFIX) is not None) is refused


def test_server_prefix_is_the_server_urls_own_path() -> None:
    from probetui.runtime.kubernetes.guard import server_prefix

    assert server_prefix(f"https://rancher.example{PREFIX}/") == PREFIX
    assert server_prefix("https://10.0.0.1:6443") == ""
    assert server_prefix("https://10.0.0.1:6443/") == ""


async def test_every_forbidden_call_under_a_prefixed_server_raises_before_a_byte_is_sent(
    tmp_path: Any,
) -> None:
    from tests.kube.emulator import ApiEmulator, make_pod
    from tests.runtime.kubernetes.paths import target_for

    async with ApiEmulator(path_prefix=PREFIX) as emulator:
        emulator.add_namespace(NS)
        pod = make_pod(POD)
        pod["metadata"]["namespace"] = NS
        emulator.add_pod(pod)
        assert emulator.url.endswith(PREFIX)
        target = target_for(emulator, tmp_path, read_only=True)
        api = await target.api_client()
        ws = await target.api_client(websocket=True)
        try:
            for label, call in _forbidden(api, ws):
                with pytest.raises(ReadOnlyViolation, match="read-only: refused"):
                    result = await call()
                    async with result:
                        pass
                assert not emulator.requests, f"{label} reached the server"
            pods = await CoreV1Api(api).list_namespaced_pod(NS, _preload_content=False)
            assert pods.status == 200
        finally:
            await api.close()
            await ws.close()
        assert [(r.method, r.path, r.verb) for r in emulator.requests] == [
            ("GET", f"{PREFIX}/api/v1/namespaces/{NS}/pods", "list")
        ]
        # the control: unguarded, the same exec under the prefix arrives and runs
        open_target = target_for(emulator, tmp_path / "open")
        async with await open_target.api_client(websocket=True) as open_ws:
            out = await CoreV1Api(open_ws).connect_get_namespaced_pod_exec(
                POD, NS, command=["echo", "reached"], stdout=True, container="app"
            )
        assert "reached" in out
        assert emulator.non_read_requests()[-1].subresource == "exec"


# --- a server URL whose path names an API path ------------------------------------------------

POD_PROXY = f"/api/v1/namespaces/{NS}/pods/{POD}/proxy"


@pytest.mark.parametrize(
    ("server", "problem"),
    [
        ("https://10.0.0.1:6443", None),
        ("https://10.0.0.1:6443/", None),
        (f"https://rancher.example{PREFIX}", None),
        ("https://gw.example/api-gw", None),
        ("https://gw.example/apis-v2/kube", None),
        (f"https://10.0.0.1:6443{POD_PROXY}", POD_PROXY),
        ("https://10.0.0.1:6443/api/v1/namespaces/vc/services/https:vc:443/proxy", "/api/v1"),
        ("https://10.0.0.1:6443/api/v1/nodes/node-a/proxy", "/api/v1/nodes"),
        ("https://10.0.0.1:6443/api/v1/proxy/namespaces/shop/pods/web", "/api/v1/proxy"),
        ("https://10.0.0.1:6443/apis/example.io/v1/namespaces/shop/things/x/proxy", "/apis/"),
        (f"https://rancher.example{PREFIX}{POD_PROXY}", POD_PROXY),  # behind a prefix too
        ("https://10.0.0.1:6443/%61pi/v1/namespaces/shop/pods/web/proxy", "/api/v1"),  # encoded
        ("https://10.0.0.1:6443/k8s%2Fapi%2Fv1/nodes/n/proxy", "/api/v1"),  # an encoded slash
        ("https://10.0.0.1:6443/API/v1/nodes/n/proxy", "/API/v1"),  # a proxy may fold case
        ("https://10.0.0.1:6443/k8s/../api/v1/nodes/n/proxy", "dot"),
        ("https://10.0.0.1:6443/k8s//clusters", "empty"),
    ],
)
def test_a_server_path_that_names_an_api_path_is_no_prefix(
    server: str, problem: str | None
) -> None:
    from probetui.runtime.kubernetes.guard import server_path_problem

    got = server_path_problem(server)
    if problem is None:
        assert got is None
    else:
        assert got is not None and problem in got


async def test_a_server_url_into_a_pods_proxy_sends_nothing_read_only(tmp_path: Any) -> None:
    """The API server would take `GET .../pods/web/proxy/api/v1/...` as a pods/proxy request:
    read-only refuses the target before a client is made, and the guard on a client made
    without the target refuses every request, a plain list included."""
    from probetui.runtime.kubernetes.config import KubeconfigError
    from tests.kube.emulator import ApiEmulator, make_pod
    from tests.runtime.kubernetes.paths import target_for

    async with ApiEmulator() as emulator:
        emulator.add_pod(make_pod("web"))
        server = emulator.url + "/api/v1/namespaces/default/pods/web/proxy"
        target = target_for(emulator, tmp_path, cluster={"server": server}, read_only=True)
        with pytest.raises(KubeconfigError) as refused:
            target.check_read_only()
        message = str(refused.value)
        assert "\n" not in message
        assert "/api/v1/namespaces/default/pods/web/proxy" in message and "server" in message
        with pytest.raises(KubeconfigError):
            await target.api_client()
        # the floor, for a client made some other way
        async with ApiClient(_configuration(server)) as api:
            install_read_only_guard(api)
            with pytest.raises(ReadOnlyViolation, match="names an API path"):
                await CoreV1Api(api).list_namespaced_pod("default")
        assert not emulator.requests
        # without read-only the URL is taken, as kubectl takes it
        target_for(emulator, tmp_path / "open", cluster={"server": server}).check_read_only()
