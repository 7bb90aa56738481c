"""The shadow beside the real kubelets: every demo behaviour as a real pod, probed by both.

One run serves every test here: probetui starts first (`--via direct`, from the client
namespace, so its attempts come from another address than a kubelet's), then the pod set is
created once on each node (the first node's kubelet v1.35.4, the second's v1.37.2; the second
set's names end in `-node2`), and both watch them for SHADOW_SECONDS. A kubelet's side is what
it reports (pod status, events) and what the apps logged of its requests; the shadow's side is
probetui's JSONL, where each pod's workers play its node's release (its `kubeletVersion`). Every
test that looks at pods runs once per node.

Where the two cannot agree to the millisecond, the tolerance is stated and explained from
upstream: the kubelet's workers start with a random jitter of up to one period
(`worker.run`: `time.Sleep(rand.Float64() * probePeriod)` when the kubelet has been up longer
than the period), and its status reaches the API server through the status manager's sync
(`status_manager.go`), so a ReadyChanged seen in the API lags the prober's result by the
status sync.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e import applog
from tests.e2e.cluster import CLIENT_IP, NODES, Cluster, Node
from tests.e2e.pods import SLEEP, busybox, node_pod_name, pod, shadow_pod_set
from tests.e2e.run import Run, start, stop, wait_listed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]

NS = "shadow"
SHADOW_SECONDS = 180

each_node = pytest.mark.parametrize("node", NODES, ids=[n.name for n in NODES])


def _probe_period(p: dict[str, Any], container: str, probe: str) -> float:
    for c in p["spec"]["containers"]:
        if c["name"] == container:
            return float(c[f"{probe}Probe"].get("periodSeconds", 10))
    raise KeyError(container)


@pytest.fixture(scope="module")
def shadow_run(
    cluster: Cluster,
) -> Iterator[tuple[Run, dict]]:
    tmp = cluster.workdir("shadow")
    cluster.namespace(NS)
    # a pod of no interest, so the shadow's first line says its first list is done
    cluster.apply(pod("anchor", NS, [busybox("idle", SLEEP)]))
    run = start(cluster, tmp, "-n", NS, "--via", "direct")
    try:
        wait_listed(run, 60)
        # both nodes' pods in one window: one apply, one watch
        pods = [p for node in NODES for p in shadow_pod_set(NS, node)]
        cluster.apply(pods)
        time.sleep(SHADOW_SECONDS)
    finally:
        stop(run)
    logs = {
        p["metadata"]["name"]: cluster.kubectl(
            "-n", NS, "logs", p["metadata"]["name"], "--timestamps", "--all-containers", check=False
        )
        for p in pods
    }
    yield run, {"pods": {p["metadata"]["name"]: p for p in pods}, "logs": logs}


def _on(ctx: dict, name: str, node: Node) -> bool:
    pod = ctx["pods"].get(name)
    return pod is not None and pod["spec"]["nodeName"] == node.name


@each_node
def test_the_shadow_ran_cleanly(shadow_run: tuple[Run, dict], node: Node) -> None:
    run, ctx = shadow_run
    assert run.returncode == 130, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    assert len([a for a in run.of("ProbeAttempt") if _on(ctx, a["pod"], node)]) > 500


@each_node
def test_zero_divergences_between_the_shadow_and_the_kubelet(
    shadow_run: tuple[Run, dict], node: Node
) -> None:
    """The runtime already waits out one period of disagreement before it says Divergence.
    Not kubelet-first, whose app answers the two sides differently by design: held to what
    such a difference may show in the test below."""
    run, ctx = shadow_run
    divergences = [
        (e["pod"], e["probe"], e.get("message"))
        for e in run.of("Divergence")
        if _on(ctx, e["pod"], node) and e["pod"] != node_pod_name("kubelet-first", node)
    ]
    assert divergences == []


@each_node
def test_the_shadow_sends_the_user_agent_of_the_nodes_kubelet(
    cluster: Cluster, shadow_run: tuple[Run, dict], node: Node
) -> None:
    """prober.go: a kubelet's probes say `kube-probe/MAJOR.MINOR` of its own version; the shadow
    reads the node's kubeletVersion and says the same, node by node."""
    _, ctx = shadow_run
    major, minor = cluster.kubelet_versions[node.name].lstrip("v").split(".")[:2]
    seen = applog.parse(ctx["logs"][node_pod_name("flap-ft3", node)])
    kubelet = {r.agent for r in applog.from_peer(seen, node.pod_gateway) if r.agent}
    shadow = {r.agent for r in applog.from_peer(seen, CLIENT_IP) if r.agent}
    assert kubelet == shadow == {f"kube-probe/{major}.{minor}"}, (kubelet, shadow)


