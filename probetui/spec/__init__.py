"""Pod / Container / Probe model parsed from manifests, with the API's defaults and validation."""

from probetui.spec.model import (
    Container,
    ContainerKind,
    ContainerPort,
    EnvVar,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Pod,
    Probe,
    ProbeType,
    RestartRule,
    TCPSocketAction,
)

__all__ = [
    "Container",
    "ContainerKind",
    "ContainerPort",
    "EnvVar",
    "ExecAction",
    "GRPCAction",
    "HTTPGetAction",
    "HTTPHeader",
    "Pod",
    "Probe",
    "ProbeType",
    "RestartRule",
    "TCPSocketAction",
]
