"""Connect the way kubectl does: kubeconfig files, context, namespace, in-cluster.

The loading rules are client-go's (`tools/clientcmd/loader.go`, `merged_client_builder.go`,
`client_config.go`), reproduced here because kubernetes-asyncio's own merger differs: it lets
the *last* file set `current-context`, and resolves relative paths against the first file.

- Files: `--kubeconfig PATH` alone (it must exist); else every file in `KUBECONFIG` (split on
  `os.pathsep`, duplicates dropped, missing files skipped); else `~/.kube/config`.
- Merge: for clusters, users and contexts the first file that defines a name wins, whole entry
  and all (nothing from a later file's entry of the same name is kept). `current-context`
  comes from the first file that sets it to something non-empty. A name defined twice in one
  file is an error, as in client-go's conversion.
- Relative paths (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`,
  and `exec.command` when it contains a path separator) are resolved against the directory of
  the file that defined the entry.
- Namespace: `-n`, else the context's, else (where in-cluster config is possible) `POD_NAMESPACE`
  or the service account's namespace file, else `default`.
- In-cluster: used when no kubeconfig gives anything to use and `--context` is not given, and
  `KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT` and the service-account token exist.

The chosen context, cluster and user are handed to kubernetes-asyncio as one small dict with
absolute paths (`KubeConfigLoader` with no persister): nothing is ever written to a kubeconfig.
Exec credential plugins are run here, with a time limit, and their answer replaces `exec` in
that dict; they run again when the answer expires or is refused, and token files are read
again, as client-go does (`credentials.py`). Every client's connections are made the same way
(`transport.py`): one TLS context as Go verifies, `tls-server-name`, `proxy-url` or the proxy
environment. Every error is one line naming the problem and the fix.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader
from kubernetes_asyncio.config.kube_config import KubeConfigLoader
from kubernetes_asyncio.stream import WsApiClient

from probetui.runtime.base import RuntimeFailure
from probetui.runtime.kubernetes import transport
from probetui.runtime.kubernetes.credentials import (
    Credential,
    ExecTokenSource,
    FileTokenSource,
    TokenSource,
    refresh_hook,
)
from probetui.runtime.kubernetes.guard import install_read_only_guard

__all__ = [
    "CREDENTIAL_TIMEOUT",
    "SERVICE_ACCOUNT_DIR",
    "ClusterTarget",
    "ConnectOptions",
    "KubeconfigError",
    "resolve",
]

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# how long an exec credential plugin may take (it may be waiting on an SSO login)
CREDENTIAL_TIMEOUT = 60.0
_MAX_CREDENTIAL_BYTES = 1 << 20
_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
_FIX_VIEW = "`kubectl config view` shows what kubectl makes of it"
# what Go's http.ProxyFromEnvironment reads
_PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")
# where a cluster entry keeps per-cluster data for its exec plugin (spec.cluster.config)
_EXEC_EXTENSION = "client.authentication.k8s.io/exec"


class KubeconfigError(RuntimeFailure):
    """The cluster connection cannot be set up; one line naming the problem and the fix."""


@dataclass(frozen=True, slots=True)
class ConnectOptions:
    """The command line's connection flags, as given."""

    kubeconfig: str | None = None  # --kubeconfig
    context: str | None = None  # --context
    namespace: str | None = None  # -n / --namespace
    all_namespaces: bool = False  # -A
    selector: str | None = None  # -l / --selector
    read_only: bool = False  # --read-only


