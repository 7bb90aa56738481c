"""The counterfactual's self-check compares only what the model could have seen, and says how
much it left out; what it could have seen and did not reproduce still fails it.

The recordings are the kubelet model's own runs, edited where the real kubelet decides
otherwise: on a 50 s demo recording of slow-unguarded (liveness delay 5 + 3 x 2 s against an
app that never answers: a kill every 10 s, exit to exit exactly the 10 s back-off window) the
local runtime restarted at once or waited 10 s by a few milliseconds either way, and the
self-check refused two what-ifs in three ("the model kills 3 times where the kubelet killed
4"): a back-off at its window's edge, and the kill of a start the recording ended too early to
show.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from probetui.cli import main
from probetui.simulate.counterfactual import counterfactual
from probetui.simulate.recorded import recorded_pod
from probetui.simulate.report import render_counterfactual
from probetui.simulate.run import SimKubelet
from probetui.simulate.scenario import App, Behaviour, Scenario
from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType
from probetui.timeline.events import Event
from tests.lint.histories import write_recording

UNGUARDED = Probe(
    exec=ExecAction(("alive",)), period_seconds=2, failure_threshold=3, initial_delay_seconds=5
)
NEVER = App(start_after=0.05, default=Behaviour(ready_after=1e9))


def run(probe: Probe, app: App, duration: float) -> tuple[Pod, list[Event]]:
    pod = Pod(
        "web", uid="u1", containers=(Container(name="app", command=("x",), liveness_probe=probe),)
    )
    sim = SimKubelet(Scenario(pod=pod, container="app", duration=duration, app=app))
    sim.run()
    return pod, sim.events


def waited(events: list[Event], after: float, by: float, until: float) -> list[Event]:
    """The kubelet waited `by` more before the start after `after`: everything from that start
    on comes later, and what then falls past `until` was never recorded."""
    out = []
    for e in events:
        if e.t > after:
            e = e.shifted(by)
        if e.t <= until:
            out.append(e)
    return out


END = 48.0  # the recording's end


def unguarded() -> tuple[Pod, list[Event]]:
    """slow-unguarded for 48 s as the kubelet ran it: the model kills at 10, 20, 30 and 40 and
    restarts at once each time (exit to exit is 10 s, the window is 10 s, the check is strict);
    the kubelet saw the third exit a hair later and waited its 10 s: instance 3 starts at
    40.05, and its kill, at 50, is past the recording's end."""
    pod, events = run(UNGUARDED, NEVER, 50.0)
    kills = [e.t for e in events if e.type == "Killing"]
    assert kills == [10.0, 20.0, 30.0, 40.0]
    return pod, waited(events, 30.0, 10.0, END)


def test_a_back_off_at_its_windows_edge_and_a_kill_past_the_end_are_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Recorded: kills at 10, 20, 30, the third restart at 40.05. The model restarts at 30.05
    and kills again at 40: that kill is 9.95 s into a start that the recording shows only
    7.95 s of (it ended too early to show it), and the restart, 10 s apart, is a decision at
    the back-off window's edge. The kill is left out, the restart paired at the edge, both
    said so; the what-if is given. Before, the self-check refused: "the model kills 4 times
    where the kubelet killed 3"."""
    pod, events = unguarded()
    cf = counterfactual(
        recorded_pod(pod, events, 0.0, END), "app", ["liveness.failureThreshold=10"]
    )
    assert cf.check.passed, cf.check.why
    assert cf.check.kills == (3, 3, 3) and cf.check.restarts == (3, 3, 3)
    assert cf.check.left_out[0] == 1 and cf.check.tied_restarts == 1
    text = "\n".join(render_counterfactual(cf))
    assert "left out 1 kill" in text and "the model could not have seen" in text
    assert "1 restart at a back-off window's edge" in text
    assert cf.what_if is not None
    # none of its starts finished: the replay says it cannot judge a start-up budget
    assert cf.unfinished_starts == 3 and cf.to_json()["unfinished_starts"] == 3
    assert "3 starts killed before they finished" in text
    # the same through a recording file and the command line
    path = tmp_path / "demo.db"
    write_recording(path, pod, events)
    argv = ["simulate", "--recording", str(path), "--pod", "default/web"]
    assert main([*argv, "--set", "liveness.failureThreshold=10"]) == 0
    out = capsys.readouterr().out
    assert "  passed" in out and "left out 1 kill" in out


def test_a_kill_the_model_does_not_make_mid_window_still_fails() -> None:
    """The same recording, but the kubelet killed the second start at 13 s, before its first
    liveness check: a kill in the middle that the model, reading the same answers, makes at
    20. Nothing near the ends explains it: the self-check refuses."""
    pod, events = unguarded()
    early = [
        replace(e, t=13.0) if e.type in ("Killing", "ContainerExited") and e.t == 20.0 else e
        for e in events
    ]
    cf = counterfactual(recorded_pod(pod, early, 0.0, END), "app", ["liveness.failureThreshold=10"])
    assert not cf.check.passed and cf.what_if is None
    assert cf.check.why.startswith("the model kills")


def test_a_kill_of_a_healthy_app_mid_window_still_fails() -> None:
    """A healthy app (every answer a success) that the kubelet killed at 100 s of 200: the
    model never kills it, and the recording shows the whole of its life, so nothing is left
    out: the self-check refuses."""
    probe = replace(UNGUARDED, period_seconds=10, initial_delay_seconds=0)
    pod, events = run(probe, App(start_after=1.0), 200.0)
    kill = [
        Event("Killing", 100.0, "u1", "default", "web", "app", "liveness", "kubelet", {}),
        Event("ContainerExited", 100.0, "u1", "default", "web", "app", None, "kubelet", {}),
        Event(
            "ContainerStarted",
            101.0,
            "u1",
            "default",
            "web",
            "app",
            None,
            "kubelet",
            {"restartCount": 1},
        ),
    ]
    cf = counterfactual(recorded_pod(pod, [*events, *kill], 0.0, 200.0), "app", [])
    assert not cf.check.passed
    assert cf.check.why == "the model kills 0 times where the kubelet killed 1 (0 match)"


def test_a_kill_whose_failures_began_before_the_window_is_left_out() -> None:
    """liveness every 10 s, failureThreshold 10; the app fails from 100 s to 230 s, so the
    kubelet kills at 190 (the tenth failure). The window opens at 150: it holds four of those
    failures, the model (which starts the container afresh there) counts from 151 and never
    reaches ten before the app recovers. The kill, its Ready loss and the restart after it are
    left out; before, the self-check refused ("the model kills 0 times where the kubelet
    killed 1")."""
    probe = Probe(exec=ExecAction(("alive",)), period_seconds=10, failure_threshold=10)
    app = App(start_after=1.0, probes={ProbeType.LIVENESS: Behaviour(fail_between=((100, 230),))})
    pod, events = run(probe, app, 400.0)
    assert [e.t for e in events if e.type == "Killing"] == [190.0]
    rec = recorded_pod(pod, events, 150.0, 400.0, started_before={"app": (1.0, 0, True)})
    cf = counterfactual(rec, "app", ["liveness.failureThreshold=12"])
    assert cf.check.passed, cf.check.why
    assert cf.check.kills == (0, 0, 0) and cf.check.left_out[0] == 1
    assert "left out 1 kill" in "\n".join(render_counterfactual(cf))
