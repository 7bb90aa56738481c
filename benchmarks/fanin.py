"""Fan-in: one cluster view reading many node agents through the API server's pods/proxy.

    python -m benchmarks.agents --mode fanin [--agents 50] [--pods-per-agent 300] [--rate 5000]
        [--agents-per-process 1] [--client both|headless|screen|summaries] [--duration 30]
        [--warmup 10] [--changes 0] [--counts-every 0] [--no-tls]

What runs, each in its own process, all on 127.0.0.1:

- `--agents` agents, one process each (or `--agents-per-process` of them sharing a process and
  its event loop, each with its own port: fewer interpreters where the machine is small; the
  figures are then the processes' sums all the same): the agent's own `Hub`, `Ring` and
  `AgentServer` (the
  stream, the token, the slow-reader rule, summaries, the ring a reopened stream resumes from),
  fed by a synthetic shadow instead of the engine: `--rate` attempts a second in all, spread over
  the node's probes (each pod an HTTP readiness and a TCP liveness probe on its app container and
  a gRPC readiness probe on a sidecar), each attempt's record made and published as the engine
  publishes one (`record_event`, via `direct`), all successes but where `--changes` turns that
  many published results over a second (in all), each of which the agent sends a summary of at
  once. With `--counts-every S`, each agent scrapes every S seconds as a real agent scrapes its
  kubelet (the kubelet agreeing with the shadow): a `counts` frame per probe to every reader.
  Nothing is dialled: the point is the reader's side; what one real agent costs is `--mode
  node`.
- the API emulator (`tests/kube/emulator`, TLS unless `--no-tls`) with the `--agents` x
  `--pods-per-agent` pods (Deployments spread one replica per node, in ten namespaces), an agent
  pod per node as the DaemonSet makes it, and the read token's Secret; its pods/proxy relays each
  reader's GET to the agent's port, streaming, as the API server does. It counts the bytes and
  chunks relayed.
- the client, in this process: the real cluster view (`KubernetesRuntime`, `--via agent`, all
  namespaces, the Deployments' pods by `-l pod-template-hash`, read-only) and its `Engine`,
  reading every agent through pods/proxy:
  - `headless`: into a sink that counts what arrives (as `--no-ui` does, without writing it
    out): every attempt of every pod. First a baseline with the agents quiet, then the feed;
    figures: the client's CPU per attempt (above its baseline), how late attempts arrive (from
    the attempt's end to the sink), the emulator's CPU per attempt relayed (what the API server
    would pay) and bytes per attempt, the agents' own CPU;
  - `screen`: the real `ProbeApp` on a null terminal (`benchmarks.ui`), with its store: the
    screen asks full attempts only for the pods it shows and summaries for the rest, so it reads
    much less; `j`/`k` are pressed on the grouped list (each move selects another workload,
    whose replicas sit on every node: every node's stream is opened again a second later), and
    each press is timed to its repaint as `benchmarks.fleet` times it. Goal: p99 under 50 ms.
  - `summaries` (alone, not in `both`): what an aggregator serving probe state would read. The
    same view told that no pod is shown in full, so each stream asks `pods=` none and
    `summary=1`; each summary frame is kept as its probe's latest (`Held`, standing in for the
    screen's `WorkerState`), nothing is drawn. Figures: summaries (and counts frames) offered,
    counted at the agents, and taken; the client's CPU per summary and in cores, above its
    quiet baseline; the probes held, the bytes of the kept frames (and of their values alone),
    the client's RSS before any summary and after.

Held: the agents fed at least 95% of `--rate`, the client took at least 95% of what they fed,
nothing dropped, and the p99 of how late an attempt arrived under 2 s. The machine is shared (two
cores): the agents, the emulator and the client compete, so `busy` says how loaded it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import multiprocessing
import os
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import (
    BenchError,
    environment,
    fmt_ms,
    format_table,
    machine_busy_seconds,
    peak_rss_mb,
    process_cpu_seconds,
    summary_ms,
)

READ_TOKEN = "bench-fanin-read-token-0123456789"
HASH = "5f7c9d8b6"
NAMESPACES = 10
HTTP_PORT, GRPC_PORT = 8080, 9090
FEED_EVERY = 0.02  # seconds between the synthetic shadow's batches
RETAIN = 600.0  # the agents' ring: ten minutes are plenty for a reopened stream
RETAIN_ENTRIES = 200_000
KEY_GOAL_MS = 50.0
HELD_SHARE = 0.95
HELD_LATE_S = 2.0
KEYS = ("j", "j", "k", "j", "k", "j")
CLIENTS = ("both", "headless", "screen", "summaries")


@dataclass(frozen=True)
class Config:
    agents: int = 50
    agents_per_process: int = 1
    pods_per_agent: int = 300
    rate: float = 5000.0
    changes: float = 0.0
    counts_every: float = 0.0
    client: str = "both"
    duration: float = 30.0
    warmup: float = 10.0
    baseline: float = 5.0
    tls: bool = True
    size: tuple[int, int] = (160, 45)
    key_timeout: float = 2.0
    pause: tuple[float, float] = (0.2, 0.5)
    seed: int = 1

    @property
    def probes(self) -> int:
        return 3 * self.agents * self.pods_per_agent

    @property
    def period(self) -> int:
        """Each probe's period in the pods' specs: what makes `rate` over every probe."""
        return max(1, round(self.probes / self.rate))


# -- the cluster --------------------------------------------------------------------------------


def node_name(i: int) -> str:
    return f"node-{i:04d}"


def cluster(config: Config) -> dict[str, list[dict[str, Any]]]:
    """Every node's pods: `pods_per_agent` Deployments with a replica on each node."""
    from tests.kube.emulator import container, make_pod

    def probe(handler: dict[str, Any]) -> dict[str, Any]:
        return {**handler, "periodSeconds": config.period, "timeoutSeconds": 1}

    out: dict[str, list[dict[str, Any]]] = {node_name(n): [] for n in range(config.agents)}
    for g in range(config.pods_per_agent):
        base, namespace = f"svc-{g}", f"team-{g % NAMESPACES}"
        for n in range(config.agents):
            name = f"{base}-{HASH}-{n:05d}"
            pod = make_pod(
                name,
                namespace=namespace,
                node=node_name(n),
                labels={"app": base, "pod-template-hash": HASH},
                containers=[
                    container(
                        "app",
                        ports=(HTTP_PORT,),
                        readiness=probe({"httpGet": {"path": "/ready", "port": HTTP_PORT}}),
                        liveness=probe({"tcpSocket": {"port": HTTP_PORT}}),
                    ),
                    container("sidecar", readiness=probe({"grpc": {"port": GRPC_PORT}})),
                ],
            )
            meta = pod["metadata"]
            meta["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"probetui-fanin/{namespace}/{name}"))
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{base}-{HASH}",
                    "uid": f"owner-{g}",
                    "controller": True,
                }
            ]
            out[node_name(n)].append(pod)
    return out


