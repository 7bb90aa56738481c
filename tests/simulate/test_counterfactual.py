"""`simulate --recording`: the recorded answers drive the kubelet model, first as recorded (the
self-check), then with other settings. The recordings here are made by the model itself on a
scripted app (so the self-check must match exactly) or edited by hand to break it; the cases
are worked out by hand in each docstring."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from probetui.prober.status import PodStatus
from probetui.simulate.counterfactual import RunSummary, counterfactual, self_check
from probetui.simulate.recorded import recorded_pod
from probetui.simulate.report import render_counterfactual
from probetui.simulate.run import SimKubelet
from probetui.simulate.scenario import App, Behaviour, Scenario
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType
from probetui.timeline.events import Event


def recording(probe: Probe, app: App, duration: float = 400.0) -> tuple[Pod, list[Event]]:
    pod = Pod(
        "web", uid="u1", containers=(Container(name="app", command=("x",), liveness_probe=probe),)
    )
    sim = SimKubelet(Scenario(pod=pod, container="app", duration=duration, app=app))
    sim.run()
    return pod, sim.events


LIVE = Probe(exec=ExecAction(("alive",)), period_seconds=10, failure_threshold=3)
# the app fails its liveness checks for 35 s: the attempts at 100, 110, 120 and 130 fail
FLAP = App(start_after=1.0, probes={ProbeType.LIVENESS: Behaviour(fail_between=((100.0, 135.0),))})


def test_what_if_removes_the_restart_and_says_which_answers_it_inferred() -> None:
    """Recorded (failureThreshold 3): three failures (100, 110, 120) kill the container at 120;
    it starts again at 121 and its first check at 130 fails too (the app is still failing),
    the one at 140 succeeds. With failureThreshold 5 the four failures never reach five: no
    kill, no restart, and Ready is never lost (the recorded second not ready, 120-121, goes).
    The what-if's container runs on through 121-140, where the recorded one was starting
    afresh: its check at 130 has no steady answer within half a period (the nearest are 120
    and 140), so it is inferred, and it is the only one of its 40 answers (10 s to 400 s)."""
    pod, events = recording(LIVE, FLAP)
    cf = counterfactual(
        recorded_pod(pod, events, 0.0, 400.0), "app", ["liveness.failureThreshold=5"]
    )
    assert cf.check.passed and cf.check.kills == (1, 1, 1) and cf.check.restarts == (1, 1, 1)
    assert cf.check.worst_offset == 0.0
    assert (cf.recorded.kills["liveness"], cf.recorded.restarts) == (1, 1)
    assert (cf.baseline.kills["liveness"], cf.baseline.restarts) == (1, 1)
    assert cf.baseline.inferred == 0
    assert cf.what_if is not None
    assert (cf.what_if.kills["liveness"], cf.what_if.restarts) == (0, 0)
    assert cf.recorded.not_ready_seconds == 1.0 and cf.what_if.not_ready_seconds == 0.0
    assert (cf.what_if.inferred, cf.what_if.answered) == (1, 40)
    text = "\n".join(render_counterfactual(cf))
    assert "2.5% of the what-if's answers inferred (1 of 40)" in text
    assert "kills 1/1 matched, restarts 1/1" in text


def test_a_lower_threshold_kills_earlier_from_recorded_answers_only() -> None:
    """failureThreshold 2: the failures at 100 and 110 kill at 110, ten seconds before the
    kubelet did; the restarted container (111) meets the still-failing app at 120 and 130
    (start-up answers of the recorded second instance, by time since its start: 121+9, +19),
    which kills it again at 130, then runs steadily."""
    pod, events = recording(LIVE, FLAP)
    cf = counterfactual(
        recorded_pod(pod, events, 0.0, 400.0), "app", ["liveness.failureThreshold=2"]
    )
    assert cf.what_if is not None
    assert cf.what_if.kill_times == [110.0, 130.0]
    assert cf.what_if.restarts == 2


def test_self_check_refuses_a_what_if_where_the_model_does_not_reproduce_the_recording() -> None:
    """A recording whose attempts at 100-130 timed out, but in which the kubelet killed
    nothing (edited by hand: the kill is missing). With the recorded settings the model kills
    at 120 where the kubelet did not, so the model does not fit this history: no what-if, and
    the reason is printed."""
    pod, events = recording(LIVE, App(start_after=1.0))
    edited = [
        replace(e, fields=dict(e.fields, outcome="failure", timedOut=True, latency_ms=1000.0))
        if e.type == "ProbeAttempt" and 100 <= e.t < 135
        else e
        for e in events
    ]
    cf = counterfactual(recorded_pod(pod, edited, 0.0, 400.0), "app", ["liveness.timeoutSeconds=2"])
    assert not cf.check.passed and cf.what_if is None
    assert cf.check.kills == (0, 0, 1)
    assert cf.check.why == "the model kills 1 times where the kubelet killed 0 (0 match)"
    assert "no what-if is given where the model does not fit" in "\n".join(
        render_counterfactual(cf)
    )


def test_longer_timeout_answers_are_inferred_and_still_time_out() -> None:
    """The recorded failures at 100-130 were timeouts (1 s, timeoutSeconds 1), and they killed
    the container at 120. With timeoutSeconds 2 how long the app would have taken is unknown:
    those answers are inferred and still time out, now after 2 s each, so the third one ends,
    and the kill comes, at 122."""
    pod, events = recording(LIVE, FLAP)
    events = [
        replace(e, fields=dict(e.fields, timedOut=True, latency_ms=1000.0))
        if e.type == "ProbeAttempt" and e.fields.get("outcome") == "failure"
        else e
        for e in events
    ]
    cf = counterfactual(recorded_pod(pod, events, 0.0, 400.0), "app", ["liveness.timeoutSeconds=2"])
    assert cf.check.passed and cf.what_if is not None
    assert cf.what_if.kill_times == [122.0]
    assert cf.what_if.inferred >= 3


def _runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The model runs each counterfactual makes from here on (each what-if's pod settings): a
    model run is a `SimKubelet` run."""
    from probetui.simulate import SimKubelet

    made: list[str] = []
    run = SimKubelet.run

    def counted(sim: SimKubelet) -> None:
        made.append(str(sim.pod.container("app").probe(ProbeType.LIVENESS)))
        run(sim)

    monkeypatch.setattr(SimKubelet, "run", counted)
    return made


