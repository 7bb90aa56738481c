"""Connect the way kubectl does: kubeconfig, context, namespace, in-cluster; the API clients.

The rules are client-go's (`tools/clientcmd/merged_client_builder.go`, `client_config.go`,
`rest.InClusterConfig`). The files and their merge are `kubeconfig.py`'s; here:

- Context: `--context`, else the merged `current-context`; its cluster must be defined, its
  user need not be (an undefined user is anonymous, as in client-go).
- Namespace: `-n`, else the context's, else (where in-cluster config is possible) `POD_NAMESPACE`
  or the service account's namespace file, else `default`.
- In-cluster: used when no kubeconfig gives anything to use and `--context` is not given, and
  `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT` and the service-account token exist.

The chosen context, cluster and user are handed to kubernetes-asyncio as one small dict with
absolute paths (`KubeConfigLoader` with no persister): nothing is ever written to a kubeconfig.
Exec credential plugins are run here (`credential_plugin.py`), with a time limit, and their
answer replaces `exec` in that dict; they run again when the answer expires or is refused, and
token files are read again, as client-go does (`credentials.py`). Every client's connections
are made the same way (`transport.py`): one TLS context as Go verifies, `tls-server-name`,
`proxy-url` or the proxy environment. Every error is one line naming the problem and the fix.
"""

from __future__ import annotations

import copy
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader
from kubernetes_asyncio.config.kube_config import KubeConfigLoader
from kubernetes_asyncio.stream import WsApiClient

from probetui.probe.gotext import join_host_port
from probetui.runtime.kubernetes import transport
from probetui.runtime.kubernetes.credential_plugin import exec_credential, with_credential
from probetui.runtime.kubernetes.credentials import (
    Credential,
    ExecTokenSource,
    FileTokenSource,
    TokenSource,
    refresh_hook,
)
from probetui.runtime.kubernetes.guard import (
    AgentReadPaths,
    install_read_only_guard,
    server_path_problem,
)
from probetui.runtime.kubernetes.kubeconfig import (
    FIX_VIEW,
    ClusterIdentity,
    KubeconfigError,
    cluster_identity,
    identity_of,
    kubeconfig_files,
    merge,
    one_line,
)