# -- an agent: the agent's hub and server, fed by a synthetic shadow ----------------------------


class SyntheticShadow:
    """A node's doProbe records, made and published as the engine publishes its own: every
    probe of every pod in turn, all successes, `rate` a second."""

    def __init__(self, objs: list[dict[str, Any]], rate: float, changes: float = 0.0) -> None:
        from probetui.prober.worker import ProbeKey
        from probetui.runtime.kubernetes.observed import pod_status
        from probetui.spec.model import ProbeType
        from probetui.spec.parse import pod_from_object

        self.rate = rate
        self.pods = [(pod_from_object(o, "fanin"), pod_status(o)) for o in objs]
        self.probes: list[tuple[Any, Any, str, str, str]] = []
        for pod, status in self.pods:
            ids = {c.name: c.container_id for c in status.container_statuses}
            ip = status.pod_ip
            for c, probe_type, handler, target in (
                ("app", ProbeType.READINESS, "http", f"http://{ip}:{HTTP_PORT}/ready"),
                ("app", ProbeType.LIVENESS, "tcp", f"{ip}:{HTTP_PORT}"),
                ("sidecar", ProbeType.READINESS, "grpc", f"{ip}:{GRPC_PORT}"),
            ):
                key = ProbeKey(pod.uid, c, probe_type)
                self.probes.append((pod, key, handler, target, ids.get(c, "")))
        self.runs = [0] * len(self.probes)
        # every `flip_every`-th attempt turns its probe's published result over, as if its
        # thresholds were 1: a change the agent sends a summary of at once, not a minute later
        self.flip_every = rate / changes if changes > 0 else 0.0
        self.failing = [False] * len(self.probes)
        self.attempts = 0
        self.flips = 0
        self.passed = [0] * len(self.probes)
        self.failed = [0] * len(self.probes)
        self.period = len(self.probes) / rate if rate > 0 else 0.0
        self.next = 0
        self.published = 0

    def publish(self, hub: Any, n: int) -> None:
        from probetui.probe.base import Attempt, Result
        from probetui.prober.prober import ProbeOutcome
        from probetui.prober.results import ResultValue
        from probetui.prober.worker import ProbeRecord, Trigger
        from probetui.timeline.events import record_event

        for _ in range(n):
            i = self.next
            self.next = (i + 1) % len(self.probes)
            pod, key, handler, target, cid = self.probes[i]
            self.attempts += 1
            if self.flip_every and self.attempts >= (self.flips + 1) * self.flip_every:
                self.flips += 1
                self.failing[i] = not self.failing[i]
                self.runs[i] = 0
            failing = self.failing[i]
            if failing:
                self.failed[i] += 1
            else:
                self.passed[i] += 1
            now = time.time()
            latency = 0.0008 + (i % 7) * 1e-4
            http = handler == "http"
            result, value = (
                (Result.FAILURE, ResultValue.FAILURE) if failing
                else (Result.SUCCESS, ResultValue.SUCCESS)
            )  # fmt: skip
            output = "HTTP probe failed with statuscode: 503" if failing and http else ""
            status = (503 if failing else 200) if http else None
            attempt = Attempt(handler, target, result, output, None, latency, now - latency,
                              status, ("ok" if not failing else "down") if http else None)  # fmt: skip
            self.runs[i] += 1
            record = ProbeRecord(
                key, now - latency, now - latency - 0.0003, Trigger.TICK, cid,
                outcome=ProbeOutcome(value, None, (attempt,), None),
                finished_at=now, result_run=self.runs[i], published=value,
                next_tick=now - latency + self.period,
            )  # fmt: skip
            hub.event(record_event(pod, record, "direct"))
        self.published += n

    def scrape(self, hub: Any, join: Any) -> int:
        """One scrape of the kubelet's counts as the agent makes it, the kubelet agreeing with
        the shadow: a `counts` frame of every probe to every reader; how many frames went."""
        from probetui.agent.counts import ShadowProbe
        from probetui.agent.kubelet import KubeletCounts
        from probetui.stream.rows import PodNames

        scraped = KubeletCounts(time.time(), join.agent_start)
        probes = []
        for i, (pod, key, _, _, _) in enumerate(self.probes):
            counts = {"successful": self.passed[i], "failed": self.failed[i], "unknown": 0}
            scraped.series[(pod.uid, key.container, key.probe_type.value)] = counts
            names = PodNames(pod.uid, pod.namespace, pod.name)
            probes.append(ShadowProbe(key, names, dict(counts), i))
        join.frames(scraped, probes, True)
        hub.publish_counts(join.latest, join.encoded())
        return len(join.latest) * len(hub.clients)

    async def scrape_forever(self, hub: Any, every: float, sent: Any, slot: int) -> None:
        """`scrape` every `every` seconds from a random phase, as agents started apart do."""
        import random

        from probetui.agent.counts import CountsJoin

        join = CountsJoin(time.time())
        await asyncio.sleep(random.uniform(0, every))
        while True:
            sent[slot] += self.scrape(hub, join)
            await asyncio.sleep(every)

    async def run(self, hub: Any, fed: Any, index: int) -> None:
        """`rate` a second, in batches; a process starved of CPU catches up at most a second."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        due = 0
        while True:
            await asyncio.sleep(FEED_EVERY)
            target = int((loop.time() - start) * self.rate)
            if target - due > self.rate:
                due = target - int(self.rate)  # more than a second behind: those are lost
            n = target - due
            due = target
            if n > 0:
                self.publish(hub, n)
                fed[index] = self.published


def _agents_main(nodes: list[tuple[int, str, list[dict[str, Any]]]], rate: float,
                 changes: float, counts_every: float, token_file: str, queue: Any, go: Any,
                 stop: Any, fed: Any, offered: Any, slot: int) -> None:  # fmt: skip
    """Run the agents of one process, each with its own hub, ring, server and shadow;
    `offered[2 * slot]` counts their summary frames, `offered[2 * slot + 1]` their counts."""
    _count_summaries(offered, 2 * slot)

    async def main() -> None:
        await asyncio.gather(
            *(_agent(node, objs, rate, changes, counts_every, token_file, i, queue, go, stop,
                     fed, offered, 2 * slot + 1)
              for i, node, objs in nodes)
        )  # fmt: skip

    asyncio.run(main())


def _count_summaries(offered: Any, slot: int) -> None:
    """Count in `offered[slot]` every `summary` frame this process's agents send."""
    from probetui.agent.summary import ProbeSummary

    frame = ProbeSummary.frame

    def counted(self: ProbeSummary, now: float) -> dict[str, Any]:
        offered[slot] += 1
        return frame(self, now)

    ProbeSummary.frame = counted  # type: ignore[method-assign]


