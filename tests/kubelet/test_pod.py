"""PodKubelet on virtual time: start order, init containers, sidecars, restart policies, phase.

Each test names the upstream code whose behaviour it pins (`kuberuntime_container.go`
computeInitContainerActions, `kuberuntime_manager.go` computePodActions / doBackOff,
`kubelet_pods.go` getPhase, `pod_workers.go` SyncTerminatingPod). The containers are a scripted
backend on SimClock; the probe workers are the real ones, answered by a script.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from probetui.keys import ProbeKey
from probetui.kubelet import backoff as bo
from probetui.kubelet import kuberuntime as kr
from probetui.kubelet.pod import PodKubelet
from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile, profile_for
from probetui.prober.clock import SimClock
from probetui.prober.manager import Manager
from probetui.prober.prober import ProbeOutcome, map_attempts
from probetui.prober.results import ResultValue
from probetui.prober.status import PodStatus
from probetui.prober.worker import Worker
from probetui.simulate import synthetic_attempt
from probetui.spec.model import (
    Container,
    ContainerKind,
    ExecAction,
    Pod,
    Probe,
    ProbeType,
    RestartRule,
)

EXEC = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=1)


@dataclass(frozen=True)
class Run:
    """How one instance behaves: exits by itself after `run_for` s (None: runs until killed)."""

    run_for: float | None = None
    exit_code: int = 0
    start_error: str | None = None
    stop_after: float = 0.0  # how long it takes to die of SIGTERM
    term_exit: int = 143  # its exit code when SIGTERM ends it (0: it shuts down cleanly)


Script = Callable[[int], Run]  # restart count -> behaviour of that instance


def forever(_: int) -> Run:
    return Run()


class Harness:
    def __init__(
        self,
        pod: Pod,
        scripts: dict[str, Script] | None = None,
        healthy: Callable[[str, ProbeType, float], bool] = lambda c, p, t: True,
        *,
        start_delay: float = 0.0,
        backoff: bo.Backoff | None = None,
        profile: KubeletProfile = DEFAULT_PROFILE,
    ) -> None:
        self.pod = pod
        self.scripts = scripts or {}
        self.healthy = healthy
        self.start_delay = start_delay
        self.clock = SimClock()
        self.events: list[dict[str, Any]] = []
        self.statuses: list[PodStatus] = []
        self.kills: list[tuple[str, float]] = []
        self.sigterms: list[tuple[float, str, float]] = []  # (t, container, grace)
        self._seq = 0
        self.manager = Manager(
            self.clock, self._status_of, launch=self._launch, start=-86400.0, profile=profile
        )
        self.kubelet = PodKubelet(
            pod,
            self.clock,
            self.manager,
            self,
            self._emit,
            pod_ip="10.0.0.1",
            backoff=backoff,
            on_status=self.statuses.append,
            lifecycle_events=True,
        )
        self._timers: dict[str, Any] = {}
        self._stop_after: dict[str, float] = {}
        self._term_exit: dict[str, int] = {}

    # -- the backend ------------------------------------------------------------------------

    def start(self, kubelet: PodKubelet, container: Container, restart_count: int) -> None:
        self._seq += 1
        cid = f"fake://{container.name}-{self._seq}"
        run = self.scripts.get(container.name, forever)(restart_count)

        def go() -> None:
            if run.start_error is not None:
                kubelet.start_failed(container.name, cid, run.start_error)
                return
            if run.run_for is not None:
                self._timers[cid] = self.clock.call_at(
                    self.clock.now() + run.run_for,
                    lambda: kubelet.exited(container.name, cid, run.exit_code),
                )
            self._stop_after[cid] = run.stop_after
            self._term_exit[cid] = run.term_exit
            kubelet.started(container.name, cid)

        self.clock.call_at(self.clock.now() + self.start_delay, go)

    def kill(self, kubelet: PodKubelet, container: Container, cid: str, grace: float) -> None:
        self.kills.append((container.name, grace))
        self.sigterms.append((self.clock.now(), container.name, grace))
        stop = self._stop_after.get(cid, 0.0)
        code, after = (self._term_exit.get(cid, 143), stop) if stop < grace else (137, grace)
        timer = self._timers.pop(cid, None)
        if timer is not None:
            timer.cancel()
        self.clock.call_at(
            self.clock.now() + after, lambda: kubelet.exited(container.name, cid, code)
        )

    # -- the prober around it ---------------------------------------------------------------

    def _status_of(self, uid: str) -> PodStatus | None:
        return self.kubelet.status if uid == self.pod.uid else None

    def _launch(
        self, worker: Worker, status: PodStatus, done: Callable[[ProbeOutcome | None], None]
    ) -> None:
        ok = self.healthy(worker.container.name, worker.probe_type, self.clock.now())
        attempt = synthetic_attempt(
            worker.spec, worker.container, status.pod_ip, fails=not ok, latency=0.0
        )
        outcome = map_attempts(worker.probe_type, [attempt])
        self.clock.call_soon(lambda: done(outcome))

    def _emit(self, type_: str, container: str, t: float, fields: dict[str, Any]) -> None:
        self.events.append({"t": round(t, 6), "type": type_, "container": container, **fields})

    # -- driving and reading ----------------------------------------------------------------

    def run(self, until: float) -> Harness:
        if not self.statuses:
            self.kubelet.start()
        self.clock.run_until(until)
        return self

    def of(self, type_: str, **match: Any) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())
        ]

    def starts(self) -> list[tuple[float, str]]:
        return [(e["t"], e["container"]) for e in self.of("ContainerStarted")]

    @property
    def phase(self) -> str:
        return self.kubelet.status.phase


def init(name: str, **kw: Any) -> Container:
    return Container(name=name, kind=ContainerKind.INIT, command=("x",), **kw)


def sidecar(name: str, **kw: Any) -> Container:
    return init(name, restart_policy="Always", **kw)


def app(name: str = "app", **kw: Any) -> Container:
    return Container(name=name, command=("x",), **kw)


def pod(*containers: Container, policy: str = "Always", **kw: Any) -> Pod:
    inits = tuple(c for c in containers if c.kind is ContainerKind.INIT)
    regular = tuple(c for c in containers if c.kind is ContainerKind.CONTAINER)
    return Pod(
        "p", uid="uid-p", containers=regular, init_containers=inits, restart_policy=policy, **kw
    )


# -- init containers ------------------------------------------------------------------------


def test_plain_init_containers_run_one_by_one_to_completion_first() -> None:
    """computeInitContainerActions: the next init container starts only when the previous one
    exited 0; regular containers start together once the last one has."""
    h = Harness(
        pod(init("a"), init("b"), app("web"), app("worker")),
        {"a": lambda n: Run(2, 0), "b": lambda n: Run(3, 0)},
    ).run(20)
    assert h.starts() == [(0.0, "a"), (2.0, "b"), (5.0, "web"), (5.0, "worker")]
    assert h.phase == "Running"
    # phase Pending while initializing (getPhase: pendingRegularInitContainers > 0)
    assert {s.phase for s in h.statuses if not s.container_statuses} == {"Pending"}
    status = h.kubelet.status
    assert [s.name for s in status.init_container_statuses] == ["a", "b"]
    assert [s.name for s in status.container_statuses] == ["web", "worker"]
    # UpdatePodStatus (docs/kubelet-behaviour.md §10.5): a plain init container that exited 0 is
    # Ready
    assert all(s.ready and s.terminated is not None for s in status.init_container_statuses)


def test_failed_init_container_restarts_with_back_off_and_blocks_the_pod() -> None:
    """computeInitContainerActions with restartOnFailure: a failed init container is started
    again, through doBackOff; nothing after it starts while it fails."""
    h = Harness(pod(init("setup"), app("web")), {"setup": lambda n: Run(1, 1)}).run(60)
    assert {c for _, c in h.starts()} == {"setup"}
    # exits at 1, 2 (restart at once: first crash), then 10 s and 20 s windows
    assert [t for t, _ in h.starts()][:4] == [0.0, 1.0, 12.0, 33.0]
    assert [e["delay"] for e in h.of("BackOff")][:2] == [10.0, 20.0]
    setup = h.kubelet.status.init_container_statuses[0]
    assert h.phase == "Pending"
    assert h.of("BackOff")[0]["message"].startswith("Back-off restarting failed container setup")
    waiting = [
        s.init_container_statuses[0].state
        for s in h.statuses
        if s.init_container_statuses
        and s.init_container_statuses[0].terminated is None
        and s.init_container_statuses[0].running is None
    ]
    assert waiting and waiting[0].reason == "CrashLoopBackOff"
    assert setup.restart_count >= 3


def test_init_container_that_fails_then_succeeds_lets_the_pod_start() -> None:
    """computeInitContainerActions: after a restart that exits 0 initialization goes on."""
    h = Harness(pod(init("setup"), app("web")), {"setup": lambda n: Run(1, 0 if n else 1)}).run(10)
    assert h.starts() == [(0.0, "setup"), (1.0, "setup"), (2.0, "web")]
    assert h.phase == "Running"


def test_failed_init_container_under_never_fails_the_pod() -> None:
    """computeInitContainerActions: `!restartOnFailure` -> KillPod; getPhase: failed
    initialization under restartPolicy Never is Failed. The regular containers never start."""
    h = Harness(
        pod(sidecar("proxy"), init("setup"), app("web", readiness_probe=EXEC), policy="Never"),
        {"setup": lambda n: Run(1, 3)},
    ).run(30)
    assert [c for _, c in h.starts()] == ["proxy", "setup"]
    assert h.phase == "Failed"
    # SyncTerminatingPod: the sidecar still running is stopped, then every worker goes
    assert h.of("Killing", container="proxy")[0]["message"] == "Stopping container proxy"
    assert h.kubelet.finished
    assert not h.manager.workers


# -- sidecars -------------------------------------------------------------------------------


def test_sidecar_startup_probe_gates_the_next_container() -> None:
    """computeInitContainerActions: a running sidecar with a startup probe lets the next
    container start only once its startup result is Success (init_container_blocks_next)."""
    startup = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=30)
    h = Harness(
        pod(sidecar("proxy", startup_probe=startup), app("web")),
        healthy=lambda c, p, t: t >= 7,
    ).run(20)
    assert h.starts() == [(0.0, "proxy"), (7.0, "web")]
    assert h.of("StartedChanged", container="proxy", started=True)[0]["t"] == 7.0


def test_sidecar_without_startup_probe_gates_on_running_only() -> None:
    """computeInitContainerActions: a sidecar without a startup probe is initialized once it
    runs; its liveness probe does not gate the next container."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=30)
    h = Harness(
        pod(sidecar("proxy", liveness_probe=live), init("migrate"), app("web")),
        {"migrate": lambda n: Run(2, 0)},
        healthy=lambda c, p, t: False,
        start_delay=0.5,
    ).run(10)
    assert h.starts() == [(0.5, "proxy"), (1.0, "migrate"), (3.5, "web")]


