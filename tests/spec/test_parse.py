"""Manifest parsing: kinds, documents, defaults (docs/kubelet-behaviour.md §2.1, §2.2) and one-line
errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from probetui.spec.errors import ManifestError
from probetui.spec.model import (
    ContainerKind,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Probe,
    RestartRule,
    TCPSocketAction,
)
from probetui.spec.parse import load_pods, parse_pods

DATA = Path(__file__).parent / "data"


def pod_yaml(container: str, *, extra_spec: str = "", name: str = "p") -> str:
    """A one-container Pod manifest; `container` is the YAML of the container's fields."""
    body = textwrap.indent(textwrap.dedent(container).strip(), " " * 6)
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n{extra_spec}"
        f"  containers:\n    - name: app\n{body}\n"
    )


def one_probe(container: str, attr: str = "liveness_probe", validate: bool = True) -> Probe:
    (pod,) = parse_pods(pod_yaml(container), validate=validate)
    probe = getattr(pod.containers[0], attr)
    assert probe is not None
    return probe


def error_of(text: str, source: str = "pod.yaml") -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_pods(text, source)
    message = str(info.value)
    assert "\n" not in message
    return info.value


# --- defaults (§2.1, §2.2; SetDefaults_Probe, SetDefaults_HTTPGetAction) ---


def test_defaulting_vector_empty_probe() -> None:
    """Defaulting vector (docs/test-vectors.md H): {} -> timeout 1, period 10, success 1, failure 3,
    delay 0."""
    p = one_probe("livenessProbe: {}", validate=False)
    assert (p.timeout_seconds, p.period_seconds) == (1, 10)
    assert (p.success_threshold, p.failure_threshold, p.initial_delay_seconds) == (1, 3, 0)
    assert p.termination_grace_period_seconds is None
    assert p.handler is None


def test_defaulting_vector_http_get() -> None:
    """Defaulting vector: httpGet {port: 80} -> path "/", scheme "HTTP"."""
    p = one_probe("livenessProbe: {httpGet: {port: 80}}")
    assert p.http_get == HTTPGetAction(port=80, path="/", host="", scheme="HTTP")


def test_defaulting_replaces_explicit_zero() -> None:
    """§2.1: the defaults replace 0 as well as absence; 0 from the API passes validation."""
    p = one_probe(
        """
        livenessProbe:
          tcpSocket: {port: 80}
          timeoutSeconds: 0
          periodSeconds: 0
          successThreshold: 0
          failureThreshold: 0
          initialDelaySeconds: 0
        """
    )
    assert (p.timeout_seconds, p.period_seconds, p.success_threshold, p.failure_threshold) == (
        1,
        10,
        1,
        3,
    )


def test_defaulting_keeps_written_values() -> None:
    p = one_probe(
        """
        readinessProbe:
          httpGet: {port: 8080, path: /ready, scheme: HTTPS, host: example.test,
                    httpHeaders: [{name: X-A, value: b}, {name: X-Empty}]}
          initialDelaySeconds: 5
          timeoutSeconds: 2
          periodSeconds: 3
          successThreshold: 4
          failureThreshold: 6
        """,
        "readiness_probe",
    )
    assert p == Probe(
        http_get=HTTPGetAction(
            port=8080,
            path="/ready",
            host="example.test",
            scheme="HTTPS",
            http_headers=(HTTPHeader("X-A", "b"), HTTPHeader("X-Empty", "")),
        ),
        initial_delay_seconds=5,
        timeout_seconds=2,
        period_seconds=3,
        success_threshold=4,
        failure_threshold=6,
    )


def test_negative_values_are_kept_then_refused() -> None:
    """Defaulting only replaces 0; a negative value reaches validation (§2.3)."""
    container = "livenessProbe: {exec: {command: [x]}, periodSeconds: -1}"
    assert one_probe(container, validate=False).period_seconds == -1
    err = error_of(pod_yaml(container))
    assert err.field == "livenessProbe.periodSeconds"
    assert "Invalid value: -1: must be greater than or equal to 0" in str(err)


