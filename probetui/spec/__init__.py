"""Parse the Pod / Container / Probe model from manifests, with the API's defaults and checks."""

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