@each_node
def test_a_success_only_the_kubelet_saw_is_no_divergence(
    shadow_run: tuple[Run, dict], node: Node
) -> None:
    """kubelet-first: the app answers 200 to the kubelet's first attempt only, 503 to all else.

    The kubelet is Ready on that success until it has counted failureThreshold failures; the
    shadow, whose attempts all fail, holds its initial Failure meanwhile, which is no verdict
    (worker.go doProbe leaves the cache as it was below the threshold). The two part ways only
    between the shadow's third failure and the kubelet's: the kubelet's comes a period later
    (its first attempt was the success), give or take the phase between the two workers (up to
    a period: the kubelet's start-up jitter), and reaches the API through the status manager.
    That can outlast the runtime's slack (a period and 1.5 s), and then the runtime says so:
    the kubelet did see an answer the shadow did not. So no Divergence before the shadow's
    verdict, and any after it is cleared once the kubelet's Ready goes false."""
    run, ctx = shadow_run
    name = node_pod_name("kubelet-first", node)
    seen = applog.parse(ctx["logs"][name])
    kubelet = applog.from_peer(seen, node.pod_gateway)
    shadow = applog.from_peer(seen, CLIENT_IP)
    assert kubelet and kubelet[0].answer == "200", kubelet[:3]
    assert shadow and {r.answer for r in shadow} == {"503"}, shadow[:3]
    ready = _ready_series(run.of("ReadyChanged", pod=name), "ready")
    assert [v for _, v in ready][:2] == [True, False], ready
    results = run.of("ResultChanged", pod=name, probe="readiness")
    assert results and {e["result"] for e in results} == {"Failure"}
    attempts = run.of("ProbeAttempt", pod=name, probe="readiness")
    verdict = _first_verdict(attempts, ctx["pods"][name], "web")
    assert verdict is not None
    unready = next(t for t, v in ready if not v)
    period = _probe_period(ctx["pods"][name], "web", "readiness")
    for d in run.of("Divergence", pod=name):
        # due only once the slack has passed since the shadow's verdict
        assert _t(d) >= verdict + period + 1.5 - 0.1, (d["ts"], verdict)
        cleared = [c for c in run.of("DivergenceCleared", pod=name) if _t(c) > _t(d)]
        assert cleared and _t(cleared[0]) >= unready - 0.5, (d["ts"], unready)
        assert _t(cleared[0]) <= unready + 2 * period, (cleared[0]["ts"], unready)


def _ready_series(events: list[dict[str, Any]], key: str) -> list[tuple[float, bool]]:
    out: list[tuple[float, bool]] = []
    for e in events:
        v = e["ready"] if key == "ready" else e["result"] == "Success"
        if not out or out[-1][1] != v:
            out.append((_t(e), v))
    return out


def _value_at(
    series: list[tuple[float, bool]], t: float, before: bool | None = None
) -> bool | None:
    value = before
    for at, v in series:
        if at > t:
            break
        value = v
    return value


def _first_agreement(
    kubelet: list[tuple[float, bool]], shadow: list[tuple[float, bool]], since: float
) -> float | None:
    """The first instant from `since` on at which both series have a value and it is the same.

    The kubelet's series starts not ready: the runtime says ReadyChanged only where a status
    differs from that, from its first sight of the pod on."""
    for t in sorted({since, *(at for at, _ in [*kubelet, *shadow] if at >= since)}):
        if _value_at(kubelet, t, before=False) == _value_at(shadow, t):
            return t
    return None