@dataclass(frozen=True, slots=True)
class ClusterTarget:
    """Where and as whom to connect, resolved; no network has been touched yet."""

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
    # the kubeconfig files that were read, in order
    files: tuple[str, ...] = ()
    # one context, its cluster and user, paths absolute: what the library is given
    kubeconfig: Mapping[str, Any] | None = field(default=None, repr=False)
    service_account_dir: Path = SERVICE_ACCOUNT_DIR
    # KUBERNETES_SERVICE_HOST/PORT as seen at resolve time (in-cluster only)
    service_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # HTTPS_PROXY, NO_PROXY, ... as seen at resolve time
    proxy_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # the one token source every client of this target shares (client-go caches its
    # authenticators per user the same way): one plugin run serves list, watch and streams
    _auth: _AuthCache = field(default_factory=lambda: _AuthCache(), repr=False, compare=False)

    def _what(self) -> str:
        return "in-cluster config" if self.in_cluster else f'context "{self.context}"'

    @property
    def source(self) -> str:
        """For the header: `context/namespace` (`in-cluster/...`; `*` for all namespaces)."""
        where = self.context if self.context is not None else "in-cluster"
        return f"{where}/{'*' if self.all_namespaces else self.namespace}"

    @property
    def token_source(self) -> TokenSource | None:
        """Where this target's bearer token comes from, once a client has been made."""
        return self._auth.source

    async def client_configuration(self) -> Configuration:
        """A kubernetes-asyncio Configuration for this target (runs exec credential plugins).

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
                    f"in-cluster config: {_one_line(e)} (check the pod's service account mount "
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
                    return await _exec_credential(name, entry, cluster)

                exec_source = self._auth.exec = ExecTokenSource(run, await run())
            kubeconfig["users"][0]["user"] = _with_credential(user, exec_source.current)
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
                f'context "{self.context}": {_one_line(e)} (fix the kubeconfig entry; {_FIX_VIEW})'
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

    async def api_client(self, *, websocket: bool = False) -> ApiClient:
        """A client for this target; with `--read-only` the guard is installed before return.

        Every API client of the cluster source comes from here, so none escapes the guard.
        `websocket` gives the `WsApiClient` that exec and port-forward use.
        """
        configuration = await self.client_configuration()
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
                f"{self._what()}: cannot load the TLS certificates: {_one_line(e)} (fix "
                f"certificate-authority, client-certificate and client-key; {_FIX_VIEW})"
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
            install_read_only_guard(client)
        return client


@dataclass(slots=True)
class _AuthCache:
    exec: ExecTokenSource | None = None
    source: TokenSource | None = None


def _one_line(error: object) -> str:
    return " ".join(str(error).split())


# --- exec credential plugins ------------------------------------------------------------------


async def _exec_credential(
    user_name: str | None, user: Mapping[str, Any], cluster: Mapping[str, Any]
) -> Credential:
    """Run the user's exec credential plugin once; its answer.

    Run here rather than by kubernetes-asyncio, whose runner has no time limit and cannot be
    cancelled without leaving the child behind. As kubectl does, the plugin's stderr goes to the
    terminal (login prompts and URLs appear there) and `KUBERNETES_EXEC_INFO` describes the call;
    it runs non-interactively, with stdin closed.
    """
    spec: Mapping[str, Any] = user["exec"]
    who = f'user "{user_name}"'
    command = spec.get("command")
    if not isinstance(command, str) or not command:
        raise KubeconfigError(f"{who}: exec has no command (set users[].user.exec.command)")
    args = [str(a) for a in spec.get("args") or ()]
    env = dict(os.environ)
    for item in spec.get("env") or ():
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            env[item["name"]] = str(item.get("value", ""))
    api_version = str(spec.get("apiVersion") or "client.authentication.k8s.io/v1")
    info: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = _exec_cluster(who, cluster)
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    try:
        proc = await asyncio.create_subprocess_exec(
            command,
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            env=env,
        )
    except OSError as e:
        reason = "not found" if isinstance(e, FileNotFoundError) else (e.strerror or str(e))
        raise KubeconfigError(
            f"{who}: cannot run the credential plugin {command}: {reason} (install it or fix "
            f"users[].user.exec.command; {_FIX_VIEW})"
        ) from None
    try:
        stdout, _ = await asyncio.wait_for(proc.communicate(), CREDENTIAL_TIMEOUT)
    except TimeoutError:
        raise KubeconfigError(
            f"{who}: the credential plugin {command} gave no answer within "
            f"{CREDENTIAL_TIMEOUT:g} s (run it by hand to log in, then retry)"
        ) from None
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    if proc.returncode != 0:
        raise KubeconfigError(
            f"{who}: the credential plugin {command} exited with status {proc.returncode} "
            "(its own message is above)"
        )
    try:
        status = json.loads(stdout[:_MAX_CREDENTIAL_BYTES]).get("status") or {}
    except (ValueError, AttributeError):
        status = None
    if not isinstance(status, dict):
        raise KubeconfigError(
            f"{who}: the credential plugin {command} printed no ExecCredential JSON"
        )
    try:
        expires = _expiration(status.get("expirationTimestamp"))
    except ValueError:
        raise KubeconfigError(
            f"{who}: the credential plugin {command} gave an expirationTimestamp that is not "
            f"an RFC 3339 time: {status.get('expirationTimestamp')!r}"
        ) from None
    if isinstance(status.get("token"), str) and status["token"]:
        return Credential(token=status["token"], expires=expires)
    if isinstance(status.get("clientCertificateData"), str) and isinstance(
        status.get("clientKeyData"), str
    ):
        return Credential(
            cert_pem=status["clientCertificateData"],
            key_pem=status["clientKeyData"],
            expires=expires,
        )
    raise KubeconfigError(
        f"{who}: the credential plugin {command} returned neither a token nor a client "
        "certificate and key"
    )


def _expiration(value: object) -> float | None:
    """status.expirationTimestamp as a time.time() value; None if absent. Raises ValueError."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(value)
    when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def _exec_cluster(who: str, cluster: Mapping[str, Any]) -> dict[str, Any]:
    """spec.cluster for KUBERNETES_EXEC_INFO, as client-go's `ConfigToExecCluster` fills it.

    The CA goes in as data even when the kubeconfig names a file: the plugin gets the bytes,
    base64-encoded as a kubeconfig holds them.
    """
    out: dict[str, Any] = {
        k: cluster[k]
        for k in ("server", "tls-server-name", "insecure-skip-tls-verify", "proxy-url")
        if k in cluster
    }
    if cluster.get("certificate-authority-data"):
        out["certificate-authority-data"] = cluster["certificate-authority-data"]
    elif isinstance(cluster.get("certificate-authority"), str) and cluster["certificate-authority"]:
        path = cluster["certificate-authority"]
        try:
            out["certificate-authority-data"] = base64.b64encode(Path(path).read_bytes()).decode()
        except OSError as e:
            raise KubeconfigError(
                f"{who}: cannot read the certificate-authority {path} for the credential "
                f"plugin: {e.strerror or e} (fix clusters[].cluster.certificate-authority)"
            ) from None
    if cluster.get("disable-compression"):
        out["disable-compression"] = True
    for item in cluster.get("extensions") or ():
        if isinstance(item, dict) and item.get("name") == _EXEC_EXTENSION:
            out["config"] = item.get("extension")
    return out


