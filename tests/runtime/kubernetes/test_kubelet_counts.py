"""The kubelet's counts from an agent's `counts` frames: windows, and their verdicts.

A window is judged only where the agent saw every span of it whole; a restart of the agent or
the kubelet, a counter down, a gap in the reader's stream each start a new window instead of
being read as a disagreement (kubelet_counts.py, docs/agents.md).
"""

from __future__ import annotations

from typing import Any

from probetui.runtime.kubernetes.kubelet_counts import CountsJudge
from probetui.timeline.events import count_words

T0 = 1_764_643_000.0


def frame(
    t: float,
    kubelet: tuple[int, int, int] | None,
    shadow: tuple[int, int, int] | None,
    *,
    since: float = T0 - 500,
    start: float = T0 - 9000,
    whole: bool = True,
) -> dict[str, Any]:
    def counts(v: tuple[int, int, int] | None) -> dict[str, int] | None:
        return None if v is None else dict(zip(("successful", "failed", "unknown"), v, strict=True))

    f: dict[str, Any] = {
        "k": "counts",
        "t": T0 + t,
        "uid": "uid-web",
        "ns": "shop",
        "pod": "web",
        "c": "app",
        "probe": "readiness",
        "kubelet": counts(kubelet),
        "shadow": counts(shadow),
        "since": since,
        "kubeletStart": start,
    }
    if whole and kubelet is not None and shadow is not None:
        f["mismatch"] = False
    return f


def feed(judge: CountsJudge, frames: list[dict[str, Any]]) -> list[Any]:
    out = []
    for f in frames:
        out += judge.frame("node-1", f)
    return out


def test_a_window_of_whole_spans_reports_both_sides_deltas() -> None:
    judge = CountsJudge(window=60)
    events = feed(judge, [frame(10 * i, (100 + i, 3, 0), (200 + i, 0, 0)) for i in range(8)])
    assert [e.type for e in events] == ["KubeletProbeCounts"]
    e = events[0]
    assert (e.source, e.pod, e.container, e.probe) == ("kubelet", "web", "app", "readiness")
    assert e.fields["kubelet"] == {"successful": 6, "failed": 0, "unknown": 0}
    assert e.fields["shadow"] == {"successful": 6, "failed": 0, "unknown": 0}
    assert e.fields["seconds"] == 60 and e.fields["since"] == T0
    assert e.fields["judged"] is True and e.fields["node"] == "node-1"
    assert e.t == T0 + 60


def test_counts_apart_beyond_a_period_diverge_once_and_clear_once() -> None:
    judge = CountsJudge(window=20)
    frames = [
        frame(0, (0, 0, 0), (0, 0, 0)),
        frame(10, (2, 0, 0), (1, 0, 0)),
        frame(20, (4, 0, 0), (2, 0, 0)),  # a window: kubelet 4, shadow 2
        frame(30, (6, 0, 0), (3, 0, 0)),
        frame(40, (8, 0, 0), (4, 0, 0)),  # apart again: said once only
        frame(50, (9, 0, 0), (5, 0, 0)),
        frame(60, (10, 0, 0), (6, 0, 0)),  # 2 and 2: agree again
    ]
    events = feed(judge, frames)
    types = [e.type for e in events]
    assert types == [
        "KubeletProbeCounts",
        "Divergence",
        "KubeletProbeCounts",
        "KubeletProbeCounts",
        "DivergenceCleared",
    ]
    div = events[1]
    assert div.source == "shadow" and div.fields["reason"] == "counts"
    assert div.fields["message"] == "the kubelet counted 4 attempts, the shadow 2 in 20s"
    assert div.fields["kubelet"] == "counted 4 (4 ✓ 0 ✖)"
    assert "agree again" in events[4].fields["message"]


def test_one_attempt_apart_is_the_phases_not_a_divergence() -> None:
    judge = CountsJudge(window=30)
    events = feed(
        judge,
        [
            frame(0, (0, 0, 0), (0, 0, 0)),
            frame(10, (1, 0, 0), (0, 0, 0)),
            frame(30, (3, 0, 0), (2, 0, 0)),
        ],
    )
    assert [e.type for e in events] == ["KubeletProbeCounts"]


def test_restarts_and_counters_down_start_a_new_window_not_a_disagreement() -> None:
    judge = CountsJudge(window=1000)
    frames = [
        frame(0, (50, 0, 0), (10, 0, 0)),
        frame(10, (52, 0, 0), (12, 0, 0)),
        # the agent restarted: its counts begin again from 0
        frame(20, (54, 0, 0), (1, 0, 0), since=T0 + 15),
        frame(30, (56, 0, 0), (3, 0, 0), since=T0 + 15),
        # the kubelet restarted
        frame(40, (1, 0, 0), (5, 0, 0), since=T0 + 15, start=T0 + 35),
        frame(50, (3, 0, 0), (7, 0, 0), since=T0 + 15, start=T0 + 35),
        # a counter went down with nothing else changed
        frame(60, (2, 0, 0), (9, 0, 0), since=T0 + 15, start=T0 + 35),
    ]
    events = feed(judge, frames)
    assert [e.type for e in events] == ["KubeletProbeCounts"] * 3
    assert all(e.fields["kubelet"]["successful"] == 2 for e in events)
    assert all(e.fields["seconds"] == 10 for e in events)


def test_a_span_the_agent_did_not_see_whole_is_not_judged() -> None:
    judge = CountsJudge(window=1000)
    frames = [
        frame(0, (0, 0, 0), (0, 0, 0)),
        frame(10, (9, 0, 0), (1, 0, 0), whole=False),  # the shadow was late, say
        frame(20, (10, 0, 0), (2, 0, 0)),
    ]
    assert feed(judge, frames) == []
    events = judge.gap("node-1")
    assert [e.type for e in events] == ["KubeletProbeCounts"]
    assert events[0].fields["kubelet"]["successful"] == 1


def test_a_gap_in_the_stream_closes_the_window_and_the_next_starts_afresh() -> None:
    judge = CountsJudge(window=1000)
    feed(judge, [frame(0, (0, 0, 0), (0, 0, 0)), frame(10, (1, 0, 0), (1, 0, 0))])
    closed = judge.gap("node-1")
    assert [e.fields["seconds"] for e in closed] == [10]
    assert judge.gap("node-2") == []
    # the latest counts again after a resume (the same scrape): nothing; then a new window
    assert feed(judge, [frame(10, (1, 0, 0), (1, 0, 0))]) == []
    assert feed(judge, [frame(10, (1, 0, 0), (1, 0, 0))]) == []
    feed(judge, [frame(30, (9, 0, 0), (3, 0, 0))])
    again = judge.gap("node-1")
    assert [e.type for e in again] == ["KubeletProbeCounts", "Divergence"]


def test_an_exec_probe_has_the_kubelets_counts_alone_never_judged() -> None:
    judge = CountsJudge(window=20)
    events = feed(
        judge, [frame(0, (4, 0, 0), None), frame(10, (5, 0, 0), None), frame(20, (6, 1, 0), None)]
    )
    assert [e.type for e in events] == ["KubeletProbeCounts"]
    assert events[0].fields["shadow"] is None and events[0].fields["judged"] is False
    assert events[0].fields["kubelet"] == {"successful": 2, "failed": 1, "unknown": 0}


def test_count_words() -> None:
    assert count_words({"successful": 12, "failed": 3, "unknown": 0}) == "12 ✓ 3 ✖"
    assert count_words({"successful": 1, "failed": 0, "unknown": 2}) == "1 ✓ 0 ✖ 2 ?"
