"""Find the node agents as the cluster view sees them: which pod serves which node, and the token.

A reader does not trust a pod because of its name. The agents' namespace (`probetui`, or
`--agent-namespace`) is watched for pods labelled as agents, and each is checked before it is
used (`check_agent`): in that namespace, with both labels, controlled (`ownerReferences`,
`controller: true`) by the DaemonSet `probetui-agent`, not being deleted, Running and Ready,
placed on a node. The one that passes on a node serves it (the newest where a rolling update
has two). Only those pods' read paths are admitted into the target's `AgentReadPaths`, the
registry the read-only guard consults (`guard.py`): the one pods/proxy request read-only sends.

The read token comes from one plain GET of the Secret `probetui-agent-read`; it is kept in
memory, sent only in the `X-Probetui-Token` header of a request to an admitted agent, and never
logged or shown. `AgentDirectory` is the pod watch's handler; `read_token` the GET.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probetui.agent.manifest import LABELS, NAME, NAMESPACE, PORT, SECRET
from probetui.runtime.kubernetes.guard import AgentReadPaths
from probetui.runtime.kubernetes.reflector import DELETED, ApiStatusError, describe

log = logging.getLogger(__name__)

AGENT_NAMESPACE = NAMESPACE
AGENT_DAEMONSET = NAME
READ_SECRET = SECRET
AGENT_SELECTOR = ",".join(f"{k}={v}" for k, v in LABELS.items())
# the container port the manifest names for the stream; the default where none is named
STREAM_PORT_NAME = "stream"
TOKEN_TIMEOUT = 10.0
READER_FIX = (
    "bind the probetui-reader Role of `probetui agent --print-manifest` to this user in "
    "namespace {ns}"
)
# what the view says of an exec probe of an agent-covered pod, and the agent of its own
EXEC_NOT_RUN = (
    "not run: an exec probe runs its command in the container, which needs pods/exec or the "
    "node's CRI socket, and the agent is given neither; the kubelet's own counts of it are in "
    "the counts frames"
)


class AgentProblem(Exception):
    """Signals that the agents cannot be used: one line naming what and the fix. `lasting`:
    asking again will not help (a refusal, a missing Secret), where a fault of the moment
    may pass."""

    def __init__(self, text: str, lasting: bool = True) -> None:
        super().__init__(text)
        self.lasting = lasting


@dataclass(frozen=True, slots=True)
class AgentPod:
    """Describes an agent pod that passed the checks."""

    namespace: str
    name: str
    uid: str
    node: str
    port: int
    created: str  # creationTimestamp (RFC 3339 sorts as text)

    @property
    def proxy_name(self) -> str:
        """Return the pods/proxy name: `NAME:PORT`."""
        return f"{self.name}:{self.port}"


def _ready(status: dict[str, Any]) -> bool:
    for cond in status.get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _controlled_by_daemonset(meta: dict[str, Any]) -> bool:
    for ref in meta.get("ownerReferences") or ():
        if (
            isinstance(ref, dict)
            and ref.get("controller") is True
            and ref.get("kind") == "DaemonSet"
            and ref.get("name") == AGENT_DAEMONSET
            and str(ref.get("apiVersion", "")).startswith("apps/")
        ):
            return True
    return False


def _stream_port(spec: dict[str, Any]) -> int:
    for c in spec.get("containers") or ():
        for port in (c.get("ports") or ()) if isinstance(c, dict) else ():
            if isinstance(port, dict) and port.get("name") == STREAM_PORT_NAME:
                value = port.get("containerPort")
                if isinstance(value, int) and 0 < value < 65536:
                    return value
    return PORT


def check_agent(obj: dict[str, Any], namespace: str) -> tuple[AgentPod | None, str]:
    """Return the agent pod `obj` is, or None and why it is not one to read (a few words)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    name = str(meta.get("name") or "")
    if meta.get("namespace") != namespace:
        return None, f"not in namespace {namespace}"
    labels = meta.get("labels") or {}
    if any(labels.get(k) != v for k, v in LABELS.items()):
        return None, f"not labelled {AGENT_SELECTOR}"
    if not _controlled_by_daemonset(meta):
        return None, f"not controlled by the DaemonSet {AGENT_DAEMONSET}"
    if meta.get("deletionTimestamp"):
        return None, "being deleted"
    node = spec.get("nodeName")
    if not isinstance(node, str) or not node:
        return None, "not placed on a node yet"
    if status.get("phase") != "Running":
        return None, f"{status.get('phase') or 'Pending'}, not Running"
    if not _ready(status):
        return None, "not Ready"
    pod = AgentPod(
        namespace=namespace,
        name=name,
        uid=str(meta.get("uid") or ""),
        node=node,
        port=_stream_port(spec),
        created=str(meta.get("creationTimestamp") or ""),
    )
    return pod, ""