def test_a_timeout_every_asked_answer_beat_gives_the_run_with_the_recorded_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every answer the model with the recorded settings asked for took 0.4 s: under
    timeoutSeconds 1 or 2 each becomes the same attempt, so the what-if is that run again,
    attempt for attempt, and is not made a second time. It says what the full run says (the
    kill at 120.4, when the third failure answered, and its restart stay, the counts of answers and inferred ones too); another
    change with it (failureThreshold 5) makes the run."""
    from probetui.simulate.recorded import AnswerBook

    slow = App(
        start_after=1.0,
        probes={ProbeType.LIVENESS: Behaviour(fail_between=((100.0, 135.0),), latency_ms=400.0)},
    )
    pod, events = recording(LIVE, slow)
    rec = recorded_pod(pod, events, 0.0, 400.0)
    runs = _runs(monkeypatch)
    short = counterfactual(rec, "app", ["liveness.timeoutSeconds=2"])
    assert len(runs) == 1
    assert short.what_if is not None and short.what_if.kill_times == [120.4]
    # no answer taken to read the same under the new timeout: the what-if is run
    monkeypatch.setattr(AnswerBook, "same_under", lambda *_: False)
    full = counterfactual(rec, "app", ["liveness.timeoutSeconds=2"])
    assert len(runs) == 3
    assert short.to_json() == full.to_json()
    monkeypatch.undo()
    runs = _runs(monkeypatch)
    both = counterfactual(rec, "app", ["liveness.timeoutSeconds=2", "liveness.failureThreshold=5"])
    assert len(runs) == 2 and both.what_if is not None and both.what_if.kills["liveness"] == 0


def test_an_answer_slower_than_the_new_timeout_makes_the_what_if_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Answers of 1.5 s under timeoutSeconds 2 (recorded): with timeoutSeconds 1 each times out,
    which is another attempt, so the what-if is run: the third timeout in a row (the attempt
    at 30 s) ends at 31 s and the container is killed then."""
    probe = replace(LIVE, timeout_seconds=2)
    slow = App(start_after=1.0, probes={ProbeType.LIVENESS: Behaviour(latency_ms=1500.0)})
    pod, events = recording(probe, slow)
    runs = _runs(monkeypatch)
    cf = counterfactual(recorded_pod(pod, events, 0.0, 400.0), "app", ["liveness.timeoutSeconds=1"])
    assert len(runs) == 2
    assert cf.check.passed and cf.what_if is not None
    assert cf.what_if.kill_times[:1] == [31.0]


