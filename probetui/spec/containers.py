"""Turn one container of a manifest into the model: probes, handlers, env, ports, restart rules.

Probes come out defaulted as the API server stores them: `SetDefaults_Probe`,
`SetDefaults_HTTPGetAction` and `SetDefaults_ContainerPort` (docs/kubelet-behaviour.md §2.1,
§2.2). v1.Probe and its handlers are closed sets of fields, so anything else is refused as
strict decoding does; of v1.Container's many fields only near-miss spellings are caught.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from probetui.spec.decode import (
    INT64,
    At,
    check_fields,
    describe,
    int_or_string,
    integer,
    mapping,
    sequence,
    string,
    strings,
)
from probetui.spec.errors import KIND_WORDS
from probetui.spec.model import (
    Container,
    ContainerKind,
    ContainerPort,
    EnvVar,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Probe,
    RestartRule,
    TCPSocketAction,
)

__all__ = ["containers_of", "set_probe_defaults"]

# v1.Container's fields, used only to catch near-miss spellings ("livenesProbe")
_CONTAINER_FIELDS = (
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    "targetContainerName",
)
# v1.Probe's fields: a closed set, so anything else is refused as strict decoding does
_PROBE_FIELDS = (
    "exec",
    "httpGet",
    "tcpSocket",
    "grpc",
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
    "terminationGracePeriodSeconds",
)
_HANDLER_FIELDS = {
    "exec": ("command",),
    "httpGet": ("path", "port", "host", "scheme", "httpHeaders"),
    "tcpSocket": ("port", "host"),
    "grpc": ("port", "service"),
}


def set_probe_defaults(probe: Probe) -> Probe:
    """`SetDefaults_Probe` (§2.1): a timeoutSeconds, periodSeconds, successThreshold or
    failureThreshold of 0 becomes 1, 10, 1 or 3. initialDelaySeconds keeps its 0, and negative
    values stay as they are, for validation to refuse."""
    return replace(
        probe,
        timeout_seconds=probe.timeout_seconds or 1,
        period_seconds=probe.period_seconds or 10,
        success_threshold=probe.success_threshold or 1,
        failure_threshold=probe.failure_threshold or 3,
    )


def _probe(value: object, at: At) -> Probe | None:
    """Return a probe with `SetDefaults_Probe` and `SetDefaults_HTTPGetAction` applied (§2.1,
    §2.2)."""
    if value is None:
        return None
    m = mapping(value, at)
    check_fields(m, _PROBE_FIELDS, at, strict=True, what="probe")

    def number(key: str) -> int:
        # an absent field is the Go zero value, which defaulting then treats as a written 0
        return integer(m.get(key), at.key(m, key)) or 0

    tgps = integer(
        m.get("terminationGracePeriodSeconds"), at.key(m, "terminationGracePeriodSeconds"), INT64
    )
    # set_probe_defaults' zeros, written in, so that no second Probe per probe
    # (dataclasses.replace) is made while a manifest's containers are read
    return Probe(
        exec=_exec(m.get("exec"), at.key(m, "exec")),
        http_get=_http_get(m.get("httpGet"), at.key(m, "httpGet")),
        tcp_socket=_tcp_socket(m.get("tcpSocket"), at.key(m, "tcpSocket")),
        grpc=_grpc(m.get("grpc"), at.key(m, "grpc")),
        initial_delay_seconds=number("initialDelaySeconds"),
        timeout_seconds=number("timeoutSeconds") or 1,
        period_seconds=number("periodSeconds") or 10,
        success_threshold=number("successThreshold") or 1,
        failure_threshold=number("failureThreshold") or 3,
        termination_grace_period_seconds=tgps,
    )


def _handler_map(value: object, at: At, name: str) -> dict[str, Any] | None:
    if value is None:
        return None
    m = mapping(value, at)
    check_fields(m, _HANDLER_FIELDS[name], at, strict=False, what=name)
    return m


def _exec(value: object, at: At) -> ExecAction | None:
    m = _handler_map(value, at, "exec")
    if m is None:
        return None
    return ExecAction(command=strings(m.get("command"), at.key(m, "command")))


def _port(m: dict[str, Any], at: At) -> int | str:
    port = int_or_string(m.get("port"), at.key(m, "port"))
    # a missing IntOrString is the integer 0, which validation then refuses
    return 0 if port is None else port


def _http_get(value: object, at: At) -> HTTPGetAction | None:
    m = _handler_map(value, at, "httpGet")
    if m is None:
        return None
    headers_at = at.key(m, "httpHeaders")
    headers = sequence(m.get("httpHeaders"), headers_at)
    parsed: list[HTTPHeader] = []
    for i, item in enumerate(headers):
        h_at = headers_at.index(headers, i)
        h = mapping(item, h_at)
        parsed.append(
            HTTPHeader(
                name=string(h.get("name"), h_at.key(h, "name")) or "",
                value=string(h.get("value"), h_at.key(h, "value")) or "",
            )
        )
    return HTTPGetAction(
        port=_port(m, at),
        path=string(m.get("path"), at.key(m, "path")) or "/",
        host=string(m.get("host"), at.key(m, "host")) or "",
        scheme=string(m.get("scheme"), at.key(m, "scheme")) or "HTTP",
        http_headers=tuple(parsed),
        protocol=string(m.get("protocol"), at.key(m, "protocol")),
    )


def _tcp_socket(value: object, at: At) -> TCPSocketAction | None:
    m = _handler_map(value, at, "tcpSocket")
    if m is None:
        return None
    return TCPSocketAction(port=_port(m, at), host=string(m.get("host"), at.key(m, "host")) or "")


def _grpc(value: object, at: At) -> GRPCAction | None:
    m = _handler_map(value, at, "grpc")
    if m is None:
        return None
    port_at = at.key(m, "port")
    raw = m.get("port")
    if isinstance(raw, str):
        port_at.fail(
            f"must be an integer, got {describe(raw)}",
            "gRPC probes take a port number; named ports are not supported",
        )
    return GRPCAction(
        port=integer(raw, port_at) or 0,
        service=string(m.get("service"), at.key(m, "service")),
        mode=string(m.get("mode"), at.key(m, "mode")),
    )


def _plain(value: Any) -> Any:
    """Drop the line bookkeeping from values kept as written (env valueFrom)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _env(value: object, at: At) -> tuple[EnvVar, ...]:
    items = sequence(value, at)
    out: list[EnvVar] = []
    for i, item in enumerate(items):
        e_at = at.index(items, i)
        e = mapping(item, e_at)
        value_from = e.get("valueFrom")
        if value_from is not None:
            value_from = _plain(mapping(value_from, e_at.key(e, "valueFrom")))
        literal = string(e.get("value"), e_at.key(e, "value"))
        if literal is None and value_from is None:
            literal = ""  # v1.EnvVar.Value is a plain string: absent means empty, still set
        out.append(
            EnvVar(
                name=string(e.get("name"), e_at.key(e, "name")) or "",
                value=literal,
                value_from=value_from,
            )
        )
    return tuple(out)


