"""What the kubelet does with cached probe results: kill, restart, grace period, event texts.

Pure functions of the pod spec and the cached results (`pkg/kubelet/kuberuntime`,
`pkg/api/v1/pod/util.go`). Nothing here reads a clock or does I/O, so `probetui simulate`
(virtual time) and the local runtime (real processes) share the same decisions.

Cached results are `probetui.prober.results.ResultValue` values, or None when the cache has
no entry for the container ID (upstream's `found == false`).

Facts from upstream at v1.35 (docs/kubelet-behaviour.md §11, docs/test-vectors.md I):

- Regular containers (`computePodActions`): only a running container is judged. A cached
  liveness Failure wins over a startup Failure. The container is restarted after the kill
  unless the pod restartPolicy is Never. With ContainerRestartRules (on since 1.35), a
  container-level restartPolicy, when set, decides instead: anything but Never restarts. The
  restartPolicyRules are not consulted for a probe kill, because the container has not exited
  and there is no exit code to match.
- Restartable init containers (sidecars, `computeInitContainerActions`) are always restarted
  after a probe kill, whatever the pod restartPolicy. Their message has no
  ", will be restarted" suffix. While a sidecar's startup result is absent or not Success, it
  is not killed for liveness, and the next init container does not start.
- The kill's grace period (`setTerminationGracePeriod`, `killContainer`): see
  `kill_grace_period`.
- A kill without restart that leaves no regular container running or to start
  (`keepCount == 0`, nothing in ContainersToStart) is not a container kill: `computePodActions`
  sets KillPod, and every container is stopped with `stopping_message` and the pod's grace
  period (`kill_grace_period` with no reason). `PodKubelet` makes that call, as it knows the
  other containers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from probetui.probe.gotext import go_duration
from probetui.prober.results import ResultValue
from probetui.spec.model import Container, ContainerKind, Pod

KillReason = Literal["liveness", "startup"]

# kuberuntime_manager.go: "A minimal shutdown window for avoiding unnecessary SIGKILLs"
MINIMUM_GRACE_PERIOD_SECONDS = 2

# Event reasons (`pkg/kubelet/events`) and the waiting reason of a container in back-off
# (`kubecontainer.ErrCrashLoopBackOff`)
REASON_KILLING = "Killing"
REASON_BACK_OFF = "BackOff"
REASON_CREATED = "Created"
REASON_STARTED = "Started"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
EVENT_NORMAL = "Normal"
EVENT_WARNING = "Warning"


@dataclass(frozen=True, slots=True)
class KillDecision:
    """One container's probe-driven action in a pod sync.

    `message` is the Killing event's text. `reason` says which probe caused the kill and picks
    the probe-level grace period.
    """

    kill: bool
    restart: bool
    reason: KillReason | None
    message: str | None


KEEP = KillDecision(kill=False, restart=False, reason=None, message=None)


def container_probe_action(
    container: Container,
    pod: Pod,
    *,
    running: bool,
    liveness: ResultValue | None,
    startup: ResultValue | None,
) -> KillDecision:
    """Kill and restart decision for one container from its cached liveness/startup results.

    Covers regular containers (§11.1-11.2) and sidecars (§11.3). Non-restartable init
    containers and ephemeral containers have no probes and are never killed for them. The
    "definition changed" and resize paths of `computePodActions` are not modelled.
    """
    if container.is_restartable_init:
        return _sidecar_probe_action(container, running=running, liveness=liveness, startup=startup)
    if container.kind is not ContainerKind.CONTAINER or not running:
        return KEEP
    name = container.name
    if liveness is ResultValue.FAILURE:
        reason: KillReason = "liveness"
        message = f"Container {name} failed liveness probe"
    elif startup is ResultValue.FAILURE:
        reason = "startup"
        message = f"Container {name} failed startup probe"
    else:
        return KEEP
    restart = restart_after_probe_kill(container, pod)
    if restart:
        message += ", will be restarted"
    return KillDecision(kill=True, restart=restart, reason=reason, message=message)


def _sidecar_probe_action(
    container: Container,
    *,
    running: bool,
    liveness: ResultValue | None,
    startup: ResultValue | None,
) -> KillDecision:
    """The running-sidecar branch of `computeInitContainerActions`."""
    if not running:
        # an exited sidecar is simply started again; that is not a probe kill
        return KEEP
    name = container.name
    if container.startup_probe is not None and startup is not ResultValue.SUCCESS:
        # absent or Unknown: wait. Liveness is not looked at until startup succeeds.
        if startup is ResultValue.FAILURE:
            return KillDecision(
                kill=True,
                restart=True,
                reason="startup",
                message=f"Init container {name} failed startup probe",
            )
        return KEEP
    if container.liveness_probe is not None and liveness is ResultValue.FAILURE:
        return KillDecision(
            kill=True,
            restart=True,
            reason="liveness",
            message=f"Init container {name} failed liveness probe",
        )
    return KEEP


def init_container_blocks_next(
    container: Container,
    *,
    running: bool,
    startup: ResultValue | None,
    exit_code: int | None = None,
) -> bool:
    """During pod initialization, does this init container keep the next one from starting?

    A sidecar lets the next init container start once it is running and, if it has a startup
    probe, its cached startup result is Success. An absent, Unknown or Failure result blocks
    (§11.3, `computeInitContainerActions`). Liveness never gates. A regular init container
    blocks until it has exited with code 0. `exit_code` is its terminated exit code, or None
    if it has not terminated.
    """
    if container.is_restartable_init:
        if not running:
            return True
        return container.startup_probe is not None and startup is not ResultValue.SUCCESS
    return running or exit_code != 0


def restart_after_probe_kill(container: Container, pod: Pod) -> bool:
    """Whether a container killed for a probe is queued to start again in the same sync.

    Sidecars always restart. For regular containers this is `shouldRestartOnFailure` (pod
    restartPolicy is not Never, §11.2). v1.35's ContainerRestartRules change lets a set
    container-level restartPolicy override it: anything but Never restarts. The exit-code
    rules are not used here.
    """
    if container.is_restartable_init:
        return True
    if container.restart_policy is not None:
        return container.restart_policy != "Never"
    return pod.restart_policy != "Never"


def should_restart(container: Container, pod: Pod, exit_code: int) -> bool:
    """`podutil.ContainerShouldRestart`: will a container that exited with `exit_code` restart?

    With ContainerRestartRules on (§5.7), the checks run in this order:
    - If the container has its own restartPolicy, the first restartPolicyRules entry that
      matches the exit code decides. A `Restart` action means True; any other action falls
      through. The rules are looked at only when the container restartPolicy is set, which
      validation requires for rules anyway.
    - Next the container restartPolicy itself: Always gives True, OnFailure gives
      exit_code != 0, Never gives False.
    - Otherwise the pod restartPolicy, the same way. An empty or unknown value counts as
      Always.
    A sidecar (restartPolicy Always) therefore always restarts.
    """
    if container.restart_policy is not None:
        for rule in container.restart_policy_rules:
            if rule.matches(exit_code):
                if rule.action == "Restart":
                    return True
                break
        decided = _policy_restarts(container.restart_policy, exit_code)
        if decided is not None:
            return decided
    decided = _policy_restarts(pod.restart_policy, exit_code)
    return True if decided is None else decided


def _policy_restarts(policy: str, exit_code: int) -> bool | None:
    if policy == "Always":
        return True
    if policy == "OnFailure":
        return exit_code != 0
    if policy == "Never":
        return False
    return None


def kill_grace_period(
    pod: Pod,
    container: Container,
    reason: str | None,
    *,
    deletion_grace_period: int | None = None,
    pre_stop_seconds: float = 0.0,
) -> float:
    """Seconds the runtime gives the container between SIGTERM and SIGKILL (§11.5).

    `setTerminationGracePeriod`, then `killContainer`:
    1. A pod deletionGracePeriodSeconds (`deletion_grace_period`) wins over everything.
    2. Otherwise, if the pod has terminationGracePeriodSeconds: for a liveness or startup
       kill, that probe's terminationGracePeriodSeconds if set, else the pod's value.
    3. A pod without terminationGracePeriodSeconds gets the 2 s minimum. The probe value is
       ignored then. API defaulting sets 30, so this only happens for hand-built pods.
    4. If the container has a preStop hook and the period is above 0, the hook runs for at most
       the period. Its run time, truncated to whole seconds, is subtracted.
    5. A result below 2 s is raised to 2 s (`minimumGracePeriodInSeconds`). This applies to
       every kill, with or without a hook, and even to a deletion grace period of 0.
    `pre_stop_seconds` is how long the hook runs. It is ignored without a hook, as upstream
    runs none then.
    """
    grace = termination_grace_period(
        pod, container, reason, deletion_grace_period=deletion_grace_period
    )
    if container.has_pre_stop and grace > 0:
        # the hook is cut off at the grace period; Go truncates the elapsed seconds
        grace -= int(min(max(pre_stop_seconds, 0.0), grace))
    return float(max(grace, MINIMUM_GRACE_PERIOD_SECONDS))


def termination_grace_period(
    pod: Pod, container: Container, reason: str | None, *, deletion_grace_period: int | None = None
) -> int:
    """`setTerminationGracePeriod`: steps 1-3 of `kill_grace_period`, before the preStop hook
    and the 2 s minimum."""
    if deletion_grace_period is not None:
        return deletion_grace_period
    if pod.termination_grace_period_seconds is None:
        return MINIMUM_GRACE_PERIOD_SECONDS
    probe = None
    if reason == "liveness":
        probe = container.liveness_probe
    elif reason == "startup":
        probe = container.startup_probe
    if probe is not None and probe.termination_grace_period_seconds is not None:
        return probe.termination_grace_period_seconds
    return pod.termination_grace_period_seconds


@dataclass(frozen=True, slots=True)
class KillTiming:
    """When `killContainer` signals a container: `StopContainer` (SIGTERM) comes once the
    preStop hook has run `pre_stop` s, and SIGKILL `grace` s after SIGTERM."""

    pre_stop: float
    grace: float


def kill_timing(
    pod: Pod,
    container: Container,
    reason: str | None,
    *,
    deletion_grace_period: int | None = None,
    pre_stop_seconds: float = 0.0,
) -> KillTiming:
    """`killContainer`'s course for a hook that runs `pre_stop_seconds`: `executePreStopHook`
    waits for it at most the grace period (`time.After(gracePeriod)`), only when the container
    has a preStop hook and the period is above 0; the runtime then gets what is left
    (`kill_grace_period`). The hook runs inside the container while it is still serving."""
    grace = termination_grace_period(
        pod, container, reason, deletion_grace_period=deletion_grace_period
    )
    hook = 0.0
    if container.has_pre_stop and grace > 0:
        hook = min(max(pre_stop_seconds, 0.0), float(grace))
    left = kill_grace_period(
        pod,
        container,
        reason,
        deletion_grace_period=deletion_grace_period,
        pre_stop_seconds=pre_stop_seconds,
    )
    return KillTiming(hook, left)


# -- event and status texts -------------------------------------------------------------------


def pod_desc(pod: Pod) -> str:
    """`format.Pod`: `<name>_<namespace>(<uid>)`."""
    return f"{pod.name}_{pod.namespace}({pod.uid})"


def stopping_message(container_name: str) -> str:
    """The Killing event text when no reason is given (pod teardown)."""
    return f"Stopping container {container_name}"


def created_message(container_name: str) -> str:
    """The Created event text (`startContainer`; the colon is current upstream)."""
    return f"Created container: {container_name}"


def started_message(container_name: str) -> str:
    return f"Started container {container_name}"


def backoff_event_message(container_name: str, pod: Pod) -> str:
    """The Warning BackOff event text recorded by `doBackOff`."""
    return f"Back-off restarting failed container {container_name} in pod {pod_desc(pod)}"


def crash_loop_message(delay: float, container_name: str, pod: Pod) -> str:
    """The CrashLoopBackOff waiting message: `back-off 40s restarting failed container=...`."""
    return (
        f"back-off {go_duration(delay)} restarting failed container={container_name} "
        f"pod={pod_desc(pod)}"
    )