def test_sidecar_restarts_after_exit_even_under_never() -> None:
    """computeInitContainerActions: an exited restartable init container is always started
    again, whatever the pod restartPolicy (ContainerShouldRestart: container policy Always)."""
    h = Harness(
        pod(sidecar("proxy"), app("web"), policy="Never"), {"proxy": lambda n: Run(3, 0)}
    ).run(10)
    assert [c for _, c in h.starts()].count("proxy") >= 2
    assert h.phase == "Running"


def test_sidecar_liveness_kill_restarts_under_never_without_suffix() -> None:
    """computeInitContainerActions: "Init container X failed liveness probe", no
    ", will be restarted", and the sidecar is restarted whatever the pod restartPolicy."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=1)
    h = Harness(
        pod(sidecar("proxy", liveness_probe=live), app("web"), policy="Never"),
        healthy=lambda c, p, t: not (c == "proxy" and 3 <= t < 4),
    ).run(10)
    kill = h.of("Killing", container="proxy")[0]
    assert kill == {
        "t": 3.0,
        "type": "Killing",
        "container": "proxy",
        "probe": "liveness",
        "message": "Init container proxy failed liveness probe",
    }
    assert h.of("ContainerStarted", container="proxy", restartCount=1)
    assert h.of("ContainerStarted", container="web", restartCount=0)


# -- regular containers and restart policies -----------------------------------------------


def test_never_exit_ends_the_pod_and_stops_sidecars() -> None:
    """computePodActions: keepCount == 0 and nothing to start -> KillPod, sidecars included;
    getPhase: Never with a failure is Failed. Liveness/startup workers stop first, then all."""
    h = Harness(
        pod(
            sidecar("proxy", readiness_probe=EXEC), app("web", liveness_probe=EXEC), policy="Never"
        ),
        {"web": lambda n: Run(5, 2)},
    ).run(30)
    assert h.of("ContainerExited", container="web") == [
        {"t": 5.0, "type": "ContainerExited", "container": "web", "exitCode": 2, "reason": "Error"}
    ]
    assert [c for _, c in h.starts()].count("web") == 1
    assert h.of("Killing", container="proxy")[0]["t"] == 5.0
    assert h.phase == "Failed"
    assert h.kubelet.finished and not h.manager.workers


def test_on_failure_restarts_failures_only() -> None:
    """ContainerShouldRestart: OnFailure restarts a non-zero exit; a zero exit ends the pod
    as Succeeded (getPhase: all stopped and succeeded)."""
    h = Harness(
        pod(app("web"), policy="OnFailure"), {"web": lambda n: Run(2, 1 if n == 0 else 0)}
    ).run(30)
    assert h.starts() == [(0.0, "web"), (2.0, "web")]
    assert h.phase == "Succeeded"
    assert h.kubelet.finished


def test_always_restarts_a_zero_exit() -> None:
    """ContainerShouldRestart: Always restarts even exit 0; the phase stays Running."""
    h = Harness(pod(app("web")), {"web": lambda n: Run(30, 0)}).run(100)
    assert len(h.starts()) >= 3
    assert h.phase == "Running"


def test_liveness_kill_restart_then_back_off_from_the_exit_before() -> None:
    """computePodActions + doBackOff: a liveness kill restarts in the same sync, measured from
    the exit before the killed one; only the third kill meets an open window (backoff.py)."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=1)
    h = Harness(
        pod(app("web", liveness_probe=live)),
        healthy=lambda c, p, t: False,
    ).run(12)
    kills = h.of("Killing")
    assert kills[0]["message"] == "Container web failed liveness probe, will be restarted"
    assert h.of("ContainerExited")[0]["exitCode"] == 143
    backoff = h.of("BackOff")
    assert backoff and backoff[0]["t"] == kills[2]["t"]
    assert [e["restartCount"] for e in h.of("ContainerStarted")][:3] == [0, 1, 2]