def _disagreements(
    kubelet: list[tuple[float, bool]], shadow: list[tuple[float, bool]], since: float, end: float
) -> list[tuple[float, float]]:
    """The spans in [since, end] where the two sides' values differ (the kubelet's starts not
    ready, see `_first_agreement`)."""
    spans: list[tuple[float, float]] = []
    began: float | None = None
    for t in sorted({since, *(at for at, _ in [*kubelet, *shadow] if since <= at <= end)}):
        differ = _value_at(kubelet, t, before=False) != _value_at(shadow, t)
        if differ and began is None:
            began = t
        elif not differ and began is not None:
            spans.append((began, t))
            began = None
    if began is not None:
        spans.append((began, end))
    return spans


def _first_verdict(
    attempts: list[dict[str, Any]], p: dict[str, Any], container: str
) -> float | None:
    """When the shadow's readiness worker first reached a threshold: the first attempt whose
    result run is as long as its threshold (worker.go doProbe publishes nothing before)."""
    probe = next(c for c in p["spec"]["containers"] if c["name"] == container)["readinessProbe"]
    needed = {
        "Success": probe.get("successThreshold", 1),
        "Failure": probe.get("failureThreshold", 3),
    }
    for a in attempts:
        if a["result"] in needed and a["resultRun"] >= needed[a["result"]]:
            return _t(a)
    return None


def _t(e: dict[str, Any]) -> float:
    import datetime

    return datetime.datetime.fromisoformat(e["ts"]).timestamp()


# not kubelet-first: by design the kubelet holds Ready for three periods on a success the shadow
# never saw, longer than the slack, whichever side's first sight comes first;
# test_a_success_only_the_kubelet_saw_is_no_divergence holds it to the divergence rule instead
READINESS_PODS = [
    "flap-ft1",
    "flap-ft3",
    "slow-guarded",
    "exec-file",
    "exec-varied",
    "tcp",
    "grpc-flip",
    "redirect",
    "timeout",
    "initial-delay",
    "hostnet",
]


@each_node
@pytest.mark.parametrize("base", READINESS_PODS)
def test_readiness_flips_as_the_kubelet_reports_them(
    shadow_run: tuple[Run, dict], base: str, node: Node
) -> None:
    """The shadow's readiness follows the kubelet's: from the shadow's first verdict on, they
    never disagree for longer than one period plus 1.5 s, the same slack the runtime gives a
    disagreement before it calls it a Divergence.

    The two workers tick at different phases of the period (the kubelet's start-up jitter), and
    `ready` reaches the API through the status manager. So a change on one side has the other's
    beside it within that slack, and an app that flips just between the two sides' attempts
    may show one side a blip shorter than it (flap-ft1 at failureThreshold 1) that the other
    never had."""
    run, ctx = shadow_run
    name = node_pod_name(base, node)
    container = ctx["pods"][name]["spec"]["containers"][0]["name"]
    period = _probe_period(ctx["pods"][name], container, "readiness")
    kubelet = _ready_series(run.of("ReadyChanged", pod=name, container=container), "ready")
    shadow = _ready_series(
        run.of("ResultChanged", pod=name, container=container, probe="readiness"), "result"
    )
    # compared from the shadow's first verdict, as the runtime's Divergence does: until a worker
    # has reached a threshold it holds its initial Failure, which is no verdict. Meanwhile the
    # kubelet may have a success behind it that the shadow never saw (its first attempt came
    # before the watch brought the container here, or just before the app flipped) and holds
    # it until it has counted failureThreshold failures
    attempts = run.of("ProbeAttempt", pod=name, container=container, probe="readiness")
    assert attempts, name
    verdict = _first_verdict(attempts, ctx["pods"][name], container)
    assert verdict is not None, (name, attempts[:5])
    agreed = _first_agreement(kubelet, shadow, verdict)
    assert agreed is not None, (name, shadow, kubelet)
    grace = period + 1.5
    end = max(_t(e) for e in run.events)
    apart = [(a, b) for a, b in _disagreements(kubelet, shadow, verdict, end) if b - a > grace]
    assert not apart, (name, apart, shadow, kubelet)
    # not vacuous: the flapping pods flip on both sides; a kubelet flip within the slack of the
    # run's end is one the shadow had no time to follow, as for the disagreements above
    flips = [t for t, _ in kubelet if agreed < t <= end - grace]
    if len(flips) >= 2:
        assert len([t for t, _ in shadow if t > agreed]) >= 2, (name, shadow, kubelet)