async def _agent(node: str, objs: list[dict[str, Any]], rate: float, changes: float,
                 counts_every: float, token_file: str, index: int, queue: Any, go: Any,
                 stop: Any, fed: Any, offered: Any, slot: int) -> None:  # fmt: skip
    from probetui import __version__
    from probetui.agent.hub import Hub
    from probetui.agent.ring import Ring
    from probetui.agent.run import tick_forever
    from probetui.agent.server import AgentServer, StreamQuery, TokenFile
    from probetui.stream.protocol import hello

    started = time.time()
    ring = Ring(RETAIN, RETAIN_ENTRIES)
    hub = Hub(ring, node=node)
    shadow = SyntheticShadow(objs, rate, changes)
    for pod, status in shadow.pods:
        hub.pod(pod, status)

    def say_hello(query: StreamQuery) -> dict[str, Any]:
        return hello(
            "agent", node=node, pid=0, probetui=__version__, start=started, now=time.time(),
            counts=True, rows=query.rows, summary=query.summary,
            pods=None if query.pods is None else len(query.pods), since=query.since,
            kept=ring.oldest, retain=RETAIN, scrapeEvery=10.0, via="direct",
            kubeletVersion="v1.35.4",
        )  # fmt: skip

    server = AgentServer(
        hub,
        TokenFile(token_file),
        hello=say_hello,
        metrics=lambda: "",
        replay_window=lambda: time.time() - RETAIN,
    )
    _, port = await server.start("127.0.0.1", 0)
    queue.put((node, port))
    tasks = [asyncio.create_task(tick_forever(hub, ring, lambda: 0.0))]
    try:
        await asyncio.to_thread(go.wait)
        if not stop.is_set():
            tasks.append(asyncio.create_task(shadow.run(hub, fed, index)))
            if counts_every > 0:
                scrapes = shadow.scrape_forever(hub, counts_every, offered, slot)
                tasks.append(asyncio.create_task(scrapes))
        await asyncio.to_thread(stop.wait)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.close("the benchmark is over")


# -- the API emulator ---------------------------------------------------------------------------


def _serve_main(pods: list[dict[str, Any]], ports: dict[str, int], workdir: str, tls: bool,
                queue: Any, stop: Any, relayed: Any) -> None:  # fmt: skip
    asyncio.run(_serve(pods, ports, workdir, tls, queue, stop, relayed))


