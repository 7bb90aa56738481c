"""Name which kubelet the model plays: a release and its feature gates (docs/kubelet-versions.md).

A `KubeletProfile` is a kubelet minor release (1.33 to 1.38) with the feature gates it runs
with: upstream's defaults for that release (`pkg/features/kube_features.go`), changed by
`--feature-gates Name=true,Other=false` as the kubelet's own flag changes them. The prober
(`Manager`, `Worker`) and the kubelet model (`PodKubelet`, `kuberuntime.py`) read every
behaviour that differs between releases from it, by a named property, so a reader finds each
difference once, here, with the release it came in and the gate that guards it.

`profile_for(version, gates)` builds one; `DEFAULT_PROFILE` is 1.35 with its defaults, which is
what probetui plays when nothing says otherwise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

MIN_MINOR = 33
MAX_MINOR = 38
DEFAULT_VERSION = "1.35"


class ProfileError(ValueError):
    """Signals a version or feature-gate setting no profile exists for; `str()` is one line."""


@dataclass(frozen=True, slots=True)
class GateStage:
    """Holds one entry of a gate's versioned spec: from `since` on, this default and stage."""

    since: int  # the minor release
    default: bool
    stage: str  # Alpha, Beta, GA, Deprecated
    locked: bool = False


# kube_features.go, only the gates whose behaviour the model covers. A gate is known to a
# release from its first entry on; `removed` is the first release that no longer lists it.
GATES: dict[str, tuple[tuple[GateStage, ...], int | None]] = {
    "ContainerRestartRules": ((GateStage(34, False, "Alpha"), GateStage(35, True, "Beta")), None),
    "RestartAllContainersOnContainerExits": (
        (GateStage(35, False, "Alpha"), GateStage(36, True, "Beta")),
        None,
    ),
    # introduced deprecated at 1.35: on means the old behaviour (no kubelet-restart preservation)
    "ChangeContainerStatusOnKubeletRestart": ((GateStage(35, False, "Deprecated"),), None),
    "ExecProbeTimeout": (
        (GateStage(20, True, "GA"), GateStage(35, True, "GA", locked=True)),
        38,
    ),
    "H2CContainerProbe": ((GateStage(37, False, "Alpha"),), None),
    "GRPCContainerProbeTLS": ((GateStage(37, False, "Alpha"),), None),
    "ReduceDefaultCrashLoopBackOffDecay": ((GateStage(33, False, "Alpha"),), None),
    # without the kubelet config field it reads (maxContainerRestartPeriod, default 300 s) it
    # changes nothing the model shows; known so that the flag is accepted as the kubelet does
    "KubeletCrashLoopBackOffMax": (
        (GateStage(32, False, "Alpha"), GateStage(35, True, "Beta")),
        None,
    ),
}

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+.].*)?$")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_version(version: str) -> int:
    """Return the minor release of "1.37", "v1.35.4", "v1.38.0-beta.0" or a node's
    kubeletVersion."""
    m = _VERSION.match(version.strip())
    if m is None or m.group(1) != "1":
        raise ProfileError(f"kubelet version {version!r}: expected 1.MINOR, e.g. 1.35 or v1.35.4")
    minor = int(m.group(2))
    if not MIN_MINOR <= minor <= MAX_MINOR:
        raise ProfileError(
            f"kubelet version {version}: probetui models 1.{MIN_MINOR} to 1.{MAX_MINOR}; "
            f"pick one of {', '.join(supported_versions())}"
        )
    return minor


def supported_versions() -> list[str]:
    return [f"1.{m}" for m in range(MIN_MINOR, MAX_MINOR + 1)]


def _stage(name: str, minor: int) -> GateStage | None:
    stages, removed = GATES[name]
    if removed is not None and minor >= removed:
        return None
    current = None
    for stage in stages:
        if stage.since <= minor:
            current = stage
    return current


def default_gates(minor: int) -> dict[str, bool]:
    """Upstream's defaults at that release for the gates the model covers (the ones it knows)."""
    out = {}
    for name in GATES:
        stage = _stage(name, minor)
        if stage is not None:
            out[name] = stage.default
    return out


