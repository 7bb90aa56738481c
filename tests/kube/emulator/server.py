"""ApiEmulator: a Kubernetes API server on 127.0.0.1 for tests, spoken to over real HTTP.

Request path, in the apiserver's filter order: record the request -> authenticate the bearer
token (401; a token can expire or be revoked) -> injected faults -> authorize (RBAC-lite:
admin, view, none, plus single grants; 403) -> serve. From server version 1.35 the pods/exec,
pods/attach and pods/portforward handlers also require `create` on the subresource, whatever
the request's verb, as the registry does with the AuthorizePodWebsocketUpgradeCreatePermission
gate on (beta, on by default since 1.35; pkg/registry/core/pod/rest/subresources.go). A server
URL may carry a path prefix, as behind Rancher's `/k8s/clusters/ID`.
Discovery, get/list/watch of pods, core/v1 events, events.k8s.io/v1 events, namespaces and nodes, and
the pods/exec, pods/portforward and pods/proxy connect subresources are served; writes are not
(405), so a client under test cannot change the emulator's state, only the test can.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import hashlib
import ipaddress
import os
import shutil
import ssl
import tempfile
import time
import traceback
import uuid
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import aiohttp
import yaml
from aiohttp import web

from . import exec as exec_
from . import portforward, proxy, status
from .channels import ProtocolRefused, negotiate, upgrade_required
from .kubelet_events import KubeletRecorder
from .requestinfo import (
    CONNECT_SUBRESOURCES,
    READ_VERBS,
    RequestInfo,
    RequestRecord,
    parse_bool,
    request_info,
)
from .resources import PODS, RESOURCES, Obj, discovery_resources
from .rest import COMPACTED_IN_STREAM, BadRequest, Collections, WatchSettings, parse_query
from .store import Store, Watcher, WatchItem

Role = Literal["admin", "view", "none"]
_LOOPBACK_NAMES = ("localhost",)


# pods/exec, pods/attach and pods/portforward: from 1.35 the registry checks `create` as well
_CREATE_CHECKED = frozenset({"exec", "attach", "portforward"})
_CREATE_CHECK_SINCE = (1, 35)


@dataclass
class User:
    name: str
    role: Role
    # the wall-clock time (time.time()) from which the token is refused with 401
    expires: float | None = None
    # (verb, "resource" or "resource/subresource") granted beyond the role
    grants: set[tuple[str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class TlsIdentity:
    """A serving certificate the test made itself: its chain, its key, and the CA to trust."""

    chain_pem: bytes
    key_pem: bytes
    ca_pem: bytes


@dataclass
class Fault:
    remaining: int
    code: int
    verb: str | None
    resource: str | None
    subresource: str | None

    def matches(self, info: RequestInfo) -> bool:
        return (
            self.remaining > 0
            and (self.verb is None or self.verb == info.verb)
            and (self.resource is None or self.resource == info.resource)
            and (self.subresource is None or self.subresource == info.subresource)
        )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ApiEmulator:
    """A Kubernetes API server for one test; the package docstring lists what a test can do."""

    def __init__(
        self,
        *,
        token: str | None = "emulator-token",
        user: str = "emulator-admin",
        role: Role = "admin",
        tls: bool = False,
        bookmark_interval: float | None = 60.0,
        history_limit: int = 10_000,
        exec_timeout: float = 10.0,
        server_version: str = "v1.32.0",
        start_rv: int = 1000,
        log_limit: int = 50_000,
        tls_names: Sequence[str] = ("127.0.0.1", "localhost"),
        tls_identity: TlsIdentity | None = None,
        path_prefix: str = "",
        websocket_create_check: bool | None = None,
    ) -> None:
        self.store = Store(start_rv=start_rv, history_limit=history_limit)
        self.settings = WatchSettings(bookmark_interval=bookmark_interval)
        self.collections = Collections(self.store, self.settings)
        self.collections.on_watchers_changed(self._notify)
        self.token = token
        self._tokens: dict[str, User] = {token: User(user, role)} if token else {}
        self._anonymous = User("system:anonymous" if token else user, role)
        self.tls = tls or tls_identity is not None
        self.tls_names = tuple(tls_names)
        self.tls_identity = tls_identity
        # "/k8s/clusters/c-1": requests outside it are not the cluster's (404)
        self.path_prefix = "/" + path_prefix.strip("/") if path_prefix.strip("/") else ""
        # seconds containerd holds a port-forward open after the pod closed its connection
        self.portforward_linger = 1.0
        # None: as the version says (on from 1.35); True/False: the gate forced on or off
        self.websocket_create_check = websocket_create_check
        self.exec_timeout = exec_timeout
        self.server_version = server_version
        self.requests: deque[RequestRecord] = deque(maxlen=log_limit)
        # never trimmed: (method, verb, resource, subresource) -> count, for read-only proofs
        self.request_counts: Counter[tuple[str, str, str, str]] = Counter()
        self.errors: list[str] = []  # emulator bugs, so a test can assert there were none
        self.kubelet = KubeletRecorder(self.add_event)
        self._faults: list[Fault] = []
        self._ports: dict[tuple[str, str, int], tuple[str, int]] = {}
        # pods/proxy answers being relayed as they come (a node agent's stream)
        self.proxy_streams: set[web.StreamResponse] = set()
        # what those relays carried: bytes and chunks (a benchmark's measure of the proxy)
        self.proxied_bytes = 0
        self.proxied_chunks = 0
        self._changed = asyncio.Event()
        self._long_running: set[asyncio.Task[Any]] = set()
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self._tmp: Path | None = None
        self._server_ssl: ssl.SSLContext | None = None
        self.ca_pem: bytes | None = None
        self.ca_file: Path | None = None
        self.url = ""
        self.port = 0
        self.add_namespace("default")

    # ----- lifecycle -----

    async def __aenter__(self) -> ApiEmulator:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        self._tmp = Path(tempfile.mkdtemp(prefix="kube-emulator-"))
        if self.tls:
            self._setup_tls()
        app = web.Application(client_max_size=1 << 20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        app.on_response_prepare.append(self._common_headers)
        # handler_cancellation: a watch whose client left ends at once, not at its next write
        self._runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=0.5, access_log=None
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._server_ssl)
        await site.start()
        self.port = self._runner.addresses[0][1]
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{self.path_prefix}"
        # the real API server relays any number of proxy streams at once: no pool limit here
        self._session = aiohttp.ClientSession(
            auto_decompress=False, connector=aiohttp.TCPConnector(limit=0)
        )

    async def stop(self) -> None:
        self.end_watches()
        for task in list(self._long_running):
            task.cancel()
        for task in list(self._long_running):
            with contextlib.suppress(BaseException):
                await task
        if self._session is not None:
            await self._session.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _setup_tls(self) -> None:
        self._server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        assert self._tmp is not None
        if self.tls_identity is not None:
            chain, key = self._tmp / "server.crt", self._tmp / "server.key"
            chain.write_bytes(self.tls_identity.chain_pem)
            key.write_bytes(self.tls_identity.key_pem)
            self._server_ssl.load_cert_chain(str(chain), str(key))
            self.ca_pem = self.tls_identity.ca_pem
        else:
            import trustme

            ca = trustme.CA()
            cert = ca.issue_cert(*self.tls_names)
            cert.configure_cert(self._server_ssl)
            self.ca_pem = ca.cert_pem.bytes()
        self.ca_file = self._tmp / "ca.crt"
        self.ca_file.write_bytes(self.ca_pem)

    # ----- client set-up -----

    def kubeconfig_dict(
        self,
        *,
        namespace: str | None = None,
        context: str = "emulator",
        cluster: str = "emulator",
        user: str = "emulator-user",
        token: str | None = None,
    ) -> dict[str, Any]:
        cluster_entry: dict[str, Any] = {"server": self.url}
        if self.ca_pem is not None:
            cluster_entry["certificate-authority-data"] = base64.b64encode(self.ca_pem).decode()
        ctx: dict[str, Any] = {"cluster": cluster, "user": user}
        if namespace:
            ctx["namespace"] = namespace
        user_entry: dict[str, Any] = {}
        if token or self.token:
            user_entry["token"] = token or self.token
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "preferences": {},
            "clusters": [{"name": cluster, "cluster": cluster_entry}],
            "users": [{"name": user, "user": user_entry}],
            "contexts": [{"name": context, "context": ctx}],
            "current-context": context,
        }

    def kubeconfig(self, path: str | os.PathLike[str], **kwargs: Any) -> Path:
        """Write a kubeconfig whose current context points at this emulator; returns its path."""
        out = Path(path)
        out.write_text(yaml.safe_dump(self.kubeconfig_dict(**kwargs), sort_keys=False))
        return out

    def configuration(self, token: str | None = None) -> Any:
        """A kubernetes_asyncio Configuration for this emulator (bearer token, CA if TLS)."""
        from kubernetes_asyncio.client import Configuration

        cfg = Configuration(host=self.url)
        if token or self.token:
            cfg.api_key = {"BearerToken": f"Bearer {token or self.token}"}
        if self.ca_file is not None:
            cfg.ssl_ca_cert = str(self.ca_file)
        return cfg

    def in_cluster_files(
        self, directory: str | os.PathLike[str], namespace: str = "default"
    ) -> dict[str, str]:
        """Write a pod's service-account files (token, ca.crt, namespace) for this emulator and
        return the environment a pod would have: KUBERNETES_SERVICE_HOST/PORT, plus the file
        paths under TOKEN_FILE, CA_FILE and NAMESPACE_FILE. The in-cluster path is HTTPS only,
        so the emulator must run with tls=True."""
        if self.ca_pem is None or not self.token:
            raise RuntimeError("in-cluster config needs ApiEmulator(tls=True) and a token")
        where = Path(directory)
        where.mkdir(parents=True, exist_ok=True)
        (where / "token").write_text(self.token)
        (where / "ca.crt").write_bytes(self.ca_pem)
        (where / "namespace").write_text(namespace)
        return {
            "KUBERNETES_SERVICE_HOST": "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(self.port),
            "TOKEN_FILE": str(where / "token"),
            "CA_FILE": str(where / "ca.crt"),
            "NAMESPACE_FILE": str(where / "namespace"),
        }

    # ----- identities -----

    @property
    def role(self) -> Role:
        """The role of the default token's user; set it to "view" to act as the view ClusterRole."""
        return self._tokens[self.token].role if self.token else self._anonymous.role

    @role.setter
    def role(self, value: Role) -> None:
        if self.token:
            self._tokens[self.token].role = value
        else:
            self._anonymous.role = value

    def add_token(
        self,
        token: str,
        *,
        role: Role = "view",
        user: str = "viewer",
        expires: float | None = None,
    ) -> None:
        """Accept `token`; from `expires` (a time.time() value) on it gets 401, as an expired
        EKS or OIDC token does."""
        self._tokens[token] = User(user, role, expires)

    def revoke_token(self, token: str) -> None:
        """From now on `token` gets 401."""
        self._tokens.pop(token, None)

    def grant(self, verb: str, resource: str, *, token: str | None = None) -> None:
        """Allow one verb on one resource ("pods/exec") to the user of `token` (default: the
        emulator's own token), beyond what its role allows."""
        key = token or self.token
        user = self._tokens[key] if key else self._anonymous
        user.grants.add((verb, resource))

    @property
    def create_checked(self) -> bool:
        """Whether pods/exec, attach and portforward also need `create` (1.35 on, by default)."""
        if self.websocket_create_check is not None:
            return self.websocket_create_check
        major, minor, *_ = self.server_version.lstrip("v").split(".")
        return (int(major), int(minor.rstrip("+"))) >= _CREATE_CHECK_SINCE

    # ----- objects (the test plays the kubelet and the controllers) -----

    def add_namespace(self, name: str) -> Obj:
        existing = self.store.get("namespaces", "", name)
        if existing is not None:
            return copy.deepcopy(existing)
        ns = {
            "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        }
        return copy.deepcopy(self.store.put("namespaces", ns, namespaced=False).obj)

    def add_node(self, name: str, kubelet_version: str = "v1.35.4") -> Obj:
        """A Ready node whose kubelet reports `kubelet_version` (status.nodeInfo)."""
        node = {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {
                "conditions": [{"type": "Ready", "status": "True"}],
                "nodeInfo": {"kubeletVersion": kubelet_version, "kubeProxyVersion": ""},
            },
        }
        return copy.deepcopy(self.store.put("nodes", node, namespaced=False).obj)

    def add_replicaset(
        self, name: str, namespace: str = "default", owner: tuple[str, str] | None = None
    ) -> Obj:
        """A ReplicaSet whose controller is `owner` (kind, name), or none: an orphan."""
        self.add_namespace(namespace)
        meta: Obj = {"name": name, "namespace": namespace}
        if owner is not None:
            kind, owner_name = owner
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": kind,
                    "name": owner_name,
                    "uid": f"uid-{kind.lower()}-{owner_name}",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
        rs = {"metadata": meta, "spec": {"replicas": 1}, "status": {"replicas": 1}}
        return self._put("replicasets", rs)

    def add_secret(self, name: str, data: dict[str, str], namespace: str = "default") -> Obj:
        """An Opaque Secret whose `data` holds each value base64-encoded, as the API serves it."""
        self.add_namespace(namespace)
        secret = {
            "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque",
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }
        return self._put("secrets", secret)

    def delete_secret(self, name: str, namespace: str = "default") -> None:
        self.store.delete("secrets", namespace, name)

    def _ensure_namespace(self, obj: Obj) -> None:
        self.add_namespace(obj.get("metadata", {}).get("namespace") or "default")

    def add_pod(self, pod: Obj) -> Obj:
        """Create (or replace) a pod; returns the stored copy with uid and resourceVersion."""
        self._ensure_namespace(pod)
        return self._put("pods", pod)

    def update_pod(self, pod: Obj) -> Obj:
        """Replace a pod (identified by its metadata); the watch sees MODIFIED."""
        meta = pod.get("metadata", {})
        if self.get_pod(meta.get("name", ""), meta.get("namespace") or "default") is None:
            raise KeyError(f"pod {meta.get('name')!r} does not exist")
        return self._put("pods", pod)

    def patch_pod(self, name: str, patch: Obj, namespace: str = "default") -> Obj:
        """Apply a JSON merge patch (lists replace whole, as in RFC 7386)."""
        current = self._require("pods", namespace, name)
        return self._put("pods", merge_patch(current, patch))

    def edit_pod(self, name: str, edit: Callable[[Obj], None], namespace: str = "default") -> Obj:
        """Call `edit` on a copy of the pod, then store it: `api.edit_pod("web", lambda p: ...)`."""
        pod = copy.deepcopy(self._require("pods", namespace, name))
        edit(pod)
        return self._put("pods", pod)

    def delete_pod(self, name: str, namespace: str = "default") -> Obj | None:
        """Remove a pod now (the end of graceful deletion); returns its last state."""
        change = self.store.delete("pods", namespace, name)
        return copy.deepcopy(change.obj) if change else None

    def get_pod(self, name: str, namespace: str = "default") -> Obj | None:
        obj = self.store.get("pods", namespace, name)
        return copy.deepcopy(obj) if obj is not None else None

    def pods(self) -> list[Obj]:
        return [copy.deepcopy(p) for p in self.store.items("pods")]

    def add_event(self, event: Obj) -> Obj:
        """Create (or replace) a core/v1 Event as given."""
        self._ensure_namespace(event)
        return self._put("events", event)

    def patch_event(self, name: str, patch: Obj, namespace: str = "default") -> Obj:
        current = self._require("events", namespace, name)
        return self._put("events", merge_patch(current, patch))

    def delete_event(self, name: str, namespace: str = "default") -> Obj | None:
        change = self.store.delete("events", namespace, name)
        return copy.deepcopy(change.obj) if change else None

    def record_event(
        self,
        pod: str | Obj,
        reason: str,
        message: str,
        *,
        type: str = "Warning",
        container: str | None = "app",
        namespace: str = "default",
        host: str | None = None,
    ) -> Obj:
        """Record an event the way the kubelet's recorder does: a repeat bumps `count`
        (MODIFIED), ten similar messages fold into "(combined from similar events): ..."."""
        obj = self._require("pods", namespace, pod) if isinstance(pod, str) else pod
        field_path = f"spec.containers{{{container}}}" if container else None
        return self.kubelet.record(
            obj, reason, message, type=type, field_path=field_path, host=host
        )

    def events(self) -> list[Obj]:
        return [copy.deepcopy(e) for e in self.store.items("events")]

    def _put(self, storage: str, obj: Obj) -> Obj:
        # a copy: the stored object and its history must not change behind the store's back
        return copy.deepcopy(self.store.put(storage, obj, namespaced=True).obj)

    def _require(self, storage: str, namespace: str, name: str) -> Obj:
        obj = self.store.get(storage, namespace, name)
        if obj is None:
            raise KeyError(f"{storage} {namespace}/{name} does not exist")
        return obj

    # ----- where pods' ports lead -----

    def map_port(
        self,
        pod: str,
        port: int,
        target_port: int,
        *,
        namespace: str = "default",
        host: str = "127.0.0.1",
    ) -> None:
        """Port-forward and proxy to `pod:port` reach `host:target_port` (loopback only)."""
        if not _is_loopback(host):
            raise ValueError(f"map_port: {host} is not a loopback address; tests stay on loopback")
        self._ports[(namespace, pod, port)] = (host, target_port)

    def unmap_port(self, pod: str, port: int, *, namespace: str = "default") -> None:
        self._ports.pop((namespace, pod, port), None)

    # ----- faults -----

    def fail_next(
        self,
        n: int = 1,
        status: int = 500,
        *,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
    ) -> None:
        """The next `n` requests that match (verb: get/list/watch/...) answer `status` with the
        Status body the apiserver sends for that code (429/503/504 carry Retry-After: 1)."""
        self._faults.append(Fault(n, status, verb, resource, subresource))

    def compact(self) -> int:
        """Forget the change history: watches from an older resourceVersion get 410."""
        return self.store.compact()

    def expire_watches(self, how: Literal["event", "status"] | None = None) -> int:
        """Compact, and end every open watch with an in-stream ERROR 410 Expired. `how` sets how
        later watches from a too-old resourceVersion learn it: an ERROR event ("event", as the
        watch cache answers) or an HTTP 410 Status ("status"). Returns the watches ended."""
        self.compact()
        if how is not None:
            self.settings.expired_as = how
        watchers = self.watchers()
        for watcher in watchers:
            watcher.put(_error_item(status.expired(COMPACTED_IN_STREAM)))
        return len(watchers)

    def cut_streams(self, *, on_next_event: bool = False, resource: str | None = None) -> int:
        """Drop open watch connections in the middle of a JSON line, without the chunked
        terminator (the client's read fails, e.g. aiohttp ClientPayloadError). With
        `on_next_event` the next real event of each watch is the one cut in half."""
        cut = 0
        for watcher in self.watchers(resource):
            if on_next_event:
                watcher.cut_next = True
            else:
                watcher.put(_cut_item())
            cut += 1
        return cut

    def cut_proxy_streams(self) -> int:
        """Cut every pods/proxy stream being relayed (no chunked terminator); how many."""
        streams = list(self.proxy_streams)
        for resp in streams:
            proxy.cut(resp)
        return len(streams)

    def end_watches(self, resource: str | None = None) -> int:
        """End open watches cleanly, as the apiserver does when their timeout passes."""
        watchers = self.watchers(resource)
        for watcher in watchers:
            watcher.put(_end_item())
        return len(watchers)

    def send_bookmarks(self, resource: str | None = None) -> int:
        """A BOOKMARK with the current resourceVersion to every watch that allows them."""
        sent = 0
        for watcher in self.watchers(resource):
            if watcher.bookmarks:
                watcher.put(_bookmark_item(watcher, self.store.rv))
                sent += 1
        return sent

    # ----- observation -----

    @property
    def resource_version(self) -> int:
        return self.store.rv

    def watchers(self, resource: str | None = None) -> list[Watcher]:
        return [
            w
            for w in self.store.watchers
            if not w.closed and (resource is None or w.view.name == resource)
        ]

    def non_read_requests(self) -> list[RequestRecord]:
        """Requests --read-only must never make: any non-GET, or exec/attach/portforward/proxy."""
        return [r for r in self.requests if not r.read_only]

    def count_requests(
        self,
        *,
        method: str | None = None,
        verb: str | None = None,
        resource: str | None = None,
        subresource: str | None = None,
    ) -> int:
        """From the never-trimmed counters: how many requests matched."""
        return sum(
            n
            for (m, v, r, s), n in self.request_counts.items()
            if (method is None or m == method)
            and (verb is None or v == verb)
            and (resource is None or r == resource)
            and (subresource is None or s == subresource)
        )

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 2.0) -> None:
        """Wait until `predicate()` holds: re-checked after each request and watch change, and
        every 10 ms for what the emulator cannot see change (processes, sockets)."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 0.01)

    async def wait_for_watch(
        self, resource: str = "pods", *, count: int = 1, timeout: float = 2.0
    ) -> None:
        """Wait until `count` watches on `resource` are open (so a change now reaches them)."""
        await self.wait_for(lambda: len(self.watchers(resource)) >= count, timeout)

    async def wait_for_request(
        self, predicate: Callable[[RequestRecord], bool], timeout: float = 2.0
    ) -> RequestRecord:
        found: list[RequestRecord] = []

        def check() -> bool:
            found[:] = [r for r in self.requests if predicate(r)]
            return bool(found)

        await self.wait_for(check, timeout)
        return found[0]

    def _notify(self) -> None:
        self._changed.set()

    # ----- request path -----

    @staticmethod
    async def _common_headers(request: web.Request, response: web.StreamResponse) -> None:
        response.headers.setdefault("Audit-Id", str(uuid.uuid4()))
        response.headers.setdefault("Cache-Control", "no-cache, private")

    def _cluster_path(self, path: str) -> str | None:
        """The path below the server's prefix; None when the request is outside it."""
        if not self.path_prefix:
            return path
        if path == self.path_prefix:
            return "/"
        if path.startswith(self.path_prefix + "/"):
            return path[len(self.path_prefix) :]
        return None

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        path = self._cluster_path(request.path)
        info = request_info(request.method, path if path is not None else "/", request.query)
        user = self._authenticate(request)
        record = RequestRecord(
            method=request.method,
            path=request.path,
            query={k: request.query.getall(k) for k in request.query},
            verb=info.verb,
            group=info.group,
            version=info.version,
            resource=info.resource,
            subresource=info.subresource,
            namespace=info.namespace,
            name=info.name,
            user=user.name if user else "",
            websocket=request.headers.get("Upgrade", "").lower() == "websocket",
            headers=dict(request.headers),
        )
        self.requests.append(record)
        self.request_counts[(record.method, info.verb, info.resource, info.subresource)] += 1
        self._notify()
        task = asyncio.current_task()
        long_running = info.verb == "watch" or info.subresource in CONNECT_SUBRESOURCES
        if long_running and task is not None:
            self._long_running.add(task)
        try:
            if path is None:
                resp = web.Response(status=404, text="404 page not found\n")
            else:
                resp = await self._serve(request, info, user)
        except BadRequest as err:
            resp = status.response(err.body)
        except Exception:
            self.errors.append(traceback.format_exc())
            resp = status.response(status.internal_error("emulator bug, see api.errors"))
        finally:
            if task is not None:
                self._long_running.discard(task)
        record.status = resp.status
        self._notify()
        return resp

    def _authenticate(self, request: web.Request) -> User | None:
        if not self._tokens:
            return self._anonymous
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        user = self._tokens.get(token.strip())
        if user is not None and user.expires is not None and time.time() >= user.expires:
            return None
        return user

    def _fault(self, info: RequestInfo) -> web.Response | None:
        for fault in self._faults:
            if fault.matches(info):
                fault.remaining -= 1
                return status.response(status.injected(fault.code))
        self._faults = [f for f in self._faults if f.remaining > 0]
        return None

    @staticmethod
    def _allowed(user: User, verb: str, info: RequestInfo) -> bool:
        if user.role == "admin":
            return True
        resource = info.resource + (f"/{info.subresource}" if info.subresource else "")
        if (verb, resource) in user.grants:
            return True
        return (
            user.role == "view"
            and verb in READ_VERBS
            and info.subresource not in CONNECT_SUBRESOURCES
            # the view ClusterRole covers namespaced objects only: no nodes; and no secrets
            and info.resource not in ("nodes", "secrets")
        )

    def _forbidden(self, user: User, info: RequestInfo) -> web.Response | None:
        if not info.resource_request:
            return None
        if not self._allowed(user, info.verb, info):
            return self._refusal(user, info, info.verb)
        # the registry's second check: a websocket upgrade is a GET, authorized as get above
        if (
            info.subresource in _CREATE_CHECKED
            and self.create_checked
            and not self._allowed(user, "create", info)
        ):
            return self._refusal(user, info, "create")
        return None

    @staticmethod
    def _refusal(user: User, info: RequestInfo, verb: str) -> web.Response:
        resource = info.resource + (f"/{info.subresource}" if info.subresource else "")
        where = f'in the namespace "{info.namespace}"' if info.namespace else "at the cluster scope"
        why = (
            f'User "{user.name}" cannot {verb} resource "{resource}" in API group '
            f'"{info.group}" {where}'
        )
        qualified = f"{info.resource}.{info.group}" if info.group else info.resource
        named = f'{qualified} "{info.name}"' if info.name else qualified
        details: dict[str, Any] = {"kind": info.resource}
        if info.name:
            details["name"] = info.name
        if info.group:
            details["group"] = info.group
        return status.response(status.status(403, f"{named} is forbidden: {why}", details=details))

    async def _serve(
        self, request: web.Request, info: RequestInfo, user: User | None
    ) -> web.StreamResponse:
        if user is None:
            return status.response(status.status(401, "Unauthorized"))
        injected = self._fault(info)
        if injected is not None:
            return injected
        forbidden = self._forbidden(user, info)
        if forbidden is not None:
            return forbidden
        if not info.resource_request:
            return self._non_resource(request, info.path)
        view = RESOURCES.get((info.group, info.version, info.resource))
        if view is None or (info.subresource and view is not PODS):
            return _no_resource()
        if info.subresource:
            return await self._connect(request, info)
        if request.method not in ("GET", "HEAD"):
            return status.response(
                status.status(
                    405, "the server does not allow this method on the requested resource"
                )
            )
        if info.path_name:
            return self.collections.get(view, info)
        q = parse_query(view, request.query)
        if q.watch:
            return await self.collections.watch(request, view, info, q, user.name)
        return self.collections.list(view, info, q)

    # ----- discovery -----

    def _non_resource(self, request: web.Request, path: str) -> web.Response:
        path = path.rstrip("/") or "/"
        if request.method not in ("GET", "HEAD"):
            return web.Response(status=405, text="405 method not allowed\n")
        if path in ("/healthz", "/livez", "/readyz"):
            return web.Response(text="ok")
        if path == "/version":
            major, minor, *_ = self.server_version.lstrip("v").split(".")
            return status.json_response(
                {
                    "major": major,
                    "minor": minor,
                    "gitVersion": self.server_version,
                    "gitCommit": "0" * 40,
                    "gitTreeState": "clean",
                    "buildDate": "2025-01-01T00:00:00Z",
                    "goVersion": "go1.23.4",
                    "compiler": "gc",
                    "platform": "linux/amd64",
                }
            )
        if path == "/api":
            return status.json_response(
                {
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [
                        {"clientCIDR": "0.0.0.0/0", "serverAddress": f"127.0.0.1:{self.port}"}
                    ],
                }
            )
        events_group = {
            "name": "events.k8s.io",
            "versions": [{"groupVersion": "events.k8s.io/v1", "version": "v1"}],
            "preferredVersion": {"groupVersion": "events.k8s.io/v1", "version": "v1"},
        }
        if path == "/apis":
            return status.json_response(
                {"kind": "APIGroupList", "apiVersion": "v1", "groups": [events_group]}
            )
        if path == "/apis/events.k8s.io":
            return status.json_response({"kind": "APIGroup", "apiVersion": "v1", **events_group})
        for group_version, group, version in (
            ("/api/v1", "", "v1"),
            ("/apis/events.k8s.io/v1", "events.k8s.io", "v1"),
        ):
            if path == group_version:
                return status.json_response(
                    {
                        "kind": "APIResourceList",
                        "apiVersion": "v1",
                        "groupVersion": f"{group}/{version}" if group else version,
                        "resources": discovery_resources(group, version),
                    }
                )
        return web.Response(status=404, text="404 page not found\n")

    # ----- pods/exec, pods/portforward, pods/proxy -----

    async def _connect(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        if info.subresource == "proxy":
            return await self._proxy(request, info)
        pod = self.store.get("pods", info.namespace, info.path_name)
        if pod is None:
            return status.response(status.not_found("pods", info.path_name))
        if info.subresource == "exec":
            return await self._exec(request, info, pod)
        if info.subresource == "portforward":
            return await self._portforward(request, info, pod)
        return _no_resource()

    async def _exec(self, request: web.Request, info: RequestInfo, pod: Obj) -> web.StreamResponse:
        q = request.query
        try:
            flags = {k: bool(parse_bool(q.get(k))) for k in ("stdin", "stdout", "stderr", "tty")}
        except ValueError as err:
            return status.response(status.bad_request(str(err)))
        container, problem = _stream_container(pod, q.get("container", ""), info.path_name)
        if problem is not None:
            return problem
        phase = pod.get("status", {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            return status.response(
                status.bad_request(
                    f"cannot exec into a container in a completed pod; current phase is {phase}"
                )
            )
        if not (flags["stdin"] or flags["stdout"] or flags["stderr"]):
            return status.response(
                status.bad_request("you must specify at least 1 of stdin, stdout, stderr")
            )
        if not _container_running(pod, container):
            # the kubelet's answer when the runtime has no running container of that name
            return web.Response(status=500, text=f'container not found ("{container}")')
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return upgrade_required()
        try:
            protocol = negotiate(request, exec_.PROTOCOLS)
        except ProtocolRefused as err:
            return status.response(status.bad_request(str(err)))
        env = dict(os.environ)
        for var in _container_spec(pod, container).get("env") or []:
            if "value" in var:
                env[var["name"]] = str(var["value"])
        opts = exec_.ExecOptions(
            tuple(q.getall("command", [])),
            container,
            flags["stdin"],
            flags["stdout"],
            flags["stderr"],
            flags["tty"],
        )
        return await exec_.serve_exec(request, protocol, opts, env=env, timeout=self.exec_timeout)

    async def _portforward(
        self, request: web.Request, info: RequestInfo, pod: Obj
    ) -> web.StreamResponse:
        if not pod.get("spec", {}).get("nodeName"):
            return status.response(
                status.bad_request(f"pod {info.path_name} does not have a host assigned")
            )
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return upgrade_required()
        try:
            ports = portforward.parse_ports(
                request.query.getall("ports", []) + request.query.getall("port", [])
            )
        except ValueError as err:
            return status.response(status.bad_request(str(err)))
        try:
            protocol = negotiate(request, portforward.PROTOCOLS)
        except ProtocolRefused as err:
            return status.response(status.bad_request(str(err)))
        ns, name = info.namespace, info.path_name
        sandbox = hashlib.sha256(pod["metadata"]["uid"].encode()).hexdigest()
        return await portforward.serve_portforward(
            request,
            protocol,
            ports,
            lambda p: self._ports.get((ns, name, p)),
            sandbox=sandbox,
            linger=self.portforward_linger,
        )

    async def _proxy(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        try:
            target = proxy.parse_name(info.path_name)
        except ValueError as err:
            return status.response(status.bad_request(str(err)))
        pod = self.store.get("pods", info.namespace, target.name)
        if pod is None:
            return status.response(status.not_found("pods", target.name))
        port = (
            target.port or proxy.default_port(pod) or ("443" if target.scheme == "https" else "80")
        )
        pod_ip = pod.get("status", {}).get("podIP") or ""
        rest = "/".join(info.parts[3:])
        if request.path.endswith("/") and rest:
            rest += "/"
        mapped = (
            self._ports.get((info.namespace, target.name, int(port))) if port.isdigit() else None
        )
        if mapped is None:
            return proxy.unreachable(pod_ip, port)
        assert self._session is not None
        return await proxy.serve_proxy(
            request,
            self._session,
            mapped,
            target.scheme,
            rest,
            shown=(pod_ip, port),
            streams=self.proxy_streams,
            on_chunk=self._relayed,
        )

    def _relayed(self, size: int) -> None:
        self.proxied_bytes += size
        self.proxied_chunks += 1


def _error_item(body: Obj) -> WatchItem:
    return WatchItem("error", "ERROR", body)


def _cut_item() -> WatchItem:
    return WatchItem("cut")


def _end_item() -> WatchItem:
    return WatchItem("end")


def _bookmark_item(watcher: Watcher, rv: int) -> WatchItem:
    return WatchItem("bookmark", obj=watcher.view.bookmark(rv))


def _no_resource() -> web.Response:
    return status.response(
        status.status(404, "the server could not find the requested resource", details={})
    )


def _container_spec(pod: Obj, name: str) -> Obj:
    for c in pod.get("spec", {}).get("containers") or []:
        if c.get("name") == name:
            return c
    return {}


def _container_running(pod: Obj, name: str) -> bool:
    for cs in pod.get("status", {}).get("containerStatuses") or []:
        if cs.get("name") == name:
            return "running" in (cs.get("state") or {})
    return False


def _stream_container(pod: Obj, container: str, pod_name: str) -> tuple[str, web.Response | None]:
    """pod strategy streamLocation: pick or validate the container, require a node."""
    spec = pod.get("spec", {})
    names = [c.get("name", "") for c in spec.get("containers") or []]
    init_names = [c.get("name", "") for c in spec.get("initContainers") or []]
    if not container:
        if len(names) == 1:
            container = names[0]
        elif not names:
            return "", status.response(
                status.bad_request(f"a container name must be specified for pod {pod_name}")
            )
        else:
            msg = (
                f"a container name must be specified for pod {pod_name}, "
                f"choose one of: [{' '.join(names)}]"
            )
            if init_names:
                msg += f" or one of the init containers: [{' '.join(init_names)}]"
            return "", status.response(status.bad_request(msg))
    elif container not in names and container not in init_names:
        return "", status.response(
            status.bad_request(f"container {container} is not valid for pod {pod_name}")
        )
    if not spec.get("nodeName"):
        return "", status.response(
            status.bad_request(f"pod {pod_name} does not have a host assigned")
        )
    return container, None