def test_kill_grace_period_then_sigkill() -> None:
    """killContainer: a process that ignores SIGTERM dies at the grace period (137); the
    probe's terminationGracePeriodSeconds wins over the pod's (setTerminationGracePeriod).
    The second container keeps the pod (keepCount > 0), so this is a container kill, not
    KillPod, under Never too."""
    live = Probe(
        exec=ExecAction(("check",)),
        period_seconds=1,
        failure_threshold=1,
        termination_grace_period_seconds=4,
    )
    h = Harness(
        pod(app("web", liveness_probe=live), app("keeper"), policy="Never"),
        {"web": lambda n: Run(stop_after=100)},
        healthy=lambda c, p, t: t < 2,
    ).run(20)
    assert h.kills == [("web", 4.0)]
    assert h.of("Killing")[0]["message"] == "Container web failed liveness probe"
    exited = h.of("ContainerExited")[0]
    assert (exited["t"], exited["exitCode"]) == (6.0, 137)
    assert [c for _, c in h.starts()].count("web") == 1
    assert h.phase == "Running"


def test_start_error_is_exit_128_and_crash_loops() -> None:
    """A command that cannot start: the runtime records exit 128 StartError; the kubelet
    records a Failed event "Error: ..." and restarts per policy through doBackOff."""
    h = Harness(pod(app("web")), {"web": lambda n: Run(start_error='exec: "nope": not found')}).run(
        40
    )
    exited = h.of("ContainerExited")[0]
    assert exited["exitCode"] == 128 and exited["reason"] == "StartError"
    assert h.of("Failed")[0]["message"] == 'Error: exec: "nope": not found'
    assert h.of("BackOff")
    term = h.kubelet.status.container_statuses[0]
    assert term.started is False and term.ready is False
    assert not h.of("ContainerStarted")


