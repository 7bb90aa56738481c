"""What a view reading node agents records, read back: attempts `via: agent`, the kubelet's
counts (KubeletProbeCounts) and the counts' Divergence, into the replayed store as the live."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from probetui.prober.status import PodStatus
from probetui.record.reader import open_recording
from probetui.record.recorder import Recorder
from probetui.timeline.events import KUBELET, SHADOW, Event, attempt_fields
from probetui.timeline.store import Store
from tests.record.helpers import META, attempt, pod

T = 1_764_643_000.0


def counts(t: float) -> Event:
    p = pod()
    fields = {
        "kubelet": {"successful": 6, "failed": 0, "unknown": 0},
        "shadow": {"successful": 5, "failed": 0, "unknown": 0},
        "since": t - 60,
        "seconds": 60.0,
        "node": "node-1",
        "via": "agent",
        "judged": True,
    }
    return Event(
        "KubeletProbeCounts", t, p.uid, p.namespace, p.name, "app", "readiness", KUBELET, fields
    )


def test_the_kubelets_counts_and_agent_attempts_replay(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    p = pod()
    live = Store()
    recorder = Recorder(path, META)
    events = []
    for i in range(3):
        e = attempt(p, T + i, i + 1)
        assert e.record is not None
        e.fields = {**attempt_fields(e.record, "agent"), "node": "node-1"}
        events.append(e)
    events.append(counts(T + 60))
    events.append(
        Event(
            "Divergence",
            T + 61,
            p.uid,
            p.namespace,
            p.name,
            "app",
            "readiness",
            SHADOW,
            {"reason": "counts", "message": "the kubelet counted 9 attempts, the shadow 5 in 60s"},
        )
    )
    for sink in (live, recorder):
        sink.pod(p, PodStatus(phase="Running"))
        for e in events:
            sink.event(dataclasses.replace(e))
    recorder.close()

    with open_recording(path) as rec:
        back = list(rec.events())
        replayed = Store()
        rec.replay_into(replayed)
    by_type = {e.type: e for e in back}
    assert by_type["KubeletProbeCounts"].fields == counts(T + 60).fields
    assert by_type["KubeletProbeCounts"].source == KUBELET
    assert by_type["Divergence"].fields["reason"] == "counts"
    assert [e.fields["via"] for e in back if e.type == "ProbeAttempt"] == ["agent"] * 3
    # each attempt's node too, the fields in the order the live ones had them
    tried = [e.fields for e in back if e.type == "ProbeAttempt"]
    assert tried == [e.fields for e in events[:3]]
    assert [list(f) for f in tried] == [list(e.fields) for e in events[:3]]
    # the replayed store holds the counts for the threshold pane, as the live one does
    assert list(replayed.kubelet_counts) == list(live.kubelet_counts)
    (key,) = live.kubelet_counts
    assert [e.fields for e in replayed.kubelet_counts[key]] == [
        e.fields for e in live.kubelet_counts[key]
    ]


def test_an_attempt_without_a_node_replays_without_one(tmp_path: Path) -> None:
    """A view's own attempts (and a recording made before nodes were kept: its shapes end at the
    attempt) read back with no `node` key."""
    path = tmp_path / "own.db"
    p = pod()
    recorder = Recorder(path, META)
    recorder.pod(p, PodStatus(phase="Running"))
    e = attempt(p, T, 1)
    assert e.record is not None
    e.fields = attempt_fields(e.record, "port-forward")
    recorder.event(e)
    recorder.close()
    with open_recording(path) as rec:
        (back,) = [b for b in rec.events() if b.type == "ProbeAttempt"]
        shapes = [json.loads(body) for (body,) in rec.conn.execute("SELECT body FROM shapes")]
    assert back.fields == e.fields and "node" not in back.fields
    assert [len(s) for s in shapes if s[0] == "A"] == [13]
