"""Set the kubelet's own probe counts, from the node agents' `counts` frames, beside the shadow's.

Each `counts` frame holds, per probe, the kubelet's `prober_probe_total` by result and the
agent's worker's own count of the same, both cumulative (docs/stream.md, "counts"). Here
consecutive frames of a probe become spans, and spans become windows of at least `window`
seconds, each reported as one `KubeletProbeCounts` event (`source: kubelet`): the kubelet's
successful, failed and unknown counts over the window, the shadow's beside them.

A span belongs to a window only where it was seen whole: the same agent (`since`) and kubelet
(`kubeletStart`) process at both ends, no counter down, no gap in the reader's stream between
the two frames (a reconnect, `gap`), and, where both sides count, the agent's own word that it
saw the span whole (the frame carries `mismatch`: the same worker, the shadow on time). A span
that is not starts a new window: an agent or kubelet restart is a gap, not a disagreement.

A window where both sides count is judged as the agent judges a span: the two workers tick at
the same period from different phases and the kubelet is read a moment apart from the shadow,
so the totals may differ by one attempt (`TOTAL_SLACK`, one period) and a result by two
(`RESULT_SLACK`) at any window length. Beyond that, a `Divergence` ("the kubelet counted N
attempts, the shadow M"), once, and a `DivergenceCleared` at the next window that agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probetui.agent.counts import RESULT_SLACK, TOTAL_SLACK
from probetui.agent.kubelet import RESULTS
from probetui.spec.model import ProbeType
from probetui.timeline.events import (
    KUBELET,
    KUBELET_PROBE_COUNTS,
    SHADOW,
    Event,
    EventType,
    count_words,
)

KUBELET_COUNTS = KUBELET_PROBE_COUNTS
# a window is reported once it spans this long (a scrape comes every 10 s by default)
WINDOW = 60.0

Counts = dict[str, int]
Key = tuple[str, str, ProbeType]  # pod UID, container, probe


@dataclass(slots=True)
class _Window:
    start: float  # the `t` of the frame it starts at
    first: dict[str, Any]  # that frame
    last: dict[str, Any]  # the latest frame in it
    comparable: bool = True  # every span in it seen whole by the agent, both sides counting


@dataclass(slots=True)
class _Probe:
    node: str
    window: _Window | None = None
    reported: float | None = None  # since when a reported disagreement has lasted


@dataclass
class CountsJudge:
    """Keeps windows of the kubelet's and the shadow's counts per probe; the events they make."""

    window: float = WINDOW
    _probes: dict[Key, _Probe] = field(default_factory=dict)

    def gap(self, node: str) -> list[Event]:
        """The reader's stream from `node` was cut: each window open there is reported as it
        stands and none goes on across the cut."""
        out: list[Event] = []
        for probe in self._probes.values():
            if probe.node == node and probe.window is not None:
                out += self._close(probe)
                probe.window = None
        return out

    def forget_pod(self, uid: str) -> None:
        for key in [k for k in self._probes if k[0] == uid]:
            del self._probes[key]

    def frame(self, node: str, frame: dict[str, Any]) -> list[Event]:
        """Return a `counts` frame from the agent on `node`: the events it completes."""
        try:
            key = (str(frame["uid"]), str(frame["c"]), ProbeType.parse(str(frame["probe"])))
            t = float(frame["t"])
        except (KeyError, TypeError, ValueError):
            return []
        probe = self._probes.get(key)
        if probe is None:
            probe = self._probes[key] = _Probe(node)
        probe.node = node
        w = probe.window
        if w is None:
            probe.window = _Window(t, frame, frame)
            return []
        if t <= float(w.last["t"]):
            return []  # the same scrape again (a resumed stream sends the latest counts)
        whole, comparable = _span(w.last, frame)
        if not whole:
            out = self._close(probe)
            probe.window = _Window(t, frame, frame)
            return out
        w.last = frame
        w.comparable = w.comparable and comparable
        if t - w.start < self.window:
            return []
        out = self._close(probe)
        probe.window = _Window(t, frame, frame)
        return out

    def _close(self, probe: _Probe) -> list[Event]:
        """Return the window's KubeletProbeCounts, and its verdict where it can be judged."""
        w = probe.window
        if w is None or w.last is w.first:
            return []
        first, last = w.first, w.last
        kubelet = _delta(first.get("kubelet"), last.get("kubelet"))
        shadow = _delta(first.get("shadow"), last.get("shadow"))
        t = float(last["t"])
        seconds = round(t - w.start, 3)
        fields: dict[str, Any] = {
            "kubelet": kubelet,
            "shadow": shadow,
            "since": w.start,
            "seconds": seconds,
            "node": probe.node,
            "via": "agent",
        }
        comparable = w.comparable and kubelet is not None and shadow is not None
        fields["judged"] = comparable  # the event's key (docs/agents.md)
        out = [_event(KUBELET_COUNTS, t, last, fields, KUBELET)]
        if not comparable:
            return out
        assert kubelet is not None and shadow is not None
        nk, ns = sum(kubelet.values()), sum(shadow.values())
        apart = abs(nk - ns) > TOTAL_SLACK or any(
            abs(kubelet[r] - shadow[r]) > RESULT_SLACK for r in RESULTS
        )
        if apart and probe.reported is None:
            probe.reported = w.start
            message = f"the kubelet counted {nk} attempts, the shadow {ns} in {seconds:.0f}s"
            out.append(
                _event(
                    EventType.DIVERGENCE,
                    t,
                    last,
                    {
                        "reason": "counts",
                        "kubelet": f"counted {nk} ({count_words(kubelet)})",
                        "shadow": f"counted {ns} ({count_words(shadow)})",
                        "since": w.start,
                        "via": "agent",
                        "node": probe.node,
                        "likely": [
                            "the kubelet ran attempts the shadow did not see, or the other "
                            "way round: a probe-now, a restart of the worker, a kubelet that "
                            "probes late (its node under load)",
                        ],
                        "message": message,
                    },
                    SHADOW,
                )
            )
        elif not apart and probe.reported is not None:
            out.append(
                _event(
                    "DivergenceCleared",
                    t,
                    last,
                    {
                        "since": probe.reported,
                        "node": probe.node,
                        "message": f"the kubelet's and the shadow's counts agree again "
                        f"({nk} and {ns} in {seconds:.0f}s)",
                    },
                    SHADOW,
                )
            )
            probe.reported = None
        return out


