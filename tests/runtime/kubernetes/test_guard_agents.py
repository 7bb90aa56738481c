"""Read-only's one exception: a GET of an admitted node agent's stream through pods/proxy.

Only the exact read path of an agent pod that discovery admitted passes; every other pods/proxy
request stays refused before a byte is sent: another pod of the agents' namespace, another
port, another path, another namespace, any method but GET, any upgrade, a pod once revoked.
The recording server accepts all of them, so an empty log means the guard stopped them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from probetui.runtime.kubernetes.guard import (
    AgentReadPaths,
    ReadOnlyViolation,
    install_read_only_guard,
    refusal,
)
from tests.runtime.kubernetes.conftest import Recorder

NS = "probetui"
AGENT = "probetui-agent-7x2kq"
STREAM = f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy/v1/stream"


def _agents() -> AgentReadPaths:
    paths = AgentReadPaths()
    paths.admit(NS, AGENT, 9479)
    return paths


def test_the_admitted_stream_path_passes_and_only_with_the_registry() -> None:
    assert refusal("GET", STREAM, {}, agents=_agents()) is None
    # without the registry (or before discovery admitted the pod) it is a pods/proxy like any
    assert "proxy" in (refusal("GET", STREAM, {}) or "")
    assert "proxy" in (refusal("GET", STREAM, {}, agents=AgentReadPaths()) or "")


REFUSED = [
    ("POST", STREAM, {}),
    ("PUT", STREAM, {}),
    ("DELETE", STREAM, {}),
    ("HEAD", STREAM, {}),
    ("PATCH", STREAM, {}),
    ("GET", STREAM, {"Upgrade": "websocket", "Connection": "Upgrade"}),
    ("GET", STREAM, {"Connection": "Upgrade"}),
    # another pod of the agents' namespace
    ("GET", f"/api/v1/namespaces/{NS}/pods/other-pod:9479/proxy/v1/stream", {}),
    # another port of the agent pod, or none, or a scheme
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9480/proxy/v1/stream", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:09479/proxy/v1/stream", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}/proxy/v1/stream", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/http:{AGENT}:9479/proxy/v1/stream", {}),
    # other paths of the agent
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy/v1/probe", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy/metrics", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy/healthz", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy/", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy", {}),
    ("GET", STREAM + "/", {}),
    ("GET", STREAM + "/more", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy/v1/../v1/stream", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}:9479/proxy/v1//stream", {}),
    # the same pod name elsewhere
    ("GET", f"/api/v1/namespaces/default/pods/{AGENT}:9479/proxy/v1/stream", {}),
    ("GET", f"/api/v1/namespaces/{NS}/services/{AGENT}:9479/proxy/v1/stream", {}),
    ("GET", f"/api/v1/nodes/{AGENT}:9479/proxy/v1/stream", {}),
    ("GET", f"/api/v1/proxy/namespaces/{NS}/pods/{AGENT}:9479/v1/stream", {}),
    # exec and port-forward of the agent pod itself
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}/exec", {}),
    ("GET", f"/api/v1/namespaces/{NS}/pods/{AGENT}/portforward", {}),
]


@pytest.mark.parametrize(("method", "path", "headers"), REFUSED)
def test_every_other_proxy_request_stays_refused(
    method: str, path: str, headers: dict[str, str]
) -> None:
    assert refusal(method, path, headers, agents=_agents()) is not None


def test_a_revoked_agent_is_refused_again() -> None:
    agents = _agents()
    agents.admit(NS, "probetui-agent-other", 9479)
    agents.revoke(NS, AGENT)
    assert refusal("GET", STREAM, {}, agents=agents) is not None
    other = f"/api/v1/namespaces/{NS}/pods/probetui-agent-other:9479/proxy/v1/stream"
    assert refusal("GET", other, {}, agents=agents) is None
    assert len(agents) == 1


def test_the_exception_holds_under_a_server_path_prefix() -> None:
    prefix = "/k8s/clusters/c-1"
    assert refusal("GET", prefix + STREAM, {}, prefix, _agents()) is None
    # outside the prefix it does not reach this cluster at all
    assert refusal("GET", STREAM, {}, prefix, _agents()) is not None


# --- a real client against the recording server ---------------------------------------------


def _configuration(url: str) -> Configuration:
    configuration = Configuration(host=url)
    configuration.api_key["BearerToken"] = "Bearer t0ken"
    return configuration


@pytest.fixture
async def guarded(api_server: Recorder) -> AsyncIterator[tuple[ApiClient, AgentReadPaths]]:
    agents = _agents()
    api = ApiClient(_configuration(api_server.url))
    install_read_only_guard(api, agents=agents)
    try:
        yield api, agents
    finally:
        await api.close()


async def test_a_guarded_client_reads_the_admitted_stream(
    api_server: Recorder, guarded: tuple[ApiClient, AgentReadPaths]
) -> None:
    api, _ = guarded
    session = api.rest_client.pool_manager
    async with session.get(api_server.url + STREAM, params={"rows": "1", "since": "12.5"}) as resp:
        assert resp.status == 200
        assert await resp.text() == "proxied"
    assert api_server.paths() == [f"GET {STREAM}"]
    assert api_server.requests[0].query == "rows=1&since=12.5"


async def test_every_refused_variant_sends_nothing(
    api_server: Recorder, guarded: tuple[ApiClient, AgentReadPaths]
) -> None:
    api, agents = guarded
    session = api.rest_client.pool_manager
    for method, path, headers in REFUSED:
        if "/../" in path:
            continue  # the client resolves dot segments itself: it would send the stream path
        with pytest.raises(ReadOnlyViolation, match="read-only: refused"):
            async with session.request(method, api_server.url + path, headers=headers):
                pass
        assert api_server.requests == [], f"{method} {path} reached the server"
    with pytest.raises(ReadOnlyViolation):
        async with session.ws_connect(api_server.url + STREAM):
            pass
    agents.revoke(NS, AGENT)
    with pytest.raises(ReadOnlyViolation):
        async with session.get(api_server.url + STREAM):
            pass
    assert api_server.requests == []
