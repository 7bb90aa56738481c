"""Put into words what a probe's settings and state mean: the Threshold state pane's sentences.

Pure functions of the probe as written and the worker's counters, so they can be tested
without a screen. `divergence_lines` says why the shadow and the kubelet disagree, from a
`Divergence` event's fields as the cluster runtime wrote them
(`runtime/kubernetes/divergence.py`: both verdicts, since when, the shadow's path and the
likely reasons: path, timing, flakiness, vantage), for the pane and the details alike.
"""

from __future__ import annotations

import re
import shlex

from probetui.kubelet.kuberuntime import restart_after_probe_kill
from probetui.kubelet.profile import profile_of_node
from probetui.prober.results import ResultValue
from probetui.runtime.base import NodeKubelet
from probetui.spec.model import Container, Pod, Probe, ProbeType


def duration(seconds: float) -> str:
    """Short human durations: 800ms, 4.2s, 15s, 2m30s, 1h05m."""
    if seconds < 0:
        return "-" + duration(-seconds)
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds < 10 and seconds != int(seconds):
        return f"{seconds:.1f}s"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s" if s else f"{m}m"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m" if m else f"{h}h"


def latency(seconds: float) -> str:
    ms = seconds * 1000
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    return f"{seconds:.2f} s"


def handler_text(probe: Probe) -> str:
    """Return the handler as the pod's redacted copy has it (`probetui.redact`: the store holds no
    other), with the pod IP left symbolic."""
    if probe.exec is not None:
        return "exec " + shlex.join(probe.exec.command)
    if probe.http_get is not None:
        h = probe.http_get
        host = h.host or "<pod IP>"
        text = f"GET {h.scheme.lower()}://{host}:{h.port}{h.path}"
        for header in h.http_headers:
            text += f"  [{header.name}: {header.value}]"
        return text
    if probe.tcp_socket is not None:
        t = probe.tcp_socket
        return f"TCP {t.host or '<pod IP>'}:{t.port}"
    if probe.grpc is not None:
        g = probe.grpc
        service = f" service {g.service!r}" if g.service else ""
        return f"gRPC <pod IP>:{g.port}{service}"
    return "no handler"


def settings_text(probe: Probe) -> str:
    return (
        f"every {probe.period_seconds}s  timeout {probe.timeout_seconds}s  "
        f"success {probe.success_threshold}  failure {probe.failure_threshold}  "
        f"delay {probe.initial_delay_seconds}s"
    )


_MINOR = re.compile(r"v?1\.(\d+)")


def kubelet_played(configured: str, node: NodeKubelet) -> str:
    """Tell which kubelet release a pod's probes are played as, and why that one: its node's
    `kubeletVersion` ("kubelet 1.37 (node b)"), the nearest modelled for a release outside
    them ("kubelet 1.33 (node a runs v1.31.4)"), or the configured one and why the node's is
    not known ("kubelet 1.35 (configured: nodes not read in read-only mode)")."""
    fallback = profile_of_node(configured)
    played = profile_of_node(node.version, fallback)
    if played is not fallback and node.version:
        where = f"node {node.node}" if node.node else "its node"
        minor = _MINOR.match(node.version.strip())
        if minor is not None and int(minor[1]) != played.minor:
            # outside the modelled releases: the nearest plays (a node cannot be refused)
            return f"kubelet {played.version} ({where} runs {node.version})"
        return f"kubelet {played.version} ({where})"
    why = f": {node.unknown}" if node.unknown else ""
    return f"kubelet {fallback.version} (configured{why})"


def threshold_title(played: str | None) -> str:
    """Return the Threshold state pane's title, with the kubelet release played where known."""
    return "Threshold state" if played is None else f"Threshold state · {played}"


def detect_seconds(probe: Probe) -> int:
    """Time to detect a failure: periodSeconds x failureThreshold."""
    return probe.period_seconds * probe.failure_threshold