def parse_feature_gates(text: str) -> dict[str, bool]:
    """`--feature-gates` as the kubelet reads it: `Name=true,Other=false` (component-base's
    `featureGate.Set`, Go's strconv.ParseBool for the values)."""
    out: dict[str, bool] = {}
    for part in text.split(","):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep:
            raise ProfileError(f"--feature-gates {text}: missing bool value for {key}")
        if value in _GO_TRUE:
            out[key] = True
        elif value in _GO_FALSE:
            out[key] = False
        else:
            raise ProfileError(
                f"--feature-gates {text}: invalid value of {key}={value}: write true or false"
            )
    return out


@dataclass(frozen=True, slots=True)
class KubeletProfile:
    """Describes a kubelet release and its effective feature gates; each property is one
    behaviour."""

    minor: int
    gates: tuple[tuple[str, bool], ...]  # every gate the release knows, effective values
    changed: tuple[tuple[str, bool], ...] = ()  # the ones set away from the release default

    @property
    def version(self) -> str:
        return f"1.{self.minor}"

    def enabled(self, gate: str) -> bool:
        """The gate's effective value; a gate the release does not know is off."""
        for name, value in self.gates:
            if name == gate:
                return value
        return False

    def describe(self) -> str:
        """ "kubelet 1.37" or "kubelet 1.37 with GRPCContainerProbeTLS=true"."""
        if not self.changed:
            return f"kubelet {self.version}"
        gates = ",".join(f"{n}={'true' if v else 'false'}" for n, v in self.changed)
        return f"kubelet {self.version} with {gates}"

    # -- restarts (pkg/api/v1/pod/util.go, kuberuntime_manager.go, worker.go) ----------------

    @property
    def container_restart_rules(self) -> bool:
        """ContainerRestartRules: a container's restartPolicy and restartPolicyRules decide
        its restarts (`ContainerShouldRestart`) and whether a probe kill restarts it."""
        return self.enabled("ContainerRestartRules")

    @property
    def restart_rules_worker_quirk(self) -> bool:
        """1.34's worker with ContainerRestartRules on keeps probing every terminated
        container (`c.State.Terminated != nil || IsContainerRestartable`), fixed in 1.35."""
        return self.minor == 34 and self.container_restart_rules

    @property
    def restart_all_containers(self) -> bool:
        """RestartAllContainersOnContainerExits: the `RestartAllContainers` rule action."""
        return self.enabled("RestartAllContainersOnContainerExits")

    @property
    def backoff_requeue_at_expiry(self) -> bool:
        """Since 1.35 a start held by back-off is retried when the window ends
        (`MinBackoffExpiration` in the pod worker's `completeWork`); before, after the pod
        worker's error back-off, `backOffPeriod` (10 s)."""
        return self.minor >= 35

    @property
    def reduced_backoff(self) -> bool:
        """ReduceDefaultCrashLoopBackOffDecay: CrashLoopBackOff from 1 s up to 60 s."""
        return self.enabled("ReduceDefaultCrashLoopBackOffDecay")

    # -- the prober ----------------------------------------------------------------------

    @property
    def add_pod_continues(self) -> bool:
        """Since 1.37 `AddPod` passes over a key that has a worker (`continue`); before, it
        returned, leaving every later container of that sync without new workers."""
        return self.minor >= 37

    @property
    def workers_detached(self) -> bool:
        """Since 1.37 the workers' context is cut loose from the pod sync's
        (`context.WithoutCancel` in `AddPod`). Before, the pod worker's cancel when the pod
        begins terminating reaches every exec probe (`RunInContainer`), which then errors."""
        return self.minor >= 37

    @property
    def exec_probe_timeout(self) -> bool:
        """ExecProbeTimeout: an exec probe that times out fails; off, it errors (discarded)."""
        return self.minor >= 38 or self.enabled("ExecProbeTimeout")

    @property
    def grpc_tls(self) -> bool:
        """GRPCContainerProbeTLS: `grpc.mode: TLS` dials with TLS (InsecureSkipVerify)."""
        return self.enabled("GRPCContainerProbeTLS")

    @property
    def h2c(self) -> bool:
        """H2CContainerProbe: `httpGet.protocol: HTTP2` speaks h2c with prior knowledge."""
        return self.enabled("H2CContainerProbe")

    @property
    def port_names_only(self) -> bool:
        """Since 1.37 `ResolveContainerPort` reports a port name that matches no container
        port as `port "NAME" not found`; before, it tried the name as a number
        (`strconv.Atoi: parsing "NAME": invalid syntax`)."""
        return self.minor >= 37

    # -- kubelet restarts and Started (prober_manager.go, worker.go, kubelet_pods.go) ------

    @property
    def keeps_state_on_kubelet_restart(self) -> bool:
        """Since 1.35, with ChangeContainerStatusOnKubeletRestart off (its default): a
        container that ran before the kubelet restarted keeps Ready and Started (§8)."""
        return self.minor >= 35 and not self.enabled("ChangeContainerStatusOnKubeletRestart")

    @property
    def inherit_by_container_id(self) -> bool:
        """Since 1.38 a restarted kubelet inherits probe state only for the container ID the
        API server last listed (`canInheritProbeState`)."""
        return self.minor >= 38 and self.keeps_state_on_kubelet_restart

    @property
    def started_kept_across_restart(self) -> bool:
        """1.35 to 1.37: `convertToAPIContainerStatuses` copies Started from the old status of
        the same name, so a container restarted in the sync that killed it for a probe starts
        out Started, and liveness and readiness probe before its startup probe has passed.
        1.38 copies it only for the same container ID."""
        return 35 <= self.minor <= 37 and self.keeps_state_on_kubelet_restart

    # -- event texts (kuberuntime_container.go startContainer) ----------------------------

    @property
    def short_lifecycle_messages(self) -> bool:
        """Since 1.35 the Created and Started events read "Container created" and
        "Container started"; before, "Created container: X" and "Started container X"."""
        return self.minor >= 35