def test_lifecycle_events_created_and_started() -> None:
    """startContainer records Created ("Created container: X") then Started (before 1.35)."""
    h = Harness(pod(app("web")), profile=profile_for("1.34")).run(1)
    assert [(e["type"], e["message"]) for e in h.events[:2]] == [
        ("Created", "Created container: web"),
        ("Started", "Started container web"),
    ]


def test_terminate_stops_running_containers_and_cancels_back_off() -> None:
    """Teardown (SyncTerminatingPod): "Stopping container X" with the pod's grace period, no
    restart afterwards, a pending back-off retry dropped; then RemovePod."""
    h = Harness(
        pod(app("web", readiness_probe=EXEC), app("crash")),
        {"crash": lambda n: Run(1, 1)},
        backoff=bo.Backoff(10.0, 300.0, expire_after=600.0),
    ).run(5)
    assert h.of("BackOff", container="crash")
    h.kubelet.terminate()
    h.clock.run_until(100)
    assert h.of("Killing", container="web")[0]["message"] == "Stopping container web"
    assert h.kills[-1] == ("web", 30.0)
    assert [c for t, c in h.starts() if t > 5] == []
    assert h.kubelet.finished and not h.manager.workers


def test_results_of_the_pod_drive_status_generation() -> None:
    """UpdatePodStatus on every result change: readiness flips Ready; the manual trigger runs
    readiness again at once while the container is not Ready."""
    h = Harness(
        pod(app("web", readiness_probe=EXEC)),
        healthy=lambda c, p, t: not (4 <= t < 6),
    ).run(10)
    ready = [(e["t"], e["ready"]) for e in h.of("ReadyChanged")]
    assert ready == [(0.0, True), (4.0, False), (6.0, True)]
    assert h.manager.workers[ProbeKey("uid-p", "web", ProbeType.READINESS)]


def test_pod_of_init_containers_only_succeeds_after_them() -> None:
    """getPhase: initialized, no regular container left to run (`-c` picked init containers
    only) -> Succeeded, and the pod is torn down."""
    h = Harness(pod(init("a")), {"a": lambda n: Run(1, 0)}).run(5)
    assert h.phase == "Succeeded" and h.kubelet.finished


def test_simulate_orders_init_containers_and_sidecars() -> None:
    """`probetui simulate` shares the start order: init containers one by one, each start
    taking start_after, the scenario's container after them."""
    from probetui.simulate import parse_scenario, simulate

    spec = {
        "initContainers": [
            {"name": "setup", "image": "x"},
            {"name": "proxy", "image": "x", "restartPolicy": "Always"},
        ],
        "containers": [{"name": "app", "image": "x", "livenessProbe": {"tcpSocket": {"port": 80}}}],
    }
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    r = simulate(parse_scenario({"pod": doc, "container": "app", "duration": 10}))
    starts = [(e["t"], e["container"]) for e in r["events"] if e["type"] == "ContainerStarted"]
    assert starts == [(1.0, "setup"), (2.0, "proxy"), (3.0, "app")]
    exited = [e for e in r["events"] if e["type"] == "ContainerExited"]
    assert [(e["container"], e["exitCode"]) for e in exited] == [("setup", 0)]


# -- corrections against upstream ----------------------------------------------------------


