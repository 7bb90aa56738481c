"""Validate the probe-related parts of a pod as the API does (`pkg/apis/core/validation`).

The checks and their message texts follow upstream (`validateProbe`, `validateLivenessProbe`,
`validateReadinessProbe`, `validateStartupProbe`, `validateHandler`, `validateExecAction`,
`validateHTTPGetAction`, `ValidatePortNumOrName`, `validateGRPCAction`, `validateContainers`,
`validateInitContainers`, `validateEphemeralContainers`, `validateContainerPorts`,
`validateRestartPolicy`; docs/kubelet-behaviour.md §2.3-2.8, docs/test-vectors.md H). Input is the
defaulted model, as upstream validates after defaulting (§2.4). Checks on fields the model does
not keep (image, resources, volume mounts, ...) are out of scope: they do not change what the
prober does. The errors are `field.Error`s (`field_errors.py`); the apimachinery format checks
they rest on (port numbers and names, DNS labels, header names) are in `formats.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from probetui.spec.errors import KIND_WORDS, ManifestError
from probetui.spec.field_errors import ErrorType, FieldError
from probetui.spec.formats import (
    is_dns1123_label,
    is_http_header_name,
    is_valid_port_name,
    is_valid_port_num,
)
from probetui.spec.model import (
    Container,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)

__all__ = [
    "ErrorType",
    "FieldError",
    "check_pod",
    "is_valid_port_name",
    "is_valid_port_num",
    "validate_pod",
]

_NEGATIVE = "must be greater than or equal to 0"
_TOO_MANY_HANDLERS = "may not specify more than 1 handler type"
_NO_HANDLER = "must specify a handler type"
_INIT_PROBE_FORBIDDEN = "may not be set for init containers without restartPolicy=Always"
_EPHEMERAL_FORBIDDEN = "cannot be set for an Ephemeral Container"
# supportedHTTPProtocols and supportedGRPCProbeModes (1.37), in sets.List's order
HTTP_PROTOCOLS = ("HTTP1", "HTTP2")
GRPC_MODES = ("Plaintext", "TLS")


# --- the checks ---


class _Collector:
    """Collects errors for one container, carrying the container's name and kind into each."""

    def __init__(self, out: list[FieldError], base: str, container: Container | None) -> None:
        self.out = out
        self.base = base
        self.container = container

    def add(
        self,
        rel: str,
        type_: ErrorType,
        value: object = None,
        detail: str = "",
        fix: str | None = None,
    ) -> None:
        path = f"{self.base}.{rel}" if rel else self.base
        c = self.container
        self.out.append(
            FieldError(
                path=path,
                type=type_,
                value=value,
                detail=detail,
                container=c.name if c is not None and c.name else None,
                container_kind=c.kind if c is not None else None,
                field=rel if c is not None and c.name else path,
                fix=fix,
            )
        )


def _port_num_or_name(port: int | str, rel: str, out: _Collector) -> None:
    if isinstance(port, int):
        for msg in is_valid_port_num(port):
            out.add(rel, ErrorType.INVALID, port, msg, "use a port from 1 to 65535 or a port name")
        return
    fix = None
    if port.isdigit():
        # IntOrString keeps the quoted form a string, and a string must be a name
        fix = "a quoted number is a port name; write the number without quotes"
    for msg in is_valid_port_name(port):
        out.add(rel, ErrorType.INVALID, port, msg, fix)


def _exec(action: ExecAction, rel: str, out: _Collector) -> None:
    if not action.command:
        out.add(f"{rel}.command", ErrorType.REQUIRED, fix="give the command to run as a list")


