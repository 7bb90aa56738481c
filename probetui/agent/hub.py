"""The engine's sink on a node agent stamps, keeps and fans out what the engine publishes.

Every event gets a publication stamp (wall-clock seconds, strictly increasing), goes into the
ring (`ring.py`) and out to each attached client (`client.py`) that takes it: the shadow's
attempts and skips as rows or `event` frames for the pods a client asked for, every other event
to every client. A tick the runtime would not let run (an exec probe) is sent live and not kept:
its `ProbeNotRun` says it once, and keeping one skip per period of every such probe would fill
the ring with nothing. Pod snapshots, the kubelet's counts and the agent's notes are state: each
client gets the current ones when it attaches, then the changes.

The hub also keeps what `/metrics` and `summary` frames read: attempts by probe type and
outcome, divergences, and one `ProbeSummary` per probe.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from probetui.agent.client import SLOW_CLOSE, StreamClient, _Encoded
from probetui.agent.ring import Ring
from probetui.agent.summary import ProbeSummary
from probetui.keys import ProbeKey
from probetui.prober.outcome import KIND_NAMES
from probetui.prober.status import PodStatus
from probetui.spec.model import Pod, ProbeType
from probetui.stream.codec import event_frame
from probetui.stream.protocol import NOTE, dumps
from probetui.stream.rows import is_row_event, row_parts
from probetui.timeline.events import PROBE_SKIPPED, Event, EventType

DIVERGENCE = EventType.DIVERGENCE


class Hub:
    def __init__(self, ring: Ring, *, node: str = "", clock: Callable[[], float] = time.time):
        self.ring = ring
        self.node = node
        self.clock = clock
        self.clients: set[StreamClient] = set()
        self.pods: dict[str, tuple[Pod, PodStatus]] = {}
        self.summaries: dict[ProbeKey, ProbeSummary] = {}
        # (probe type, outcome kind) -> doProbes; `attempt_counts` names them
        self.attempts: Counter[tuple[ProbeType, int]] = Counter()
        self.divergences = 0
        self.notes: dict[str, dict[str, Any]] = {}  # topic -> its latest note frame
        self.counts: dict[ProbeKey, dict[str, Any]] = {}  # the latest counts frame per probe
        self.counts_data = b""  # the same, encoded
        self._last = 0.0

    def stamp(self) -> float:
        """Now, made later than every stamp before it: the ring's and the clients' cursor."""
        now = self.clock()
        if now <= self._last:
            now = math.nextafter(self._last, math.inf)
        self._last = now
        return now

    # -- the engine's sink ----------------------------------------------------------------

    def event(self, event: Event) -> None:
        if is_row_event(event):
            record = event.record
            assert record is not None
            parts = row_parts(event)
            key, names = parts[0], parts[1]
            summary = self.summaries.get(key)
            if summary is None:
                summary = self.summaries[key] = ProbeSummary(key, names)
            kind = record.steady.kind
            summary.add(record, event.fields, KIND_NAMES[kind])
            if record.steady.probed:
                self.attempts[(key.probe_type, kind)] += 1
            stamp = self.stamp()
            self.ring.add_row(stamp, *parts)
            encoded = _Encoded(event, stamp)
            for client in self.clients:
                client.row(event, parts, encoded)
            return
        if event.type == PROBE_SKIPPED:
            for client in self.clients:
                client.transient(event)
            return
        if event.type == DIVERGENCE:
            self.divergences += 1
        stamp = self.stamp()
        frame = event_frame(event)
        frame["at"] = stamp
        data = dumps(frame)
        self.ring.add_blob(stamp, event.pod_uid, event.type, data)
        for client in self.clients:
            client.blob(event.pod_uid, event.type, data)

    def flush(self) -> None:
        """Write what every client has gathered now, not a flush delay later."""
        for client in self.clients:
            client.sender.flush()

    def attempt_counts(self) -> list[tuple[str, str, int]]:
        """Return the doProbes by probe type as the kubelet labels it and outcome word."""
        return sorted((pt.value, KIND_NAMES[kind], n) for (pt, kind), n in self.attempts.items())

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        if status is None:
            self.pods.pop(pod.uid, None)
            for key in [k for k in self.summaries if k.pod_uid == pod.uid]:
                del self.summaries[key]
                for client in self.clients:
                    client.forget_summary(key)
        else:
            self.pods[pod.uid] = (pod, status)
        for client in self.clients:
            client.pod(pod, status)

    # -- clients --------------------------------------------------------------------------

    def attach(self, client: StreamClient) -> None:
        """From now on `client` gets the changes; the state as it is now goes first."""
        for pod, status in self.pods.values():
            client.pod(pod, status)
        for frame in self.notes.values():
            client.send(frame)
        self.clients.add(client)

    def went_live(self, client: StreamClient) -> None:
        """`client`'s replay is over: the counts and summaries as they are now."""
        if self.counts_data:
            client.send_encoded(self.counts_data)
        client.summaries(self.summaries, self.clock())

    def detach(self, client: StreamClient) -> None:
        self.clients.discard(client)

    def broadcast(self, frame: dict[str, Any]) -> None:
        for client in self.clients:
            client.send(frame)

    def note(self, topic: str, text: str) -> None:
        """Say one line about this node (empty: what was said no longer holds), once."""
        before = self.notes.get(topic)
        if (before["text"] if before is not None else "") == text:
            return
        frame = {"k": NOTE, "t": self.clock(), "node": self.node, "topic": topic, "text": text}
        if text:
            self.notes[topic] = frame
        else:
            self.notes.pop(topic, None)
        self.broadcast(frame)

    def publish_counts(self, latest: dict[ProbeKey, dict[str, Any]], data: bytes) -> None:
        """One scrape's `counts` frames, `data` encoded, to every client; kept for the ones
        that come later."""
        self.counts = latest
        self.counts_data = data
        if not data:
            return
        for client in self.clients:
            client.send_encoded(data)

    def tick(self, now: float) -> None:
        """Once a second: summaries that changed, and the readers too far behind for too long."""
        for client in list(self.clients):
            client.summaries(self.summaries, now)
            behind = client.queue.get_write_buffer_size() > client.sender.limit
            if not behind:
                client.behind_since = None
            elif client.behind_since is None:
                client.behind_since = now
            elif now - client.behind_since >= SLOW_CLOSE:
                self.detach(client)
                client.close(
                    f"closed by the agent on {self.node or 'this node'}: this client stayed more "
                    f"than {client.sender.limit >> 20} MiB behind for {SLOW_CLOSE:g}s; reconnect "
                    "with since= the last `at` you read to resume from the agent's ring"
                )


__all__ = ["Hub"]
