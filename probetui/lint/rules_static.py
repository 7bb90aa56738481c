"""The anchor rules check what other probe linters check, from the manifest alone.

Credited where they come from: kubectl-probes (six of its seven rules; the seventh,
probe-failures-recent, reads a cluster's Unhealthy events and belongs with the evidence rules),
kube-score (identical liveness and readiness), kube-linter (a probe on a port the container
does not declare), Polaris and Datree (missing probes). Two of them carry a simulated
consequence too (`rules_model.py` holds those checks beside the model-only rules). The § items
the explanations cite are docs/kubelet-behaviour.md's.
"""

from __future__ import annotations

from collections.abc import Iterator

from probetui.lint.model import Evidence, Hit, LintObject, Rule, Severity
from probetui.spec.model import (
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Probe,
    ProbeType,
    TCPSocketAction,
)

# kubectl-probes' liveness-without-startup: a delay this long is a guess at the start time
SLOW_LIVENESS_DELAY = 30
DEFAULT_TIMEOUT = 1  # SetDefaults_Probe (§2.1)


def seconds(value: float) -> str:
    return f"{value:g} s"


def target(probe: Probe) -> str:
    """Tell what a probe checks, in a few words: `GET /healthz on port 8080`."""
    h = probe.handler
    if isinstance(h, HTTPGetAction):
        scheme = "" if h.scheme == "HTTP" else f"{h.scheme} "
        return f"{scheme}GET {h.path} on port {h.port}"
    if isinstance(h, TCPSocketAction):
        return f"TCP port {h.port}"
    if isinstance(h, GRPCAction):
        service = f" service {h.service!r}" if h.service else ""
        return f"gRPC health{service} on port {h.port}"
    if isinstance(h, ExecAction):
        return f"`{' '.join(h.command)}`"
    return "nothing"


def detection_seconds(probe: Probe) -> int:
    """kubectl-probes' failure detection: the worst case from going bad to the probe acting."""
    return probe.period_seconds * probe.failure_threshold


def _missing(obj: LintObject, probe_type: ProbeType, consequence: str) -> Iterator[Hit]:
    if obj.runs_to_completion:
        return
    for slot in obj.slots():
        if slot.container.probe(probe_type) is None:
            yield Hit(
                path=slot.path,
                container=slot.container.name,
                probe=probe_type,
                message=f"container {slot.container.name!r} has no {probe_type.key} probe: "
                f"{consequence}",
            )