@each_node
def test_a_liveness_kill_is_seen_on_both_sides(shadow_run: tuple[Run, dict], node: Node) -> None:
    """slow-unguarded: killed every start (liveness with no startup probe; 12 s to listen)."""
    run, _ = shadow_run
    name = node_pod_name("slow-unguarded", node)
    kills = run.of("Killing", pod=name)
    assert kills and all(k["probe"] == "liveness" for k in kills)
    assert all("failed liveness probe, will be restarted" in k["message"] for k in kills)
    failures = [
        e for e in run.of("ResultChanged", pod=name, probe="liveness") if e["result"] == "Failure"
    ]
    # the kill event carries whole seconds (its eventTime is cut to seconds in core/v1 Events),
    # and the two probers tick on grids of their own: each counts its failures from its own
    # first tick after the start, so the shadow's verdict may come up to a period (2 s) before
    # the kubelet's, and up to a period plus the second cut off after it
    period = 2.0
    for k in kills:
        assert any(-period <= _t(f) - _t(k) <= period + 1.0 for f in failures), (
            k["ts"],
            [f["ts"] for f in failures],
        )
    assert abs(len(failures) - sum(k["increment"] for k in kills)) <= 1
    assert run.of("BackOff", pod=name), "CrashLoopBackOff after the kills"


@each_node
def test_restart_policy_never_kills_the_pod_not_the_container(
    shadow_run: tuple[Run, dict], node: Node
) -> None:
    """computePodActions: a liveness failure with nothing to restart kills the whole pod, and
    the kubelet's Killing event then says only "Stopping container NAME"."""
    run, _ = shadow_run
    name = node_pod_name("never", node)
    kills = run.of("Killing", pod=name)
    assert [k["message"] for k in kills] == ["Stopping container web"]
    failures = [
        e for e in run.of("ResultChanged", pod=name, probe="liveness") if e["result"] == "Failure"
    ]
    assert len(failures) == 1
    assert abs(_t(failures[0]) - _t(kills[0])) <= 3.0
    assert not [e for e in run.of("ContainerStarted", pod=name) if e.get("restartCount")]


@each_node
def test_on_failure_and_exit_0_after_a_probe_kill_completes_the_pod(
    shadow_run: tuple[Run, dict], node: Node
) -> None:
    """A probe kill restarts in the same sync while no back-off window is open (the snapshot
    still shows the container running); once a start meets an open window, the next sync asks
    ContainerShouldRestart with the exit code, and OnFailure with exit 0 means the pod is done.
    Seen on the real kubelet: a few immediate restarts, one BackOff, then nothing starts."""
    run, _ = shadow_run
    name = node_pod_name("onfailure-exit0", node)
    kills = run.of("Killing", pod=name)
    assert kills and {k["probe"] for k in kills} == {"liveness"}, kills
    exits = run.of("ContainerExited", pod=name)
    assert exits and {e["exitCode"] for e in exits} == {0}
    restarts = [e for e in run.of("ContainerStarted", pod=name) if e.get("restartCount")]
    backoffs = run.of("BackOff", pod=name)
    assert len(backoffs) >= 1, "the last start met an open back-off window"
    assert sum(k["increment"] for k in kills) == len(restarts) + 1
    assert all(_t(r) <= _t(backoffs[0]) for r in restarts), "nothing started after it"


@each_node
def test_a_startup_probe_saves_the_slow_starter(shadow_run: tuple[Run, dict], node: Node) -> None:
    run, _ = shadow_run
    name = node_pod_name("slow-guarded", node)
    assert run.of("Killing", pod=name) == []
    started = [e for e in run.of("StartedChanged", pod=name) if e["started"]]
    shadow = [
        e for e in run.of("ResultChanged", pod=name, probe="startup") if e["result"] == "Success"
    ]
    assert len(started) == 1 and len(shadow) == 1
    assert abs(_t(started[0]) - _t(shadow[0])) <= 2 + 1.5


