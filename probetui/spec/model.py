"""Model the parts of a Pod that probing depends on, defaulted (`pkg/apis/core/v1/defaults.go`).

Field names follow the Kubernetes API in snake_case. Every object is frozen: a worker keeps the
spec it was created with, as the kubelet's worker keeps its pod object
(docs/kubelet-behaviour.md §5.8).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum, StrEnum


class ProbeType(StrEnum):
    """Names the three probe types: each member is its lower-case key as a string (liveness,
    readiness, startup: the name on the command line and in JSON), and `.value` is the
    kubelet's name in events and metrics (§1.1).

    Being a `str`, a member equals, hashes and serialises as its key, so an event's probe is
    the member itself wherever the key was written before (JSONL, the recording, the stream).
    """

    LIVENESS = "Liveness"
    READINESS = "Readiness"
    STARTUP = "Startup"

    # the lower-case name as a plain `str`, for a tuple the cyclic collector may stop tracking
    # (a member, having a `__dict__`, is tracked)
    key: str

    def __new__(cls, kubelet_name: str) -> ProbeType:
        key = kubelet_name.lower()
        member = str.__new__(cls, key)
        member._value_ = kubelet_name
        member.key = key
        return member

    @classmethod
    def parse(cls, text: str) -> ProbeType:
        """Return the member named by `text` in any case (a member is its own name)."""
        if isinstance(text, cls):
            return text
        return cls[text.strip().upper()]


class ContainerKind(Enum):
    CONTAINER = "container"
    INIT = "initContainer"
    EPHEMERAL = "ephemeralContainer"


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    name: str | None = None
    protocol: str = "TCP"


@dataclass(frozen=True, slots=True)
class EnvVar:
    name: str
    value: str | None = None
    # valueFrom (secret, configMap, fieldRef, ...) is kept as written: exec probes do not see it
    # (§9.6) and the local runtime reports it rather than dropping it silently.
    value_from: dict | None = None


@dataclass(frozen=True, slots=True)
class ExecAction:
    command: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HTTPHeader:
    name: str
    value: str


@dataclass(frozen=True, slots=True)
class HTTPGetAction:
    port: int | str
    path: str = "/"
    host: str = ""
    scheme: str = "HTTP"
    http_headers: tuple[HTTPHeader, ...] = ()
    # HTTP1 or HTTP2 (h2c), read by the kubelet with H2CContainerProbe on (alpha in 1.37);
    # None when the manifest does not say, which the kubelet takes for HTTP/1.1
    protocol: str | None = None


@dataclass(frozen=True, slots=True)
class TCPSocketAction:
    port: int | str
    host: str = ""


@dataclass(frozen=True, slots=True)
class GRPCAction:
    port: int
    service: str | None = None
    # Plaintext or TLS, read by the kubelet with GRPCContainerProbeTLS on (alpha in 1.37)
    mode: str | None = None


Handler = ExecAction | HTTPGetAction | TCPSocketAction | GRPCAction


@dataclass(frozen=True, slots=True)
class Probe:
    """Holds a probe with API defaults applied (§2.1): timeout 1, period 10, thresholds 1/3."""

    exec: ExecAction | None = None
    http_get: HTTPGetAction | None = None
    tcp_socket: TCPSocketAction | None = None
    grpc: GRPCAction | None = None
    initial_delay_seconds: int = 0
    timeout_seconds: int = 1
    period_seconds: int = 10
    success_threshold: int = 1
    failure_threshold: int = 3
    termination_grace_period_seconds: int | None = None

    @property
    def handler(self) -> Handler | None:
        """The first handler in the kubelet's dispatch order: exec, httpGet, tcpSocket, grpc."""
        for h in (self.exec, self.http_get, self.tcp_socket, self.grpc):
            if h is not None:
                return h
        return None

    @property
    def handler_name(self) -> str | None:
        """ "exec", "http", "tcp" or "grpc"."""
        h = self.handler
        if h is None:
            return None
        return {
            ExecAction: "exec",
            HTTPGetAction: "http",
            TCPSocketAction: "tcp",
            GRPCAction: "grpc",
        }[type(h)]


@dataclass(frozen=True, slots=True)
class RestartRule:
    """Holds one `restartPolicyRules` entry (ContainerRestartRules, beta and on since 1.35).

    Only the `Restart` action on `exitCodes` exists upstream; `operator` is In or NotIn.
    """

    action: str
    operator: str
    values: tuple[int, ...]

    def matches(self, exit_code: int) -> bool:
        if self.operator == "In":
            return exit_code in self.values
        if self.operator == "NotIn":
            return exit_code not in self.values
        return False


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    kind: ContainerKind = ContainerKind.CONTAINER
    image: str | None = None
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    working_dir: str | None = None
    env: tuple[EnvVar, ...] = ()
    ports: tuple[ContainerPort, ...] = ()
    liveness_probe: Probe | None = None
    readiness_probe: Probe | None = None
    startup_probe: Probe | None = None
    # container-level restartPolicy: "Always" makes an init container a sidecar
    restart_policy: str | None = None
    restart_policy_rules: tuple[RestartRule, ...] = ()
    # the preStop hook's run time is subtracted from a kill's grace period (§11.5)
    has_pre_stop: bool = False

    def probe(self, probe_type: ProbeType) -> Probe | None:
        if probe_type is ProbeType.LIVENESS:
            return self.liveness_probe
        if probe_type is ProbeType.READINESS:
            return self.readiness_probe
        return self.startup_probe

    @property
    def is_restartable_init(self) -> bool:
        """A sidecar: an init container with restartPolicy Always."""
        return self.kind is ContainerKind.INIT and self.restart_policy == "Always"

    def literal_env(self) -> dict[str, str]:
        """Env vars with literal values only: what `$(VAR)` expansion in exec probes may use."""
        return {e.name: e.value for e in self.env if e.value is not None and e.value_from is None}

    def port_by_name(self, name: str) -> int | None:
        for p in self.ports:
            if p.name == name:
                return p.container_port
        return None


@dataclass(frozen=True, slots=True)
class Pod:
    name: str
    namespace: str = "default"
    uid: str = ""
    labels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    restart_policy: str = "Always"
    termination_grace_period_seconds: int | None = 30
    # metadata.deletionTimestamp / deletionGracePeriodSeconds of the snapshot, when deleting
    deletion_timestamp: float | None = None
    deletion_grace_period_seconds: int | None = None
    # where it came from, for error messages: "deploy.yaml, document 2 (Deployment web)"
    source: str = ""
    # the controller the pod belongs to, as the cluster reports it ("Deployment", "payments";
    # "" for a bare pod, a manifest's or the demo's): metadata, so not part of equality
    owner_kind: str = field(default="", compare=False)
    owner_name: str = field(default="", compare=False)

    def container(self, name: str) -> Container | None:
        for c in (*self.containers, *self.init_containers):
            if c.name == name:
                return c
        return None

    def probed_containers(self) -> tuple[Container, ...]:
        """Containers the probe manager walks: regular ones, then sidecars, in spec order
        (§3.1)."""
        if not self.init_containers:
            return self.containers  # most pods: no generator (a seek asks 15,000 of them)
        return (*self.containers, *(c for c in self.init_containers if c.is_restartable_init))
