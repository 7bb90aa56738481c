"""Validation: every row of table H in docs/test-vectors.md and docs/kubelet-behaviour.md §2.3-2.8
(upstream validation.go)."""

from __future__ import annotations

import pytest

from probetui.spec.errors import ManifestError
from probetui.spec.model import (
    Container,
    ContainerKind,
    ContainerPort,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)
from probetui.spec.validate import (
    ErrorType,
    FieldError,
    check_pod,
    is_valid_port_name,
    validate_pod,
)

EXEC = ExecAction(command=("true",))
FIELD_OF = {
    ProbeType.LIVENESS: "liveness_probe",
    ProbeType.READINESS: "readiness_probe",
    ProbeType.STARTUP: "startup_probe",
}
KEY_OF = {
    ProbeType.LIVENESS: "livenessProbe",
    ProbeType.READINESS: "readinessProbe",
    ProbeType.STARTUP: "startupProbe",
}


def probe(**kw: object) -> Probe:
    kw.setdefault("exec", EXEC)
    return Probe(**kw)  # type: ignore[arg-type]


def pod_with(
    probe_type: ProbeType = ProbeType.LIVENESS,
    p: Probe | None = None,
    *,
    kind: ContainerKind = ContainerKind.CONTAINER,
    restart_policy: str | None = None,
    ports: tuple[ContainerPort, ...] = (),
) -> Pod:
    c = Container(
        name="app",
        kind=kind,
        restart_policy=restart_policy,
        ports=ports,
        **{FIELD_OF[probe_type]: p if p is not None else probe()},  # type: ignore[arg-type]
    )
    if kind is ContainerKind.INIT:
        return Pod(name="p", containers=(Container(name="main"),), init_containers=(c,))
    return Pod(name="p", containers=(c,))


def only(errors: list[FieldError]) -> FieldError:
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0]


# --- vector H, one test per row ---


def test_vector_h_liveness_success_threshold_must_be_1() -> None:
    """vector H row 1: liveness successThreshold=2 -> Invalid "must be 1" (§2.4)."""
    err = only(validate_pod(pod_with(ProbeType.LIVENESS, probe(success_threshold=2))))
    assert err.path == "spec.containers[0].livenessProbe.successThreshold"
    assert err.type is ErrorType.INVALID and err.type == "Invalid"
    assert err.value == 2 and err.detail == "must be 1"
    assert (
        str(err) == "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"
    )


def test_vector_h_startup_success_threshold_must_be_1() -> None:
    """vector H row 2: startup successThreshold=3 -> Invalid "must be 1" (validateStartupProbe)."""
    err = only(validate_pod(pod_with(ProbeType.STARTUP, probe(success_threshold=3))))
    assert err.path == "spec.containers[0].startupProbe.successThreshold"
    assert (err.type, err.value, err.detail) == (ErrorType.INVALID, 3, "must be 1")


def test_vector_h_readiness_any_success_threshold() -> None:
    """vector H row 3: readiness successThreshold=5 is fine (§2.5)."""
    assert validate_pod(pod_with(ProbeType.READINESS, probe(success_threshold=5))) == []


def test_vector_h_readiness_termination_grace_period_not_allowed() -> None:
    """vector H row 4: readiness terminationGracePeriodSeconds=10 -> Invalid (§2.5)."""
    p = probe(termination_grace_period_seconds=10)
    err = only(validate_pod(pod_with(ProbeType.READINESS, p)))
    assert err.path == "spec.containers[0].readinessProbe.terminationGracePeriodSeconds"
    assert err.type is ErrorType.INVALID
    assert err.detail == "must not be set for readinessProbes"
    assert err.body() == "Invalid value: 10: must not be set for readinessProbes"


def test_vector_h_liveness_termination_grace_period_zero() -> None:
    """vector H row 5: liveness terminationGracePeriodSeconds=0 -> "must be greater than 0"."""
    p = probe(termination_grace_period_seconds=0)
    err = only(validate_pod(pod_with(ProbeType.LIVENESS, p)))
    assert err.path == "spec.containers[0].livenessProbe.terminationGracePeriodSeconds"
    assert (err.type, err.value, err.detail) == (ErrorType.INVALID, 0, "must be greater than 0")


def test_vector_h_liveness_termination_grace_period_one() -> None:
    """vector H row 6: liveness terminationGracePeriodSeconds=1 is fine (§2.3)."""
    assert (
        validate_pod(pod_with(ProbeType.LIVENESS, probe(termination_grace_period_seconds=1))) == []
    )