async def _serve(pods: list[dict[str, Any]], ports: dict[str, int], workdir: str, tls: bool,
                 queue: Any, stop: Any, relayed: Any) -> None:  # fmt: skip
    from probetui.agent.manifest import NAMESPACE, PORT, SECRET
    from tests.agent.reader_bench import agent_pod
    from tests.kube.emulator import ApiEmulator

    async with ApiEmulator(tls=tls) as api:
        for pod in pods:
            api.add_pod(pod)
        for node, port in ports.items():
            name = f"probetui-agent-{node}"
            api.add_pod(agent_pod(name, node))
            api.map_port(name, PORT, port, namespace=NAMESPACE)
        api.add_secret(SECRET, {"token": READ_TOKEN}, namespace=NAMESPACE)
        queue.put(str(api.kubeconfig(Path(workdir) / "kubeconfig")))
        while not stop.is_set():
            relayed[0], relayed[1] = api.proxied_bytes, api.proxied_chunks
            await asyncio.sleep(0.1)


# -- the client ---------------------------------------------------------------------------------


class Meter:
    """An engine sink that counts what reaches it, and how late each attempt arrived."""

    def __init__(self) -> None:
        self.attempts = 0
        self.states = 0
        self.other = 0
        self.dropped = 0
        self.late: list[float] = []
        self.timing = False

    def event(self, event: Any) -> None:
        kind = event.type
        if kind == "ProbeAttempt":
            self.attempts += 1
            if self.timing and event.record is not None and event.record.finished_at:
                self.late.append(time.time() - event.record.finished_at)
        elif kind == "WorkerState":
            self.states += 1
        elif kind == "EventsDropped":
            self.dropped += int(event.fields.get("count", 0))
        else:
            self.other += 1

    def pod(self, pod: Any, status: Any) -> None:
        pass


@dataclass
class Rig:
    """What the client's phases read: the other processes and their counters."""

    kubeconfig: str
    emulator_pid: int
    agent_pids: list[int]
    relayed: Any  # [bytes, chunks] the emulator relayed
    fed: Any  # attempts each agent published
    go: Any  # the agents' feed starts when set
    agents: int
    offered: Any  # summary frames the agents of each process sent

    def sample(self) -> dict[str, float]:
        return {
            "t": time.perf_counter(),
            "cpu": time.process_time(),
            "busy": machine_busy_seconds(),
            "emulator": process_cpu_seconds(self.emulator_pid),
            "agents": sum(process_cpu_seconds(pid) for pid in self.agent_pids),
            "bytes": float(self.relayed[0]),
            "chunks": float(self.relayed[1]),
            "fed": float(sum(self.fed[:])),
            "offered": float(sum(self.offered[0::2])),
            "counts": float(sum(self.offered[1::2])),
        }


def _delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
    return {k: b[k] - a[k] for k in a}


def _view(kubeconfig: str) -> Any:
    from probetui.runtime.kubernetes.config import ConnectOptions, resolve
    from probetui.runtime.kubernetes.runtime import KubernetesRuntime

    # the Deployments' pods (`-A -l pod-template-hash`): the agents' own DaemonSet would sort
    # first on the screen and hold its rows, and its pods here have no probes
    options = ConnectOptions(
        kubeconfig=kubeconfig, all_namespaces=True, selector="pod-template-hash", read_only=True
    )
    target = resolve(options, environ={}, service_account_dir=Path(kubeconfig).parent / "no-sa")
    return KubernetesRuntime(target, via="agent", fail_fast=True)


async def _until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise BenchError(f"{what} did not happen within {timeout:g} s")
        await asyncio.sleep(0.05)


def _all_live(runtime: Any, agents: int) -> bool:
    reader = runtime.agents
    if reader is None:
        return False
    return sum(1 for s in reader.streams.values() if s.live) >= agents


async def _streams_live(runtime: Any, task: asyncio.Task[Any], config: Config) -> float:
    """Wait for every agent's stream to be live; return the seconds it took."""
    began = time.perf_counter()
    try:
        await _until(
            lambda: task.done() or _all_live(runtime, config.agents), 300, "every agent's stream"
        )
    except BenchError as e:
        live = sum(1 for s in runtime.agents.streams.values() if s.live) if runtime.agents else 0
        raise BenchError(f"{e} ({live} of {config.agents} live)") from None
    if task.done():
        task.result()
        raise BenchError("the cluster view ended before reading the agents")
    return time.perf_counter() - began


async def _quiet_baseline(rig: Rig, config: Config) -> dict[str, float] | None:
    """Sample the rig before the synthetic agents start, once per rig: the client's CPU with
    nothing to read."""
    if rig.go.is_set():
        return None
    await asyncio.sleep(1.0)
    s0 = rig.sample()
    await asyncio.sleep(config.baseline)
    return _delta(s0, rig.sample())