def no_readiness_probe(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    yield from _missing(
        obj,
        ProbeType.READINESS,
        "the kubelet reports it ready the moment it runs, and traffic arrives from then on",
    )


def no_liveness_probe(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    yield from _missing(
        obj, ProbeType.LIVENESS, "a container that hangs without exiting is never restarted"
    )


def liveness_without_startup(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        live = c.liveness_probe
        if live is None or c.startup_probe is not None:
            continue
        if live.initial_delay_seconds >= SLOW_LIVENESS_DELAY:
            yield Hit(
                path=f"{slot.path}.livenessProbe.initialDelaySeconds",
                container=c.name,
                probe=ProbeType.LIVENESS,
                message=f"liveness waits {seconds(live.initial_delay_seconds)} before its "
                f"first check and {c.name!r} has no startup probe: a start slower than that "
                "is restarted while it is still starting",
            )


def liveness_faster_than_readiness(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        live, ready = c.liveness_probe, c.readiness_probe
        if live is None or ready is None:
            continue
        restart, removal = detection_seconds(live), detection_seconds(ready)
        if restart < removal:
            yield Hit(
                path=f"{slot.path}.livenessProbe",
                container=c.name,
                probe=ProbeType.LIVENESS,
                message=f"liveness detects a failure in {seconds(restart)} and readiness in "
                f"{seconds(removal)}: {c.name!r} is restarted before it is taken out of service",
                fix=f"make liveness slower than readiness, e.g. failureThreshold "
                f"{removal // live.period_seconds + 1} on liveness",
            )


def timeout_at_default(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        for pt, probe, path in slot.probes():
            if probe.timeout_seconds == DEFAULT_TIMEOUT:
                yield Hit(
                    path=path,
                    container=slot.container.name,
                    probe=pt,
                    message=f"the {pt.key} probe of {slot.container.name!r} allows the default "
                    "1 s for an answer: an endpoint that is only slow counts as failing",
                )


def probe_port_not_declared(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        declared = {p.container_port for p in c.ports}
        for pt, probe, path in slot.probes():
            h = probe.handler
            port = getattr(h, "port", None)
            if isinstance(h, ExecAction) or not isinstance(port, int) or port in declared:
                continue
            if getattr(h, "host", ""):
                continue  # a probe aimed at another host is not about this container's ports
            yield Hit(
                path=f"{path}.{_handler_field(probe)}.port",
                container=c.name,
                probe=pt,
                message=f"the {pt.key} probe of {c.name!r} checks port {port}, which the "
                f"container does not declare in ports (declared: {_ports(declared)})",
                fix=f"add containerPort {port} to the ports of {c.name!r}, or probe a declared port",
            )


def _ports(declared: set[int]) -> str:
    return ", ".join(str(p) for p in sorted(declared)) or "none"


def _handler_field(probe: Probe) -> str:
    return {"exec": "exec", "http": "httpGet", "tcp": "tcpSocket", "grpc": "grpc"}.get(
        probe.handler_name or "", "httpGet"
    )


RULES = (
    Rule(
        id="no-readiness-probe",
        severity=Severity.WARNING,
        summary="a container (sidecars included) has no readiness probe",
        fix="add a readinessProbe that checks the container can serve",
        explain="Without a readiness probe the kubelet counts the container ready as soon as "
        "it runs (§7.3, §10), so a Service sends it traffic before it can answer. A sidecar "
        "that is not ready holds its whole pod out of service, so sidecars are checked too. "
        "Pods that run to completion (Job, CronJob, restartPolicy Never) serve no traffic "
        "and are skipped.",
        credit="kubectl-probes no-readiness-probe; Polaris readinessProbeMissing; Datree "
        "CONTAINERS_MISSING_READINESS_PROBE",
        check=no_readiness_probe,
    ),
    Rule(
        id="no-liveness-probe",
        severity=Severity.INFO,
        summary="a container (sidecars included) has no liveness probe",
        fix="add a livenessProbe that checks only the process itself (not its dependencies)",
        explain="A container that deadlocks without exiting keeps running: only a liveness "
        "failure makes the kubelet kill it (§11.1). Leaving liveness out is a legitimate "
        "choice (a bad liveness probe does more harm than none), hence info. Pods that run "
        "to completion are skipped.",
        credit="Polaris livenessProbeMissing; Datree CONTAINERS_MISSING_LIVENESS_PROBE",
        check=no_liveness_probe,
    ),
    Rule(
        id="liveness-without-startup",
        severity=Severity.WARNING,
        summary="liveness waits 30 s or more before its first check and there is no startup probe",
        fix="add a startupProbe (failureThreshold x periodSeconds covering the slowest start) "
        "and drop liveness's initialDelaySeconds",
        explain="A long initialDelaySeconds is a fixed guess at the start time: the delay "
        "counts from the container's start (§5.9) and a start slower than it is killed while "
        "still starting. A startup probe holds liveness back until the app answers (§5.10, "
        "§7.2), however long that takes within its budget.",
        credit="kubectl-probes liveness-without-startup",
        check=liveness_without_startup,
    ),
    Rule(
        id="liveness-faster-than-readiness",
        severity=Severity.WARNING,
        summary="liveness detects a failure sooner than readiness does",
        fix="make liveness's periodSeconds x failureThreshold longer than readiness's",
        explain="Failure detection is periodSeconds x failureThreshold, the worst case from "
        "the container going bad to the probe acting on it (§6.1, §6.2). When liveness is "
        "faster, a failing container is killed before the endpoints controller has taken it "
        "out of service, so requests in flight meet a restart instead of another replica.",
        credit="kubectl-probes liveness-faster-than-readiness",
        check=liveness_faster_than_readiness,
    ),
    Rule(
        id="timeout-at-default",
        severity=Severity.INFO,
        summary="a probe's timeoutSeconds is the default 1 s",
        fix="set timeoutSeconds above the endpoint's slowest healthy answer (its p99 and some)",
        explain="timeoutSeconds defaults to 1 (§2.1), written out or not. An answer slower "
        "than that is a failure (§13.6, §14.2, §15), so an endpoint that is only slow, under "
        "load or in a GC pause, counts as down. `probetui check` and a recording show the "
        "real latencies.",
        credit="kubectl-probes timeout-at-default; Datree CONTAINERS_INCORRECT_TIMEOUTSECONDS"
        "_VALUE (it fires when the field is not written out)",
        check=timeout_at_default,
    ),
    Rule(
        id="probe-port-not-declared",
        severity=Severity.INFO,
        summary="a probe checks a port number the container does not declare",
        fix="declare the port in the container's ports, or probe a declared one",
        explain="The kubelet dials a numeric port whether or not it is declared (§16.1), so "
        "this works, but the probe is aimed at something the manifest does not say the "
        "container serves: often a port left over from a change. Named ports are another "
        "matter: a name the container does not declare never resolves (see "
        "named-port-not-declared).",
        credit="kube-linter liveness-port, readiness-port, startup-port",
        check=probe_port_not_declared,
    ),
)