def _ports(value: object, at: At) -> tuple[ContainerPort, ...]:
    items = sequence(value, at)
    out: list[ContainerPort] = []
    for i, item in enumerate(items):
        p_at = at.index(items, i)
        p = mapping(item, p_at)
        out.append(
            ContainerPort(
                container_port=integer(p.get("containerPort"), p_at.key(p, "containerPort")) or 0,
                name=string(p.get("name"), p_at.key(p, "name")) or None,
                # SetDefaults_ContainerPort
                protocol=string(p.get("protocol"), p_at.key(p, "protocol")) or "TCP",
            )
        )
    return tuple(out)


def _restart_rules(value: object, at: At) -> tuple[RestartRule, ...]:
    items = sequence(value, at)
    out: list[RestartRule] = []
    for i, item in enumerate(items):
        r_at = at.index(items, i)
        r = mapping(item, r_at)
        codes_at = r_at.key(r, "exitCodes")
        if r.get("exitCodes") is None:
            codes_at.fail("Required value: must be specified")
        codes = mapping(r.get("exitCodes"), codes_at)
        values_at = codes_at.key(codes, "values")
        values = sequence(codes.get("values"), values_at)
        out.append(
            RestartRule(
                action=string(r.get("action"), r_at.key(r, "action")) or "",
                operator=string(codes.get("operator"), codes_at.key(codes, "operator")) or "",
                values=tuple(
                    integer(v, values_at.index(values, j)) or 0 for j, v in enumerate(values)
                ),
            )
        )
    return tuple(out)


def _container(value: object, at: At, kind: ContainerKind) -> Container:
    m = mapping(value, at)
    name = string(m.get("name"), at.key(m, "name")) or ""
    if name:
        # below here, fields are named relative to the container
        at = at.replace(container=name, container_kind=KIND_WORDS[kind], path="")
    check_fields(m, _CONTAINER_FIELDS, at, strict=False, what="container")
    lifecycle_at = at.key(m, "lifecycle")
    lifecycle = mapping(m.get("lifecycle"), lifecycle_at)
    pre_stop = lifecycle.get("preStop")
    if pre_stop is not None:
        mapping(pre_stop, lifecycle_at.key(lifecycle, "preStop"))
    return Container(
        name=name,
        kind=kind,
        image=string(m.get("image"), at.key(m, "image")),
        command=strings(m.get("command"), at.key(m, "command")),
        args=strings(m.get("args"), at.key(m, "args")),
        working_dir=string(m.get("workingDir"), at.key(m, "workingDir")) or None,
        env=_env(m.get("env"), at.key(m, "env")),
        ports=_ports(m.get("ports"), at.key(m, "ports")),
        liveness_probe=_probe(m.get("livenessProbe"), at.key(m, "livenessProbe")),
        readiness_probe=_probe(m.get("readinessProbe"), at.key(m, "readinessProbe")),
        startup_probe=_probe(m.get("startupProbe"), at.key(m, "startupProbe")),
        restart_policy=string(m.get("restartPolicy"), at.key(m, "restartPolicy")),
        restart_policy_rules=_restart_rules(
            m.get("restartPolicyRules"), at.key(m, "restartPolicyRules")
        ),
        has_pre_stop=pre_stop is not None,
    )


def containers_of(spec: dict[str, Any], key: str, at: At, kind: ContainerKind) -> list[Container]:
    """Return the containers a pod spec lists under `key` (`containers`, `initContainers`, ...)."""
    list_at = at.key(spec, key)
    items = sequence(spec.get(key), list_at)
    return [_container(item, list_at.index(items, i), kind) for i, item in enumerate(items)]
