"""`probetui agent --print-manifest` writes everything a cluster needs to run the agents, as YAML.

The objects, in the order `kubectl apply -f` needs them:

- the Namespace, labelled `pod-security.kubernetes.io/enforce: privileged` (the agent's pods use
  `hostNetwork`, which the baseline and restricted levels refuse);
- the ServiceAccount `probetui-agent` and its ClusterRole and ClusterRoleBinding: get, list and
  watch on pods (its node's, by a field selector) and get on nodes/metrics (the kubelet's
  `/metrics/probes`). Nothing else, and never nodes/proxy, which would let it exec in every pod
  of the node through the kubelet;
- the Secret `probetui-agent-read` with a read token made here (32 random bytes, URL-safe
  base64): the agent wants it in `X-Probetui-Token`, since the API server's pods/proxy carries no
  identity of the reader (docs/agents.md). Applying the manifest again rotates it;
- the Role `probetui-reader` that lets a reader through: get, list and watch on pods and get on
  pods/proxy in this namespace (the agents' pods only), get on that one Secret; and a commented
  RoleBinding to bind it (with the built-in `view` ClusterRole) to a user or group;
- the Role `probetui-prober`: create on pods/proxy in this namespace, the POST that asks an
  agent to probe now (the UI's `t`); bound apart, to whoever may trigger probes;
- the PriorityClass `probetui-agent`: above ordinary pods, so a node under memory pressure evicts
  them first, and `preemptionPolicy: Never`, so an observer never evicts a workload to make room
  for itself. Not `system-node-critical`: that is for what a node cannot run without, and some
  clusters admit it in kube-system only;
- the DaemonSet: every node (tolerates every taint), `hostNetwork` (its probes leave from the
  node's address, as the kubelet's do, and it serves on the node's IP), non-root (UID 65532: a
  TCP connect needs no privilege, nor does listening above 1024), no capabilities, no privilege
  escalation, a read-only root filesystem, its own liveness probe on `/healthz` and readiness
  probe on `/readyz`, `NODE_NAME` and
  `NODE_IP` from the downward API, the token Secret mounted read-only.
"""

from __future__ import annotations

import secrets
from typing import Any

import yaml

from probetui import __version__

NAMESPACE = "probetui"
NAME = "probetui-agent"
SECRET = "probetui-agent-read"
READER_ROLE = "probetui-reader"
PROBER_ROLE = "probetui-prober"
IMAGE = f"docker.io/probetui/agent:{__version__}"
PORT = 9479
UID = 65532
TOKEN_DIR = "/var/run/probetui"
TOKEN_FILE = f"{TOKEN_DIR}/token"
# the header a reader sends the read token in (the API server's proxy carries no identity)
TOKEN_HEADER = "X-Probetui-Token"
LABELS = {"app.kubernetes.io/name": "probetui", "app.kubernetes.io/component": "agent"}
PRIORITY = 1_000_000
# the requests hold benchmarks/agents.py's node (110 pods, three probes each at period 10 s,
# one reader) with room; the CPU limit is high because a throttled prober runs its
# probes late (a reader's replay of the hour is a burst), the memory limit holds a full ring
# and every reader's buffer
REQUESTS = {"cpu": "100m", "memory": "160Mi"}
LIMITS = {"cpu": "500m", "memory": "256Mi"}

# what the agent's ServiceAccount may do, and a reader; tests hold the manifest to these
AGENT_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
]


def reader_rules(secret: str = SECRET) -> list[dict[str, Any]]:
    return [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [secret], "verbs": ["get"]},
    ]