# -- from a recording file, through the command line ------------------------------------------


def test_simulate_recording_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first case again, written to a real recording file and read back by
    `probetui simulate --recording FILE --pod NS/NAME --set ...`: the same verdict, as text and
    as JSON; a pod the file does not hold is one line and exit 2."""
    from probetui.cli import main
    from probetui.record.recorder import Recorder
    from probetui.record.schema import SessionMeta

    pod, events = recording(LIVE, FLAP)
    # the events come after the pod is first seen (its first snapshot is stamped with the wall
    # clock when recorded): a start before that would fall outside the recorded window
    base = float(int(time.time())) + 5.0
    path = tmp_path / "night.db"
    rec = Recorder(path, SessionMeta(base, "test", "1.35", "test", "default"))
    rec.start()
    try:
        rec.pod(pod, PodStatus(phase="Pending"))
        for e in events:
            rec.event(e.shifted(base))
    finally:
        rec.close()
    argv = ["simulate", "--recording", str(path), "--pod", "default/web"]
    assert main([*argv, "--set", "liveness.failureThreshold=5"]) == 0
    out = capsys.readouterr().out
    assert "kills 1/1 matched, restarts 1/1" in out
    assert "2.5% of the what-if's answers inferred (1 of 40)" in out
    assert main([*argv, "--set", "liveness.failureThreshold=5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["self_check"]["passed"] is True
    assert doc["what_if"]["restarts"] == 0 and doc["what_if"]["inferred"] == 1
    assert doc["recorded"]["restarts"] == 1
    assert main(["simulate", "--recording", str(path), "--pod", "default/nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["probetui: error: --pod default/nope: not in the recording (it has default/web)"]


def test_an_unpaired_kill_at_the_windows_end_is_no_mismatch() -> None:
    """The model kills a second before the recording stopped; the kubelet's kill, a period
    later, fell past it: the self-check cannot tell them apart and must not refuse for it.
    The same unpaired kill mid-window still refuses (seen on a 40 s demo recording, where
    every what-if of slow-unguarded was refused for a kill 1 s before the end)."""

    def summary(kills: list[float]) -> RunSummary:
        return RunSummary({"liveness": len(kills)}, len(kills), 0.0, [], kill_times=kills)

    recorded = summary([10.0, 20.0, 30.0])
    model = summary([10.5, 20.5, 30.5, 39.0])
    check = self_check(recorded, model, tolerance=3.0, until=40.0)
    assert check.passed and check.kills == (3, 3, 3)
    refused = self_check(recorded, summary([10.5, 20.5, 25.0, 30.5]), tolerance=3.0, until=40.0)
    assert not refused.passed and refused.kills == (3, 3, 4)
    # without a window's end, as before: every time counts
    assert not self_check(recorded, model, tolerance=3.0).passed