def startup_budget(probe: Probe) -> int:
    """Tell how long a container may take to start: initialDelaySeconds + period x
    failureThreshold."""
    return probe.initial_delay_seconds + probe.period_seconds * probe.failure_threshold


def on_failure(probe_type: ProbeType, pod: Pod, container: Container) -> tuple[str, str]:
    """Tell what a published Failure makes the kubelet do: the verb phrase, singular and plural."""
    if probe_type is ProbeType.READINESS:
        return "takes it out of service", "take it out of service"
    if restart_after_probe_kill(container, pod):
        return "restarts the container", "restart the container"
    never = " (restartPolicy Never: no restart)"
    return "kills the container" + never, "kill the container" + never


def on_success(probe_type: ProbeType) -> tuple[str, str]:
    if probe_type is ProbeType.READINESS:
        return "puts it in service", "put it in service"
    if probe_type is ProbeType.STARTUP:
        return "marks it Started", "mark it Started"
    return "keeps it running", "keep it running"


def _count(n: int, noun: str, verbs: tuple[str, str], in_a_row: bool = True) -> str:
    """'1 failure restarts the container', '3 failures in a row restart the container'."""
    if n == 1:
        return f"1 {noun} {verbs[0]}"
    plural = noun + "es" if noun.endswith("success") else noun + "s"
    return f"{n} {plural}{' in a row' if in_a_row else ''} {verbs[1]}"


def run_words(
    probe_type: ProbeType,
    probe: Probe,
    pod: Pod,
    container: Container,
    *,
    published: ResultValue | None,
    last_result: ResultValue | None,
    result_run: int,
    on_hold: bool,
) -> str:
    """Return the current run in words: "2 of 3 failures: the next failure restarts the
    container"."""
    fail_t, ok_t = probe.failure_threshold, probe.success_threshold
    fails = on_failure(probe_type, pod, container)
    oks = on_success(probe_type)
    if on_hold:
        if probe_type is ProbeType.STARTUP and published is ResultValue.SUCCESS:
            return "started: the startup probe is done for this container"
        return f"on hold: Failure published, the kubelet {fails[0]}; probing resumes with the next container"
    if published is None:
        return "no result yet: the container has not been created"
    if last_result is None or result_run == 0:
        if published is ResultValue.SUCCESS:
            return "no attempt counted yet: " + _count(fail_t, "failure", fails)
        return "no attempt counted yet: " + _count(ok_t, "success", oks)
    if last_result is ResultValue.FAILURE:
        if published is ResultValue.FAILURE:
            return f"failing, run of {result_run}: " + _count(ok_t, "success", oks)
        left = fail_t - result_run
        head = f"{result_run} of {fail_t} failures: "
        if left <= 1:
            return head + f"the next failure {fails[0]}"
        return head + _count(left, "more failure", fails, in_a_row=False)
    if published is ResultValue.SUCCESS:
        return f"passing, run of {result_run}: " + _count(fail_t, "failure", fails)
    left = ok_t - result_run
    head = f"{result_run} of {ok_t} successes: "
    if left <= 1:
        return head + f"the next success {oks[0]}"
    return head + _count(left, "more success", oks, in_a_row=False)


def divergence_lines(
    fields: dict[str, object], cleared: str | None = None, since: str | None = None
) -> list[str]:
    """Return the disagreement in one line, then one line per likely reason (the reasons are long:
    each gets the width, in the pane and, wider, in the details). `cleared`: the
    DivergenceCleared message when the two agree again; `since`: when it began, as a clock."""
    head = str(fields.get("message") or "the shadow and the kubelet disagree")
    if since:
        head += f" (since {since})"
    if cleared:
        head = f"was: {head}; {cleared}"
    via = fields.get("via")
    if via:
        head += f" · shadow via {via}"
    reasons = fields.get("likely") or ()
    if not isinstance(reasons, list | tuple):
        reasons = (str(reasons),)
    return [head, *(f"likely {r}" for r in reasons)]