def test_all_handlers_parsed() -> None:
    """The model keeps all four handler fields, so "two handlers" can be validated."""
    p = one_probe(
        """
        startupProbe:
          exec: {command: [cat, /tmp/ok]}
          httpGet: {port: web}
          tcpSocket: {port: 5000, host: 10.0.0.1}
          grpc: {port: 9090, service: health}
        """,
        "startup_probe",
        validate=False,
    )
    assert p.exec == ExecAction(("cat", "/tmp/ok"))
    assert p.http_get == HTTPGetAction(port="web")
    assert p.tcp_socket == TCPSocketAction(port=5000, host="10.0.0.1")
    assert p.grpc == GRPCAction(port=9090, service="health")
    assert p.handler == p.exec


def test_grpc_service_absent_is_none() -> None:
    """grpc.service is a *string upstream: absent stays None, "" stays ""."""
    assert one_probe("livenessProbe: {grpc: {port: 1}}").grpc == GRPCAction(1, None)
    assert one_probe("livenessProbe: {grpc: {port: 1, service: ''}}").grpc == GRPCAction(1, "")


def test_termination_grace_periods() -> None:
    """Pod terminationGracePeriodSeconds defaults to 30 (SetDefaults_PodSpec); 0 is kept;
    probe-level terminationGracePeriodSeconds is int64 and kept."""
    (pod,) = parse_pods(pod_yaml("livenessProbe: {exec: {command: [x]}}"))
    assert pod.termination_grace_period_seconds == 30
    assert pod.restart_policy == "Always"
    (pod,) = parse_pods(
        pod_yaml(
            "livenessProbe: {exec: {command: [x]}, terminationGracePeriodSeconds: 5}",
            extra_spec="  terminationGracePeriodSeconds: 0\n  restartPolicy: Never\n",
        )
    )
    assert pod.termination_grace_period_seconds == 0
    assert pod.restart_policy == "Never"
    assert pod.containers[0].liveness_probe.termination_grace_period_seconds == 5  # type: ignore[union-attr]


# --- ports ---


def test_named_ports_and_int_or_string() -> None:
    """IntOrString keeps the written type: 8080 an int, "http" a name, "8080" a string."""
    text = pod_yaml(
        """
        ports:
          - {containerPort: 8080, name: http}
          - {containerPort: 53, name: dns, protocol: UDP}
        livenessProbe: {httpGet: {port: http}}
        readinessProbe: {tcpSocket: {port: 8080}}
        startupProbe: {httpGet: {port: "8080"}}
        """
    )
    (pod,) = parse_pods(text, validate=False)
    c = pod.containers[0]
    assert [(p.container_port, p.name, p.protocol) for p in c.ports] == [
        (8080, "http", "TCP"),
        (53, "dns", "UDP"),
    ]
    assert c.port_by_name("http") == 8080
    assert c.liveness_probe.http_get.port == "http"  # type: ignore[union-attr]
    assert c.readiness_probe.tcp_socket.port == 8080  # type: ignore[union-attr]
    port = c.startup_probe.http_get.port  # type: ignore[union-attr]
    assert port == "8080" and isinstance(port, str)
    # ...which the API refuses: a string port must be a name (ValidatePortNumOrName)
    err = error_of(text)
    assert err.field == "startupProbe.httpGet.port"
    assert "without quotes" in str(err)


# --- kinds and documents ---