async def _headless(config: Config, rig: Rig) -> dict[str, Any]:
    from probetui.engine import Engine

    runtime = _view(rig.kubeconfig)
    meter = Meter()
    engine = Engine(runtime, [meter])
    task = asyncio.create_task(engine.run())
    try:
        live_s = await _streams_live(runtime, task, config)
        quiet = await _quiet_baseline(rig, config)
        rig.go.set()
        await asyncio.sleep(config.warmup)
        a0, f0 = meter.attempts, meter.dropped
        meter.timing = True
        s0 = rig.sample()
        await asyncio.sleep(config.duration)
        d = _delta(s0, rig.sample())
        meter.timing = False
        attempts, dropped = meter.attempts - a0, meter.dropped - f0
        connections = sum(s.connections for s in runtime.agents.streams.values())
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    wall = d["t"]
    base = quiet["cpu"] / quiet["t"] if quiet else 0.0
    late = summary_ms(meter.late)
    fed_per_s = d["fed"] / wall
    took = attempts / wall
    held = (
        fed_per_s >= HELD_SHARE * config.rate
        and took >= HELD_SHARE * fed_per_s
        and dropped == 0
        and bool(late["n"])
        and late["p99_ms"] < HELD_LATE_S * 1000  # type: ignore[operator]
    )
    per = max(1, attempts)
    return {
        "streams_live_s": round(live_s, 2),
        "window_s": round(wall, 2),
        "fed_per_s": round(fed_per_s, 1),
        "attempts_per_s": round(took, 1),
        "dropped": dropped,
        "late": late,
        "held": held,
        "client_cores": round(d["cpu"] / wall, 3),
        "client_baseline_cores": round(base, 3) if quiet else None,
        "client_us_per_attempt": round(d["cpu"] * 1e6 / per, 1),
        "client_us_per_attempt_above_baseline": round(
            max(0.0, d["cpu"] - base * wall) * 1e6 / per, 1
        ),
        "emulator_cores": round(d["emulator"] / wall, 3),
        "emulator_baseline_cores": round(quiet["emulator"] / quiet["t"], 3) if quiet else None,
        "emulator_us_per_attempt": round(d["emulator"] * 1e6 / per, 1),
        "relayed_bytes_per_s": round(d["bytes"] / wall),
        "relayed_bytes_per_attempt": round(d["bytes"] / per, 1),
        "relayed_chunks_per_s": round(d["chunks"] / wall, 1),
        "agents_cores": round(d["agents"] / wall, 3),
        "agents_us_per_attempt": round(d["agents"] * 1e6 / max(1.0, d["fed"]), 1),
        "machine_busy_cores": round(d["busy"] / wall, 2),
        "stream_connections": connections,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


class Held:
    """What an aggregator keeps: the latest `summary` frame of each probe, as its agent sent it.

    It stands in for the view's `AgentReader.summary` (which makes a `WorkerState` for the
    screen's list): the frames come through the same streams, decoded the same way."""

    def __init__(self) -> None:
        self.latest: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.taken = 0
        self.counts = 0  # `counts` frames, which go on to the view's own judge

    def judged_by(self, judge: Any) -> None:
        """Count each `counts` frame `judge` is handed, which it then takes as it would."""
        frame = judge.frame

        def counted(node: str, f: dict[str, Any]) -> list[Any]:
            self.counts += 1
            return frame(node, f)

        judge.frame = counted

    def take(self, node: str, frame: dict[str, Any]) -> None:
        self.latest[(str(frame.get("uid")), str(frame.get("c")), str(frame.get("probe")))] = frame
        self.taken += 1


def deep_bytes(root: Any) -> int:
    """Return the bytes of `root` and every object it holds (dicts, lists, tuples, scalars),
    each counted once: what a store of decoded frames holds in memory."""
    import sys

    seen: set[int] = set()
    stack, total = [root], 0
    while stack:
        obj = stack.pop()
        if obj is None or isinstance(obj, bool) or id(obj) in seen:
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple):
            stack.extend(obj)
    return total


def values_only(frame: Any) -> Any:
    """Return `frame` with every object's keys left out, nested ones too: the least a store
    of summaries could hold of it without another encoding (the keys are the protocol's)."""
    if isinstance(frame, dict):
        return tuple(values_only(v) for v in frame.values())
    return frame


