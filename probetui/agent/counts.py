"""Set the kubelet's counts beside the shadow's, per probe, after each scrape: `counts` frames.

Both sides are cumulative and counted the same way: the kubelet's `prober_probe_total` by
result (successful, failed, unknown) for the probe's pod UID, container and probe type, and the
shadow worker's own `probe_total` (`Worker.finish`, docs/kubelet-behaviour.md §12.1: one count
per doProbe that ran a handler and got no prober error). A client takes differences between two
frames of a probe; a counter that went down, a kubelet that restarted (`kubeletStart` changed)
or an agent that restarted (`since` changed) starts a new span: a gap, not a disagreement.

The agent judges each span itself too, for its `/metrics`: a span it saw whole (the same kubelet
process and the same shadow worker at both ends, no counter down, the shadow on time at both
scrapes) whose counts differ by more than its phase allows is a mismatch, said in the frame
(`mismatch: true`) and counted. The two workers tick at the same period from different
phases, and each scrape reads the kubelet a moment apart from the shadow's snapshot, so each end
of a span may hold one attempt on one side and not the other: totals may differ by one
(`TOTAL_SLACK`), and where the answer changed inside the span a result may differ by two
(`RESULT_SLACK`: one attempt moved across each end).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from probetui.agent.kubelet import RESULTS, KubeletCounts
from probetui.keys import ProbeKey
from probetui.stream.protocol import COUNTS, json_text
from probetui.stream.rows import PodNames

TOTAL_SLACK = 1
RESULT_SLACK = 2


@dataclass(frozen=True, slots=True)
class ShadowProbe:
    """Describes one probe the agent runs or watches, as a scrape finds it."""

    key: ProbeKey
    names: PodNames
    counts: dict[str, int] | None  # None: the shadow does not run it (exec)
    worker: int  # the worker's identity: another one behind the same key is a new span


class _End(NamedTuple):
    """Holds one end of a span: a tuple, made for every probe at every scrape."""

    kubelet: dict[str, int] | None
    shadow: dict[str, int] | None
    start: float | None
    worker: int
    on_time: bool


class CountsJoin:
    """Makes each scrape's frames, and the mismatches of the spans the agent saw whole."""

    def __init__(self, agent_start: float) -> None:
        self.agent_start = agent_start
        self.mismatches = 0
        self.spans = 0  # spans judged
        self._ends: dict[ProbeKey, _End] = {}
        self.latest: dict[ProbeKey, dict[str, Any]] = {}
        self._heads: dict[ProbeKey, str] = {}  # each probe's names, encoded (`encoded`)
        self._encoded: bytes | None = None

    def frames(
        self, scraped: KubeletCounts, probes: Iterable[ShadowProbe], on_time: bool
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        ends: dict[ProbeKey, _End] = {}
        latest: dict[ProbeKey, dict[str, Any]] = {}
        for p in probes:
            key, names = p.key, p.names
            label = key.probe_type.value
            kubelet = scraped.series.get((names.uid, key.container, label))
            if kubelet is None:
                kubelet = scraped.by_name.get((names.namespace, names.name, key.container, label))
            if kubelet is None and p.counts is None:
                continue
            frame: dict[str, Any] = {
                "k": COUNTS,
                "t": scraped.t,
                "uid": names.uid,
                "ns": names.namespace,
                "pod": names.name,
                "c": key.container,
                "probe": key.probe_type.key,
                "kubelet": dict(kubelet) if kubelet is not None else None,
                "shadow": dict(p.counts) if p.counts is not None else None,
                "since": self.agent_start,
            }
            if scraped.start is not None:
                frame["kubeletStart"] = scraped.start
            end = _End(frame["kubelet"], frame["shadow"], scraped.start, p.worker, on_time)
            verdict = self._judge(self._ends.get(key), end)
            if verdict is not None:
                frame["mismatch"] = verdict
            ends[key] = end
            latest[key] = frame
            out.append(frame)
        self._ends = ends
        self.latest = latest
        self._encoded = None
        return out

    def _judge(self, before: _End | None, after: _End) -> bool | None:
        """True or False for a span seen whole; None where it was not."""
        if (
            before is None
            or before.kubelet is None
            or before.shadow is None
            or after.kubelet is None
            or after.shadow is None
            or before.start != after.start
            or before.worker != after.worker
            or not (before.on_time and after.on_time)
        ):
            return None
        kubelet_total = shadow_total = widest = 0
        for r in RESULTS:
            dk = after.kubelet[r] - before.kubelet[r]
            ds = after.shadow[r] - before.shadow[r]
            if dk < 0 or ds < 0:
                return None  # a counter went down: a restart between the scrapes
            kubelet_total += dk
            shadow_total += ds
            widest = max(widest, abs(dk - ds))
        self.spans += 1
        mismatch = abs(kubelet_total - shadow_total) > TOTAL_SLACK or widest > RESULT_SLACK
        if mismatch:
            self.mismatches += 1
        return mismatch

    def encoded(self) -> bytes:
        """Return the last scrape's frames as `dumps` writes them, one after another.

        Every frame of one scrape repeats its times and every scrape a probe's names, so those
        are encoded once, not once a frame (benchmarks.agents' node mode guards it)."""
        if self._encoded is not None:
            return self._encoded
        if not self.latest:
            return b""
        first = next(iter(self.latest.values()))
        t, since = json_text(first["t"]), json_text(first["since"])
        start = (
            f',"kubeletStart":{json_text(first["kubeletStart"])}' if "kubeletStart" in first else ""
        )
        heads: dict[ProbeKey, str] = {}
        parts: list[str] = []
        for key, frame in self.latest.items():
            head = self._heads.get(key)
            if head is None:
                head = json_text({name: frame[name] for name in _NAMES})[1:-1]
            heads[key] = head
            mismatch = frame.get("mismatch")
            verdict = "" if mismatch is None else f',"mismatch":{json_text(mismatch)}'
            parts.append(
                f'{{"k":"{COUNTS}","t":{t},{head},"kubelet":{_counts_text(frame["kubelet"])},'
                f'"shadow":{_counts_text(frame["shadow"])},"since":{since}{start}{verdict}}}\n'
            )
        self._heads = heads
        self._encoded = "".join(parts).encode()
        return self._encoded


# a frame's keys that name its probe, in the frame's order
_NAMES = ("uid", "ns", "pod", "c", "probe")


def _counts_text(counts: dict[str, int] | None) -> str:
    """Return one side's counts as JSON, written here where they are the plain counters."""
    if counts is None:
        return "null"
    if tuple(counts) == RESULTS:
        ok, failed, unknown = counts.values()
        if type(ok) is int and type(failed) is int and type(unknown) is int:
            return f'{{"successful":{ok},"failed":{failed},"unknown":{unknown}}}'
    return json_text(counts)


__all__ = ["RESULT_SLACK", "TOTAL_SLACK", "CountsJoin", "ShadowProbe"]