def test_liveness_success_does_not_sync_pod_kubelet_go_syncLoopIteration() -> None:
    """kubelet.go syncLoopIteration: a liveness update is handled only when it is Failure.

    The liveness worker publishes its initial Success when it first sees the container (its
    tick at 3). That must not sync the pod: no status generation, so no readiness manual
    trigger and no reset of the readiness ticker. Readiness runs at the start (the start's
    status generation, then once more for its own initial Failure update), then on its grid
    from there: 10.5, where it passes and the container turns Ready.
    """
    readiness = Probe(exec=ExecAction(("ready",)), period_seconds=10, failure_threshold=1)
    liveness = Probe(exec=ExecAction(("alive",)), period_seconds=3, failure_threshold=3)
    attempts: list[tuple[ProbeType, float]] = []

    def healthy(c: str, p: ProbeType, t: float) -> bool:
        attempts.append((p, t))
        return t >= 5 if p is ProbeType.READINESS else True

    h = Harness(
        pod(app("web", readiness_probe=readiness, liveness_probe=liveness)),
        healthy=healthy,
        start_delay=0.5,
    ).run(25)
    assert [t for p, t in attempts if p is ProbeType.LIVENESS][:2] == [3.0, 6.0]
    assert [t for p, t in attempts if p is ProbeType.READINESS] == [0.5, 0.5, 10.5, 20.5]
    assert [(e["t"], e["ready"]) for e in h.of("ReadyChanged")] == [(10.5, True)]


def test_liveness_failure_still_syncs_pod_kubelet_go_syncLoopIteration() -> None:
    """kubelet.go syncLoopIteration: a liveness Failure does sync the pod (handleProbeSync):
    the kill follows at once, and the status generation of that sync triggers readiness."""
    readiness = Probe(exec=ExecAction(("ready",)), period_seconds=10, failure_threshold=1)
    liveness = Probe(exec=ExecAction(("alive",)), period_seconds=3, failure_threshold=1)
    manual: list[float] = []

    def healthy(c: str, p: ProbeType, t: float) -> bool:
        if p is ProbeType.READINESS:
            manual.append(t)
            return False
        return t < 5

    h = Harness(
        pod(app("web", readiness_probe=readiness, liveness_probe=liveness)),
        {"web": lambda n: Run(stop_after=1)},
        healthy=healthy,
    ).run(7)
    assert [e["t"] for e in h.of("Killing")] == [6.0]
    assert 6.0 in manual  # the liveness Failure's sync sent the readiness manual trigger


@pytest.mark.parametrize("probe_type", [ProbeType.LIVENESS, ProbeType.STARTUP])
def test_probe_failure_with_nothing_left_kills_pod_kuberuntime_manager_go_computePodActions(
    probe_type: ProbeType,
) -> None:
    """kuberuntime_manager.go computePodActions: under restartPolicy Never the failed probe's
    container is not restarted, no regular container is kept (keepCount == 0) and none is
    to start, so KillPod is set. SyncPod's killPodWithSyncResult stops every running
    container, the sidecar included, through killContainer with no message and reason
    Unknown: the event reads "Stopping container X" (kuberuntime_container.go killContainer)
    and setTerminationGracePeriod gives the pod's 30 s, not the probe's 4 s. The sidecar's
    event comes at once, its SIGTERM only after web has exited (waitForTurn), with the 2 s
    minimum once the wait has used up the 30 s. Nothing starts again; the pod fails
    (getPhase: Never, a non-zero exit)."""
    failing = Probe(
        exec=ExecAction(("check",)),
        period_seconds=1,
        failure_threshold=2,
        termination_grace_period_seconds=4,
    )
    probes: dict[str, Any] = {f"{probe_type.key}_probe": failing}
    h = Harness(
        pod(sidecar("proxy"), app("web", **probes), policy="Never"),
        {"web": lambda n: Run(stop_after=100)},
        healthy=lambda c, p, t: p is not probe_type,  # fails at 1 and 2: Failure at 2
    ).run(60)
    kills = h.of("Killing")
    assert [(e["t"], e["container"], e["message"]) for e in kills] == [
        (2.0, "web", "Stopping container web"),
        (2.0, "proxy", "Stopping container proxy"),
    ]
    assert kills[0]["probe"] == probe_type.key  # probetui's note of the cause
    assert h.kills == [("web", 30.0), ("proxy", 2.0)]
    web_exit = h.of("ContainerExited", container="web")
    assert [(e["t"], e["exitCode"]) for e in web_exit] == [(32.0, 137)]
    proxy_exit = h.of("ContainerExited", container="proxy")
    assert [e["t"] for e in proxy_exit] == [32.0]
    # the sidecar was not restarted (InitContainersToStart = nil)
    assert [c for _, c in h.starts()] == ["proxy", "web"]
    assert h.phase == "Failed"
    assert h.kubelet.finished and not h.manager.workers