def _span(before: dict[str, Any], after: dict[str, Any]) -> tuple[bool, bool]:
    """(whether the span between two frames was seen whole, whether both sides' counts compare)."""
    if before.get("since") != after.get("since"):
        return False, False  # the agent restarted
    if before.get("kubeletStart") != after.get("kubeletStart"):
        return False, False  # the kubelet restarted
    for side in ("kubelet", "shadow"):
        a, b = before.get(side), after.get(side)
        if (a is None) != (b is None):
            return False, False
        if a is not None and any(int(b.get(r, 0)) < int(a.get(r, 0)) for r in RESULTS):
            return False, False  # a counter went down: a restart between the two
    both = after.get("kubelet") is not None and after.get("shadow") is not None
    if both and "mismatch" not in after:
        return False, False  # the agent did not see this span whole (another worker, late)
    return True, both


def _delta(a: Counts | None, b: Counts | None) -> Counts | None:
    if a is None or b is None:
        return None
    return {r: int(b.get(r, 0)) - int(a.get(r, 0)) for r in RESULTS}


def _event(
    type_: str, t: float, frame: dict[str, Any], fields: dict[str, Any], source: str
) -> Event:
    return Event(
        type_,
        t,
        str(frame["uid"]),
        str(frame.get("ns") or ""),
        str(frame.get("pod") or ""),
        str(frame["c"]),
        ProbeType.parse(str(frame["probe"])),
        source,
        fields,
    )


__all__ = ["KUBELET_COUNTS", "WINDOW", "CountsJudge"]