@pytest.mark.parametrize("probe_type", list(ProbeType))
@pytest.mark.parametrize(
    ("attr", "key"),
    [
        ("initial_delay_seconds", "initialDelaySeconds"),
        ("timeout_seconds", "timeoutSeconds"),
        ("period_seconds", "periodSeconds"),
        ("success_threshold", "successThreshold"),
        ("failure_threshold", "failureThreshold"),
    ],
)
def test_vector_h_negative_fields(probe_type: ProbeType, attr: str, key: str) -> None:
    """vector H row 7: any negative timing field -> Invalid, must be non-negative (§2.3)."""
    errors = validate_pod(pod_with(probe_type, probe(**{attr: -1})))
    path = f"spec.containers[0].{KEY_OF[probe_type]}.{key}"
    negative = [e for e in errors if e.detail == "must be greater than or equal to 0"]
    assert [e.path for e in negative] == [path]
    assert negative[0].type is ErrorType.INVALID and negative[0].value == -1
    assert str(negative[0]) == f"{path}: Invalid value: -1: must be greater than or equal to 0"
    if attr == "success_threshold" and probe_type is not ProbeType.READINESS:
        # validateLivenessProbe / validateStartupProbe add "must be 1" after validateProbe
        assert [e.detail for e in errors] == ["must be greater than or equal to 0", "must be 1"]
    else:
        assert len(errors) == 1


@pytest.mark.parametrize("probe_type", list(ProbeType))
def test_vector_h_exec_and_http_get_both_set(probe_type: ProbeType) -> None:
    """vector H row 8: exec and httpGet -> httpGet Forbidden (validateHandler, §2.6)."""
    p = Probe(exec=EXEC, http_get=HTTPGetAction(port=80))
    err = only(validate_pod(pod_with(probe_type, p)))
    assert err.path == f"spec.containers[0].{KEY_OF[probe_type]}.httpGet"
    assert err.type is ErrorType.FORBIDDEN
    assert err.detail == "may not specify more than 1 handler type"
    assert str(err) == f"{err.path}: Forbidden: may not specify more than 1 handler type"


def test_vector_h_every_later_handler_is_forbidden() -> None:
    """§2.6: order exec, httpGet, tcpSocket, grpc; each after the first is Forbidden and
    only the first is checked further (its bad port is reported, the others' are not)."""
    p = Probe(
        http_get=HTTPGetAction(port=0),
        tcp_socket=TCPSocketAction(port=0),
        grpc=GRPCAction(port=0),
    )
    errors = validate_pod(pod_with(ProbeType.LIVENESS, p))
    assert [(e.path.split(".", 2)[2], e.type) for e in errors] == [
        ("livenessProbe.httpGet.port", ErrorType.INVALID),
        ("livenessProbe.tcpSocket", ErrorType.FORBIDDEN),
        ("livenessProbe.grpc", ErrorType.FORBIDDEN),
    ]


def test_vector_h_no_handler() -> None:
    """vector H row 9: no handler -> Required "must specify a handler type" on the probe."""
    err = only(validate_pod(pod_with(ProbeType.READINESS, Probe())))
    assert err.path == "spec.containers[0].readinessProbe"
    assert (err.type, err.detail) == (ErrorType.REQUIRED, "must specify a handler type")
    assert str(err) == (
        "spec.containers[0].readinessProbe: Required value: must specify a handler type"
    )


def test_vector_h_exec_command_empty() -> None:
    """vector H row 10: exec.command=[] -> exec.command Required (validateExecAction)."""
    err = only(validate_pod(pod_with(ProbeType.LIVENESS, Probe(exec=ExecAction(command=())))))
    assert err.path == "spec.containers[0].livenessProbe.exec.command"
    assert err.type is ErrorType.REQUIRED
    assert str(err) == "spec.containers[0].livenessProbe.exec.command: Required value"


@pytest.mark.parametrize("scheme", ["FTP", "https", "http", ""])
def test_vector_h_http_scheme_not_supported(scheme: str) -> None:
    """vector H row 11: scheme other than exactly HTTP/HTTPS -> NotSupported (§2.7)."""
    p = Probe(http_get=HTTPGetAction(port=80, scheme=scheme))
    err = only(validate_pod(pod_with(ProbeType.LIVENESS, p)))
    assert err.path == "spec.containers[0].livenessProbe.httpGet.scheme"
    assert err.type is ErrorType.NOT_SUPPORTED and err.type == "NotSupported"
    assert err.body() == f'Unsupported value: "{scheme}": supported values: "HTTP", "HTTPS"'