__all__ = [
    "CREDENTIAL_TIMEOUT",
    "SERVICE_ACCOUNT_DIR",
    "ClusterTarget",
    "ConnectOptions",
    "KubeconfigError",
    "resolve",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# how long an exec credential plugin may take (it may be waiting on an SSO login); read at
# each run and handed to the plugin runner
CREDENTIAL_TIMEOUT = 60.0
# what Go's http.ProxyFromEnvironment reads
_PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@dataclass(frozen=True, slots=True)
class ConnectOptions:
    """Holds the command line's connection flags, as given."""

    kubeconfig: str | None = None  # --kubeconfig
    context: str | None = None  # --context
    namespace: str | None = None  # -n / --namespace
    all_namespaces: bool = False  # -A
    selector: str | None = None  # -l / --selector
    read_only: bool = False  # --read-only
    # a field selector on the pod watch: `probetui agent` watches its node's pods alone
    # (spec.nodeName=NODE)
    field_selector: str | None = None


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """Says where and as whom to connect, resolved; no network has been touched yet."""

    server: str
    namespace: str
    # where the namespace came from: "--namespace", "context", "POD_NAMESPACE",
    # "service account" or "default"
    namespace_from: str
    in_cluster: bool
    context: str | None = None  # None in-cluster
    cluster: str | None = None
    user: str | None = None
    all_namespaces: bool = False
    selector: str | None = None
    read_only: bool = False
    field_selector: str | None = None
    # the kubeconfig files that were read, in order
    files: tuple[str, ...] = ()
    # one context, its cluster and user, paths absolute: what the library is given
    kubeconfig: Mapping[str, Any] | None = field(default=None, repr=False)
    service_account_dir: Path = SERVICE_ACCOUNT_DIR
    # KUBERNETES_SERVICE_HOST/PORT as seen at resolve time (in-cluster only)
    service_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # HTTPS_PROXY, NO_PROXY, ... as seen at resolve time
    proxy_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # every context the kubeconfig files define, by name, to its cluster's identity, and the
    # in-cluster config's under None where it is possible: for a lock that holds for a cluster
    clusters: Mapping[str | None, ClusterIdentity] = field(default_factory=dict, repr=False)
    # the one token source every client of this target shares (client-go caches its
    # authenticators per user the same way): one plugin run serves list, watch and streams
    _auth: _AuthCache = field(default_factory=lambda: _AuthCache(), repr=False, compare=False)
    # the node agents' read paths that read-only lets through (guard.py), filled by discovery
    # (agents.py) with the agent pods it checked; shared by every client of this target
    agent_paths: AgentReadPaths = field(default_factory=AgentReadPaths, repr=False, compare=False)

    def _what(self) -> str:
        return "in-cluster config" if self.in_cluster else f'context "{self.context}"'

    @property
    def source(self) -> str:
        """For the header: `context/namespace` (`in-cluster/...`; `*` for all namespaces)."""
        where = self.context if self.context is not None else "in-cluster"
        return f"{where}/{'*' if self.all_namespaces else self.namespace}"

    @property
    def token_source(self) -> TokenSource | None:
        """Tell where this target's bearer token comes from, once a client has been made."""
        return self._auth.source

    async def client_configuration(self) -> Configuration:
        """Return a kubernetes-asyncio Configuration for this target (runs exec credential plugins).

        Its `refresh_api_key_hook` keeps the bearer token fresh (credentials.py).
        """
        configuration = Configuration()
        if self.in_cluster:
            token_file = str(self.service_account_dir / "token")
            loader = InClusterConfigLoader(
                token_filename=token_file,
                cert_filename=str(self.service_account_dir / "ca.crt"),
                environ=dict(self.service_env),
            )
            try:
                loader.load_and_set(configuration)
            except (ConfigException, OSError) as e:
                raise KubeconfigError(
                    f"in-cluster config: {one_line(e)} (check the pod's service account mount "
                    f"at {self.service_account_dir})"
                ) from None
            # the library re-reads the file too, but would not after a 401
            self._use_token_file(configuration, token_file, None)
            return configuration
        assert self.kubeconfig is not None
        kubeconfig = copy.deepcopy(dict(self.kubeconfig))
        user = kubeconfig["users"][0]["user"]
        exec_source: ExecTokenSource | None = None
        if isinstance(user.get("exec"), dict):
            cluster = kubeconfig["clusters"][0]["cluster"]
            exec_source = self._auth.exec
            if exec_source is None:
                name, entry = self.user, dict(user)

                async def run() -> Credential:
                    return await exec_credential(name, entry, cluster, CREDENTIAL_TIMEOUT)

                exec_source = self._auth.exec = ExecTokenSource(run, await run())
            kubeconfig["users"][0]["user"] = with_credential(user, exec_source.current)
        kube_loader = KubeConfigLoader(
            config_dict=kubeconfig,
            active_context=self.context,
            config_base_path=None,
            config_persister=None,
        )
        try:
            await kube_loader.load_and_set(configuration)
        except (ConfigException, OSError, ValueError) as e:
            raise KubeconfigError(
                f'context "{self.context}": {one_line(e)} (fix the kubeconfig entry; {FIX_VIEW})'
            ) from None
        if exec_source is not None and exec_source.current.token:
            self._auth.source = exec_source
            configuration.refresh_api_key_hook = refresh_hook(exec_source)
        elif isinstance(user.get("tokenFile"), str) and user["tokenFile"]:
            token = user.get("token")
            self._use_token_file(
                configuration, user["tokenFile"], token if isinstance(token, str) else None
            )
        return configuration

    def _use_token_file(self, configuration: Configuration, path: str, token: str | None) -> None:
        loaded = configuration.api_key.get("BearerToken", "")
        if not loaded.startswith("Bearer "):
            return
        source = self._auth.source
        if not isinstance(source, FileTokenSource) or str(source.path) != path:
            source = self._auth.source = FileTokenSource(path, fallback=token)
        configuration.refresh_api_key_hook = refresh_hook(source)

    def check_read_only(self) -> None:
        """Refuse, before anything connects, a read-only target whose server URL's path names
        an API path (the guard's `server_path_problem`): no request to it could be read-only.

        Not refused without read-only: kubectl takes such a URL (a cluster reached through
        another's service proxy), and probetui then sends exec and proxy requests anyway.
        """
        if not self.read_only:
            return
        problem = server_path_problem(self.server)
        if problem is not None:
            raise KubeconfigError(
                f"{self._what()}: read-only: {problem} (set the cluster's server to the API "
                "server's own https://HOST:PORT, or to a proxy's path prefix that has no /api "
                f"or /apis segment; {FIX_VIEW})"
            )

    async def api_client(
        self, *, websocket: bool = False, connections: int | None = None
    ) -> ApiClient:
        """Return a client for this target; with `--read-only` the guard is installed before return.

        Every API client of the cluster source comes from here, so none escapes the guard.
        `websocket` gives the `WsApiClient` that exec and port-forward use; `connections` caps
        the client's pool where the library's default (100) does not fit.
        """
        self.check_read_only()
        configuration = await self.client_configuration()
        if connections is not None:
            configuration.connection_pool_maxsize = connections
        proxy = transport.proxy_for(configuration.host, configuration.proxy, self.proxy_env)
        if proxy is not None and urlsplit(proxy).scheme.lower() not in ("http", "https"):
            where = "proxy-url" if configuration.proxy else "the proxy environment"
            raise KubeconfigError(
                f"{self._what()}: {where} names {proxy}, and probetui can use http and https "
                "proxies only (tunnel it through an http proxy, or unset it)"
            )
        try:
            client = (
                WsApiClient(configuration=configuration) if websocket else ApiClient(configuration)
            )
            context = transport.go_ssl_context(
                cafile=configuration.ssl_ca_cert,
                certfile=configuration.cert_file,
                keyfile=configuration.key_file,
                verify=configuration.verify_ssl,
            )
        except (ssl.SSLError, OSError) as e:
            # the CA and client certificate are loaded here, when the TLS context is built
            raise KubeconfigError(
                f"{self._what()}: cannot load the TLS certificates: {one_line(e)} (fix "
                f"certificate-authority, client-certificate and client-key; {FIX_VIEW})"
            ) from None
        source = self._auth.source
        await transport.install(
            client,
            ssl_context=context,
            proxy=proxy,
            server_hostname=configuration.tls_server_name or None,
            on_unauthorized=source.unauthorized if source is not None else None,
        )
        if self.read_only:
            install_read_only_guard(client, agents=self.agent_paths)
        return client


@dataclass(slots=True)
class _AuthCache:
    exec: ExecTokenSource | None = None
    source: TokenSource | None = None


# --- in-cluster -------------------------------------------------------------------------------


def _in_cluster_possible(environ: Mapping[str, str], sa_dir: Path) -> bool:
    """client-go's `inClusterClientConfig.Possible`."""
    return (
        bool(environ.get("KUBERNETES_SERVICE_HOST"))
        and bool(environ.get("KUBERNETES_SERVICE_PORT"))
        and (sa_dir / "token").is_file()
    )


def _in_cluster_namespace(environ: Mapping[str, str], sa_dir: Path) -> tuple[str, str]:
    """client-go's `inClusterClientConfig.Namespace`: POD_NAMESPACE, the SA file, default."""
    if environ.get("POD_NAMESPACE"):
        return environ["POD_NAMESPACE"], "POD_NAMESPACE"
    try:
        ns = (sa_dir / "namespace").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        ns = ""
    if ns:
        return ns, "service account"
    return "default", "default"


def _proxy_env(environ: Mapping[str, str]) -> dict[str, str]:
    return {name: environ[name] for name in _PROXY_ENV if name in environ}


def _in_cluster_server(environ: Mapping[str, str]) -> str:
    # rest.InClusterConfig's net.JoinHostPort, which brackets only a host with a colon
    # (kubernetes-asyncio's copy of it also brackets a "%", where Go does not)
    host = environ["KUBERNETES_SERVICE_HOST"]
    port = environ["KUBERNETES_SERVICE_PORT"]
    return f"https://{join_host_port(host, port)}"


def _in_cluster_identity(environ: Mapping[str, str], sa_dir: Path) -> ClusterIdentity | None:
    return cluster_identity(
        {
            "server": _in_cluster_server(environ),
            "certificate-authority": str(sa_dir / "ca.crt"),
        }
    )


def _in_cluster_target(
    options: ConnectOptions, environ: Mapping[str, str], sa_dir: Path
) -> ClusterTarget:
    host = environ["KUBERNETES_SERVICE_HOST"]
    port = environ["KUBERNETES_SERVICE_PORT"]
    identity = _in_cluster_identity(environ, sa_dir)
    if options.namespace:
        namespace, namespace_from = options.namespace, "--namespace"
    else:
        namespace, namespace_from = _in_cluster_namespace(environ, sa_dir)
    return ClusterTarget(
        server=_in_cluster_server(environ),
        namespace=namespace,
        namespace_from=namespace_from,
        in_cluster=True,
        all_namespaces=options.all_namespaces,
        selector=options.selector,
        read_only=options.read_only,
        field_selector=options.field_selector,
        service_account_dir=sa_dir,
        service_env={"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port},
        proxy_env=_proxy_env(environ),
        clusters={None: identity} if identity is not None else {},
    )


# --- resolving --------------------------------------------------------------------------------


def _names(names: object) -> str:
    listed = sorted(names)  # type: ignore[call-overload]
    return ", ".join(listed) if listed else "none"


def resolve(
    options: ConnectOptions,
    *,
    environ: Mapping[str, str] | None = None,
    service_account_dir: Path = SERVICE_ACCOUNT_DIR,
) -> ClusterTarget:
    """Return the cluster, user and namespace to use, as kubectl would pick them.

    `environ` (default `os.environ`) and `service_account_dir` are injectable for tests.
    Raises KubeconfigError.
    """
    env = os.environ if environ is None else environ
    paths = kubeconfig_files(options.kubeconfig, env)
    merged = merge(paths)
    in_cluster = _in_cluster_possible(env, service_account_dir)
    if merged.empty and not options.context and in_cluster:
        return _in_cluster_target(options, env, service_account_dir)
    where = ", ".join(paths)
    if not merged.files:
        raise KubeconfigError(
            f"no kubeconfig found (looked for {where}; set KUBECONFIG, pass --kubeconfig, or run "
            "in a pod with a service account)"
        )
    name = options.context or merged.current_context
    if not name:
        raise KubeconfigError(
            f"no current context in {where} (pass --context NAME or run `kubectl config "
            f"use-context NAME`; available: {_names(merged.contexts)})"
        )
    context = merged.contexts.get(name)
    if context is None:
        flag = "--context" if options.context else "current-context"
        raise KubeconfigError(
            f'context "{name}" not found in {where} (available: {_names(merged.contexts)}; '
            f"fix {flag})"
        )
    cluster_name = context.get("cluster")
    if not isinstance(cluster_name, str) or not cluster_name:
        raise KubeconfigError(f'context "{name}" names no cluster (add cluster: NAME to it)')
    cluster = merged.clusters.get(cluster_name)
    if cluster is None:
        raise KubeconfigError(
            f'context "{name}" names cluster "{cluster_name}", which no kubeconfig defines '
            f"(clusters in {where}: {_names(merged.clusters)})"
        )
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeconfigError(
            f'cluster "{cluster_name}" has no server (add server: https://HOST:PORT to it)'
        )
    user_name = context.get("user") if isinstance(context.get("user"), str) else None
    # client-go treats a context whose user is not defined as anonymous, not as an error
    user = merged.users.get(user_name) if user_name else None

    if options.namespace:
        namespace, namespace_from = options.namespace, "--namespace"
    elif isinstance(context.get("namespace"), str) and context["namespace"]:
        namespace, namespace_from = context["namespace"], "context"
    elif in_cluster:
        namespace, namespace_from = _in_cluster_namespace(env, service_account_dir)
    else:
        namespace, namespace_from = "default", "default"

    # kubernetes-asyncio fails on an https cluster whose context has no user entry (it reads
    # client certificates from None), so an anonymous context gets an empty user
    lib_user = user_name if user is not None else "probetui-anonymous"
    single: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "contexts": [{"name": name, "context": {**context, "user": lib_user}}],
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "users": [{"name": lib_user, "user": user if user is not None else {}}],
    }
    clusters: dict[str | None, ClusterIdentity] = dict(identity_of(merged))
    if in_cluster:
        in_cluster_identity = _in_cluster_identity(env, service_account_dir)
        if in_cluster_identity is not None:
            clusters[None] = in_cluster_identity
    return ClusterTarget(
        server=server.rstrip("/"),
        namespace=namespace,
        namespace_from=namespace_from,
        in_cluster=False,
        context=name,
        cluster=cluster_name,
        user=user_name if user is not None else None,
        all_namespaces=options.all_namespaces,
        selector=options.selector,
        read_only=options.read_only,
        field_selector=options.field_selector,
        files=tuple(merged.files),
        kubeconfig=single,
        service_account_dir=service_account_dir,
        proxy_env=_proxy_env(env),
        clusters=clusters,
    )
