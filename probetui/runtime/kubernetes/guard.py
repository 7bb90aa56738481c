"""Enforce `--read-only` where every request must pass: the HTTP connector of the API client.

Which layer, and why there:

- `ApiClient.request` / `RESTClientObject.request` is not enough: `WsApiClient` (exec, attach,
  port-forward) skips it and calls `rest_client.pool_manager.ws_connect` itself, and any code
  holding the client can call `pool_manager.request` directly.
- aiohttp session middlewares are not enough: a per-request `middlewares=` argument replaces
  the session's, so a call can opt out of them.
- The connector is the floor. `ClientSession._request` (which `request`, `get`, `post`, ...,
  and `ws_connect` all end in, redirects included) asks `session.connector.connect(req)` for a
  connection before the request line is written, for every request, pooled connection or new.
  No argument to a session call changes which connector is asked. So the guard replaces the
  connector's `connect` on the client's own session and refuses there, before a socket is
  opened or reused: not one byte of a refused request leaves the process.

What passes: GET only, without any `Upgrade` (a websocket or SPDY upgrade is how exec, attach and
port-forward work; read-only never needs one), and not to an `exec`, `attach`, `portforward`
or `proxy` subresource (nor the legacy `/api/v1/proxy/...` form). That is get, list and watch
of resources, plus discovery (`/api`, `/apis`, `/version`). The path is decoded and split the
way the API server's `RequestInfoFactory` does it (`api_path`), so a namespace or pod that
happens to be called "proxy" is still readable, while `pods/NAME/proxy/...` is not. Paths with
empty or dot segments are refused rather than second-guessed.

A server URL may carry a path before the API (Rancher's `https://host/k8s/clusters/ID`, a
gateway's `/api-gw`): the API server, behind it, sees the path without it. So that prefix, taken
from the client's own `host`, is stripped before the path is classified; without that `/k8s/...`
would look like a non-resource URL and every subresource would pass. A path outside the prefix
does not reach this cluster's API at all and is refused. A prefix that itself reaches into an API
(`server_path_problem`: a segment `api` or `apis` anywhere in it, or an empty or dot segment)
cannot be stripped safely: `https://host/api/v1/namespaces/NS/pods/web/proxy` makes every request
a pods/proxy request to that API server, whatever follows. With such a server URL every request
is refused, and `ClusterTarget` refuses the target before a client is made.

The one exception: a GET of a node agent's stream, `pods/NAME:PORT/proxy/v1/stream` in the
agents' namespace, for an agent pod this client listed and checked itself (owned by the agents'
DaemonSet, Running and Ready: `agents.py`). Discovery admits each such pod's read paths into
an `AgentReadPaths`, which the guard consults; the path must be exactly one admitted, decoded as
the API server decodes it. Anything else under pods/proxy stays refused: another pod of that
namespace, another port, another path, any method but GET, any upgrade. The agent's stream
changes nothing (docs/agents.md): it is the shadow's attempts, read.

Every API client of the cluster source is made by `ClusterTarget.api_client`, which installs
this guard when `--read-only` is set; a test asserts from a recording server that refused calls
send nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from kubernetes_asyncio.client import ApiClient

__all__ = [
    "AGENT_READ_PATHS",
    "AgentReadPaths",
    "ApiPath",
    "ReadOnlyGuard",
    "ReadOnlyViolation",
    "api_path",
    "install_read_only_guard",
    "prefix_problem",
    "refusal",
    "server_path_problem",
    "server_prefix",
]

FORBIDDEN_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})
# `/api/v1/namespaces/NAME/status` is the namespace's own subresource, not a resource "status"
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
# where the API server's RequestInfoFactory starts a resource path
_API_PREFIXES = frozenset({"api", "apis"})
_MARK = "_probetui_read_only_guard"
# what a node agent serves to readers with GET, below its pods/proxy (docs/agents.md)
AGENT_READ_PATHS = ("v1/stream",)


class AgentReadPaths:
    """Lists the agents' read paths read-only may GET: filled by discovery with the agent pods it
    listed and checked, consulted by every guard of the target's clients."""

    def __init__(self) -> None:
        # (namespace, pod) -> the decoded paths admitted for it
        self._by_pod: dict[tuple[str, str], frozenset[str]] = {}
        self._paths: frozenset[str] = frozenset()

    @staticmethod
    def paths_of(namespace: str, pod: str, port: int) -> frozenset[str]:
        base = f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/"
        return frozenset(base + tail for tail in AGENT_READ_PATHS)

    def admit(self, namespace: str, pod: str, port: int) -> None:
        """`pod` is an agent this client checked: its read paths on `port` may be read."""
        self._by_pod[(namespace, pod)] = self.paths_of(namespace, pod, port)
        self._paths = frozenset().union(*self._by_pod.values())

    def revoke(self, namespace: str, pod: str) -> None:
        """`pod` is gone, or no longer passes the checks."""
        if self._by_pod.pop((namespace, pod), None) is not None:
            self._paths = frozenset().union(*self._by_pod.values())

    def allows(self, path: str) -> bool:
        """Tell whether `path` (decoded, the server's prefix stripped) is an admitted read path."""
        return path in self._paths

    def __len__(self) -> int:
        return len(self._by_pod)