@pytest.mark.parametrize("scheme", ["HTTP", "HTTPS"])
def test_http_schemes_supported(scheme: str) -> None:
    """§2.7: HTTP and HTTPS are accepted."""
    assert (
        validate_pod(pod_with(ProbeType.LIVENESS, Probe(http_get=HTTPGetAction(80, scheme=scheme))))
        == []
    )


@pytest.mark.parametrize("port", [0, 70000, -1, 65536])
@pytest.mark.parametrize("handler", ["httpGet", "tcpSocket"])
def test_vector_h_port_out_of_range(port: int, handler: str) -> None:
    """vector H row 12: httpGet.port 0 or 70000 -> Invalid (ValidatePortNumOrName)."""
    action = HTTPGetAction(port=port) if handler == "httpGet" else TCPSocketAction(port=port)
    field = "http_get" if handler == "httpGet" else "tcp_socket"
    err = only(validate_pod(pod_with(ProbeType.READINESS, Probe(**{field: action}))))  # type: ignore[arg-type]
    assert err.path == f"spec.containers[0].readinessProbe.{handler}.port"
    assert err.body() == f"Invalid value: {port}: must be between 1 and 65535, inclusive"


@pytest.mark.parametrize("port", [1, 80, 65535])
def test_port_in_range(port: int) -> None:
    """IsValidPortNum: 1..65535 inclusive."""
    assert validate_pod(pod_with(ProbeType.LIVENESS, Probe(tcp_socket=TCPSocketAction(port)))) == []


def test_vector_h_grpc_port_out_of_range() -> None:
    """vector H row 13: grpc.port=70000 -> grpc.port Invalid (validateGRPCAction)."""
    err = only(validate_pod(pod_with(ProbeType.LIVENESS, Probe(grpc=GRPCAction(port=70000)))))
    assert err.path == "spec.containers[0].livenessProbe.grpc.port"
    assert err.body() == "Invalid value: 70000: must be between 1 and 65535, inclusive"


@pytest.mark.parametrize("probe_type", list(ProbeType))
def test_vector_h_plain_init_container_probe_forbidden(probe_type: ProbeType) -> None:
    """vector H row 14: init container without restartPolicy -> Forbidden (validateInitContainers).

    The probe's own content is not validated: a bad probe gives only the Forbidden error."""
    pod = pod_with(probe_type, Probe(), kind=ContainerKind.INIT)
    err = only(validate_pod(pod))
    assert err.path == f"spec.initContainers[0].{KEY_OF[probe_type]}"
    assert err.type is ErrorType.FORBIDDEN
    assert err.detail == "may not be set for init containers without restartPolicy=Always"
    assert (err.container, err.container_kind) == ("app", ContainerKind.INIT)


def test_vector_h_sidecar_liveness_ok() -> None:
    """vector H row 15: init container with restartPolicy Always, liveness successThreshold=1."""
    pod = pod_with(
        ProbeType.LIVENESS,
        probe(success_threshold=1),
        kind=ContainerKind.INIT,
        restart_policy="Always",
    )
    assert validate_pod(pod) == []


def test_sidecar_probes_get_full_validation() -> None:
    """§2.8: a restartable init container's probes are validated like a regular one's."""
    pod = pod_with(
        ProbeType.LIVENESS,
        probe(success_threshold=2),
        kind=ContainerKind.INIT,
        restart_policy="Always",
    )
    err = only(validate_pod(pod))
    assert err.path == "spec.initContainers[0].livenessProbe.successThreshold"


@pytest.mark.parametrize("probe_type", list(ProbeType))
def test_vector_h_ephemeral_container_probe_forbidden(probe_type: ProbeType) -> None:
    """vector H row 16: ephemeral container probe -> Forbidden "cannot be set for an Ephemeral
    Container" (validateEphemeralContainers' field allow-list)."""
    eph = Container(name="debug", kind=ContainerKind.EPHEMERAL, **{FIELD_OF[probe_type]: probe()})  # type: ignore[arg-type]
    pod = Pod(name="p", containers=(Container(name="app"),))
    err = only(validate_pod(pod, ephemeral_containers=[eph]))
    assert err.path == f"spec.ephemeralContainers[0].{KEY_OF[probe_type]}"
    assert err.type is ErrorType.FORBIDDEN
    assert err.detail == "cannot be set for an Ephemeral Container"


