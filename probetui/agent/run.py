"""Run one node agent: the engine over its node's pods, the kubelet's counts, the HTTP server.

`Agent.run` starts the server first (the DaemonSet's liveness probe asks `/healthz` from the
start), then the engine over `NodeRuntime`, the scrape of the kubelet's `/metrics/probes` every
`scrape_every`, and a one-second tick (summaries, slow readers, the ring's age limit, a `late`
frame every `LATE_EVERY`, which also tells a reader the stream is alive). It ends when the engine
does: a refused first list (401, 403) is a `RuntimeFailure`, one line; SIGTERM cancels it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probetui.agent.counts import CountsJoin, ShadowProbe
from probetui.agent.hub import Hub
from probetui.agent.kubelet import KubeletClient, ScrapeError, wait_closed
from probetui.agent.ring import Ring
from probetui.agent.runtime import NodeRuntime
from probetui.agent.server import AgentServer, StreamQuery, TokenFile
from probetui.engine import Engine
from probetui.keys import ProbeKey
from probetui.probe.base import DEFAULT_KUBE_VERSION
from probetui.prober.clock import sleep_on_grid
from probetui.prober.lateness import BEHIND
from probetui.prober.status import PodStatus
from probetui.runtime.base import RuntimeFailure
from probetui.runtime.kubernetes.config import ClusterTarget
from probetui.runtime.kubernetes.credentials import FileTokenSource
from probetui.spec.model import Pod, ProbeType
from probetui.stream.protocol import KUBELET, LATE, hello
from probetui.stream.rows import PodNames
from probetui.timeline.events import Event

log = logging.getLogger(__name__)

LATE_EVERY = 5.0  # seconds between `late` frames
KUBELET_NOTE = "kubelet-counts"


@dataclass(frozen=True, slots=True)
class AgentOptions:
    node: str
    node_ip: str
    bind: str
    port: int
    token_file: Path
    scrape_every: float = 10.0
    kubelet_port: int = 10250
    kubelet_insecure_tls: bool = False
    retain: float = 3600.0
    retain_entries: int = 200_000
    max_clients: int = 8
    client_buffer: int = 2 << 20
    kubelet_version: str | None = None  # None: read from the kubelet, else the default
    tick_align: float = 0.0  # seconds; 0: ticks as the kubelet arms them


class FlushAfterBurst:
    """Writes what the hub's clients gathered as the last probe in flight ends: a node's probes
    run in bursts on the tick grid (`tick_grid`), and a burst written as it ends needs no
    wake-up of its own a flush delay later (benchmarks.agents guards it). Put after the hub
    among the engine's sinks."""

    def __init__(self, hub: Hub, in_flight: Callable[[], int]) -> None:
        self.hub = hub
        self.in_flight = in_flight

    def event(self, event: Event) -> None:
        record = event.record
        if record is not None and record.steady.probed and self.in_flight() == 0:
            self.hub.flush()

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        pass