def test_each_workload_kind_gives_its_pod_template() -> None:
    """Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job and
    CronJob (spec.jobTemplate.spec.template) each give one Pod; Service/ConfigMap are skipped."""
    pods = load_pods(DATA / "workloads.yaml")
    assert [p.name for p in pods] == [
        "pod-a",
        "deploy-a",
        "sts-a",
        "ds-a",
        "rs-a",
        "rc-a",
        "job-a",
        "cron-a",
    ]
    by_name = {p.name: p for p in pods}
    pod_a = by_name["pod-a"]
    assert (pod_a.namespace, pod_a.uid, pod_a.labels) == (
        "team",
        "0b6f1c1e-1111-4a4a-9999-000000000001",
        {"app": "a"},
    )
    assert by_name["deploy-a"].namespace == "default"
    assert by_name["deploy-a"].labels == {"app": "deploy-a"}
    assert by_name["deploy-a"].containers[0].readiness_probe.http_get.port == 8080  # type: ignore[union-attr]
    assert by_name["sts-a"].containers[0].readiness_probe.tcp_socket.port == 5432  # type: ignore[union-attr]
    assert by_name["ds-a"].containers[0].liveness_probe.grpc.port == 9090  # type: ignore[union-attr]
    assert by_name["rs-a"].containers[0].startup_probe.exec.command == ("true",)  # type: ignore[union-attr]
    assert by_name["job-a"].restart_policy == "Never"
    assert by_name["cron-a"].restart_policy == "OnFailure"
    assert by_name["cron-a"].containers[0].liveness_probe.tcp_socket.port == 80  # type: ignore[union-attr]
    # sources name file, document (1-based, counting skipped ones) and object
    src = str(DATA / "workloads.yaml")
    assert by_name["pod-a"].source == f"{src}, document 2 (Pod pod-a)"
    assert by_name["deploy-a"].source == f"{src}, document 3 (Deployment deploy-a)"
    assert by_name["cron-a"].source == f"{src}, document 10 (CronJob cron-a)"


def test_synthetic_uids_are_stable_and_distinct() -> None:
    """Without metadata.uid the uid is derived from kind/namespace/name: same every load."""
    first = {p.name: p.uid for p in load_pods(DATA / "workloads.yaml")}
    second = {p.name: p.uid for p in load_pods(DATA / "workloads.yaml")}
    assert first == second
    assert len(set(first.values())) == len(first)
    same_name = (
        "kind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: a}]}\n---\n"
        "kind: Deployment\nmetadata: {name: web}\n"
        "spec: {template: {spec: {containers: [{name: a}]}}}\n"
    )
    pod, deploy = parse_pods(same_name)
    assert pod.uid != deploy.uid


def test_kind_list_items() -> None:
    """kind: List (kubectl get -o yaml) holds objects; each item is parsed, others skipped."""
    pods = load_pods(DATA / "list.yaml")
    assert [p.name for p in pods] == ["listed-deploy", "listed-pod"]
    src = str(DATA / "list.yaml")
    assert pods[1].source == f"{src}, document 1, item 3 (Pod listed-pod)"


def test_multi_document_with_empty_documents() -> None:
    text = (
        "---\n"
        "kind: Pod\nmetadata: {name: one}\nspec: {containers: [{name: a}]}\n"
        "---\n---\n"
        "kind: Pod\nmetadata: {name: two}\nspec: {containers: [{name: a}]}\n"
    )
    assert [p.name for p in parse_pods(text)] == ["one", "two"]


def test_json_input() -> None:
    """JSON manifests: named port, HTTPS, headers, period."""
    (pod,) = load_pods(DATA / "pod.json")
    c = pod.containers[0]
    assert pod.name == "json-pod"
    assert c.readiness_probe == Probe(
        http_get=HTTPGetAction(
            port="http",
            path="/ready",
            scheme="HTTPS",
            http_headers=(HTTPHeader("X-Probe", "1"),),
        ),
        period_seconds=5,
    )


def test_json_stream_and_json_errors() -> None:
    """A stream of JSON objects, as kubectl accepts; a JSON type error names line and field."""
    obj = {"kind": "Pod", "metadata": {"name": "a"}, "spec": {"containers": [{"name": "c"}]}}
    text = json.dumps(obj) + "\n" + json.dumps({**obj, "metadata": {"name": "b"}})
    assert [p.name for p in parse_pods(text)] == ["a", "b"]
    bad = json.dumps(
        {
            "kind": "Pod",
            "metadata": {"name": "a"},
            "spec": {"containers": [{"name": "c", "livenessProbe": {"periodSeconds": "10"}}]},
        },
        indent=2,
    )
    err = error_of(bad, "pod.json")
    assert str(err).startswith("pod.json, document 1 (Pod a), line ")
    assert (
        'container "c": livenessProbe.periodSeconds: must be an integer, got the string "10"'
        in str(err)
    )
    assert (
        err.line
        == bad.splitlines().index(
            next(line for line in bad.splitlines() if "periodSeconds" in line)
        )
        + 1
    )