class AgentDirectory:
    """Keeps the agent pods of one namespace, checked, by node: the agent pod watch's handler.

    `on_change(node)` is told each time the agent serving a node changes (another pod, or none).
    """

    def __init__(
        self,
        namespace: str,
        paths: AgentReadPaths,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        self.namespace = namespace
        self.paths = paths
        self.on_change = on_change
        self._pods: dict[str, AgentPod] = {}  # by pod name: every pod that passes
        self.rejected: dict[str, str] = {}  # pod name -> why it is not used
        self.by_node: dict[str, AgentPod] = {}

    def on_pod(self, kind: str, obj: dict[str, Any]) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if kind == DELETED:
            self._pods.pop(name, None)
            self.rejected.pop(name, None)
        else:
            pod, why = check_agent(obj, self.namespace)
            if pod is None:
                self._pods.pop(name, None)
                self.rejected[name] = why
            else:
                self._pods[name] = pod
                self.rejected.pop(name, None)
        self._settle()

    def _settle(self) -> None:
        chosen: dict[str, AgentPod] = {}
        for pod in self._pods.values():
            held = chosen.get(pod.node)
            if held is None or (pod.created, pod.name) > (held.created, held.name):
                chosen[pod.node] = pod
        before = self.by_node
        self.by_node = chosen
        for name in {p.name for p in before.values()} - {p.name for p in chosen.values()}:
            self.paths.revoke(self.namespace, name)
        for pod in chosen.values():
            self.paths.admit(self.namespace, pod.name, pod.port)
        if self.on_change is not None:
            for node in set(before) | set(chosen):
                if before.get(node) != chosen.get(node):
                    self.on_change(node)

    def of(self, node: str) -> AgentPod | None:
        return self.by_node.get(node)

    def why_not(self, node: str) -> str:
        """Say why no agent serves `node`, in a few words."""
        return f"no Ready agent pod of the DaemonSet {AGENT_DAEMONSET} on node {node}"


async def read_token(core: Any, namespace: str) -> str:
    """Return the read token from the Secret (a plain GET); AgentProblem says what stopped it."""
    try:
        resp = await core.read_namespaced_secret(
            READ_SECRET, namespace, _preload_content=False, _request_timeout=TOKEN_TIMEOUT
        )
        try:
            body = await resp.read()
            status = resp.status
        finally:
            resp.release()
    except Exception as e:
        raise AgentProblem(
            f"cannot read the agents' read token (secrets/{READ_SECRET} in namespace "
            f"{namespace}): {describe(e)}",
            lasting=False,
        ) from None
    where = f"secrets/{READ_SECRET} in namespace {namespace}"
    if status == 403:
        raise AgentProblem(f"forbidden to get {where}: {READER_FIX.format(ns=namespace)}")
    if status == 404:
        raise AgentProblem(
            f"no {where}: install the agents with `probetui agent --print-manifest | kubectl "
            "apply -f -`"
        )
    if status != 200:
        raise AgentProblem(f"cannot read {where}: HTTP {status}", lasting=status in (401, 400))
    try:
        doc = json.loads(body)
        raw = (doc.get("data") or {}).get("token") or ""
        token = base64.b64decode(raw, validate=True).decode("utf-8").strip()
    except (ValueError, AttributeError, binascii.Error, UnicodeDecodeError):
        token = ""
    if not token:
        raise AgentProblem(
            f"{where} holds no token: apply the manifest of `probetui agent --print-manifest` again"
        )
    return token


def list_problem(e: BaseException, namespace: str) -> AgentProblem:
    """Tell what a failed list of the agent pods means, and the fix."""
    lasting = isinstance(e, ApiStatusError) and e.status in (401, 403, 404)
    if isinstance(e, ApiStatusError) and e.status == 403:
        return AgentProblem(
            f"forbidden to list pods in namespace {namespace}: {READER_FIX.format(ns=namespace)}",
            lasting,
        )
    return AgentProblem(
        f"cannot list the agent pods in namespace {namespace}: {describe(e)}", lasting
    )


__all__ = [
    "AGENT_DAEMONSET",
    "AGENT_NAMESPACE",
    "AGENT_SELECTOR",
    "EXEC_NOT_RUN",
    "READ_SECRET",
    "AgentDirectory",
    "AgentPod",
    "AgentProblem",
    "check_agent",
    "list_problem",
    "read_token",
]