def _http_get(action: HTTPGetAction, rel: str, out: _Collector) -> None:
    if not action.path:
        out.add(f"{rel}.path", ErrorType.REQUIRED)
    _port_num_or_name(action.port, f"{rel}.port", out)
    if action.scheme not in ("HTTP", "HTTPS"):
        fix = None
        if action.scheme.upper() in ("HTTP", "HTTPS"):
            fix = f'the scheme is case-sensitive: write "{action.scheme.upper()}"'
        out.add(
            f"{rel}.scheme",
            ErrorType.NOT_SUPPORTED,
            action.scheme,
            'supported values: "HTTP", "HTTPS"',
            fix,
        )
    for header in action.http_headers:
        # upstream reports these on the list, not on the entry
        for msg in is_http_header_name(header.name):
            out.add(f"{rel}.httpHeaders", ErrorType.INVALID, header.name, msg)
    protocol = action.protocol
    if protocol is None:
        return
    # 1.37's checks of the H2CContainerProbe field, whatever the gate (a bad value is bad)
    if protocol not in HTTP_PROTOCOLS:
        supported = ", ".join(f'"{p}"' for p in HTTP_PROTOCOLS)
        out.add(
            f"{rel}.protocol", ErrorType.NOT_SUPPORTED, protocol, f"supported values: {supported}"
        )
    elif protocol == "HTTP2" and action.scheme != "HTTP":
        out.add(
            f"{rel}.protocol",
            ErrorType.INVALID,
            protocol,
            "is only supported with HTTP (H2C)",
            'h2c is HTTP/2 without TLS: use scheme "HTTP", or leave protocol out for HTTPS',
        )
    elif protocol == "HTTP2" and action.host:
        out.add(
            f"{rel}.host",
            ErrorType.INVALID,
            action.host,
            'must be empty when `protocol` is "HTTP2"',
        )


def _tcp_socket(action: TCPSocketAction, rel: str, out: _Collector) -> None:
    _port_num_or_name(action.port, f"{rel}.port", out)


def _grpc(action: GRPCAction, rel: str, out: _Collector) -> None:
    _port_num_or_name(action.port, f"{rel}.port", out)
    if action.mode is not None and action.mode not in GRPC_MODES:
        supported = ", ".join(f'"{m}"' for m in GRPC_MODES)
        out.add(
            f"{rel}.mode", ErrorType.NOT_SUPPORTED, action.mode, f"supported values: {supported}"
        )


def _handler(probe: Probe, rel: str, out: _Collector) -> None:
    """`validateHandler`: the first handler set is checked, every later one is Forbidden."""
    handlers: tuple[tuple[str, object, Callable[..., None]], ...] = (
        ("exec", probe.exec, _exec),
        ("httpGet", probe.http_get, _http_get),
        ("tcpSocket", probe.tcp_socket, _tcp_socket),
        ("grpc", probe.grpc, _grpc),
    )
    first: str | None = None
    for name, action, check in handlers:
        if action is None:
            continue
        if first is not None:
            out.add(
                f"{rel}.{name}",
                ErrorType.FORBIDDEN,
                detail=_TOO_MANY_HANDLERS,
                fix=f"{name} and {first} are both set; keep one",
            )
        else:
            first = name
            check(action, f"{rel}.{name}", out)
    if first is None:
        out.add(
            rel,
            ErrorType.REQUIRED,
            detail=_NO_HANDLER,
            fix="set one of exec, httpGet, tcpSocket or grpc",
        )


def _probe(probe: Probe, probe_type: ProbeType, rel: str, out: _Collector) -> None:
    """`validateProbe` plus the per-type rules of validateLiveness/Readiness/StartupProbe."""
    _handler(probe, rel, out)
    for name, value in (
        ("initialDelaySeconds", probe.initial_delay_seconds),
        ("timeoutSeconds", probe.timeout_seconds),
        ("periodSeconds", probe.period_seconds),
        ("successThreshold", probe.success_threshold),
        ("failureThreshold", probe.failure_threshold),
    ):
        if value < 0:
            out.add(f"{rel}.{name}", ErrorType.INVALID, value, _NEGATIVE)
    tgps = probe.termination_grace_period_seconds
    if tgps is not None and tgps <= 0:
        out.add(
            f"{rel}.terminationGracePeriodSeconds",
            ErrorType.INVALID,
            tgps,
            "must be greater than 0",
            "remove it to use the pod's grace period",
        )
    if probe_type in (ProbeType.LIVENESS, ProbeType.STARTUP) and probe.success_threshold != 1:
        out.add(
            f"{rel}.successThreshold",
            ErrorType.INVALID,
            probe.success_threshold,
            "must be 1",
            f"a {probe_type.key} probe acts on its first success; set 1 or leave it out",
        )
    if probe_type is ProbeType.READINESS and tgps is not None:
        out.add(
            f"{rel}.terminationGracePeriodSeconds",
            ErrorType.INVALID,
            tgps,
            "must not be set for readinessProbes",
            "readiness failures never kill the container; remove it",
        )