def test_invalid_json_reports_line() -> None:
    err = error_of('{"kind": "Pod",\n "metadata": {"name": "a"}\n "spec": {}}', "x.json")
    assert err.line == 3
    assert str(err).startswith("x.json, document 1, line 3: invalid JSON: Expecting ',' delimiter")


def test_yaml_flow_mapping_is_not_mistaken_for_json() -> None:
    assert [
        p.name
        for p in parse_pods("{kind: Pod, metadata: {name: f}, spec: {containers: [{name: a}]}}")
    ] == ["f"]


# --- containers: sidecars, env, restart rules, preStop, ephemeral ---


def test_sidecar_detection_and_container_fields() -> None:
    """initContainers keep their restartPolicy: Always marks a sidecar, probed after the
    regular containers (§3.1); env literal vs valueFrom; restartPolicyRules; preStop."""
    (pod,) = load_pods(DATA / "sidecar.yaml")
    setup, proxy = pod.init_containers
    (app,) = pod.containers
    assert setup.kind is ContainerKind.INIT and not setup.is_restartable_init
    assert setup.command == ("sh", "-c", "echo ready")
    assert proxy.is_restartable_init and proxy.has_pre_stop
    assert proxy.startup_probe.http_get.port == "admin"  # type: ignore[union-attr]
    assert [c.name for c in pod.probed_containers()] == ["app", "proxy"]
    assert app.command == ("python3", "-m", "http.server", "8080")
    assert app.working_dir == "/srv"
    assert app.literal_env() == {"MODE": "test", "EMPTY": ""}
    assert app.env[1].value_from == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert type(app.env[1].value_from) is dict
    assert app.restart_policy == "Never"
    assert app.restart_policy_rules == (RestartRule("Restart", "In", (42, 43)),)
    assert app.restart_policy_rules[0].matches(42)
    assert not app.has_pre_stop


def test_ephemeral_container_probe_refused() -> None:
    """vector H (ephemeral row) through the parser: ephemeralContainers are validated."""
    text = (
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app}]\n"
        "  ephemeralContainers:\n"
        "    - name: dbg\n"
        "      readinessProbe: {exec: {command: [x]}}\n"
    )
    err = error_of(text)
    assert str(err) == (
        'pod.yaml, document 1 (Pod p), line 7: ephemeral container "dbg": readinessProbe: '
        "cannot be set for an Ephemeral Container (ephemeral containers are for debugging and "
        "are never probed; remove it)"
    )
    # without validation they are read and left out of the Pod the prober sees
    (pod,) = parse_pods(text, validate=False)
    assert [c.name for c in (*pod.containers, *pod.init_containers)] == ["app"]


def test_deletion_metadata() -> None:
    text = (
        "kind: Pod\nmetadata:\n  name: p\n  deletionTimestamp: 2024-01-02T03:04:05Z\n"
        "  deletionGracePeriodSeconds: 10\nspec: {containers: [{name: a}]}\n"
    )
    (pod,) = parse_pods(text)
    assert pod.deletion_timestamp == 1704164645.0
    assert pod.deletion_grace_period_seconds == 10
    (pod,) = parse_pods(text.replace("2024-01-02T03:04:05Z", '"2024-01-02T03:04:05Z"'))
    assert pod.deletion_timestamp == 1704164645.0


# --- validation through parse_pods (validate=True is the default) ---