def _with_credential(user: Mapping[str, Any], credential: Credential) -> dict[str, Any]:
    """The user entry with the plugin's answer in place of `exec`."""
    answer = {k: v for k, v in user.items() if k != "exec"}
    if credential.token:
        answer["token"] = credential.token
    else:
        # the library takes *-data keys base64-encoded, as a kubeconfig holds them
        answer["client-certificate-data"] = _b64(credential.cert_pem or "")
        answer["client-key-data"] = _b64(credential.key_pem or "")
    return answer


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


# --- reading files ----------------------------------------------------------------------------


def _kubeconfig_files(options: ConnectOptions, environ: Mapping[str, str]) -> list[str]:
    if options.kubeconfig:
        path = os.path.expanduser(options.kubeconfig)
        if not os.path.exists(path):
            raise KubeconfigError(
                f"kubeconfig {options.kubeconfig} not found (check the --kubeconfig path)"
            )
        return [path]
    listed = environ.get("KUBECONFIG", "")
    if listed:
        # client-go: filepath.SplitList, then deduplicate keeping the first
        return list(dict.fromkeys(p for p in listed.split(os.pathsep) if p))
    home = environ.get("HOME") or os.path.expanduser("~")
    return [os.path.join(home, ".kube", "config")]


def _read_file(path: str) -> dict[str, Any] | None:
    """One kubeconfig file as a mapping; None when it does not exist."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise KubeconfigError(
            f"kubeconfig {path} is a directory (point --kubeconfig or KUBECONFIG at a file)"
        ) from None
    except PermissionError:
        raise KubeconfigError(
            f"cannot read kubeconfig {path}: permission denied (fix its permissions, or point "
            "--kubeconfig or KUBECONFIG elsewhere)"
        ) from None
    except OSError as e:
        raise KubeconfigError(
            f"cannot read kubeconfig {path}: {e.strerror or e} (point --kubeconfig or "
            "KUBECONFIG elsewhere)"
        ) from None
    except UnicodeDecodeError as e:
        raise KubeconfigError(f"kubeconfig {path} is not UTF-8 text: {e.reason}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = e.problem or e.context or "cannot parse"
        raise KubeconfigError(
            f"kubeconfig {path}{where}: invalid YAML: {_one_line(problem)} (fix the file; "
            f"{_FIX_VIEW})"
        ) from None
    except yaml.YAMLError as e:
        raise KubeconfigError(f"kubeconfig {path}: invalid YAML: {_one_line(e)}") from None
    if data is None:
        return {}  # client-go: an empty file is an empty config
    if not isinstance(data, dict):
        raise KubeconfigError(
            f"kubeconfig {path} is not a kubeconfig: expected a mapping with clusters, users "
            f"and contexts, got a {type(data).__name__}"
        )
    return data


def _entries(path: str, data: Mapping[str, Any], section: str, inner: str) -> dict[str, dict]:
    """`clusters` / `users` / `contexts` of one file, by name, with paths resolved."""
    items = data.get(section)
    if items is None:
        return {}
    if not isinstance(items, list):
        raise KubeconfigError(
            f"kubeconfig {path}: {section} must be a list of {{name: ..., {inner}: ...}}"
        )
    base = os.path.dirname(os.path.abspath(path))
    out: dict[str, dict] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise KubeconfigError(f"kubeconfig {path}: {section}[{i}] needs a name")
        name = item["name"]
        if name in out:
            raise KubeconfigError(
                f'kubeconfig {path}: {section} has "{name}" twice (keep one; kubectl refuses '
                "this file too)"
            )
        body = item.get(inner) or {}
        if not isinstance(body, dict):
            raise KubeconfigError(
                f'kubeconfig {path}: {section} "{name}": {inner} must be a mapping'
            )
        out[name] = _resolve_paths(section, copy.deepcopy(body), base)
    return out


def _resolve_paths(section: str, body: dict[str, Any], base: str) -> dict[str, Any]:
    """client-go's `ResolveLocalPaths`: relative file references against the file's folder."""
    keys = {
        "clusters": ("certificate-authority",),
        "users": ("client-certificate", "client-key", "tokenFile"),
    }.get(section, ())
    for key in keys:
        value = body.get(key)
        if isinstance(value, str) and value and not os.path.isabs(value):
            body[key] = _join(base, value)
    exec_ = body.get("exec") if section == "users" else None
    if isinstance(exec_, dict):
        command = exec_.get("command")
        # a bare name is looked up on PATH; only a path with a separator is file-relative
        if isinstance(command, str) and os.sep in command and not os.path.isabs(command):
            exec_["command"] = _join(base, command)
    return body


def _join(base: str, path: str) -> str:
    # Go's filepath.Join cleans the result: "./x" and "a/../x" come out plain
    return os.path.normpath(os.path.join(base, path))


@dataclass(slots=True)
class _Merged:
    clusters: dict[str, dict] = field(default_factory=dict)
    users: dict[str, dict] = field(default_factory=dict)
    contexts: dict[str, dict] = field(default_factory=dict)
    current_context: str = ""
    files: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.clusters or self.users or self.contexts or self.current_context)


def _merge(paths: list[str]) -> _Merged:
    merged = _Merged()
    for path in paths:
        data = _read_file(path)
        if data is None:
            continue  # client-go skips missing files (a warning only)
        merged.files.append(path)
        for section, inner in _SECTIONS:
            target: dict[str, dict] = getattr(merged, section)
            for name, body in _entries(path, data, section, inner).items():
                target.setdefault(name, body)  # the first file to define a name wins
        current = data.get("current-context")
        if not merged.current_context and isinstance(current, str) and current:
            merged.current_context = current
    return merged


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


def _join_host_port(host: str, port: str) -> str:
    return f"[{host}]:{port}" if ":" in host or "%" in host else f"{host}:{port}"


def _in_cluster_target(
    options: ConnectOptions, environ: Mapping[str, str], sa_dir: Path
) -> ClusterTarget:
    host = environ["KUBERNETES_SERVICE_HOST"]
    port = environ["KUBERNETES_SERVICE_PORT"]
    if options.namespace:
        namespace, namespace_from = options.namespace, "--namespace"
    else:
        namespace, namespace_from = _in_cluster_namespace(environ, sa_dir)
    return ClusterTarget(
        server=f"https://{_join_host_port(host, port)}",
        namespace=namespace,
        namespace_from=namespace_from,
        in_cluster=True,
        all_namespaces=options.all_namespaces,
        selector=options.selector,
        read_only=options.read_only,
        service_account_dir=sa_dir,
        service_env={"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port},
        proxy_env=_proxy_env(environ),
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
    """The cluster, user and namespace to use, as kubectl would pick them.

    `environ` (default `os.environ`) and `service_account_dir` are injectable for tests.
    Raises KubeconfigError.
    """
    env = os.environ if environ is None else environ
    paths = _kubeconfig_files(options, env)
    merged = _merge(paths)
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
        files=tuple(merged.files),
        kubeconfig=single,
        service_account_dir=service_account_dir,
        proxy_env=_proxy_env(env),
    )