def profile_for(version: str, gates: Mapping[str, bool] = {}) -> KubeletProfile:
    """Return the profile of a kubelet release with upstream's gate defaults, `gates` on top.

    Refuses, as the kubelet does, a gate the release does not know ("unrecognized feature
    gate") and a locked gate set away from its value; and a gate that the release knows but
    the model does not cover, naming the ones it does.
    """
    minor = parse_version(version)
    effective = default_gates(minor)
    changed: list[tuple[str, bool]] = []
    for name, value in gates.items():
        if name not in GATES:
            raise ProfileError(
                f"feature gate {name}: not one the kubelet model covers; it knows "
                f"{', '.join(sorted(GATES))}"
            )
        stage = _stage(name, minor)
        if stage is None:
            raise ProfileError(
                f"feature gate {name}: unrecognized feature gate in kubelet 1.{minor}"
            )
        if stage.locked and value != stage.default:
            raise ProfileError(
                f"cannot set feature gate {name} to {str(value).lower()}, feature is locked "
                f"to {str(stage.default).lower()} in kubelet 1.{minor}"
            )
        effective[name] = value
        if value != stage.default:
            changed.append((name, value))
    return KubeletProfile(
        minor=minor,
        gates=tuple(sorted(effective.items())),
        changed=tuple(sorted(changed)),
    )


DEFAULT_PROFILE = profile_for(DEFAULT_VERSION)


def profile_of_node(
    version: str | None, fallback: KubeletProfile = DEFAULT_PROFILE
) -> KubeletProfile:
    """Return the profile a live node's kubelet plays: its `kubeletVersion` (`v1.37.2`) with the
    gate defaults of that release; a release outside the modelled ones plays the nearest modelled
    one (a node cannot be refused), and an unknown or unreadable version plays `fallback`."""
    if not version:
        return fallback
    m = _VERSION.match(version.strip())
    if m is None or m.group(1) != "1":
        return fallback
    minor = min(MAX_MINOR, max(MIN_MINOR, int(m.group(2))))
    return profile_for(f"1.{minor}")


__all__ = [
    "DEFAULT_PROFILE",
    "DEFAULT_VERSION",
    "GATES",
    "KubeletProfile",
    "ProfileError",
    "default_gates",
    "parse_feature_gates",
    "parse_version",
    "profile_for",
    "profile_of_node",
    "supported_versions",
]
