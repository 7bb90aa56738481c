"""Decide what the kubelet does with cached probe results: kill, restart, grace period, event texts.

Pure functions of the pod spec and the cached results (`pkg/kubelet/kuberuntime`,
`pkg/api/v1/pod/util.go`). Nothing here reads a clock or does I/O, so `probetui simulate`
(virtual time) and the local runtime (real processes) share the same decisions.

Cached results are `probetui.prober.results.ResultValue` values, or None when the cache has
no entry for the container ID (upstream's `found == false`).

Facts from upstream at v1.35 (docs/kubelet-behaviour.md §11, docs/test-vectors.md I); where a
release differs, the decision takes a `KubeletProfile` (docs/kubelet-versions.md):

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
- In such a whole-pod kill the sidecars stop last, in reverse spec order, each after the
  regular containers and the sidecar after it have exited, with what is left of its grace
  period (`termination_prereqs`, `grace_after_turn`; kuberuntime_termination_order.go).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile
from probetui.probe.gotext import go_duration
from probetui.prober.results import ResultValue
from probetui.spec.model import Container, ContainerKind, Pod, ProbeType

if TYPE_CHECKING:
    from probetui.prober.status import PodStatus

KillReason = Literal[ProbeType.LIVENESS, ProbeType.STARTUP]

# the restartPolicyRules action that restarts the whole pod in place (KEP-5532)
RESTART_ALL_CONTAINERS = "RestartAllContainers"

# kuberuntime_manager.go: "A minimal shutdown window for avoiding unnecessary SIGKILLs"
MINIMUM_GRACE_PERIOD_SECONDS = 2

# Event reasons (`pkg/kubelet/events`) and the waiting reason of a container in back-off
# (`kubecontainer.ErrCrashLoopBackOff`)
REASON_CREATED = "Created"
REASON_STARTED = "Started"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"


@dataclass(frozen=True, slots=True)
class KillDecision:
    """Holds one container's probe-driven action in a pod sync.

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
    profile: KubeletProfile = DEFAULT_PROFILE,
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
        reason: KillReason = ProbeType.LIVENESS
        message = f"Container {name} failed liveness probe"
    elif startup is ResultValue.FAILURE:
        reason = ProbeType.STARTUP
        message = f"Container {name} failed startup probe"
    else:
        return KEEP
    restart = restart_after_probe_kill(container, pod, profile)
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
    """Return the running-sidecar branch of `computeInitContainerActions`."""
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
                reason=ProbeType.STARTUP,
                message=f"Init container {name} failed startup probe",
            )
        return KEEP
    if container.liveness_probe is not None and liveness is ResultValue.FAILURE:
        return KillDecision(
            kill=True,
            restart=True,
            reason=ProbeType.LIVENESS,
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


def restart_after_probe_kill(
    container: Container, pod: Pod, profile: KubeletProfile = DEFAULT_PROFILE
) -> bool:
    """Tell whether a container killed for a probe is queued to start again in the same sync.

    Sidecars always restart. For regular containers this is `shouldRestartOnFailure` (pod
    restartPolicy is not Never, §11.2). With ContainerRestartRules on (beta and on since 1.35)
    a set container-level restartPolicy overrides it: anything but Never restarts. The
    exit-code rules are not used here.
    """
    if container.is_restartable_init:
        return True
    if profile.container_restart_rules and container.restart_policy is not None:
        return container.restart_policy != "Never"
    return pod.restart_policy != "Never"


def should_restart(
    container: Container, pod: Pod, exit_code: int, profile: KubeletProfile = DEFAULT_PROFILE
) -> bool:
    """`ShouldContainerBeRestarted` for a container that exited with `exit_code`.

    With ContainerRestartRules on (§5.7) this is `podutil.ContainerShouldRestart`, in order:
    - If the container has its own restartPolicy, the first restartPolicyRules entry that
      matches the exit code decides. A `Restart` action means True, and so does
      `RestartAllContainers` with RestartAllContainersOnContainerExits on; any other action
      falls through. The rules are looked at only when the container restartPolicy is set,
      which validation requires for rules anyway.
    - Next the container restartPolicy itself: Always gives True, OnFailure gives
      exit_code != 0, Never gives False.
    - Otherwise the pod restartPolicy, the same way. An empty or unknown value counts as
      Always.
    A sidecar (restartPolicy Always) therefore always restarts. With the gate off (before
    1.35 by default) only the pod restartPolicy counts; `computeInitContainerActions`
    restarts an exited sidecar whatever it says.
    """
    if not profile.container_restart_rules:
        return _policy_restarts(pod.restart_policy, exit_code) is not False
    if container.restart_policy is not None:
        for rule in container.restart_policy_rules:
            if rule.matches(exit_code):
                if rule.action == "Restart":
                    return True
                if rule.action == RESTART_ALL_CONTAINERS and profile.restart_all_containers:
                    return True
                break
        decided = _policy_restarts(container.restart_policy, exit_code)
        if decided is not None:
            return decided
    decided = _policy_restarts(pod.restart_policy, exit_code)
    return True if decided is None else decided


def restarts_after_exit(
    container: Container, pod: Pod, exit_code: int, profile: KubeletProfile = DEFAULT_PROFILE
) -> bool:
    """Decide whether a container that exited with `exit_code` is started again.

    A plain init container follows `computeInitContainerActions`: a completed one is done; a
    failed one is restarted unless the pod restartPolicy is Never (`shouldRestartOnFailure`),
    or, with ContainerRestartRules, unless `ShouldContainerBeRestarted` says no. An exited
    sidecar is always restarted; a regular container as `ShouldContainerBeRestarted` says.
    """
    if container.kind is ContainerKind.INIT and not container.is_restartable_init:
        if exit_code == 0:
            return False
        if profile.container_restart_rules:
            return should_restart(container, pod, exit_code, profile)
        return pod.restart_policy != "Never"
    if container.is_restartable_init:
        return True
    return should_restart(container, pod, exit_code, profile)


def container_restartable(container: Container, pod: Pod) -> bool:
    """`podutil.IsContainerRestartable`: can the container restart at all, whatever its exit?

    A container restartPolicy, when set, decides: any rule with action Restart, or a policy
    other than Never. Otherwise the pod restartPolicy is not Never.
    """
    if container.restart_policy is not None:
        if any(rule.action == "Restart" for rule in container.restart_policy_rules):
            return True
        return container.restart_policy != "Never"
    return pod.restart_policy != "Never"


def restarts_all_containers(container: Container, exit_code: int) -> bool:
    """Tell whether this exit matches a restartPolicyRules entry whose action is
    RestartAllContainers (`FindMatchingContainerRestartRule`: the first match decides)."""
    for rule in container.restart_policy_rules:
        if rule.matches(exit_code):
            return rule.action == RESTART_ALL_CONTAINERS
    return False


def all_containers_restarting(pod: Pod, status: PodStatus) -> bool:
    """`ShouldAllContainersRestart` as the worker asks it (status only): some container, init
    or regular, has terminated with an exit code its RestartAllContainers rule matches."""
    for container in (*pod.init_containers, *pod.containers):
        cs = status.lookup(container.name)
        term = cs.terminated if cs is not None else None
        if term is not None and restarts_all_containers(container, term.exit_code):
            return True
    return False


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
    grace = grace_before_minimum(
        pod,
        container,
        reason,
        deletion_grace_period=deletion_grace_period,
        pre_stop_seconds=pre_stop_seconds,
    )
    return float(max(grace, MINIMUM_GRACE_PERIOD_SECONDS))


def grace_before_minimum(
    pod: Pod,
    container: Container,
    reason: str | None,
    *,
    deletion_grace_period: int | None = None,
    pre_stop_seconds: float = 0.0,
) -> int:
    """`kill_grace_period` up to step 4, before the 2 s minimum: what `waitForTurn` is given."""
    grace = termination_grace_period(
        pod, container, reason, deletion_grace_period=deletion_grace_period
    )
    if container.has_pre_stop and grace > 0:
        # the hook is cut off at the grace period; Go truncates the elapsed seconds
        grace -= int(min(max(pre_stop_seconds, 0.0), grace))
    return grace


# -- termination ordering of a whole-pod kill (kuberuntime_termination_order.go) -------------


def termination_prereqs(pod: Pod, running: frozenset[str]) -> dict[str, tuple[str, ...]]:
    """`newTerminationOrdering`: whom each sidecar waits for before it is stopped.

    In a whole-pod kill (`killContainersWithSyncResult`, for KillPod and SyncTerminatingPod)
    every sidecar waits for all the regular containers, and for the nearest sidecar after it
    in spec order, so the sidecars stop in the reverse of their start order, after the
    containers they serve. Upstream gives every container a channel and pre-closes the ones
    that do not run; here those are simply left out, so each tuple names only containers in
    `running`. Regular containers and plain init containers wait for nobody (no entry).
    """
    mains = tuple(c.name for c in pod.containers if c.name in running)
    prereqs: dict[str, tuple[str, ...]] = {}
    later: str | None = None
    for c in reversed(pod.init_containers):
        if not c.is_restartable_init:
            continue
        waits = mains + ((later,) if later is not None and later in running else ())
        prereqs[c.name] = waits
        later = c.name
    return prereqs


def grace_after_turn(grace: int, waited: float) -> float:
    """`killContainer` after `waitForTurn`: the grace period left once a sidecar's turn came.

    The wait is bounded by the grace period itself and only whole seconds of it are taken off
    ("grace period is only in seconds, so the time we've waited gets truncated downward"),
    then the 2 s minimum applies, so a sidecar that waited out the whole period still gets
    `minimumGracePeriodInSeconds` after its SIGTERM.
    """
    left = grace - int(min(max(waited, 0.0), grace))
    return float(max(left, MINIMUM_GRACE_PERIOD_SECONDS))


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
    if reason == ProbeType.LIVENESS:
        probe = container.liveness_probe
    elif reason == ProbeType.STARTUP:
        probe = container.startup_probe
    if probe is not None and probe.termination_grace_period_seconds is not None:
        return probe.termination_grace_period_seconds
    return pod.termination_grace_period_seconds


@dataclass(frozen=True, slots=True)
class KillTiming:
    """Says when `killContainer` signals a container: `StopContainer` (SIGTERM) comes once the
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
    """Return the Killing event text when no reason is given (pod teardown)."""
    return f"Stopping container {container_name}"


def created_message(container_name: str, profile: KubeletProfile = DEFAULT_PROFILE) -> str:
    """Return the Created event text (`startContainer`): "Container created" since 1.35, before it
    "Created container: X"."""
    if profile.short_lifecycle_messages:
        return "Container created"
    return f"Created container: {container_name}"


def started_message(container_name: str, profile: KubeletProfile = DEFAULT_PROFILE) -> str:
    """Return the Started event text (`startContainer`): "Container started" since 1.35, before it
    "Started container X"."""
    if profile.short_lifecycle_messages:
        return "Container started"
    return f"Started container {container_name}"


def backoff_event_message(container_name: str, pod: Pod) -> str:
    """Return the Warning BackOff event text recorded by `doBackOff`."""
    return f"Back-off restarting failed container {container_name} in pod {pod_desc(pod)}"


def crash_loop_message(delay: float, container_name: str, pod: Pod) -> str:
    """Return the CrashLoopBackOff waiting message: `back-off 40s restarting failed
    container=...`."""
    return (
        f"back-off {go_duration(delay)} restarting failed container={container_name} "
        f"pod={pod_desc(pod)}"
    )