async def _summaries(config: Config, rig: Rig) -> dict[str, Any]:
    """An aggregator's reading: every agent through pods/proxy, summaries only, kept, drawn
    nowhere."""
    from probetui.engine import Engine

    runtime = _view(rig.kubeconfig)
    reader = runtime.agents
    assert reader is not None
    # no pod shown in full: every stream asks `pods=` none and `summary=1`, as the screen asks
    # for the pods it does not show
    runtime.focus(())
    held = Held()
    reader.summary = held.take  # type: ignore[method-assign]
    held.judged_by(reader.counts)
    meter = Meter()
    engine = Engine(runtime, [meter])
    task = asyncio.create_task(engine.run())
    try:
        live_s = await _streams_live(runtime, task, config)
        quiet = await _quiet_baseline(rig, config)
        # no probe has a summary before its first attempt: what the view holds without any
        rss_before = _rss_mb(os.getpid())
        rig.go.set()
        await asyncio.sleep(config.warmup)
        await _until(
            lambda: task.done() or len(held.latest) >= config.probes,
            120,
            "a summary of every probe",
        )
        t0, a0, c0 = held.taken, meter.attempts, held.counts
        s0 = rig.sample()
        await asyncio.sleep(config.duration)
        d = _delta(s0, rig.sample())
        taken, attempts, counts = held.taken - t0, meter.attempts - a0, held.counts - c0
        connections = sum(s.connections for s in reader.streams.values())
        asked = [-1 if s.wanted is None else len(s.wanted) for s in reader.streams.values()]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    rss = _rss_mb(os.getpid())
    store = deep_bytes(held.latest)
    # the key tuple's strings are the frame's own, which the values keep too
    lean = deep_bytes({k: values_only(f) for k, f in held.latest.items()})
    wall = d["t"]
    base = quiet["cpu"] / quiet["t"] if quiet else 0.0
    per = max(1, taken)
    return {
        "streams_live_s": round(live_s, 2),
        "window_s": round(wall, 2),
        "fed_per_s": round(d["fed"] / wall, 1),
        "offered_per_s": round(d["offered"] / wall, 1),
        "summaries_per_s": round(taken / wall, 1),
        "counts_offered_per_s": round(d["counts"] / wall, 1),
        "counts_per_s": round(counts / wall, 1),
        "attempts_per_s": round(attempts / wall, 1),
        "pods_asked_in_full": asked,  # per stream (-1: every pod)
        "held": taken >= HELD_SHARE * d["offered"] and counts >= HELD_SHARE * d["counts"],
        "client_cores": round(d["cpu"] / wall, 3),
        "client_baseline_cores": round(base, 3) if quiet else None,
        "client_us_per_summary": round(d["cpu"] * 1e6 / per, 1),
        "client_us_per_summary_above_baseline": round(
            max(0.0, d["cpu"] - base * wall) * 1e6 / per, 1
        ),
        "client_us_per_frame": round(d["cpu"] * 1e6 / max(1, taken + counts), 1),
        "emulator_cores": round(d["emulator"] / wall, 3),
        "emulator_us_per_summary": round(d["emulator"] * 1e6 / per, 1),
        "relayed_bytes_per_s": round(d["bytes"] / wall),
        "relayed_bytes_per_summary": round(d["bytes"] / per, 1),
        "relayed_chunks_per_s": round(d["chunks"] / wall, 1),
        "agents_cores": round(d["agents"] / wall, 3),
        "machine_busy_cores": round(d["busy"] / wall, 2),
        "stream_connections": connections,
        "probes_held": len(held.latest),
        "store_bytes": store,
        "store_bytes_per_probe": round(store / max(1, len(held.latest))),
        "values_only_bytes_per_probe": round(lean / max(1, len(held.latest))),
        "rss_mb_live": rss_before,
        "rss_mb": rss,
    }