@each_node
def test_the_kubelets_events_are_attributed_to_container_and_probe(
    shadow_run: tuple[Run, dict], node: Node
) -> None:
    run, ctx = shadow_run
    for e in run.of("Unhealthy"):
        if not _on(ctx, e["pod"], node):
            continue
        spec = ctx["pods"][e["pod"]]["spec"]["containers"]
        names = {c["name"] for c in spec}
        assert e["container"] in names, e
        declared = {k.removesuffix("Probe") for c in spec for k in c if k.endswith("Probe")}
        assert e["probe"] in declared, e
        assert e["message"].lower().startswith(e["probe"]), e
    redirect = node_pod_name("redirect", node)
    warnings = run.of("ProbeWarning", pod=redirect)
    assert warnings and {w["probe"] for w in warnings} == {"readiness"}
    assert "Probe terminated redirects" in warnings[0]["message"]
    here = [e["pod"] for e in run.of("ProbeWarning") if _on(ctx, e["pod"], node)]
    assert here == [redirect] * len(here)


@each_node
def test_an_aggregated_event_is_attributed_like_the_others(
    shadow_run: tuple[Run, dict], node: Node
) -> None:
    """The kubelet's event correlator combines more than ten similar events (same reason,
    different messages) within ten minutes into one "(combined from similar events): ..."
    (client-go `EventCorrelator`); probetui marks it `aggregated` and keeps the message."""
    run, _ = shadow_run
    name = node_pod_name("exec-varied", node)
    combined = [e for e in run.of("Unhealthy", pod=name) if e.get("aggregated")]
    assert combined, [e["message"] for e in run.of("Unhealthy", pod=name)][:15]
    assert {(e["container"], e["probe"]) for e in combined} == {("worker", "readiness")}
    assert not any(e["message"].startswith("(combined") for e in combined)
    # one aggregate object, counting on past the ten that stood alone
    assert len({e["eventUid"] for e in combined}) == 1 and max(e["count"] for e in combined) > 2


# -- attempt by attempt -----------------------------------------------------------------

# probes the app can see: (pod, probe type, whether the pod is on the node's network: its
# kubelet dials it from the node's address, else from the node's pod gateway)
SEEN = [
    ("flap-ft1", "readiness", False),
    ("flap-ft3", "readiness", False),
    ("tcp", "readiness", False),
    ("redirect", "readiness", False),
    ("timeout", "readiness", False),
    ("initial-delay", "readiness", False),
    ("hostnet", "readiness", True),
]


def _attempts(run: Run, name: str, probe: str) -> list[dict[str, Any]]:
    return run.of("ProbeAttempt", pod=name, probe=probe)


def _window(
    kubelet: list[applog.Received], shadow: list[applog.Received], period: float
) -> tuple[list[applog.Received], list[applog.Received], float, float]:
    """Both sides' attempts over the time both were probing, less a period at each end."""
    lo = max(kubelet[0].t, shadow[0].t) + period
    hi = min(kubelet[-1].t, shadow[-1].t) - period
    return [r for r in kubelet if lo <= r.t <= hi], [r for r in shadow if lo <= r.t <= hi], lo, hi


def _same_outcomes(answered: Counter, recorded: Counter) -> bool:
    # an attempt at the window's edge may be counted on one side only
    return all(abs(answered[o] - recorded[o]) <= 1 for o in set(answered) | set(recorded))