class ReadOnlyViolation(Exception):
    """Signals a request that `--read-only` refused before sending it.

    Deliberately not an aiohttp `ClientError`: nothing may treat it as a network fault and retry.
    """

    def __init__(self, method: str, path: str, reason: str) -> None:
        self.method = method
        self.path = path
        self.reason = reason
        super().__init__(
            f"read-only: refused {method} {path}: {reason} (probetui sends only get, list and "
            "watch requests with --read-only; run without it to allow this)"
        )


def _has_upgrade(headers: Mapping[str, str]) -> bool:
    for name, value in headers.items():
        lower = name.lower()
        if lower == "upgrade":
            return True
        if lower == "connection" and "upgrade" in value.lower():
            return True
    return False


def server_prefix(server: str) -> str:
    """Return the path of a server URL before the API ("/k8s/clusters/c-1"; "" for none),
    decoded."""
    path = unquote(urlsplit(server).path).rstrip("/")
    return path if path.strip("/") else ""


def server_path_problem(server: str) -> str | None:
    """Say why read-only cannot take a server URL's path as a mere prefix, or None when it can."""
    return prefix_problem(server_prefix(server))


def prefix_problem(prefix: str) -> str | None:
    """`server_path_problem` for a decoded prefix.

    The API server parses a path from its first `api` or `apis` segment, and a proxy in front
    may strip any prefix before passing a request on. So a segment `api` or `apis` anywhere (in
    any case) may be where the API server's parse begins, and what follows it the resource and
    subresource of every request.
    """
    if not prefix.strip("/"):
        return None
    segments = prefix.strip("/").split("/")
    if any(s in ("", ".", "..") for s in segments):
        return f"the server URL's path {prefix} has empty or dot segments"
    for i, segment in enumerate(segments):
        if segment.lower() in _API_PREFIXES:
            reaches = "/" + "/".join(segments[i:])
            return (
                f"the server URL's path {prefix} names an API path ({reaches}): every request "
                "would go to what that path names, not to the API itself"
            )
    return None


@dataclass(frozen=True, slots=True)
class ApiPath:
    """Holds a request path as the API server's `RequestInfoFactory` splits it."""

    resource_request: bool = False  # under /api/VERSION or /apis/GROUP/VERSION
    legacy_proxy: bool = False  # /api/v1/proxy/...
    namespace: str = ""
    resource: str = ""
    name: str = ""
    subresource: str = ""


def api_path(path: str) -> ApiPath:
    """Split a decoded path (server prefix already stripped); ValueError for empty or dot
    segments, which read-only refuses rather than second-guesses."""
    trimmed = path.strip("/")
    if not trimmed:
        return ApiPath()
    parts = trimmed.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError("path has empty or dot segments")
    if parts[0] == "api":
        rest = parts[2:]  # api, version
    elif parts[0] == "apis":
        rest = parts[3:]  # apis, group, version
    else:
        return ApiPath()  # non-resource URLs: /version, /healthz, /openapi/v2, ...
    if not rest:
        return ApiPath()  # discovery
    if rest[0] == "proxy":
        return ApiPath(resource_request=True, legacy_proxy=True)
    if rest[0] == "watch":
        rest = rest[1:]  # the deprecated /watch/ prefix: still a watch
    namespace = ""
    if len(rest) > 1 and rest[0] == "namespaces":
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]  # namespaces/NS/RESOURCE/...
    rest += [""] * (3 - len(rest))
    return ApiPath(True, False, namespace, rest[0], rest[1], rest[2])


