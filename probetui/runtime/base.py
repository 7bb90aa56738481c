"""Define what the prober needs from wherever containers live (docs/architecture.md, Runtimes).

A runtime is the only part of probetui that knows where containers run and how to reach them.
It drives the engine through `RuntimeHost`, a push stream:

- `pod_snapshot(pod, status)` each time a pod's spec or status changes (container IDs, state,
  `startedAt`, `started`, `ready`, restart counts), and `pod_deleted(uid)` when it goes;
- `report(event)` for what the kubelet did or said (`ContainerStarted`, `Killing`,
  `Unhealthy`, `BackOff`, `ReadyChanged`, ...), with the kubelet's own texts, and for what the
  runtime itself found (the cluster source's `Divergence` of shadow and kubelet);
- the prober's manager (`host.manager`), which the runtime alone feeds: `add_pod`,
  `update_pod_status`, `remove_pod`. Nothing else in probetui calls those.

The local runtime plays the kubelet, so its manager's results decide kills and readiness. The
cluster source only shadows: it feeds the manager what the real kubelet reports and shows the
real kubelet's verdicts beside the shadow's.

A runtime also answers the handlers: `reach` turns the address a probe names (pod IP or `host`,
and port) into one to dial, and `exec_runner` runs a command "in the container".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from probetui.probe.base import DEFAULT_KUBE_VERSION
from probetui.prober.status import PodStatus
from probetui.redact import DEFAULT, Policy
from probetui.spec.model import Container, Pod, ProbeType

if TYPE_CHECKING:
    from probetui.keys import ProbeKey
    from probetui.probe.exec import ExecRunner
    from probetui.prober.clock import Clock
    from probetui.prober.manager import Manager
    from probetui.timeline.events import Event


class RuntimeFailure(Exception):
    """Signals that a runtime cannot start or go on; the message is one line naming the problem and
    the fix."""


@dataclass(frozen=True, slots=True)
class RuntimeEvent:
    """Describes one thing a runtime reports, in `probetui simulate`'s event vocabulary: what
    the kubelet (real or played) did or said, or, from the cluster source, a `Divergence`.

    `type` is e.g. `ContainerStarted` (restartCount), `ContainerExited` (exitCode, reason),
    `Killing` (message), `BackOff` (delay, message), `Unhealthy` / `ProbeWarning` (message),
    `StartedChanged` (started), `ReadyChanged` (ready). `fields` carries the rest, in the JSON
    names the headless output uses.
    """

    type: str
    t: float  # wall-clock seconds
    pod: Pod
    container: str | None = None
    probe: ProbeType | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    source: str = "kubelet"

    @classmethod
    def played(
        cls, pod: Pod, type_: str, container: str, t: float, fields: Mapping[str, Any]
    ) -> RuntimeEvent:
        """Tell what a played kubelet (`PodKubelet`'s `Emit`) said, its `probe` field lifted out."""
        rest = dict(fields)
        probe: ProbeType | None = rest.pop("probe", None)
        return cls(type_, t, pod, container, probe, rest)


class RuntimeHost(Protocol):
    """Describes the engine, as a runtime sees it."""

    @property
    def clock(self) -> Clock: ...

    @property
    def manager(self) -> Manager: ...

    def pod_snapshot(self, pod: Pod, status: PodStatus) -> None: ...

    def pod_deleted(self, pod_uid: str) -> None: ...

    def report(self, event: RuntimeEvent) -> None: ...

    def shadow_event(self, event: Event) -> None:
        """An event of a shadow that runs elsewhere (a node agent's workers), about a pod the
        runtime has snapshotted: masked as the host's own and handed to its sinks. A worker's
        record event is built again from its masked record: of its fields, only `via` and
        `node` are read (an agent stream's reader sends it without the others)."""
        ...

    def lateness(self) -> float:
        """Tell how far behind its ticks the shadow prober runs (`probetui.prober.lateness`)."""
        ...

    def collect_and_freeze(self) -> None:
        """Collect once and freeze what is alive, after a large batch of pods (a cluster's
        first list): the pods' objects leave the cyclic collector's walks."""


@dataclass(frozen=True, slots=True)
class NodeKubelet:
    """Holds what a runtime knows of the kubelet that runs a pod: its node and that node's
    `kubeletVersion`, or why the version is not known (then the configured one is played)."""

    node: str = ""
    version: str | None = None  # "v1.37.2", as the node reports it
    unknown: str = ""  # why no version: "nodes not read in read-only mode", ...


class Runtime(ABC):
    """Defines where containers live. One runtime per probetui process."""

    # shown in the header: "demo", "local pod.yaml", "context/namespace"
    source: str = ""
    # --read-only: nothing started, signalled, exec'd or forwarded (docs/architecture.md,
    # Read-only mode)
    read_only: bool = False
    # what made it read-only, for the top bar: "--read-only", "context rule prod-*", "locked by
    # PROBETUI_READ_ONLY" (probetui.config decides it; "" when nothing says)
    read_only_reason: str = ""
    # True where a real kubelet exists whose verdicts are observed beside the shadow's
    observes_kubelet: bool = False
    # pods of every namespace (-A): the workload list then names each line's namespace
    all_namespaces: bool = False
    # how shadow probes reach containers, for labels: "loopback", "direct", "port-forward", ...
    via: str = "loopback"
    # what of the pods' secrets may be shown or kept (config `redact:`): the engine masks every
    # pod, status, record and event it hands its sinks by it, where the data enters
    redaction: Policy = DEFAULT
    # the kubelet version configured (--kubelet-version, kubeletVersion in the config file): the
    # release the engine plays where a pod's node does not say its own (`run_live` sets it)
    configured_kubelet: str = DEFAULT_KUBE_VERSION

    @abstractmethod
    async def run(self, host: RuntimeHost) -> None:
        """Feed the host until cancelled (or, for a pod that ends, until nothing is left to do).

        Must clean up everything it started before returning, also when cancelled.
        """

    async def reach(self, pod: Pod, container: Container, host: str, port: int) -> tuple[str, int]:
        """Return the address a handler dials for `host:port` as the probe names it."""
        return host, port

    def reach_refused(self, dialled: str) -> str | None:
        """After an attempt that dialled `dialled` (host:port from `reach`): why the path to the
        container refused it, when the path and not the container answered (say, the API
        server's 403 for pods/proxy), or None. Such an attempt is an error, not a failure."""
        return None

    # how long the path to a container may hold back the end of a connection the container
    # closed; HTTP attempts are given that much longer and judged as the kubelet would have
    close_linger: float = 0.0

    def reach_lingered(self, dialled: str) -> float:
        """After an attempt through `dialled`: how long the path held back the ends of the
        connections the container closed, in all (seconds)."""
        return 0.0

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner | None:
        """Tell how to run an exec probe's command in the container; None runs it as a local
        process."""
        return None

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        """Return the path one probe's attempts take, for their label (exec may differ from
        `via`)."""
        return self.via

    def kube_version_of(self, pod: Pod) -> str | None:
        """Return the kubelet version of the node that runs `pod` (its probes' kube-probe/X.Y),
        where the runtime can tell; None: the configured one."""
        return None

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        """Say why the shadow does not run this probe here (e.g. "not run: read-only"), or None."""
        return None

    def probe_now_refused(self, key: ProbeKey) -> str | None:
        """Say why "probe now" of this probe is refused before anything is sent (one line), or
        None. For a probe whose shadow runs elsewhere: its read-only refusal."""
        return None

    def probe_elsewhere(self, key: ProbeKey) -> bool | None:
        """Ask the shadow that runs this probe elsewhere (a node agent) to run it once now:
        True asked, False refused; None where the probe's shadow runs here."""
        return None

    def focus(self, pod_uids: Collection[str] | None) -> None:
        """The pods a screen shows in full now (None: all of them, headless): a runtime that
        reads the shadow from elsewhere may take only their attempts, and less of the rest."""
        return None

    def node_kubelet(self, pod: Pod) -> NodeKubelet:
        """Return the kubelet that runs `pod`, as far as the runtime knows it: the engine plays its
        node's release where `version` is known, the configured one elsewhere. Where probetui
        plays the kubelet itself (local, demo), there is no node: the configured one."""
        return NodeKubelet()

    def output_tail(self, pod_uid: str, container: str) -> list[str]:
        """Return the container's recent stdout/stderr lines, where the runtime keeps them, with the
        pod's secrets masked (`redaction`)."""
        return []


__all__ = ["NodeKubelet", "PodStatus", "Runtime", "RuntimeEvent", "RuntimeFailure", "RuntimeHost"]
