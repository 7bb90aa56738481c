"""`probetui agent --print-manifest`: it parses, it validates, and grants exactly what it must."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from probetui import __version__
from probetui.agent.manifest import render
from probetui.cli import main
from probetui.spec.parse import parse_pods

KINDS = [
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Secret",
    "Role",
    "Role",
    "PriorityClass",
    "DaemonSet",
]


def _objects(text: str) -> dict[str, dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(text) if d is not None]
    assert [d["kind"] for d in docs] == KINDS
    # the two Roles: the reader's under "Role", probe-now's under "ProberRole"
    return {
        "ProberRole" if d["metadata"].get("name") == "probetui-prober" else d["kind"]: d
        for d in docs
    }


def test_printed_by_the_command(capsys: Any) -> None:
    assert main(["agent", "--print-manifest"]) == 0
    objs = _objects(capsys.readouterr().out)
    container = objs["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == f"docker.io/probetui/agent:{__version__}"
    assert container["args"][0] == "agent"


def test_rbac_is_exactly_what_the_agent_and_a_reader_need() -> None:
    text = render()
    objs = _objects(text)
    assert objs["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
    ]
    binding = objs["ClusterRoleBinding"]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "probetui-agent",
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "probetui-agent", "namespace": "probetui"}
    ]
    role = objs["Role"]
    assert role["metadata"]["namespace"] == "probetui"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]},
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["probetui-agent-read"],
            "verbs": ["get"],
        },
    ]
    prober = objs["ProberRole"]
    assert prober["metadata"]["namespace"] == "probetui"
    assert prober["rules"] == [
        {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["create"]}
    ]
    # never nodes/proxy (exec in every pod of a node through its kubelet), never a wildcard
    assert "nodes/proxy" not in text and "'*'" not in text and '"*"' not in text
    # the reader's binding is an example to fill in, not an object
    assert "# kind: RoleBinding" in text and "#   name: probetui-reader" in text


def test_the_secret_holds_a_fresh_random_token() -> None:
    first = _objects(render())["Secret"]
    second = _objects(render())["Secret"]
    token = first["stringData"]["token"]
    assert len(token) >= 40 and token != second["stringData"]["token"]
    assert first["metadata"]["name"] == "probetui-agent-read"


def test_the_daemonset_runs_on_every_node_as_nobody() -> None:
    objs = _objects(render())
    assert objs["Namespace"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == (
        "privileged"
    )
    ds = objs["DaemonSet"]
    labels = {"app.kubernetes.io/name": "probetui", "app.kubernetes.io/component": "agent"}
    assert ds["metadata"]["name"] == "probetui-agent"
    assert ds["spec"]["selector"]["matchLabels"] == labels
    pod = ds["spec"]["template"]["spec"]
    assert ds["spec"]["template"]["metadata"]["labels"] == labels
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["serviceAccountName"] == "probetui-agent"
    priority = objs["PriorityClass"]
    assert pod["priorityClassName"] == priority["metadata"]["name"]
    assert priority["preemptionPolicy"] == "Never" and 0 < priority["value"] < 1_000_000_000
    assert pod["securityContext"]["runAsNonRoot"] is True
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "capabilities": {"drop": ["ALL"]},
    }
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
    assert env == {"NODE_NAME": "spec.nodeName", "NODE_IP": "status.hostIP"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 9479}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 9479}
    for kind in ("requests", "limits"):
        assert set(c["resources"][kind]) == {"cpu", "memory"}
    # the token Secret, mounted where the agent reads it, readable by its group only
    (mount,) = c["volumeMounts"]
    (volume,) = pod["volumes"]
    assert volume["secret"]["secretName"] == "probetui-agent-read" and mount["readOnly"]
    token_file = c["args"][c["args"].index("--token-file") + 1]
    assert token_file == f"{mount['mountPath']}/token"
    assert pod["securityContext"]["fsGroup"] == 65532 and volume["secret"]["defaultMode"] == 0o440


def test_the_pod_template_validates_and_lints_clean(tmp_path: Path, capsys: Any) -> None:
    text = render()
    (pod,) = parse_pods(text, "manifest.yaml")  # the API server's checks: raises on a problem
    assert pod.name == "probetui-agent" and pod.namespace == "probetui"
    (container,) = pod.containers
    assert container.liveness_probe is not None and container.readiness_probe is not None
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    assert main(["lint", str(path)]) == 0
    assert "1 object, 0 findings" in capsys.readouterr().out


def test_namespace_and_image() -> None:
    objs = _objects(render("watchers", "registry.example/probetui:dev"))
    for kind in ("ServiceAccount", "Secret", "Role", "ProberRole", "DaemonSet"):
        assert objs[kind]["metadata"]["namespace"] == "watchers"
    assert objs["Namespace"]["metadata"]["name"] == "watchers"
    assert objs["ClusterRoleBinding"]["subjects"][0]["namespace"] == "watchers"
    container = objs["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/probetui:dev"