@each_node
@pytest.mark.parametrize(("base", "probe", "host_network"), SEEN)
def test_attempts_match_the_kubelets_one_by_one(
    shadow_run: tuple[Run, dict], base: str, probe: str, host_network: bool, node: Node
) -> None:
    """Over the window both were probing: as many attempts (one period of slack at each end,
    plus manual triggers that depend on the instant of a flip), the same spacing, and each of
    the shadow's outcomes is what the app answered it."""
    run, ctx = shadow_run
    name = node_pod_name(base, node)
    kubelet_ip = node.ip if host_network else node.pod_gateway
    period = _probe_period(
        ctx["pods"][name], ctx["pods"][name]["spec"]["containers"][0]["name"], probe
    )
    seen = applog.parse(ctx["logs"][name])
    kubelet = applog.from_peer(seen, kubelet_ip)
    shadow_seen = applog.from_peer(seen, CLIENT_IP)
    assert kubelet and shadow_seen
    k, s, lo, hi = _window(kubelet, shadow_seen, period)
    slack = 2 + len(run.of("ResultChanged", pod=name, probe=probe))
    assert abs(len(k) - len(s)) <= slack, (len(k), len(s))

    def ticks(rs: list[applog.Received]) -> list[float]:
        gaps = [b.t - a.t for a, b in itertools.pairwise(rs)]
        return [g for g in gaps if g > period / 2]  # manual triggers come between ticks

    assert abs(statistics.median(ticks(k)) - period) < 0.1
    assert abs(statistics.median(ticks(s)) - period) < 0.1
    recorded = Counter(a["outcome"] for a in _attempts(run, name, probe) if lo <= _t(a) <= hi)
    if base == "tcp":
        # a bare connect has no answer to log: every one the app saw was a success
        assert set(recorded) == {"success"}
        return
    if base == "timeout":
        # the answer comes after the 1 s timeout: every attempt a failure, on both sides
        assert set(recorded) == {"failure"}
        return
    expected = {"200": "success", "503": "failure", "302": "warning"}
    answered = Counter({expected[a]: n for a, n in Counter(r.answer for r in s).items() if a})
    assert _same_outcomes(answered, recorded), (answered, recorded)


@each_node
def test_grpc_attempts_match_the_kubelets(shadow_run: tuple[Run, dict], node: Node) -> None:
    run, ctx = shadow_run
    name = node_pod_name("grpc-flip", node)
    seen = applog.parse(ctx["logs"][name])
    for probe, service, period in (("readiness", "demo.Orders", 2.0), ("liveness", "", 3.0)):
        kubelet = [r for r in applog.from_peer(seen, node.pod_gateway) if r.path == service]
        shadow = [r for r in applog.from_peer(seen, CLIENT_IP) if r.path == service]
        k, s, lo, hi = _window(kubelet, shadow, period)
        slack = 2 + len(run.of("ResultChanged", pod=name, probe=probe))
        assert abs(len(k) - len(s)) <= slack, (probe, len(k), len(s))
        recorded = Counter(a["outcome"] for a in _attempts(run, name, probe) if lo <= _t(a) <= hi)
        answered = Counter({"SERVING": "success", "NOT_SERVING": "failure"}[r.answer] for r in s)
        assert _same_outcomes(answered, recorded), (probe, answered, recorded)


@each_node
def test_a_port_name_no_container_has_is_an_error_worded_as_the_nodes_release_words_it(
    cluster: Cluster, shadow_run: tuple[Run, dict], node: Node
) -> None:
    """pkg/probe/util.go ResolveContainerPort: before 1.37 a name no container port has was
    tried as a number (`strconv.Atoi: parsing "metrics": invalid syntax`), from 1.37 it is
    `port "metrics" not found`. The shadow plays the node's release: each of its attempts would
    raise the very event the node's kubelet raised."""
    run, _ = shadow_run
    name = node_pod_name("unknown-port", node)
    minor = int(cluster.kubelet_versions[node.name].lstrip("v").split(".")[1])
    error = (
        'port "metrics" not found'
        if minor >= 37
        else 'strconv.Atoi: parsing "metrics": invalid syntax'
    )
    expected = {f"Readiness probe errored and resulted in unknown state: {error}"}
    kubelet = {e["message"] for e in run.of("Unhealthy", pod=name)}
    shadow = {a.get("event") for a in _attempts(run, name, "readiness")}
    assert kubelet == expected, kubelet
    assert shadow == expected, shadow


@each_node
def test_exec_probes_run_in_the_container_on_both_sides(
    shadow_run: tuple[Run, dict], node: Node
) -> None:
    """Exec probes leave no peer to tell the two apart; their outputs must be the kubelet's."""
    run, _ = shadow_run
    name = node_pod_name("exec-file", node)
    outs = {a.get("output") for a in _attempts(run, name, "readiness")}
    assert "" in outs or None in outs  # cat of an empty file: success with no output
    assert "cat: can't open '/tmp/healthy': No such file or directory\n" in outs
    kubelet = {e["message"] for e in run.of("Unhealthy", pod=name)}
    assert kubelet == {
        "Readiness probe failed: cat: can't open '/tmp/healthy': No such file or directory\n"
    }, kubelet
