"""PodKubelet's deletion (`SyncTerminatingPod`) and a kubelet restart (a new process and probe
manager adopting the running containers), on the scripted backend of test_pod.py.
"""

from __future__ import annotations

import random

from probetui.prober.manager import Manager
from probetui.spec.model import ExecAction, Probe, ProbeType
from tests.kubelet.test_pod import Harness, Run, app, pod

EXEC = ExecAction(("check",))


def _probed() -> Harness:
    container = app(
        readiness_probe=Probe(exec=EXEC, period_seconds=1),
        liveness_probe=Probe(exec=EXEC, period_seconds=1),
    )
    return Harness(pod(container, termination_grace_period_seconds=30), start_delay=1.0)


def test_delete_stops_liveness_keeps_readiness_until_nothing_runs_sync_terminating_pod() -> None:
    """SyncTerminatingPod: StopLivenessAndStartup, killPod with the deletion grace period
    (calculateEffectiveGracePeriod: at least 1 s), readiness on until RemovePod; terminal
    phase from the exit codes (getPhase, podIsTerminal)."""
    h = _probed().run(5)
    h._stop_after = dict.fromkeys(h._stop_after, 3.0)
    h.kubelet.delete(0)
    assert h.kubelet.pod.deletion_grace_period_seconds == 1
    assert h.kills == [("app", 2.0)]  # killContainer's floor over the effective 1 s
    h.clock.run_until(5.5)
    assert {k.probe_type for k in h.manager.workers} == {ProbeType.READINESS}
    h.clock.run_until(10)
    assert h.manager.workers == {}
    assert h.phase == "Failed"  # SIGKILL: 137
    assert [e["message"] for e in h.of("Killing")] == ["Stopping container app"]


def test_delete_after_the_pod_is_gone_does_nothing() -> None:
    h = Harness(pod(app(), policy="Never"), {"app": lambda n: Run(2, 0)}).run(5)
    assert h.kubelet.finished
    h.kubelet.delete(30)
    assert h.kills == []


def test_kubelet_restarted_swaps_the_manager_and_forgets_back_off_kubelet_new_main_kubelet() -> (
    None
):
    """A new process: the old workers are gone without a record, the new manager's workers
    start within a period (worker.run's offset, drawn from the given rng), and a container
    waiting in CrashLoopBackOff starts at once (klet.backOff is in memory)."""
    h = Harness(
        pod(app(readiness_probe=Probe(exec=EXEC, period_seconds=10))),
        {"app": lambda n: Run(2, 1) if n < 2 else Run()},
    ).run(13)
    # exits at 2 and 4 (restarted at once), 4 opened a 10 s window: waiting until 14
    assert [t for t, _ in h.starts()] == [0.0, 2.0]
    old = h.manager
    new = Manager(
        h.clock, h._status_of, launch=h._launch, start=h.clock.now(), rng=random.Random(3)
    )
    h.kubelet.kubelet_restarted(new)
    assert old.workers == {}
    assert h.kubelet.manager is new and len(new.workers) == 1
    h.manager = new
    h.clock.run_until(13)
    assert [t for t, _ in h.starts()][-1] == 13.0
    h.clock.run_until(30)
    ready = [e["t"] for e in h.of("ReadyChanged", ready=True)]
    assert ready[-1] == round(13.0 + random.Random(3).random() * 10, 6)