def test_two_handlers_message_from_a_file(tmp_path: Path) -> None:
    """vector H row 8 end to end: one line naming file, document, container and field."""
    path = tmp_path / "deploy.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            apiVersion: v1
            kind: Service
            metadata: {name: web}
            ---
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              template:
                spec:
                  containers:
                    - name: app
                      livenessProbe:
                        exec: {command: [cat, /ok]}
                        httpGet: {port: 8080}
            """
        )
    )
    with pytest.raises(ManifestError) as info:
        load_pods(path)
    assert str(info.value) == (
        f'{path}, document 2 (Deployment web), line 13: container "app": livenessProbe: may not '
        "specify more than 1 handler type (httpGet and exec are both set; keep one)"
    )
    assert [p.name for p in load_pods(path, validate=False)] == ["web"]


def test_validation_error_line_points_at_the_field() -> None:
    text = pod_yaml(
        """
        image: x
        livenessProbe:
          tcpSocket: {port: 80}
          successThreshold: 2
        """
    )
    err = error_of(text)
    assert err.line == text.splitlines().index("        successThreshold: 2") + 1
    assert str(err).endswith(
        'container "app": livenessProbe.successThreshold: Invalid value: 2: must be 1 '
        "(a liveness probe acts on its first success; set 1 or leave it out)"
    )


def test_init_container_probe_refused_through_parse() -> None:
    """vector H row 14 through the parser."""
    text = (
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app}]\n"
        "  initContainers:\n    - name: setup\n      livenessProbe: {exec: {command: [x]}}\n"
    )
    err = error_of(text)
    assert err.container == "setup" and err.container_kind == "init container"
    assert err.field == "livenessProbe"


# --- bad input: one line naming file, document, container, field ---


def test_string_where_an_int_belongs() -> None:
    text = pod_yaml("livenessProbe:\n  exec: {command: [x]}\n  periodSeconds: 10s")
    err = error_of(text)
    assert str(err) == (
        'pod.yaml, document 1 (Pod p), line 10: container "app": livenessProbe.periodSeconds: '
        'must be an integer, got the string "10s" (write a plain number of seconds or count: 10)'
    )
    assert (err.origin, err.line, err.container, err.field) == (
        "pod.yaml, document 1 (Pod p)",
        10,
        "app",
        "livenessProbe.periodSeconds",
    )


def test_list_where_a_map_belongs() -> None:
    err = error_of(pod_yaml("readinessProbe:\n  - httpGet: {port: 80}"))
    assert str(err) == (
        'pod.yaml, document 1 (Pod p), line 8: container "app": readinessProbe: must be a '
        "mapping (key: value pairs), got a list"
    )


def test_map_where_a_list_belongs() -> None:
    err = error_of(pod_yaml("livenessProbe: {exec: {command: {a: b}}}"))
    assert err.field == "livenessProbe.exec.command"
    assert "must be a list, got a mapping" in str(err)


def test_number_where_a_string_belongs() -> None:
    err = error_of(pod_yaml("env: [{name: A, value: 123}]"))
    assert str(err).endswith(
        'container "app": env[0].value: must be a string, got the number 123 '
        "(quote it to make it a string)"
    )
    err = error_of(pod_yaml("livenessProbe: {exec: {command: [test, -f, 1]}}"))
    assert err.field == "livenessProbe.exec.command[2]"


def test_boolean_port_refused() -> None:
    err = error_of(pod_yaml("livenessProbe: {tcpSocket: {port: true}}"))
    assert err.field == "livenessProbe.tcpSocket.port"
    assert "must be a port number or a port name, got the boolean true" in str(err)


def test_grpc_named_port_refused() -> None:
    """§2.7: gRPC has no named ports (GRPCAction.Port is int32)."""
    err = error_of(pod_yaml("livenessProbe: {grpc: {port: grpc}}"))
    assert err.field == "livenessProbe.grpc.port"
    assert "named ports are not supported" in str(err)


def test_int32_overflow() -> None:
    err = error_of(pod_yaml("livenessProbe: {exec: {command: [x]}, timeoutSeconds: 3000000000}"))
    assert "must fit in a 32-bit integer" in str(err)


def test_invalid_yaml_names_the_line() -> None:
    text = "kind: Pod\nmetadata:\n  name: p\n spec: {}\n"
    err = error_of(text, "bad.yaml")
    assert err.line == 4
    assert str(err).startswith("bad.yaml, document 1, line 4: invalid YAML: ")


def test_invalid_yaml_in_a_later_document() -> None:
    text = "kind: ConfigMap\nmetadata: {name: c}\n---\nkind: Pod\nmetadata: [\n"
    err = error_of(text, "multi.yaml")
    assert str(err).startswith("multi.yaml, document 2, line ")


def test_tabs_in_yaml() -> None:
    err = error_of("kind: Pod\nmetadata:\n\tname: p\n")
    assert err.line == 3 and "spaces, not tabs" in str(err)


def test_duplicate_key_refused() -> None:
    """go-yaml refuses a key set twice; a second livenessProbe must not silently win."""
    text = pod_yaml("livenessProbe: {exec: {command: [a]}}\nlivenessProbe: {exec: {command: [b]}}")
    err = error_of(text)
    assert err.line == 9
    assert 'key "livenessProbe" already set in this mapping (first on line 8)' in str(err)


def test_unknown_probe_field_refused() -> None:
    """Probes have no sleep handler (§2.6): strict decoding refuses the field."""
    err = error_of(pod_yaml("livenessProbe: {sleep: {seconds: 1}}"))
    assert str(err).endswith(
        'container "app": livenessProbe: unknown field "sleep" (probes have no sleep handler; '
        "sleep exists only for lifecycle hooks)"
    )
    err = error_of(pod_yaml("livenessProbe: {httpget: {port: 80}}"))
    assert 'unknown field "httpget" (did you mean "httpGet"?)' in str(err)


def test_misspelt_probe_key_in_container_refused() -> None:
    """A misspelt probe would otherwise be dropped silently and never run."""
    err = error_of(pod_yaml("livenesProbe: {exec: {command: [x]}}"))
    assert str(err).endswith(
        'container "app": unknown field "livenesProbe" (did you mean "livenessProbe"?)'
    )
    # fields we do not model are fine
    parse_pods(pod_yaml("resources: {limits: {cpu: 1}}\nvolumeMounts: []\nsomethingNew: 1"))


def test_container_without_a_name_is_located_by_index() -> None:
    text = (
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "    - livenessProbe: {exec: {command: [x]}, periodSeconds: x}\n"
    )
    err = error_of(text)
    assert err.container is None
    assert err.field == "spec.containers[0].livenessProbe.periodSeconds"
    err = error_of(text.replace("periodSeconds: x", "periodSeconds: 1"))
    assert (
        str(err) == "pod.yaml, document 1 (Pod p), line 5: spec.containers[0].name: Required value"
    )


def test_workload_without_template() -> None:
    err = error_of("kind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n", "d.yaml")
    assert str(err) == (
        "d.yaml, document 1 (Deployment d), line 3: spec.template: Required value "
        "(a Deployment needs a pod template)"
    )
    err = error_of("kind: CronJob\nmetadata: {name: c}\nspec: {jobTemplate: {spec: {}}}\n")
    assert err.field == "spec.jobTemplate.spec.template"


def test_missing_name_and_kind() -> None:
    err = error_of("kind: Pod\nspec: {containers: [{name: a}]}\n")
    assert err.field == "metadata.name" and "(Pod)" in str(err)
    err = error_of("metadata: {name: a}\n")
    assert err.field == "kind"


def test_no_pod_bearing_document() -> None:
    text = "kind: Service\nmetadata: {name: s}\n---\nkind: ConfigMap\nmetadata: {name: c}\n"
    err = error_of(text, "svc.yaml")
    assert str(err).startswith(
        "svc.yaml: no Pod or workload with a pod template (found: Service, ConfigMap)"
    )
    assert str(error_of("", "empty.yaml")).startswith("empty.yaml: no Pod or workload")


def test_scalar_document() -> None:
    err = error_of("just some text\n")
    assert "must be a mapping" in str(err) and err.origin == "pod.yaml, document 1"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as info:
        load_pods(tmp_path / "nope.yaml")
    assert str(info.value).startswith(f"{tmp_path / 'nope.yaml'}: cannot read")