def test_ephemeral_container_ports_and_lifecycle_forbidden_in_struct_order() -> None:
    """validateFieldAllowList walks the Container struct: ports, ..., probes, lifecycle."""
    eph = Container(
        name="debug",
        kind=ContainerKind.EPHEMERAL,
        ports=(ContainerPort(80),),
        startup_probe=probe(),
        liveness_probe=probe(),
        has_pre_stop=True,
    )
    pod = Pod(name="p", containers=(Container(name="app"),))
    errors = validate_pod(pod, ephemeral_containers=[eph])
    assert [e.path.rsplit(".", 1)[1] for e in errors] == [
        "ports",
        "livenessProbe",
        "startupProbe",
        "lifecycle",
    ]


# --- §2.7 details ---


@pytest.mark.parametrize(
    ("name", "messages"),
    [
        ("http", []),
        ("grpc-health", []),
        ("a1", []),
        ("abcdefghijklmno", []),  # 15 characters
        ("abcdefghijklmnop", ["must be no more than 15 characters"]),
        ("8080", ["must contain at least one letter (a-z)"]),
        (
            "HTTP",
            [
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must contain at least one letter (a-z)",
            ],
        ),
        ("web_1", ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]),
        ("-web", ["must not begin or end with a hyphen"]),
        ("web-", ["must not begin or end with a hyphen"]),
        ("we--b", ["must not contain consecutive hyphens"]),
        (
            "",
            [
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must contain at least one letter (a-z)",
            ],
        ),
    ],
)
def test_port_name_iana_svc_name(name: str, messages: list[str]) -> None:
    """IsValidPortName (IANA_SVC_NAME), messages as in apimachinery's validation.go."""
    assert is_valid_port_name(name) == messages


def test_named_probe_port_invalid_name() -> None:
    """ValidatePortNumOrName: a string port is checked as a port name, one error per rule."""
    p = Probe(tcp_socket=TCPSocketAction(port="Web_Port"))
    errors = validate_pod(pod_with(ProbeType.LIVENESS, p))
    assert {e.path for e in errors} == {"spec.containers[0].livenessProbe.tcpSocket.port"}
    assert errors[0].body() == (
        'Invalid value: "Web_Port": must contain only alpha-numeric characters (a-z, 0-9), '
        "and hyphens (-)"
    )


def test_quoted_digits_port_is_a_name_and_invalid() -> None:
    """IntOrString keeps "8080" a string; as a name it lacks a letter, so the API refuses it."""
    err = only(
        validate_pod(pod_with(ProbeType.LIVENESS, Probe(http_get=HTTPGetAction(port="8080"))))
    )
    assert err.body() == 'Invalid value: "8080": must contain at least one letter (a-z)'
    assert err.fix is not None and "without quotes" in err.fix


def test_http_header_names() -> None:
    """validateHTTPGetAction: header names must match [-A-Za-z0-9]+; reported on httpHeaders."""
    headers = (HTTPHeader("X-Ok-1", "v"), HTTPHeader("Bad Header", "v"), HTTPHeader("", "v"))
    p = Probe(http_get=HTTPGetAction(port=80, http_headers=headers))
    errors = validate_pod(pod_with(ProbeType.LIVENESS, p))
    assert [(e.path, e.value) for e in errors] == [
        ("spec.containers[0].livenessProbe.httpGet.httpHeaders", "Bad Header"),
        ("spec.containers[0].livenessProbe.httpGet.httpHeaders", ""),
    ]
    assert errors[0].detail == (
        "a valid HTTP header must consist of alphanumeric characters or '-' "
        "(e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"
    )


def test_http_path_required() -> None:
    """validateHTTPGetAction: an empty path (after defaulting) is Required."""
    err = only(
        validate_pod(pod_with(ProbeType.LIVENESS, Probe(http_get=HTTPGetAction(80, path=""))))
    )
    assert err.path.endswith("httpGet.path") and err.type is ErrorType.REQUIRED


def test_container_ports_validated() -> None:
    """validateContainerPorts: name format, duplicate names, containerPort range, protocol."""
    ports = (
        ContainerPort(8080, "http"),
        ContainerPort(8081, "http"),
        ContainerPort(0, "Bad"),
        ContainerPort(70000, None, "ICMP"),
    )
    errors = validate_pod(Pod(name="p", containers=(Container(name="app", ports=ports),)))
    assert [(e.field, e.type) for e in errors] == [
        ("ports[1].name", ErrorType.DUPLICATE),
        ("ports[2].name", ErrorType.INVALID),
        ("ports[2].containerPort", ErrorType.REQUIRED),
        ("ports[3].containerPort", ErrorType.INVALID),
        ("ports[3].protocol", ErrorType.NOT_SUPPORTED),
    ]
    assert errors[-1].body() == 'Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'