async def _screen(config: Config, rig: Rig) -> dict[str, Any]:
    import random
    from datetime import UTC

    from benchmarks.fleet import _expect, _install, _press
    from benchmarks.ui import _GCWatch, _null_terminal, _Recorder
    from probetui.engine import Engine
    from probetui.timeline.store import Store
    from probetui.ui.app import ProbeApp
    from probetui.ui.widgets.workloads import WorkloadList

    rng = random.Random(config.seed)
    runtime = _view(rig.kubeconfig)
    store, meter = Store(), Meter()
    app = ProbeApp(Engine(runtime, [store, meter]), store, tz=UTC)
    app.driver_class = _null_terminal()
    rec = _Recorder()
    first: dict[str, float] = {}
    pods = config.agents * config.pods_per_agent
    _install(rec, app, first, pods)
    presses: list[Any] = []
    gc_watch = _GCWatch()
    gc.callbacks.append(gc_watch)
    try:
        async with app.run_test(headless=False, size=config.size, message_hook=rec.on_message):
            began = time.perf_counter()
            await _until(lambda: "screen" in first, 300, "the first full screen")
            first_s = time.perf_counter() - began
            rig.go.set()
            wl = app.screen.query_one(WorkloadList)
            await asyncio.sleep(config.warmup)
            a0, st0, f0 = meter.attempts, meter.states, meter.dropped
            meter.timing = True
            gc_watch.active = True
            s0 = rig.sample()
            end = s0["t"] + config.duration
            i = 0
            while time.perf_counter() < end:
                key = KEYS[i % len(KEYS)]
                i += 1
                presses.append(
                    await _press(app, rec, key, _expect(key, wl, ""), config.key_timeout)
                )
                await asyncio.sleep(rng.uniform(*config.pause))
            d = _delta(s0, rig.sample())
            gc_watch.active = False
            meter.timing = False
            attempts, states = meter.attempts - a0, meter.states - st0
            dropped = meter.dropped - f0
            reader = runtime.agents
            connections = sum(s.connections for s in reader.streams.values()) if reader else 0
            focus = len(reader.focus) if reader is not None and reader.focus is not None else None
            await app.stop_engine()
    finally:
        rec.uninstall()
        gc.callbacks.remove(gc_watch)
    wall = d["t"]
    keys = summary_ms(p.t_done - p.t0 for p in presses if p.t_done is not None)
    complete = [p for p in presses if p.t_done and p.t_dispatch and p.t_render]
    return {
        "first_full_screen_s": round(first_s, 2),
        "window_s": round(wall, 2),
        "fed_per_s": round(d["fed"] / wall, 1),
        "attempts_per_s": round(attempts / wall, 1),
        "summaries_per_s": round(states / wall, 1),
        "dropped": dropped,
        "late": summary_ms(meter.late),
        "focus_pods": focus,
        "key_to_repaint": keys,
        "phases": {
            "queued": summary_ms(p.t_dispatch - p.t0 for p in complete),
            "handled_and_drawn": summary_ms(p.t_render - p.t_dispatch for p in complete),
            "to_terminal": summary_ms(p.t_done - p.t_render for p in complete),
        },
        "key_cpu": summary_ms(p.cpu for p in presses),
        "keys_without_repaint": [p.key for p in presses if p.t_done is None],
        "goal_met": bool(keys["n"])
        and keys["p99_ms"] < KEY_GOAL_MS  # type: ignore[operator]
        and not any(p.t_done is None for p in presses),
        "client_cores": round(d["cpu"] / wall, 3),
        "emulator_cores": round(d["emulator"] / wall, 3),
        "relayed_bytes_per_s": round(d["bytes"] / wall),
        "relayed_chunks_per_s": round(d["chunks"] / wall, 1),
        "agents_cores": round(d["agents"] / wall, 3),
        "machine_busy_cores": round(d["busy"] / wall, 2),
        "stream_connections": connections,
        "gc": gc_watch.summary(),
        "store_attempts_held": store.attempts(),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


# -- the run ------------------------------------------------------------------------------------


def _stop(proc: Any) -> None:
    proc.join(10)
    if proc.is_alive():
        proc.kill()
        proc.join(5)


async def _run(config: Config) -> dict[str, Any]:
    pods = cluster(config)
    ctx = multiprocessing.get_context("spawn")
    queue, go, stop = ctx.Queue(), ctx.Event(), ctx.Event()
    fed = ctx.Array("q", config.agents, lock=False)
    group = max(1, config.agents_per_process)
    offered = ctx.Array("q", 2 * -(-config.agents // group), lock=False)
    relayed = ctx.Array("q", 2, lock=False)
    procs: list[Any] = []
    with tempfile.TemporaryDirectory(prefix="probetui-fanin-") as workdir:
        token = Path(workdir) / "read-token"
        token.write_text(READ_TOKEN)
        try:
            began = time.perf_counter()
            share, changes = config.rate / config.agents, config.changes / config.agents
            nodes = [(i, node, objs) for i, (node, objs) in enumerate(pods.items())]
            for at in range(0, len(nodes), group):
                args = (nodes[at : at + group], share, changes, config.counts_every, str(token),
                        queue, go, stop, fed, offered, at // group)  # fmt: skip
                proc = ctx.Process(target=_agents_main, args=args, daemon=True)
                proc.start()
                procs.append(proc)
            ports: dict[str, int] = {}
            while len(ports) < config.agents:
                node, port = await asyncio.to_thread(queue.get, True, 300)
                ports[node] = port
            agents_s = time.perf_counter() - began
            every = [pod for objs in pods.values() for pod in objs]
            server = ctx.Process(
                target=_serve_main,
                args=(every, ports, workdir, config.tls, queue, stop, relayed),
                daemon=True,
            )
            server.start()
            procs.append(server)
            kubeconfig = await asyncio.to_thread(queue.get, True, 300)
            rig = Rig(kubeconfig, server.pid or 0, [p.pid for p in procs[:-1]], relayed, fed, go,
                      config.agents, offered)  # fmt: skip
            result: dict[str, Any] = {
                "mode": "fanin",
                "config": asdict(config),
                "period_s": config.period,
                "pods": config.agents * config.pods_per_agent,
                "probes": config.probes,
                "agents_started_s": round(agents_s, 1),
            }
            if config.client in ("both", "headless"):
                result["headless"] = await _headless(config, rig)
            if config.client in ("both", "screen"):
                result["screen"] = await _screen(config, rig)
            if config.client == "summaries":
                result["summaries"] = await _summaries(config, rig)
            result["emulator_rss_mb"] = _rss_mb(server.pid or 0)
            result["agent_processes"] = len(procs) - 1
            result["agent_rss_mb"] = round(
                sum(_rss_mb(p.pid) for p in procs[:-1]) / max(1, config.agents), 1
            )
            result["environment"] = environment(target="synthetic shadow (no targets dialled)")
            return result
        finally:
            stop.set()
            go.set()
            for proc in procs:
                _stop(proc)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) * 1024 / 1e6, 1)
    except OSError:
        pass
    return 0.0


def run(config: Config) -> dict[str, Any]:
    from benchmarks.ui import _terminal_env

    if config.client not in CLIENTS:
        raise BenchError(f"--client: one of {', '.join(CLIENTS)}")
    if config.agents < 1 or config.pods_per_agent < 1 or config.rate <= 0:
        raise BenchError("--agents and --pods-per-agent at least 1, --rate above 0")
    if not 0 <= config.changes <= config.rate:
        raise BenchError("--changes: 0 to --rate (a change rides on an attempt)")
    if config.counts_every < 0:
        raise BenchError("--counts-every: seconds, 0 (no scrapes) or more")
    if config.agents_per_process < 1:
        raise BenchError("--agents-per-process: at least 1")
    if config.duration <= 0 or config.warmup < 0 or config.baseline <= 0:
        raise BenchError("--duration and --baseline above 0, --warmup 0 or more")
    gc_was_frozen = gc.get_freeze_count()
    try:
        with _terminal_env():
            return asyncio.run(_run(config))
    finally:
        if gc.get_freeze_count() != gc_was_frozen:
            gc.unfreeze()  # the view froze the heap after its first list; give it back


# -- output -------------------------------------------------------------------------------------


def table(r: dict[str, Any]) -> str:
    c = r["config"]
    rows = [
        (
            "cluster",
            f"{c['agents']} agents x {c['pods_per_agent']} pods ({r['pods']:,} pods, "
            f"{r['probes']:,} probes at period {r['period_s']} s), {c['rate']:,.0f} attempts/s "
            f"asked, API server {'TLS' if c['tls'] else 'plain HTTP'}",
        ),
        (
            "agents",
            f"{r['agent_processes']} processes, {r['agent_rss_mb']} MB RSS an agent; the "
            f"emulator {r['emulator_rss_mb']} MB",
        ),
    ]
    h = r.get("headless")
    if h is not None:
        rows += [
            (
                "headless: flow",
                f"fed {h['fed_per_s']:,.0f}/s, taken {h['attempts_per_s']:,.0f}/s, "
                f"{h['dropped']} dropped: {'held' if h['held'] else 'NOT held'}",
            ),
            ("  late ms", fmt_ms(h["late"])),
            (
                "  client CPU",
                f"{h['client_cores']:.3f} cores, {h['client_us_per_attempt']} us an attempt "
                f"({h['client_us_per_attempt_above_baseline']} above its quiet "
                f"{h['client_baseline_cores']} cores)",
            ),
            (
                "  API server (emulator)",
                f"{h['emulator_cores']:.3f} cores, {h['emulator_us_per_attempt']} us an "
                f"attempt relayed; {h['relayed_bytes_per_attempt']} B an attempt, "
                f"{h['relayed_bytes_per_s'] / 1e3:,.0f} kB/s in {h['relayed_chunks_per_s']:,.0f} "
                "chunks/s",
            ),
            (
                "  agents",
                f"{h['agents_cores']:.3f} cores in all, {h['agents_us_per_attempt']} us an "
                "attempt (synthetic shadow included)",
            ),
            (
                "  measured",
                f"{h['window_s']} s after {c['warmup']} s; streams live "
                f"{h['streams_live_s']} s after the start; machine {h['machine_busy_cores']} "
                f"cores busy of {r['environment']['cpus']}",
            ),
        ]
    s = r.get("screen")
    if s is not None:
        rows += [
            (
                "screen: key -> repaint ms",
                f"{fmt_ms(s['key_to_repaint'])}  goal p99 < {KEY_GOAL_MS:g}: "
                f"{'met' if s['goal_met'] else 'NOT met'}",
            ),
            ("  phase: queued", fmt_ms(s["phases"]["queued"])),
            ("  phase: drawn", fmt_ms(s["phases"]["handled_and_drawn"])),
            ("  phase: written", fmt_ms(s["phases"]["to_terminal"])),
            (
                "  reads",
                f"{s['attempts_per_s']:,.0f} attempts/s of {s['fed_per_s']:,.0f} fed (pods "
                f"shown: {s['focus_pods']}), {s['summaries_per_s']:,.0f} summaries/s, "
                f"{s['relayed_bytes_per_s'] / 1e3:,.0f} kB/s",
            ),
            ("  late ms", fmt_ms(s["late"])),
            (
                "  CPU cores",
                f"client {s['client_cores']:.3f}, emulator {s['emulator_cores']:.3f}, agents "
                f"{s['agents_cores']:.3f}; machine {s['machine_busy_cores']} busy",
            ),
            (
                "  first full screen",
                f"{s['first_full_screen_s']} s; {s['stream_connections']} stream connections",
            ),
        ]
    m = r.get("summaries")
    if m is not None:
        rows += [
            (
                "summaries: flow",
                f"offered {m['offered_per_s']:,.0f}/s (the agents' shadow {m['fed_per_s']:,.0f} "
                f"attempts/s, {c['changes']:,.0f} result changes/s), taken "
                f"{m['summaries_per_s']:,.0f}/s: {'held' if m['held'] else 'NOT held'}; "
                f"{m['attempts_per_s']:,.0f} attempts/s (pods asked in full: "
                f"{max(m['pods_asked_in_full'], default=0)})",
            ),
            (
                "  counts frames",
                f"offered {m['counts_offered_per_s']:,.0f}/s (a scrape every "
                f"{c['counts_every']:g} s), taken {m['counts_per_s']:,.0f}/s; "
                f"{m['client_us_per_frame']} us of client CPU a frame, summaries and counts"
                if c.get("counts_every")
                else "none (the agents do not scrape: --counts-every 0)",
            ),
            (
                "  client CPU",
                f"{m['client_cores']:.3f} cores, {m['client_us_per_summary']} us a summary "
                f"({m['client_us_per_summary_above_baseline']} above its quiet "
                f"{m['client_baseline_cores']} cores)",
            ),
            (
                "  client memory",
                f"{m['probes_held']:,} probes held, {m['store_bytes'] / 1e6:,.1f} MB as decoded "
                f"frames ({m['store_bytes_per_probe']:,} B a probe; their values alone "
                f"{m['values_only_bytes_per_probe']:,} B); RSS {m['rss_mb']} MB "
                f"({m['rss_mb_live']} MB before any summary)",
            ),
            (
                "  API server (emulator)",
                f"{m['emulator_cores']:.3f} cores, {m['emulator_us_per_summary']} us a summary "
                f"relayed; {m['relayed_bytes_per_summary']} B a summary, "
                f"{m['relayed_bytes_per_s'] / 1e3:,.0f} kB/s in {m['relayed_chunks_per_s']:,.0f} "
                "chunks/s",
            ),
            ("  agents", f"{m['agents_cores']:.3f} cores in all (synthetic shadow included)"),
            (
                "  measured",
                f"{m['window_s']} s after {c['warmup']} s; streams live {m['streams_live_s']} s "
                f"after the start, {m['stream_connections']} connections; machine "
                f"{m['machine_busy_cores']} cores busy of {r['environment']['cpus']}",
            ),
        ]
    return format_table("the cluster view reading node agents (fan-in)", rows)


__all__ = ["Config", "Meter", "SyntheticShadow", "cluster", "run", "table"]
