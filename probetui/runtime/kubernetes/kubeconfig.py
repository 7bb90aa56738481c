"""Read the kubeconfig files as client-go does (`tools/clientcmd/loader.go`).

`KubeconfigError` is the one error of setting up a connection.

- Files: `--kubeconfig PATH` alone (it must exist); else every file in `KUBECONFIG` (split on
  `os.pathsep`, duplicates dropped, missing files skipped); else `~/.kube/config`.
- Merge: for clusters, users and contexts the first file that defines a name wins, whole entry
  and all (nothing from a later file's entry of the same name is kept). `current-context`
  comes from the first file that sets it to something non-empty. A name defined twice in one
  file is an error, as in client-go's conversion.
- Relative paths (`certificate-authority`, `client-certificate`, `client-key`, `tokenFile`,
  and `exec.command` when it contains a path separator) are resolved against the directory of
  the file that defined the entry.

kubernetes-asyncio's own merger differs: it lets the *last* file set `current-context`, and
resolves relative paths against the first file; hence this one.

A cluster's identity (`ClusterIdentity`), for a lock that must hold for a cluster whatever its
context is called: the certificates its CA data or CA file holds, and its server's
`scheme://host:port`. No network is touched: nothing is resolved through DNS.
"""

from __future__ import annotations

import base64
import binascii
import copy
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from probetui.runtime.base import RuntimeFailure
from probetui.runtime.kubernetes.transport import server_address
from probetui.spec import yaml_safe

__all__ = [
    "FIX_VIEW",
    "ClusterIdentity",
    "KubeconfigError",
    "Merged",
    "cluster_identity",
    "identity_of",
    "kubeconfig_files",
    "merge",
    "one_line",
]

_SECTIONS = (("clusters", "cluster"), ("users", "user"), ("contexts", "context"))
# the advice that ends an error about what a kubeconfig says
FIX_VIEW = "`kubectl config view` shows what kubectl makes of it"
# Go's pem.Decode as x509.CertPool.AppendCertsFromPEM uses it: CERTIFICATE blocks only
_PEM_CERTIFICATE = re.compile(
    rb"-----BEGIN CERTIFICATE-----\s*(.*?)\s*-----END CERTIFICATE-----", re.DOTALL
)
# a CA file larger than this is read only this far (a system bundle is a few hundred KiB)
MAX_CA_BYTES = 4 * 1024 * 1024


class KubeconfigError(RuntimeFailure):
    """Signals that the cluster connection cannot be set up; one line naming the problem and
    the fix."""


def one_line(error: object) -> str:
    """Return an error's text, or a parser's, on one line, as every KubeconfigError is."""
    return " ".join(str(error).split())


def kubeconfig_files(flag: str | None, environ: Mapping[str, str]) -> list[str]:
    """Return the files to read, in order: the --kubeconfig `flag`, else KUBECONFIG, else the
    default."""
    if flag:
        path = os.path.expanduser(flag)
        if not os.path.exists(path):
            raise KubeconfigError(f"kubeconfig {flag} not found (check the --kubeconfig path)")
        return [path]
    listed = environ.get("KUBECONFIG", "")
    if listed:
        # client-go: filepath.SplitList, then deduplicate keeping the first
        return list(dict.fromkeys(p for p in listed.split(os.pathsep) if p))
    home = environ.get("HOME") or os.path.expanduser("~")
    return [os.path.join(home, ".kube", "config")]


def _read_file(path: str) -> dict[str, Any] | None:
    """Return one kubeconfig file as a mapping; None when it does not exist."""
    try:
        text = yaml_safe.read_text(path, encoding="utf-8")
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
    except yaml_safe.TextError as e:
        raise KubeconfigError(f"kubeconfig {path}: {e}") from None
    try:
        data = yaml_safe.load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f", line {mark.line + 1}" if mark is not None else ""
        problem = e.problem or e.context or "cannot parse"
        raise KubeconfigError(
            f"kubeconfig {path}{where}: invalid YAML: {one_line(problem)} (fix the file; "
            f"{FIX_VIEW})"
        ) from None
    except yaml.YAMLError as e:
        raise KubeconfigError(f"kubeconfig {path}: invalid YAML: {one_line(e)}") from None
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
class Merged:
    """Holds what the files define together: entries by name, the current context, the
    files read."""

    clusters: dict[str, dict] = field(default_factory=dict)
    users: dict[str, dict] = field(default_factory=dict)
    contexts: dict[str, dict] = field(default_factory=dict)
    current_context: str = ""
    files: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.clusters or self.users or self.contexts or self.current_context)


def merge(paths: list[str]) -> Merged:
    """Return the files in order, merged as client-go merges them; missing files are skipped."""
    merged = Merged()
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


@dataclass(frozen=True, slots=True)
class ClusterIdentity:
    """Holds what tells one cluster from another where a context's name cannot.

    `anchors`: the DER bytes of each certificate of the cluster's CA data or CA file, empty
    where the cluster has none of its own: no `certificate-authority(-data)` (the system's
    roots), `insecure-skip-tls-verify`, an http server, or a CA that cannot be read.
    `address`: the server's `scheme://host:port`, the default port written out.
    """

    address: str
    anchors: frozenset[bytes] = frozenset()

    @property
    def has_ca(self) -> bool:
        return bool(self.anchors)

    def same_cluster(self, other: ClusterIdentity) -> bool:
        """The same server address, or a CA certificate in common: trust in one is trust in
        the other."""
        return self.address == other.address or bool(self.anchors & other.anchors)


def _certificates(pem: bytes) -> frozenset[bytes]:
    out = set()
    for block in _PEM_CERTIFICATE.findall(pem):
        try:
            out.add(base64.b64decode(b"".join(block.split()), validate=True))
        except (binascii.Error, ValueError):
            continue
    return frozenset(out)


def _ca_bytes(cluster: Mapping[str, Any]) -> bytes:
    data = cluster.get("certificate-authority-data")
    if isinstance(data, str) and data:
        try:
            return base64.b64decode(data)
        except (binascii.Error, ValueError):
            return b""
    path = cluster.get("certificate-authority")
    if isinstance(path, str) and path:
        try:
            with open(path, "rb") as f:
                return f.read(MAX_CA_BYTES)
        except OSError:
            return b""
    return b""


def cluster_identity(cluster: Mapping[str, Any]) -> ClusterIdentity | None:
    """Return the identity of one `cluster` entry (paths already resolved); None without a
    server."""
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        return None
    try:
        address = server_address(server)
    except ValueError:
        return None
    verified = (
        address.startswith("https://") and cluster.get("insecure-skip-tls-verify") is not True
    )
    anchors = _certificates(_ca_bytes(cluster)) if verified else frozenset()
    return ClusterIdentity(address, anchors)


def identity_of(merged: Merged) -> dict[str, ClusterIdentity]:
    """Return every context of the merged files, by name, to its cluster's identity (contexts whose
    cluster is missing or has no server are left out)."""
    out: dict[str, ClusterIdentity] = {}
    for name, context in merged.contexts.items():
        cluster_name = context.get("cluster")
        cluster = merged.clusters.get(cluster_name) if isinstance(cluster_name, str) else None
        identity = cluster_identity(cluster) if cluster is not None else None
        if identity is not None:
            out[name] = identity
    return out