_PROBE_FIELDS = (
    (ProbeType.LIVENESS, "livenessProbe"),
    (ProbeType.READINESS, "readinessProbe"),
    (ProbeType.STARTUP, "startupProbe"),
)


def _probes(c: Container, out: _Collector) -> None:
    for probe_type, rel in _PROBE_FIELDS:
        probe = c.probe(probe_type)
        if probe is not None:
            _probe(probe, probe_type, rel, out)


def _ports(c: Container, out: _Collector) -> None:
    """`validateContainerPorts`."""
    names: set[str] = set()
    for i, port in enumerate(c.ports):
        rel = f"ports[{i}]"
        if port.name:
            msgs = is_valid_port_name(port.name)
            for msg in msgs:
                out.add(f"{rel}.name", ErrorType.INVALID, port.name, msg)
            if not msgs:
                if port.name in names:
                    out.add(f"{rel}.name", ErrorType.DUPLICATE, port.name)
                names.add(port.name)
        if port.container_port == 0:
            out.add(f"{rel}.containerPort", ErrorType.REQUIRED)
        else:
            for msg in is_valid_port_num(port.container_port):
                out.add(f"{rel}.containerPort", ErrorType.INVALID, port.container_port, msg)
        if not port.protocol:
            out.add(f"{rel}.protocol", ErrorType.REQUIRED)
        elif port.protocol not in ("SCTP", "TCP", "UDP"):
            out.add(
                f"{rel}.protocol",
                ErrorType.NOT_SUPPORTED,
                port.protocol,
                'supported values: "SCTP", "TCP", "UDP"',
            )


def _common(c: Container, out: _Collector) -> None:
    """The probe-relevant part of `validateContainerCommon`: name and ports."""
    if not c.name:
        out.add("name", ErrorType.REQUIRED)
    else:
        for msg in is_dns1123_label(c.name):
            out.add("name", ErrorType.INVALID, c.name, msg)
    _ports(c, out)


