"""Give the rules only the kubelet's model can give, each backed by a consequence.

A consequence is simulated in virtual time (`simulated.py`) or, for what the API server
refuses, upstream's validation text (`spec/validate.py`). Two anchor rules live here too,
because their messages carry a simulation: liveness-same-as-readiness and
timeout-exceeds-period. The § items cited are docs/kubelet-behaviour.md's, as in the rest of
the code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TypeVar

from probetui.lint import budget, simulated
from probetui.lint.budget import Starts, kills_words
from probetui.lint.model import PROBE_FIELD, Evidence, Hit, LintObject, Rule, Severity, Slot
from probetui.lint.rules_static import seconds, target
from probetui.spec.model import (
    Container,
    GRPCAction,
    HTTPGetAction,
    Probe,
    ProbeType,
    TCPSocketAction,
)

START_ANNOTATION = "probetui.io/start-seconds"
_TLS_NAME = re.compile(r"(^|-)(https|grpcs|tls|ssl)($|-)")
_TLS_NUMBERS = (443, 8443)
_KILLERS = (ProbeType.STARTUP, ProbeType.LIVENESS)
T = TypeVar("T")


NOT_SIMULATED = " (not simulated: the API server rejects this container, see invalid-spec)"


def _evidence(obj: LintObject, container: Container, make: Callable[[], T]) -> T | str:
    """Return the simulated consequence, or why there is none: a lint run must not die of one odd
    object, and the finding stands without its evidence. A container the API server rejects
    is never simulated: the kubelet never runs it, and values it refuses (a periodSeconds of
    -1) have no meaning in the model."""
    if obj.refuses(container.name):
        return NOT_SIMULATED
    try:
        return make()
    except Exception as e:
        return f" (simulate could not run: {e})"


def _kills(run: simulated.Run) -> str:
    n = len(run.kills)
    ready = run.first_ready()
    tail = f"Ready at {seconds(ready)}" if ready is not None else "never Ready"
    return f"{n} kill{'s' if n != 1 else ''} in {seconds(run.duration)}, {tail}"


# -- startup budget ------------------------------------------------------------------------


def declared_start(obj: LintObject, container: str) -> float | None:
    """`probetui.io/start-seconds: "45"` (every container) or `"app=45,init=5"`."""
    text = obj.annotations.get(START_ANNOTATION)
    if not text:
        return None
    value: str | None = None
    for part in text.split(","):
        name, sep, number = part.strip().rpartition("=")
        if not sep:
            value = value or number
        elif name.strip() == container:
            value = number
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def known_starts(obj: LintObject, container: str, evidence: Evidence | None) -> Starts | None:
    """Tell what lint knows of the container's starts: those observed (a start seen to finish
    overrides the annotation; one killed unfinished is a lower bound), else the annotation."""
    seen: Starts | None = None
    if evidence is not None:
        starts = getattr(evidence, "starts", None)
        if starts is not None:
            seen = starts(obj, container)
        else:
            measured = evidence.start_seconds(obj, container)
            seen = Starts(measured, 1) if measured is not None else None
    declared = declared_start(obj, container)
    if seen is not None and seen.finished is not None:
        return seen
    if seen is not None:
        return replace(seen, declared=declared)
    return Starts(declared=declared) if declared is not None else None


def startup_budget_too_short(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        starts = known_starts(obj, c.name, evidence)
        limits = simulated.budget_seconds(c)
        start = starts.need if starts is not None else None
        if starts is None or start is None or limits is None:
            continue
        seconds_left, pt = limits
        probe = c.probe(pt)
        assert probe is not None
        if not starts.killed and start < seconds_left - 2 * probe.period_seconds:
            continue  # clearly within budget: no need to ask the model
        run = _evidence(obj, c, lambda c=c, start=start: budget.start_run(obj.pod, c, start))
        if isinstance(run, str):
            yield _budget_hit(obj, slot, pt, probe, starts, None, run)
        elif run.kills or starts.killed:
            yield _budget_hit(obj, slot, pt, probe, starts, run, "")


def _budget_hit(
    obj: LintObject,
    slot: Slot,
    pt: ProbeType,
    probe: Probe,
    starts: Starts,
    run: simulated.Run | None,
    note: str,
) -> Hit:
    c = slot.container
    start = starts.need
    assert start is not None
    # the fix as the kubelet's model proves it: one period above the start, or the guess
    wanted = budget.wanted_seconds(starts, extra=probe.period_seconds)
    assert wanted is not None
    proposal = _evidence(
        obj,
        c,
        lambda: budget.propose(obj.pod, c, starts, wanted, add_startup=pt is ProbeType.LIVENESS),
    )
    verified = ""
    if isinstance(proposal, budget.Proposal):
        needed = proposal.failure_threshold
        verified = proposal.model_words()
        if pt is ProbeType.STARTUP:
            fix = f"raise startupProbe.failureThreshold to {needed} or more"
        else:
            fix = (
                f"add a startupProbe with periodSeconds {proposal.period} and "
                f"failureThreshold {needed} or more"
            )
        checked = (
            f"; a budget of {seconds(proposal.seconds)} is a guess above it"
            if proposal.guess
            else f"; the fix simulated: {proposal.then_words()}"
        )
    else:
        fix = None  # the rule's own words; the message says why there are no numbers
        checked = f"; {proposal.strip(' ;()')}" if proposal else ""
    settings = f"failureThreshold {probe.failure_threshold} x periodSeconds {probe.period_seconds}"
    if starts.guess:
        message = (
            f"{c.name!r} is killed by its {pt.key} probe ({settings}) before it has started: "
            f"{starts.words()}{checked}"
        )
    else:
        said = (
            "measured"
            if starts.finished is not None and start == starts.finished
            else f"declared in {START_ANNOTATION}"
            if start == starts.declared
            else "a start killed unfinished lived that long"
        )
        killed = (
            f"is killed at {seconds(run.kills[0][0])}"
            if run and run.kills
            else ("is killed before that" if not run else "was killed before it started")
        )
        evidence = f"; simulate: {kills_words(run, budget.gated(c))}" if run else note
        message = (
            f"{c.name!r} needs {seconds(start)} to start ({said}) and {killed} by its "
            f"{pt.key} probe ({settings}){evidence}{checked}"
        )
    return Hit(
        path=f"{slot.path}.{PROBE_FIELD[pt]}",
        container=c.name,
        probe=pt,
        message=message,
        fix=fix,
        verified=verified,
    )


def start_time_undeclared(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        live = c.liveness_probe
        if live is None or c.startup_probe is not None:
            continue  # a startup probe's budget was written for the start, on purpose
        if known_starts(obj, c.name, evidence) is not None:
            continue  # startup-budget-too-short checks the budget against it
        seen = getattr(evidence, "seen", None)
        if seen is not None and seen(obj, c.name):
            continue  # observed: a start will be measured when one happens
        budget_s = live.initial_delay_seconds + live.failure_threshold * live.period_seconds
        yield Hit(
            path=f"{slot.path}.livenessProbe",
            container=c.name,
            probe=ProbeType.LIVENESS,
            message=f"liveness kills {c.name!r} when it has not answered {seconds(budget_s)} "
            f"after it starts (delay {live.initial_delay_seconds} + failureThreshold "
            f"{live.failure_threshold} x periodSeconds {live.period_seconds}), and no start time "
            "is known to check that against (a slower start is killed every time): declare "
            f'one ({START_ANNOTATION}: "SECONDS") or lint with --recording or --cluster',
            fix=f'declare the start on the pod template: {START_ANNOTATION}: "SECONDS" (or '
            f'"{c.name}=SECONDS"), or add a startupProbe',
        )


# -- liveness failureThreshold 1 -----------------------------------------------------------


def liveness_threshold_one(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        live = c.liveness_probe
        if live is None or live.failure_threshold != 1:
            continue
        consequence = _evidence(obj, c, lambda c=c: _blip_consequence(*simulated.blip(obj.pod, c)))
        yield Hit(
            path=f"{slot.path}.livenessProbe.failureThreshold",
            container=c.name,
            probe=ProbeType.LIVENESS,
            message=f"liveness failureThreshold 1: one failed attempt restarts {c.name!r} "
            f"(§6.2){consequence}",
        )


def _blip_consequence(at: float, run: simulated.Run) -> str:
    if not run.kills:
        return ""
    return f"; simulate: a 1 s blip at {seconds(at)} -> Killing at {seconds(run.kills[0][0])}"


# -- validation ------------------------------------------------------------------------------


def _validation_hits(obj: LintObject, success_threshold: bool) -> Iterator[Hit]:
    for err in obj.validation():
        is_threshold = err.path.endswith(".successThreshold") and err.detail == "must be 1"
        if is_threshold != success_threshold:
            continue
        path = obj.spec_path + err.path.removeprefix("spec")
        fix = err.fix
        yield Hit(
            path=path,
            container=err.container,
            message=f"the API server rejects it: {path}: {err.body()}",
            fix=fix,
        )


def success_threshold_not_one(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    yield from _validation_hits(obj, success_threshold=True)


def invalid_spec(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    yield from _validation_hits(obj, success_threshold=False)


# -- probe grace period ------------------------------------------------------------------------


def probe_grace_longer(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    pod_grace = obj.pod.termination_grace_period_seconds
    for slot in obj.slots():
        c = slot.container
        for pt in _KILLERS:
            probe = c.probe(pt)
            grace = probe.termination_grace_period_seconds if probe else None
            if grace is None or pod_grace is None or grace <= pod_grace:
                continue
            consequence = _evidence(
                obj,
                c,
                lambda c=c, pt=pt: _grace_consequence(
                    simulated.stuck_kill(obj.pod, c, pt), pod_grace
                ),
            )
            yield Hit(
                path=f"{slot.path}.{PROBE_FIELD[pt]}.terminationGracePeriodSeconds",
                container=c.name,
                probe=pt,
                message=f"the {pt.key} probe's terminationGracePeriodSeconds {grace} is longer "
                f"than the pod's {pod_grace}: a container killed for failing it gets "
                f"{seconds(grace)} to stop, more than a deletion gives it (§11.5){consequence}",
                fix=f"remove it, or set it at most {pod_grace} (the pod's)",
            )


def _grace_consequence(run: simulated.Run, pod_grace: int) -> str:
    if not run.kills or not run.exits:
        return ""
    killed = run.kills[0][0]
    exited = next((t for t, _ in run.exits if t >= killed), None)
    if exited is None:
        return ""
    text = (
        f"; simulate: an app that ignores SIGTERM is killed at {seconds(killed)}, "
        f"SIGKILL at {seconds(exited)}"
    )
    if round(exited - killed) <= pod_grace:
        text += " (a whole-pod kill takes the pod's grace, §11.7: the probe's value is unused)"
    return text


# -- named ports ------------------------------------------------------------------------------


def named_port_not_declared(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        for pt, probe, path in slot.probes():
            h = probe.handler
            if not isinstance(h, HTTPGetAction | TCPSocketAction) or not isinstance(h.port, str):
                continue
            if h.port.isdigit() or c.port_by_name(h.port) is not None:
                continue  # a quoted number is invalid-spec's; a declared name resolves
            others = [o.name for o in obj.pod.probed_containers() if o.port_by_name(h.port)]
            elsewhere = (
                f" (container {others[0]!r} declares it, but the kubelet looks only in the "
                "probe's own container, §16.2)"
                if others
                else ""
            )
            field = "httpGet" if isinstance(h, HTTPGetAction) else "tcpSocket"
            consequence = _evidence(
                obj,
                c,
                lambda c=c, pt=pt: _unresolved_consequence(
                    simulated.unresolved(obj.pod, c, pt), pt
                ),
            )
            yield Hit(
                path=f"{path}.{field}.port",
                container=c.name,
                probe=pt,
                message=f"the {pt.key} probe of {c.name!r} uses port name {h.port!r}, which "
                f"{c.name!r} does not declare{elsewhere}: every attempt errors and is dropped "
                f"(§16.4){consequence}",
                fix=f"add a port named {h.port!r} to the ports of {c.name!r}, or use the number",
            )


_NEVER = {
    ProbeType.LIVENESS: "it can never restart the container",
    ProbeType.READINESS: "the container is never Ready",
    ProbeType.STARTUP: "the container never counts as started, so it is never Ready",
}


def _unresolved_consequence(run: simulated.Run, pt: ProbeType) -> str:
    tries = run.attempts_of(pt)
    errored = sum(1 for _, outcome in tries if outcome == "error")
    said = run.message_of(pt)
    kubelet = f' (the kubelet: "{said}")' if said else ""
    return (
        f", so {_NEVER[pt]}; simulate: {errored} of {len(tries)} attempts errored in "
        f"{seconds(run.duration)}, {len(run.kills)} kills{kubelet}"
    )


# -- gRPC on a TLS port --------------------------------------------------------------------------


def tls_port(c: Container, port: int) -> str | None:
    """Say why `port` looks TLS-only: its declared name, or a number TLS owns."""
    for p in c.ports:
        if p.container_port == port and p.name:
            return f"named {p.name!r}" if _TLS_NAME.search(p.name) else None
    return f"port {port} is the TLS port" if port in _TLS_NUMBERS else None


def grpc_on_tls_port(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        for pt, probe, path in slot.probes():
            h = probe.handler
            if not isinstance(h, GRPCAction):
                continue
            why = tls_port(c, h.port)
            if why is None:
                continue
            consequence = _evidence(
                obj,
                c,
                lambda c=c, pt=pt: f"; simulate: {_kills(simulated.failing(obj.pod, c, pt))}",
            )
            yield Hit(
                path=f"{path}.grpc.port",
                container=c.name,
                probe=pt,
                message=f"the {pt.key} probe of {c.name!r} speaks plaintext gRPC to port "
                f"{h.port} ({why}): the kubelet's gRPC probe has no TLS (GRPCContainerProbeTLS "
                f"is alpha and off, §2.9, §15.1), so every attempt fails{consequence}",
            )


# -- the anchor rules with a simulated consequence -------------------------------------------------


def liveness_same_as_readiness(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        live, ready = c.liveness_probe, c.readiness_probe
        if live is None or ready is None or live.handler != ready.handler:
            continue
        consequence = _evidence(
            obj, c, lambda c=c: _outage_consequence(*simulated.outage(obj.pod, c))
        )
        yield Hit(
            path=f"{slot.path}.livenessProbe",
            container=c.name,
            probe=ProbeType.LIVENESS,
            message=f"liveness and readiness of {c.name!r} both check {target(live)}: whatever "
            f"takes it out of service (a dependency down) also restarts it{consequence}",
        )


def _outage_consequence(at: float, run: simulated.Run) -> str:
    if at >= run.duration:
        return ""  # the outage falls past the longest run lint simulates
    kills = sum(1 for t, _ in run.kills if t >= at)
    return (
        f"; simulate: a {seconds(simulated.OUTAGE_SECONDS)} outage of what both check kills it "
        f"{kills} time{'s' if kills != 1 else ''}, where readiness alone would only take it out "
        "of service"
    )


def timeout_exceeds_period(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    for slot in obj.slots():
        c = slot.container
        for pt, probe, path in slot.probes():
            if probe.timeout_seconds < probe.period_seconds:
                continue
            consequence = _evidence(
                obj,
                c,
                lambda c=c, pt=pt, probe=probe: _hung_consequence(
                    simulated.hung(obj.pod, c, pt), pt, probe
                ),
            )
            yield Hit(
                path=f"{path}.timeoutSeconds",
                container=c.name,
                probe=pt,
                message=f"the {pt.key} probe of {c.name!r} allows {seconds(probe.timeout_seconds)} "
                f"for an answer and runs every {seconds(probe.period_seconds)}: a hung attempt "
                f"holds the next tick back (§4.4){consequence}",
            )


def _hung_consequence(run: simulated.Run, pt: ProbeType, probe: Probe) -> str:
    times = [t for t, _ in run.attempts_of(pt)]
    if len(times) < 2:
        return ""
    spacing = (times[-1] - times[0]) / (len(times) - 1)
    text = f"; simulate: a hung endpoint is probed every {seconds(round(spacing, 1))}"
    nominal = probe.failure_threshold * probe.period_seconds
    if pt is ProbeType.READINESS:
        took, what = probe.failure_threshold * spacing, "a failure is acted on after {}"
    elif run.kills:
        took, what = run.kills[0][0] - times[0], "it is killed {} after it hangs"
    else:
        return text
    if round(took) == nominal:
        return text + ", back to back: " + what.format(seconds(nominal))
    return text + ", so " + what.format(seconds(round(took))) + f", not {seconds(nominal)}"


RULES = (
    Rule(
        id="startup-budget-too-short",
        severity=Severity.ERROR,
        summary="the startup budget is shorter than the container's declared (or measured) start",
        fix="give the startup probe failureThreshold x periodSeconds above the slowest start",
        explain="A container that answers its probes only after it has started is killed by "
        "its startup probe (or, without one, by liveness) once failureThreshold attempts have "
        "failed (§6.2, §6.3, §11.1), and then again after every restart, into "
        "CrashLoopBackOff (§11.6). Declare the start time on the object or its pod template: "
        f'{START_ANNOTATION}: "45" (every container) or "app=45,worker=10". The rule '
        "simulates the container answering only after that long and counts the kills.",
        credit="probetui (the kubelet's model)",
        check=startup_budget_too_short,
        simulated=True,
    ),
    Rule(
        id="start-time-undeclared",
        severity=Severity.INFO,
        summary="liveness guards the start of a container whose start time lint cannot know",
        fix=f'declare the start time: {START_ANNOTATION}: "SECONDS", or add a startupProbe',
        explain="Without a startup probe, liveness is what a slow start must beat: a container "
        "still starting after initialDelaySeconds + failureThreshold x periodSeconds is killed, "
        "and its next start is killed the same way (§6.2, §11.6). lint can check that budget "
        "only against a start it knows: one observed (--recording, --cluster, the UI's "
        f"session) or declared ({START_ANNOTATION} on the object or its pod template). Fires "
        "on a container with a liveness probe, no startup probe and no start known, and says "
        "how to declare one.",
        credit="probetui (the kubelet's model)",
        check=start_time_undeclared,
    ),
    Rule(
        id="liveness-failure-threshold-one",
        severity=Severity.WARNING,
        summary="liveness failureThreshold is 1: one failed attempt restarts the container",
        fix="set liveness failureThreshold to 3 or more",
        explain="A liveness Failure is published once failureThreshold failures come in a "
        "row (§5.14, §6.2) and the kubelet kills the container at once (§11.1). At 1, one "
        "slow answer or one dropped connection is a restart. The rule simulates a 1 s blip.",
        credit="probetui (the kubelet's model)",
        check=liveness_threshold_one,
        simulated=True,
    ),
    Rule(
        id="success-threshold-not-one",
        severity=Severity.ERROR,
        summary="successThreshold is not 1 on a liveness or startup probe",
        fix="set successThreshold 1, or leave it out",
        explain="validateLivenessProbe and validateStartupProbe require successThreshold 1 "
        "(§2.4): the API server refuses the object, with the message quoted. Readiness may "
        "have any successThreshold of 1 or more (§2.5).",
        credit="probetui (upstream's validation, spec/validate.py)",
        check=success_threshold_not_one,
    ),
    Rule(
        id="invalid-spec",
        severity=Severity.ERROR,
        summary="the API server would refuse the pod spec's probes, ports or containers",
        fix="as the message says",
        explain="Upstream's validation of what probing depends on (§2.3-2.8), with its "
        "messages: more than one handler, none, a readiness probe with "
        "terminationGracePeriodSeconds, probes on an init container that is not a sidecar, "
        "bad ports and names.",
        credit="probetui (upstream's validation, spec/validate.py)",
        check=invalid_spec,
    ),
    Rule(
        id="probe-grace-longer-than-pod",
        severity=Severity.WARNING,
        summary="a probe's terminationGracePeriodSeconds is longer than the pod's",
        fix="remove it, or make it at most the pod's terminationGracePeriodSeconds",
        explain="For a liveness or startup kill the kubelet takes the probe's "
        "terminationGracePeriodSeconds over the pod's (§11.5), even when it is longer: a "
        "container that already failed its probe is given longer to stop than a deletion "
        "would give it, and its replacement waits. A whole-pod kill (§11.7) takes the pod's "
        "value and ignores the probe's. The rule simulates an app that ignores SIGTERM.",
        credit="probetui (the kubelet's model)",
        check=probe_grace_longer,
        simulated=True,
    ),
    Rule(
        id="named-port-not-declared",
        severity=Severity.ERROR,
        summary="an HTTP or TCP probe uses a port name its container does not declare",
        fix="declare the port name in the probe's container, or use the port number",
        explain="A named port is looked up among the probe's own container's ports only "
        "(§16.2). A name that matches nothing makes every attempt an error, which the worker "
        "drops (§5.11, §16.4): the probe can neither kill the container nor make it Ready, "
        "and validation does not catch it. gRPC probes take numbers only (§2.7).",
        credit="probetui (the kubelet's model); kube-linter's port checks look at names too",
        check=named_port_not_declared,
        simulated=True,
    ),
    Rule(
        id="grpc-on-tls-port",
        severity=Severity.ERROR,
        summary="a gRPC probe aims at a port that looks TLS-only",
        fix="probe a plaintext gRPC port, or use an exec probe (grpc_health_probe -tls)",
        explain="The kubelet's gRPC probe dials plaintext h2c (§15.1); TLS needs the "
        "GRPCContainerProbeTLS gate, alpha and off (§2.9). A port named https, grpcs, tls or "
        "ssl (alone or as a -suffix), or numbered 443 or 8443 without a name, is taken as "
        "TLS-only. The rule simulates every attempt failing.",
        credit="probetui (the kubelet's model)",
        check=grpc_on_tls_port,
        simulated=True,
    ),
    Rule(
        id="liveness-same-as-readiness",
        severity=Severity.WARNING,
        summary="liveness and readiness check the same thing",
        fix="point liveness at a check of the process alone (no dependencies), or drop it",
        explain="When both probes have the same handler (type, path, port, host, scheme, "
        "headers, command, gRPC service), whatever takes the container out of service also "
        "restarts it: a readiness check of a dependency becomes a liveness check of it, and "
        "one database outage restarts every replica (§6.1, §6.2, §11.1). The rule simulates "
        "a 60 s outage of what both check.",
        credit="kubectl-probes liveness-same-as-readiness; kube-score (identical liveness and "
        "readiness probes)",
        check=liveness_same_as_readiness,
        simulated=True,
    ),
    Rule(
        id="timeout-exceeds-period",
        severity=Severity.WARNING,
        summary="a probe's timeoutSeconds is at or above its periodSeconds",
        fix="keep timeoutSeconds below periodSeconds",
        explain="Ticks are fixed-rate, and a probe still running when its tick comes leaves "
        "one tick pending (§4.4): a hung endpoint is probed every timeoutSeconds, not every "
        "periodSeconds, so failures take longer to act on than the settings read. "
        "kubectl-probes fires above the period; probetui from equality, where a hung "
        "attempt already takes the whole period. The rule simulates a hung endpoint.",
        credit="kubectl-probes timeout-exceeds-period",
        check=timeout_exceeds_period,
        simulated=True,
    ),
)