def test_pod_kill_takes_deletion_grace_period_kuberuntime_setTerminationGracePeriod() -> None:
    """setTerminationGracePeriod: a pod deletionGracePeriodSeconds wins over the pod's
    terminationGracePeriodSeconds for the KillPod of computePodActions too."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=1)
    h = Harness(
        pod(app("web", liveness_probe=live), policy="Never", deletion_grace_period_seconds=7),
        {"web": lambda n: Run(stop_after=100)},
        healthy=lambda c, p, t: t < 2,
    ).run(30)
    assert h.kills == [("web", 7.0)]


def test_on_failure_exit_0_after_kill_is_not_restarted_ShouldContainerBeRestarted() -> None:
    """computePodActions queues a liveness-killed container to start again ("will be
    restarted": OnFailure is not Never), but the start meets an open back-off window
    (doBackOff). The next sync (the exit's PLEG event) asks ShouldContainerBeRestarted with
    the exit code the kill left, 0 here, and under OnFailure that means no restart: the
    container stays Terminated and the pod is Succeeded (getPhase). Before the fix the retry
    after the window restarted it, again and again."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=1)
    h = Harness(
        pod(app("web", liveness_probe=live), policy="OnFailure"),
        {"web": lambda n: Run(term_exit=0)},
        healthy=lambda c, p, t: False,
    ).run(120)
    kills = h.of("Killing")
    assert kills[0]["message"] == "Container web failed liveness probe, will be restarted"
    # kill 1 restarts at once (no exited instance yet), kill 2 after the exit before it (no
    # window yet), kill 3 meets the 10 s window opened by the second start
    assert h.starts() == [(0.0, "web"), (1.0, "web"), (2.0, "web")]
    assert [e["t"] for e in h.of("BackOff")] == [3.0]
    assert [e["exitCode"] for e in h.of("ContainerExited")] == [0, 0, 0]
    web = h.kubelet.status.container_statuses[0]
    assert web.terminated is not None and web.terminated.exit_code == 0
    assert web.last_state is not None and web.last_state.exit_code == 0
    assert h.phase == "Succeeded"
    assert h.kubelet.finished and not h.manager.workers


def test_on_failure_error_exit_after_probe_kill_waits_out_back_off_kuberuntime_doBackOff() -> None:
    """The same sync after a non-zero exit (143) does restart, after the window measured
    from that exit (doBackOff finds it as the newest exited instance): 3 + 10 s."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=1)
    h = Harness(
        pod(app("web", liveness_probe=live), policy="OnFailure"),
        healthy=lambda c, p, t: False,
    ).run(13.5)
    assert [t for t, _ in h.starts()] == [0.0, 1.0, 2.0, 13.0]
    # the kill's own sync and the exit's sync each meet the window
    assert [(e["t"], e["delay"]) for e in h.of("BackOff")] == [(3.0, 10.0), (3.0, 10.0)]
    assert h.phase == "Running"


def test_initial_delay_counts_from_whole_second_start_status_manager_go_normalizeStatus() -> None:
    """status_manager.go normalizeStatus truncates StartedAt to the second (Rfc3339Copy)
    before the status is cached, and the worker measures initialDelaySeconds from that copy
    (worker.go doProbe). A container that started at 0.9 has StartedAt 0, so a 3 s delay
    passes at the tick at 3, 2.1 s after it really started (§5.9)."""
    live = Probe(
        exec=ExecAction(("check",)), period_seconds=1, failure_threshold=3, initial_delay_seconds=3
    )
    attempts: list[float] = []

    def healthy(c: str, p: ProbeType, t: float) -> bool:
        attempts.append(t)
        return True

    h = Harness(pod(app("web", liveness_probe=live)), healthy=healthy, start_delay=0.9).run(5)
    assert attempts == [3.0, 4.0, 5.0]
    running = h.kubelet.status.container_statuses[0].running
    assert running is not None and running.started_at == 0.0
    assert h.starts() == [(0.9, "web")]  # the event keeps the exact time


def test_exit_times_in_status_are_whole_seconds_status_manager_go_normalizeStatus() -> None:
    """normalizeStatus truncates Terminated StartedAt and FinishedAt too; the back-off still
    measures from the runtime's exact FinishedAt (doBackOff reads the runtime's status)."""
    h = Harness(
        pod(app("web"), policy="Never"), {"web": lambda n: Run(2.3, 1)}, start_delay=0.6
    ).run(10)
    term = h.kubelet.status.container_statuses[0].terminated
    assert term is not None
    assert (term.started_at, term.finished_at) == (0.0, 2.0)
    assert h.kubelet.instances["web"].last_finished == pytest.approx(2.9)


# -- what the kubelet reads from its prober -------------------------------------------------


def test_pod_kubelet_reacts_only_to_its_own_pods_results_kubelet_go_syncLoopIteration() -> None:
    """syncLoopIteration reads the results managers' update channels and syncs the pod the
    update names: a liveness Failure published for another pod's container kills nothing here,
    the same update for this pod's container kills it (after the publishing doProbe, in the
    kubelet's own loop iteration)."""
    live = Probe(exec=ExecAction(("check",)), period_seconds=100, failure_threshold=1)
    h = Harness(pod(app("web", liveness_probe=live))).run(1)
    cid = h.kubelet.instances["web"].status.container_id  # type: ignore[union-attr]
    # an update names its pod: a container ID alone is not read as this pod's
    h.manager.liveness.set(cid + "-elsewhere", ResultValue.FAILURE, "uid-other")
    h.manager.liveness.set(cid, ResultValue.FAILURE, "uid-other")
    h.run(2)
    assert h.of("Killing") == []
    h.manager.liveness.set(cid, ResultValue.SUCCESS, "uid-p")
    h.manager.liveness.set(cid, ResultValue.FAILURE, "uid-p")
    assert h.of("Killing") == []  # not inside the publisher's call
    h.run(3)
    assert [e["message"] for e in h.of("Killing")] == [
        "Container web failed liveness probe, will be restarted"
    ]


def test_pod_kubelet_records_the_probers_events_prober_go_recordContainerEvent() -> None:
    """prober.go recordContainerEvent: each failed attempt is one Unhealthy event with the
    probe's failure text, at the time the attempt ended; successes record nothing."""
    ready = Probe(exec=ExecAction(("check",)), period_seconds=1, failure_threshold=3)
    h = Harness(pod(app("web", readiness_probe=ready)), healthy=lambda c, p, t: not 2 <= t < 4).run(
        5.5
    )
    unhealthy = h.of("Unhealthy")
    assert [(e["t"], e["probe"], e["eventType"]) for e in unhealthy] == [
        (2.0, "readiness", "Warning"),
        (3.0, "readiness", "Warning"),
    ]
    assert unhealthy[0]["message"].startswith("Readiness probe failed")


# -- termination ordering of a whole-pod kill (kuberuntime_termination_order.go) -------------


def _ordered(h: Harness, since: float) -> dict[str, tuple[float, float]]:
    """Per container: how long after `since` its SIGTERM came (waitForTurn's delay) and the
    grace period it was given."""
    return {name: (round(t - since, 6), grace) for t, name, grace in h.sigterms if t >= since}


def test_sidecar_stops_after_main_TestTerminationOrderingSidecarStopAfterMain() -> None:
    """kuberuntime_termination_order_test.go TestTerminationOrderingSidecarStopAfterMain: in
    a whole-pod kill (`killContainersWithSyncResult`) the sidecar's turn comes when the main
    container has exited, 1 s later; the main container does not wait. Its Killing event is
    recorded at once (killContainer records it before waitForTurn), and the second it waited is
    taken off its 30 s."""
    h = Harness(
        pod(sidecar("init"), app("main")),
        {"main": lambda n: Run(stop_after=1.0), "init": lambda n: Run(stop_after=0.5)},
    ).run(5)
    h.kubelet.terminate()
    h.clock.run_until(60)
    assert [(e["t"], e["container"]) for e in h.of("Killing")] == [(5.0, "init"), (5.0, "main")]
    assert _ordered(h, 5.0) == {"main": (0.0, 30.0), "init": (1.0, 29.0)}
    assert [(e["t"], e["container"]) for e in h.of("ContainerExited")] == [
        (6.0, "main"),
        (6.5, "init"),
    ]
    assert h.kubelet.finished


def test_sidecars_stop_in_reverse_order_TestTerminationOrderingSidecarsInReverseOrder() -> None:
    """kuberuntime_termination_order_test.go TestTerminationOrderingSidecarsInReverseOrder:
    three sidecars and a main container, each taking 1.25 s to exit. Sidecars stop in reverse
    order: sc3 after main (delay 1), sc2 after sc3 (2), sc1 after sc2 (3), main at once (0);
    whole seconds of each delay are taken off the grace period (`killContainer`)."""
    slow = lambda n: Run(stop_after=1.25)  # noqa: E731
    h = Harness(
        pod(sidecar("sc1"), sidecar("sc2"), sidecar("sc3"), app("main")),
        {"sc1": slow, "sc2": slow, "sc3": slow, "main": slow},
    ).run(5)
    h.kubelet.terminate()
    h.clock.run_until(60)
    delays = {name: int(delay) for name, (delay, _) in _ordered(h, 5.0).items()}
    assert delays == {"sc1": 3, "sc2": 2, "sc3": 1, "main": 0}
    assert _ordered(h, 5.0) == {
        "main": (0.0, 30.0),
        "sc3": (1.25, 29.0),
        "sc2": (2.5, 28.0),
        "sc1": (3.75, 27.0),
    }


def test_sidecar_wait_is_bounded_by_grace_TestTerminationOrderingObeysGrace() -> None:
    """kuberuntime_termination_order_test.go TestTerminationOrderingObeysGrace: with a 2 s
    grace period, too short for every wait, sc3 waits 1 s for main, sc2 and sc1 wait the
    whole 2 s (waitForTurn's timer). What is left of the grace is below 2 s, so each gets the
    2 s minimum (`minimumGracePeriodInSeconds`)."""
    slow = lambda n: Run(stop_after=1.0)  # noqa: E731
    h = Harness(
        pod(
            sidecar("sc1"),
            sidecar("sc2"),
            sidecar("sc3"),
            app("main"),
            termination_grace_period_seconds=2,
        ),
        {"sc1": slow, "sc2": slow, "sc3": slow, "main": slow},
    ).run(5)
    h.kubelet.terminate()
    h.clock.run_until(60)
    assert _ordered(h, 5.0) == {
        "main": (0.0, 2.0),
        "sc3": (1.0, 2.0),
        "sc2": (2.0, 2.0),
        "sc1": (2.0, 2.0),
    }


def test_no_wait_without_grace_killContainer_waitForTurn() -> None:
    """killContainer asks waitForTurn only with a grace period above 0 ("If gracePeriod = 0,
    there is no wait"): a deletionGracePeriodSeconds of 0 stops every container at once, each
    with the 2 s minimum."""
    h = Harness(
        pod(sidecar("proxy"), app("main"), deletion_grace_period_seconds=0),
        {"main": lambda n: Run(stop_after=1.0)},
    ).run(5)
    h.kubelet.terminate()
    h.clock.run_until(60)
    assert _ordered(h, 5.0) == {"proxy": (0.0, 2.0), "main": (0.0, 2.0)}


def test_sidecars_after_main_exit_stop_in_reverse_newTerminationOrdering() -> None:
    """computePodActions' KillPod after the only regular container exited under Never:
    newTerminationOrdering pre-closes the channel of a container that is not running, so the
    sidecars wait only for each other, the later one first."""
    h = Harness(
        pod(sidecar("log"), sidecar("mesh"), app("job"), policy="Never"),
        {
            "job": lambda n: Run(run_for=3, exit_code=0),
            "log": lambda n: Run(stop_after=0.5),
            "mesh": lambda n: Run(stop_after=2.0),
        },
    ).run(60)
    assert _ordered(h, 0.0) == {"mesh": (3.0, 30.0), "log": (5.0, 28.0)}
    assert h.phase == "Succeeded"
    assert h.kubelet.finished


def test_sidecar_that_exits_while_it_waits_frees_the_one_before() -> None:
    """containerTerminated closes a sidecar's channel however it exited: one that dies while it
    waits for its turn is not stopped again, and the sidecar before it takes its turn."""
    h = Harness(
        pod(sidecar("sc1"), sidecar("sc2"), app("main")),
        {
            "main": lambda n: Run(stop_after=10.0),
            "sc2": lambda n: Run(run_for=8.0) if n == 0 else Run(),
        },
    ).run(5)
    h.kubelet.terminate()
    h.clock.run_until(60)
    # sc2 exits by itself at 8 (run_for from its start at 0), sc1 still waits for main (15)
    assert _ordered(h, 5.0) == {"main": (0.0, 30.0), "sc1": (10.0, 20.0)}
    assert [c for t, c in h.starts() if t > 5] == []


def test_termination_prereqs_newTerminationOrdering() -> None:
    """newTerminationOrdering: every sidecar waits for all running main containers and for
    the nearest sidecar after it; plain init containers and main containers wait for nobody;
    a container that is not running is nobody's prerequisite."""
    p = pod(sidecar("a"), init("setup"), sidecar("b"), sidecar("c"), app("m1"), app("m2"))
    everyone = frozenset({"a", "b", "c", "m1", "m2"})
    assert kr.termination_prereqs(p, everyone) == {
        "c": ("m1", "m2"),
        "b": ("m1", "m2", "c"),
        "a": ("m1", "m2", "b"),
    }
    assert kr.termination_prereqs(p, frozenset({"a", "c", "m2"})) == {
        "c": ("m2",),
        "b": ("m2", "c"),
        "a": ("m2",),
    }


@pytest.mark.parametrize(
    ("grace", "waited", "left"),
    [(30, 1.25, 29.0), (30, 3.75, 27.0), (2, 1.0, 2.0), (2, 5.0, 2.0), (30, 30.0, 2.0)],
)
def test_grace_after_turn_killContainer(grace: int, waited: float, left: float) -> None:
    """killContainer: `gracePeriod -= int64(ordering.waitForTurn(...))`, then the 2 s floor."""
    assert kr.grace_after_turn(grace, waited) == left


# -- RestartAllContainers (RestartAllContainersOnContainerExits) ------------------------------


def test_restart_all_containers_restarts_the_pod_in_place_computePodActions() -> None:
    """kuberuntime_manager.go computePodActions / SyncPod with restartAllContainers (1.36 on):
    an exit matching a RestartAllContainers rule puts every container in ContainersToReset,
    the regular ones first; the running ones are killed one after another ("killing", grace 0
    raised to the 2 s minimum, no termination order) and removed, and the pod starts over
    from its first init container without back-off. 1.35 (gate off) falls back to the
    container's restartPolicy Never: only the pod's other containers go on."""
    rule = (RestartRule("RestartAllContainers", "In", (42,)),)
    spec = pod(
        init("setup"),
        sidecar("proxy"),
        app("web"),
        app("trigger", restart_policy="Never", restart_policy_rules=rule),
    )
    scripts = {
        "trigger": lambda n: Run(run_for=5, exit_code=42) if n == 0 else Run(),
        "web": lambda n: Run(stop_after=1.0),
        "proxy": lambda n: Run(stop_after=0.5),
        "setup": lambda n: Run(run_for=0.0),
    }
    h = Harness(spec, scripts, profile=profile_for("1.36")).run(30)
    kills = [(e["t"], e["container"], e["message"]) for e in h.of("Killing")]
    assert kills == [(5.0, "web", "killing"), (6.0, "proxy", "killing")]
    assert h.sigterms == [(5.0, "web", 2.0), (6.0, "proxy", 2.0)]
    restarted = [(t, c) for t, c in h.starts() if t > 5]
    assert restarted == [(6.5, "setup"), (6.5, "proxy"), (6.5, "web"), (6.5, "trigger")]
    assert h.phase == "Running"
    assert not h.of("BackOff")

    h = Harness(spec, scripts, profile=profile_for("1.35")).run(30)
    assert h.of("Killing") == []
    assert [(t, c) for t, c in h.starts() if t > 5] == []
    assert h.kubelet.status.container_statuses[1].terminated is not None
