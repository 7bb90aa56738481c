"""Run a kubeconfig user's exec credential plugin once and read its ExecCredential.

It does what client-go's exec authenticator does (`plugin/pkg/client/auth/exec/exec.go`).

Run here rather than by kubernetes-asyncio, whose runner has no time limit and cannot be
cancelled without leaving the child behind. When to run it again (on expiry, after a 401) is
`credentials.py`'s; `with_credential` puts an answer in the user entry the library is given.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probetui.runtime.kubernetes.credentials import Credential
from probetui.runtime.kubernetes.kubeconfig import FIX_VIEW, KubeconfigError

__all__ = ["exec_credential", "with_credential"]

_MAX_CREDENTIAL_BYTES = 1 << 20
# where a cluster entry keeps per-cluster data for its exec plugin (spec.cluster.config)
_EXEC_EXTENSION = "client.authentication.k8s.io/exec"


async def exec_credential(
    user_name: str | None, user: Mapping[str, Any], cluster: Mapping[str, Any], timeout: float
) -> Credential:
    """Run the user's exec credential plugin once, for at most `timeout` seconds; its answer.

    As kubectl does, the plugin's stderr goes to the terminal (login prompts and URLs appear
    there) and `KUBERNETES_EXEC_INFO` describes the call; it runs non-interactively, with stdin
    closed.
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
            f"users[].user.exec.command; {FIX_VIEW})"
        ) from None
    try:
        stdout, _ = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        raise KubeconfigError(
            f"{who}: the credential plugin {command} gave no answer within "
            f"{timeout:g} s (run it by hand to log in, then retry)"
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


def with_credential(user: Mapping[str, Any], credential: Credential) -> dict[str, Any]:
    """Return the user entry with the plugin's answer in place of `exec`."""
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