def _forbidden(info: ApiPath) -> str | None:
    """Say why a GET of this API path is not read-only, or None."""
    if info.legacy_proxy:
        return "proxy reaches into pods, services and nodes"
    if info.subresource in FORBIDDEN_SUBRESOURCES:
        return f"the {info.subresource} subresource is not read-only"
    return None


def refusal(
    method: str,
    raw_path: str,
    headers: Mapping[str, str] | None = None,
    prefix: str = "",
    agents: AgentReadPaths | None = None,
) -> str | None:
    """Say why read-only mode refuses this request, or None when it may go.

    `raw_path` is the path as sent (percent-encoded); it is decoded as the API server decodes it.
    `prefix` is the server URL's own path (`server_prefix`), stripped first. `agents`: the node
    agents' read paths a GET may reach through pods/proxy (the one exception, above).
    """
    if method.upper() != "GET":
        return f"method {method.upper()} changes state; only GET is allowed"
    if headers is not None and _has_upgrade(headers):
        return "connection upgrades (websocket, SPDY) are how exec, attach and port-forward work"
    if prefix:
        problem = prefix_problem(prefix)
        if problem is not None:
            return problem
    path = unquote(raw_path)
    if prefix:
        if path != prefix and not path.startswith(prefix + "/"):
            return f"the path is outside the server's {prefix}"
        path = path[len(prefix) :]
    try:
        info = api_path(path)
    except ValueError as e:
        return str(e)
    forbidden = _forbidden(info)
    if (
        forbidden is not None
        and agents is not None
        and not info.legacy_proxy
        and info.resource == "pods"
        and info.subresource == "proxy"
        and agents.allows(path)
    ):
        return None
    return forbidden


@dataclass(frozen=True, slots=True)
class Refused:
    method: str
    url: str
    reason: str


class ReadOnlyGuard:
    """Runs the check installed on one client's connector; keeps the last refusals for display."""

    def __init__(
        self, keep: int = 64, prefix: str = "", agents: AgentReadPaths | None = None
    ) -> None:
        self.refused: deque[Refused] = deque(maxlen=keep)
        self.refused_total = 0
        self.prefix = prefix
        self.agents = agents

    def check(self, method: str, url: Any, headers: Mapping[str, str]) -> None:
        raw_path = getattr(url, "raw_path", None) or str(url)
        reason = refusal(method, raw_path, headers, self.prefix, self.agents)
        if reason is None:
            return
        self.refused_total += 1
        self.refused.append(Refused(method.upper(), str(url), reason))
        raise ReadOnlyViolation(method.upper(), unquote(raw_path), reason)

    def wrap(self, connect: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def guarded_connect(req: Any, *args: Any, **kwargs: Any) -> Any:
            self.check(req.method, req.url, req.headers)
            return await connect(req, *args, **kwargs)

        return guarded_connect


def install_read_only_guard(
    client: ApiClient, guard: ReadOnlyGuard | None = None, agents: AgentReadPaths | None = None
) -> ReadOnlyGuard:
    """Guard `client` (an ApiClient or WsApiClient) for good; idempotent. Returns the guard.
    `agents`: the node agents' read paths its GETs may reach (discovery fills it)."""
    session = client.rest_client.pool_manager
    connector = session.connector
    if connector is None:
        raise RuntimeError("the API client is closed")
    existing = getattr(connector, _MARK, None)
    if isinstance(existing, ReadOnlyGuard):
        return existing
    guard = guard or ReadOnlyGuard(
        prefix=server_prefix(client.configuration.host or ""), agents=agents
    )
    # an instance attribute shadows the class's method for this connector alone
    connector.connect = guard.wrap(connector.connect)  # type: ignore[method-assign]
    setattr(connector, _MARK, guard)
    return guard