def validate_pod(pod: Pod, ephemeral_containers: Sequence[Container] = ()) -> list[FieldError]:
    """All validation errors for the probe-related parts of `pod`, in upstream's order.

    Ephemeral containers are passed separately because the model's Pod does not hold them
    (the prober never runs probes for them); `parse_pods` passes what the manifest had.
    """
    errors: list[FieldError] = []
    names: set[str] = set()

    if not pod.containers:
        errors.append(
            FieldError(
                "spec.containers",
                ErrorType.REQUIRED,
                field="spec.containers",
                fix="a pod needs at least one container",
            )
        )
    for i, c in enumerate(pod.containers):
        out = _Collector(errors, f"spec.containers[{i}]", c)
        _common(c, out)
        if c.name in names:
            out.add("name", ErrorType.DUPLICATE, c.name)
        names.add(c.name)
        _probes(c, out)

    for i, c in enumerate(pod.init_containers):
        out = _Collector(errors, f"spec.initContainers[{i}]", c)
        _common(c, out)
        if c.name in names:
            out.add("name", ErrorType.DUPLICATE, c.name)
        elif c.name:
            names.add(c.name)
        if c.restart_policy == "Always":
            _probes(c, out)
            continue
        # §2.8: probes (and lifecycle hooks) need a sidecar
        fix = "add restartPolicy: Always to make it a sidecar, or remove it"
        if c.has_pre_stop:
            out.add("lifecycle", ErrorType.FORBIDDEN, detail=_INIT_PROBE_FORBIDDEN, fix=fix)
        for probe_type, rel in _PROBE_FIELDS:
            if c.probe(probe_type) is not None:
                out.add(rel, ErrorType.FORBIDDEN, detail=_INIT_PROBE_FORBIDDEN, fix=fix)

    for i, c in enumerate(ephemeral_containers):
        out = _Collector(errors, f"spec.ephemeralContainers[{i}]", c)
        _common(c, out)
        if c.name in names:
            out.add("name", ErrorType.DUPLICATE, c.name)
        else:
            names.add(c.name)
        # the allow-list check walks the Container struct in field order
        fix = "ephemeral containers are for debugging and are never probed; remove it"
        forbidden = (
            ("ports", bool(c.ports)),
            ("restartPolicy", c.restart_policy is not None),
            ("restartPolicyRules", bool(c.restart_policy_rules)),
            ("livenessProbe", c.liveness_probe is not None),
            ("readinessProbe", c.readiness_probe is not None),
            ("startupProbe", c.startup_probe is not None),
            ("lifecycle", c.has_pre_stop),
        )
        for rel, is_set in forbidden:
            if is_set:
                out.add(rel, ErrorType.FORBIDDEN, detail=_EPHEMERAL_FORBIDDEN, fix=fix)

    policy = pod.restart_policy
    if not policy:
        errors.append(
            FieldError("spec.restartPolicy", ErrorType.REQUIRED, field="spec.restartPolicy")
        )
    elif policy not in ("Always", "OnFailure", "Never"):
        errors.append(
            FieldError(
                "spec.restartPolicy",
                ErrorType.NOT_SUPPORTED,
                policy,
                'supported values: "Always", "OnFailure", "Never"',
                field="spec.restartPolicy",
            )
        )
    return errors


# --- errors for people ---


_BOTH_SET = re.compile(r"^(\w+) and (\w+) are both set")


def _merge_handler_errors(errors: list[FieldError]) -> list[FieldError]:
    """Fold the Forbidden errors for extra handlers into one error on the probe itself."""
    merged: list[FieldError] = []
    groups: dict[str, tuple[int, str, list[str]]] = {}
    for err in errors:
        match = _BOTH_SET.match(err.fix or "") if err.detail == _TOO_MANY_HANDLERS else None
        if match is None:
            merged.append(err)
            continue
        extra, kept = match.groups()
        probe_path = err.path.rpartition(".")[0]
        if probe_path not in groups:
            groups[probe_path] = (len(merged), kept, [])
            merged.append(err)
        pos, kept, extras = groups[probe_path]
        extras.append(extra)
        names = [*extras, kept]
        listed = ", ".join(names[:-1]) + f" and {names[-1]}"
        verb = "both" if len(names) == 2 else "all"
        merged[pos] = replace(
            err,
            path=probe_path,
            field=err.field.rpartition(".")[0],
            fix=f"{listed} are {verb} set; keep one",
        )
    return merged


def _to_manifest_error(
    err: FieldError, origin: str, line_of: Callable[[str], int | None] | None
) -> ManifestError:
    return ManifestError(
        err.summary(),
        origin=origin,
        line=line_of(err.path) if line_of is not None else None,
        container=err.container,
        container_kind=KIND_WORDS[err.container_kind] if err.container_kind else "container",
        field=err.field or err.path,
        fix=err.fix,
    )


def check_pod(
    pod: Pod,
    ephemeral_containers: Sequence[Container] = (),
    line_of: Callable[[str], int | None] | None = None,
) -> None:
    """Raise ManifestError naming the first validation error (and listing the others).

    `line_of` maps an error's path (`spec.containers[0]...`) to a line in the file, when the
    caller knows the file.
    """
    errors = _merge_handler_errors(validate_pod(pod, ephemeral_containers))
    if not errors:
        return
    first = _to_manifest_error(errors[0], pod.source, line_of)
    more = [str(_to_manifest_error(e, "", None)) for e in errors[1:]]
    raise ManifestError(
        first.detail,
        origin=first.origin,
        line=first.line,
        container=first.container,
        container_kind=first.container_kind,
        field=first.field,
        fix=first.fix,
        more=more,
    )