def test_container_names_required_unique_dns_label() -> None:
    """validateContainerCommon / validateInitContainers: name Required, DNS-1123 label, unique
    across regular and init containers."""
    pod = Pod(
        name="p",
        containers=(Container(name="app"), Container(name="app"), Container(name="")),
        init_containers=(
            Container(name="app", kind=ContainerKind.INIT),
            Container(name="Bad.Name", kind=ContainerKind.INIT),
        ),
    )
    errors = validate_pod(pod)
    assert [(e.path, e.type) for e in errors] == [
        ("spec.containers[1].name", ErrorType.DUPLICATE),
        ("spec.containers[2].name", ErrorType.REQUIRED),
        ("spec.initContainers[0].name", ErrorType.DUPLICATE),
        ("spec.initContainers[1].name", ErrorType.INVALID),
    ]
    assert errors[-1].detail.startswith("a lowercase RFC 1123 label must consist of")
    assert "(e.g. 'my-name',  or '123-abc', regex used" in errors[-1].detail


def test_pod_needs_containers_and_valid_restart_policy() -> None:
    """validateContainers: none -> Required; validateRestartPolicy: Always/OnFailure/Never."""
    errors = validate_pod(Pod(name="p", restart_policy="Sometimes"))
    assert [str(e) for e in errors] == [
        "spec.containers: Required value",
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"',
    ]


# --- check_pod: one line for people ---


def test_check_pod_multiple_handlers_message() -> None:
    """check_pod folds the per-handler Forbidden errors into one line naming the probe."""
    pod = Pod(
        name="web",
        containers=(
            Container(name="app", liveness_probe=Probe(exec=EXEC, http_get=HTTPGetAction(80))),
        ),
        source="deploy.yaml, document 2 (Deployment web)",
    )
    with pytest.raises(ManifestError) as info:
        check_pod(pod)
    assert str(info.value) == (
        'deploy.yaml, document 2 (Deployment web): container "app": livenessProbe: may not '
        "specify more than 1 handler type (httpGet and exec are both set; keep one)"
    )
    assert info.value.container == "app" and info.value.field == "livenessProbe"


def test_check_pod_three_handlers_one_message() -> None:
    """Three handlers: one message, listing them all (upstream gives one Forbidden per extra)."""
    p = Probe(http_get=HTTPGetAction(80), tcp_socket=TCPSocketAction(80), grpc=GRPCAction(80))
    pod = Pod(name="p", containers=(Container(name="app", readiness_probe=p),), source="x.yaml")
    with pytest.raises(ManifestError) as info:
        check_pod(pod)
    assert str(info.value).endswith(
        "readinessProbe: may not specify more than 1 handler type "
        "(tcpSocket, grpc and httpGet are all set; keep one)"
    )
    assert not info.value.more


def test_check_pod_lists_further_errors_on_the_same_line() -> None:
    """check_pod: first error in full, the rest after "; also:", all on one line."""
    c = Container(
        name="app",
        liveness_probe=probe(success_threshold=2),
        readiness_probe=probe(period_seconds=-5),
    )
    pod = Pod(name="p", containers=(c,), source="pod.yaml, document 1 (Pod p)")
    with pytest.raises(ManifestError) as info:
        check_pod(pod)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(
        'pod.yaml, document 1 (Pod p): container "app": livenessProbe.successThreshold: '
        "Invalid value: 2: must be 1"
    )
    assert '; also: container "app": readinessProbe.periodSeconds: Invalid value: -5: ' in text


def test_check_pod_init_container_fix() -> None:
    """The Forbidden error for a plain init container's probe suggests making it a sidecar."""
    pod = pod_with(ProbeType.STARTUP, probe(), kind=ContainerKind.INIT)
    with pytest.raises(ManifestError) as info:
        check_pod(pod)
    assert str(info.value) == (
        'init container "app": startupProbe: may not be set for init containers without '
        "restartPolicy=Always (add restartPolicy: Always to make it a sidecar, or remove it)"
    )


def test_check_pod_valid_is_silent() -> None:
    check_pod(pod_with(ProbeType.READINESS, probe(success_threshold=3)))