class Agent:
    def __init__(
        self,
        options: AgentOptions,
        target: ClusterTarget,
        *,
        say: Callable[[str], None] = lambda text: None,
        reflector_options: dict[str, Any] | None = None,
    ) -> None:
        self.options = options
        self.say = say
        self.started = time.time()
        self.token = TokenFile(options.token_file)
        self.ring = Ring(options.retain, options.retain_entries)
        self.hub = Hub(self.ring, node=options.node)
        self.runtime = NodeRuntime(target, node=options.node, reflector_options=reflector_options)
        self.runtime.read_only_reason = "the node agent only reads"
        self.runtime.on_note = lambda text: log.info("note: %s", text)
        self.runtime.on_state = lambda text: say(text or "connected to the API server again")
        self.runtime.configured_kubelet = options.kubelet_version or DEFAULT_KUBE_VERSION
        self.runtime.tick_align = options.tick_align
        self.engine = Engine(
            self.runtime,
            [self.hub, FlushAfterBurst(self.hub, lambda: self.engine.manager.in_flight())],
            kube_version=options.kubelet_version or DEFAULT_KUBE_VERSION,
            tick_align=options.tick_align,
        )
        sa = target.service_account_dir
        self.kubelet = KubeletClient(
            options.node_ip,
            options.kubelet_port,
            FileTokenSource(sa / "token"),
            ca_file=sa / "ca.crt",
            insecure=options.kubelet_insecure_tls,
            timeout=min(options.scrape_every, 5.0),
            node=options.node,
        )
        self.join = CountsJoin(self.started)
        self.scrapes = 0
        self.scrape_errors: Counter[str] = Counter()
        self._kubelet_start: float | None = None
        self.server = AgentServer(
            self.hub,
            self.token,
            hello=self.hello,
            metrics=self.metrics,
            replay_window=lambda: time.time() - options.retain,
            ready=self.not_ready,
            probe=self.probe_now,
            max_clients=options.max_clients,
            client_buffer=options.client_buffer,
        )
        self.address: tuple[str, int] | None = None

    # -- what readers get -----------------------------------------------------------------

    def hello(self, query: StreamQuery) -> dict[str, Any]:
        from probetui import __version__

        return hello(
            "agent",
            node=self.options.node,
            pid=os.getpid(),
            probetui=__version__,
            start=self.started,
            now=time.time(),
            counts=True,
            rows=query.rows,
            summary=query.summary,
            pods=None if query.pods is None else len(query.pods),
            since=query.since,
            kept=self.ring.oldest,
            retain=self.options.retain,
            scrapeEvery=self.options.scrape_every,
            via=self.runtime.via,
            kubeletVersion=self.runtime.kubelet_version,
        )

    def probe_now(self, uid: str, container: str, probe: str) -> tuple[int, str]:
        """Run one probe of this node once now, as the local `t` does: (HTTP status, line)."""
        try:
            probe_type = ProbeType.parse(probe)
        except (KeyError, ValueError):
            return 400, f"bad request: probe {probe!r} is liveness, readiness or startup"
        key = ProbeKey(uid, container, probe_type)
        if key not in self.engine.workers:
            return 404, f"no {probe_type.key} probe of container {container!r} of pod {uid} here"
        if self.engine.probe_now(key):
            return 200, f"{probe_type.key} of {container}: attempt queued"
        return 409, f"{probe_type.key} of {container} not probed: not run here, or already queued"

    def not_ready(self) -> str | None:
        """Say why the agent cannot yet say what its node's pods do (None: it can)."""
        pods = self.runtime.pods_reflector
        if pods is None or not pods.synced.is_set():
            return "the pods of this node have not been listed yet"
        if self.runtime.state:
            return "the pod watch is reconnecting"
        return None

    def metrics(self) -> str:
        from probetui.agent.metrics import render

        return render(self)

    def probe_count(self) -> int:
        return len(self.engine.workers)

    # -- running --------------------------------------------------------------------------

    async def run(self, duration: float | None = None) -> None:
        o = self.options
        if o.kubelet_version is None:
            # before serving: a reader's hello names the release its node's pods play
            await self._read_version()
        try:
            self.address = await self.server.start(o.bind, o.port)
        except OSError as e:
            raise RuntimeFailure(
                f"cannot serve on {_host(o.bind)}:{o.port}: {e.strerror or e} (another agent on "
                "this node, or --bind not one of its addresses?)"
            ) from None
        self.say(
            f"serving the pods of node {o.node} on http://{_host(self.address[0])}:"
            f"{self.address[1]}; the kubelet's counts from {self.kubelet.url} every "
            f"{o.scrape_every:g}s"
        )
        tasks = [
            asyncio.create_task(self._scrape_loop(), name="kubelet counts"),
            asyncio.create_task(self._tick_loop(), name="agent tick"),
        ]
        try:
            await self.engine.run(duration)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.server.close(f"the agent on node {o.node} is stopping")
            await wait_closed(self.kubelet)

    async def _tick_loop(self) -> None:
        align = self.options.tick_align
        await tick_forever(
            self.hub,
            self.ring,
            self.engine.lateness,
            lambda delay: sleep_on_grid(self.engine.clock, delay, align),
        )

    async def _scrape_loop(self) -> None:
        every = self.options.scrape_every
        loop = asyncio.get_running_loop()
        due = loop.time()
        while True:
            await self.scrape_once()
            # a fixed rate: a slow scrape does not push the next ones later
            due += every
            now = loop.time()
            if due < now:
                due = now + every - (now - due) % every
            await asyncio.sleep(due - now)

    async def scrape_once(self) -> None:
        """One scrape: counts frames, or the note that says why there are none."""
        try:
            counts = await self.kubelet.probes()
        except ScrapeError as e:
            self.scrape_errors[e.kind] += 1
            text = (
                f"node {self.options.node}: no kubelet counts: {e}; tried again every "
                f"{self.options.scrape_every:g}s, the shadow goes on"
            )
            if self.hub.notes.get(KUBELET_NOTE, {}).get("text") != text:
                self.say(text)
            self.hub.note(KUBELET_NOTE, text)
            return
        self.scrapes += 1
        if KUBELET_NOTE in self.hub.notes:
            self.say(f"node {self.options.node}: the kubelet's counts are read again")
        self.hub.note(KUBELET_NOTE, "")
        if self.options.kubelet_version is None and (
            self.runtime.kubelet_version is None
            or (self._kubelet_start is not None and counts.start != self._kubelet_start)
        ):
            # not read yet, or the kubelet restarted (perhaps another version)
            await self._read_version()
        self._kubelet_start = counts.start
        on_time = self.engine.lateness() < BEHIND
        self.join.frames(counts, self._shadow_probes(), on_time)
        self.hub.publish_counts(self.join.latest, self.join.encoded())

    async def _read_version(self) -> None:
        version = await self.kubelet.version()
        if version is None or version == self.runtime.kubelet_version:
            return
        self.runtime.kubelet_version = version
        # readers attached before know the node's release from this frame, later ones from
        # their hello
        self.hub.broadcast(
            {"k": KUBELET, "t": time.time(), "node": self.options.node, "version": version}
        )

    def _shadow_probes(self) -> list[ShadowProbe]:
        out = []
        for key, worker in self.engine.workers.items():
            snap = self.engine.pods.get(key.pod_uid)
            pod = snap.pod if snap is not None else worker.pod
            container = pod.container(key.container)
            run = container is not None and (
                self.runtime.not_probed(pod, container, key.probe_type) is None
            )
            out.append(
                ShadowProbe(
                    key,
                    PodNames(pod.uid, pod.namespace, pod.name),
                    # the worker's own counters: the join copies what it keeps
                    worker.probe_total if run else None,
                    id(worker),
                )
            )
        return out


async def tick_forever(
    hub: Hub,
    ring: Ring,
    lateness: Callable[[], float],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    """Once a second (`sleep(1.0)`): the hub's summaries and slow readers, the ring's age limit,
    and a `late` frame every `LATE_EVERY` (a reader's sign that the stream is alive)."""
    late_at = 0.0
    while True:
        await sleep(1.0)
        now = time.time()
        hub.tick(now)
        ring.prune(now)
        if now - late_at >= LATE_EVERY:
            late_at = now
            hub.broadcast({"k": LATE, "s": round(lateness(), 4)})


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(agent: Agent, duration: float | None = None) -> None:
    """Run `agent` until it ends, `duration` passes, or SIGTERM / SIGINT."""
    import signal

    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await agent.run(duration)


__all__ = ["Agent", "AgentOptions", "serve", "tick_forever"]