# probe now through an agent: a POST of pods/proxy, which RBAC checks as create
PROBER_RULES: list[dict[str, Any]] = [
    {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["create"]},
]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def objects(namespace: str = NAMESPACE, image: str = IMAGE, token: str | None = None) -> list[dict]:
    """Return the manifest's objects, in apply order."""
    token = token or new_token()
    meta = {"namespace": namespace, "labels": dict(LABELS)}
    container = {
        "name": "agent",
        "image": image,
        "args": ["agent", "--port", str(PORT), "--token-file", TOKEN_FILE],
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        ],
        "ports": [{"name": "stream", "containerPort": PORT, "protocol": "TCP"}],
        "resources": {"requests": dict(REQUESTS), "limits": dict(LIMITS)},
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": PORT},
            "periodSeconds": 10,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        # ready once its pod watch has listed: a reader can tell a node not yet covered
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": PORT},
            "periodSeconds": 10,
            "timeoutSeconds": 2,
            "failureThreshold": 3,
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "runAsUser": UID,
            "runAsGroup": UID,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "read-token", "mountPath": TOKEN_DIR, "readOnly": True}],
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": namespace,
                "labels": {
                    **LABELS,
                    "pod-security.kubernetes.io/enforce": "privileged",
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": NAME, **meta},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": NAME, "labels": dict(LABELS)},
            "rules": AGENT_RULES,
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": NAME, "labels": dict(LABELS)},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": namespace}],
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": SECRET, **meta},
            "type": "Opaque",
            "stringData": {"token": token},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": READER_ROLE, **meta},
            "rules": reader_rules(),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": PROBER_ROLE, **meta},
            "rules": PROBER_RULES,
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": NAME, "labels": dict(LABELS)},
            "value": PRIORITY,
            "preemptionPolicy": "Never",
            "globalDefault": False,
            "description": "probetui's node agents: evicted after ordinary pods, evicting none.",
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            # the agent serves /healthz before its first list, so its liveness budget (30 s)
            # covers its start; declared so that `probetui lint` can check that
            "metadata": {
                "name": NAME,
                **meta,
                "annotations": {"probetui.io/start-seconds": "5"},
            },
            "spec": {
                "selector": {"matchLabels": dict(LABELS)},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": dict(LABELS)},
                    "spec": {
                        "serviceAccountName": NAME,
                        "hostNetwork": True,
                        "dnsPolicy": "ClusterFirstWithHostNet",
                        "priorityClassName": NAME,
                        "tolerations": [{"operator": "Exists"}],
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": UID,
                            "runAsGroup": UID,
                            "fsGroup": UID,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "terminationGracePeriodSeconds": 10,
                        "containers": [container],
                        "volumes": [
                            {
                                "name": "read-token",
                                "secret": {"secretName": SECRET, "defaultMode": 0o440},
                            }
                        ],
                    },
                },
            },
        },
    ]


def _reader_binding_example(namespace: str) -> str:
    return f"""\
# Let a user read the agents (they also need the built-in `view` ClusterRole for the rest):
#
# apiVersion: rbac.authorization.k8s.io/v1
# kind: RoleBinding
# metadata:
#   name: probetui-reader-alice
#   namespace: {namespace}
# roleRef:
#   apiGroup: rbac.authorization.k8s.io
#   kind: Role
#   name: {READER_ROLE}
# subjects:
# - apiGroup: rbac.authorization.k8s.io
#   kind: User
#   name: alice
"""


def render(namespace: str = NAMESPACE, image: str = IMAGE, token: str | None = None) -> str:
    """Return the manifest as YAML documents, the reader's RoleBinding example after the Role."""
    header = (
        f"# probetui node agents ({__version__}): kubectl apply -f this file.\n"
        "# The Secret holds a read token made just now: applying the file again replaces it.\n"
    )
    parts = []
    for obj in objects(namespace, image, token):
        text = yaml.safe_dump(obj, sort_keys=False, default_flow_style=False)
        if obj["kind"] == "Role" and obj["metadata"]["name"] == READER_ROLE:
            text += _reader_binding_example(namespace)
        parts.append(text)
    return header + "---\n" + "---\n".join(parts)


__all__ = [
    "AGENT_RULES",
    "IMAGE",
    "NAMESPACE",
    "PORT",
    "PROBER_ROLE",
    "PROBER_RULES",
    "SECRET",
    "TOKEN_HEADER",
    "objects",
    "reader_rules",
    "render",
]
