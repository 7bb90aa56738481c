"""Run the parent's side of the shards.

Start them, feed them their pods, read their streams into the sinks, route commands, restart a
shard that dies, end them all on the way out.

`ShardPool` stands where the in-process `Engine` stands: it satisfies the UI's `Controls`
(`run`, `probe_now`, `probe_container`, `set_paused`, `lateness`, `runtime`) and has `sinks`.
Every frame a shard sends is decoded here and handed to every sink at once, in the order that
shard sent them (the UI's store, the JSONL writer, the recorder: they are all in this process).

`ShardPool` is one supervisor: its starting, feeding, reading, routing and restarting all work
on the same tables (the shards, which pod is whose, what each was sent); the stream's encoding
is `probetui/stream/`'s, the placement rule `placement.py`'s, the child's side `child.py`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from probetui.keys import ProbeKey
from probetui.prober.status import PodStatus
from probetui.redact import Redactor
from probetui.runtime.base import Runtime, RuntimeEvent, RuntimeFailure
from probetui.shards.child import PARENT_ENV
from probetui.shards.placement import shard_of
from probetui.spec.model import Pod, ProbeType
from probetui.stream import protocol as p
from probetui.stream.codec import PodReader, PodWriter, event_from_frame
from probetui.stream.reader import lines
from probetui.stream.rows import ROWS, WORKER, RowReader
from probetui.timeline.events import dropped_event, runtime_event

log = logging.getLogger(__name__)

HELLO_SECONDS = 20.0  # a shard's start (a Python interpreter, the engine's imports)
STOP_SECONDS = 4.0  # a shard's own stop: its containers get 2 s (the local runtime's cap)
RESTART_DELAY = 0.5  # before starting a shard that died again
# fed mode: how often the pods' kubelet versions are looked at again (the runtime learns them
# after its first list, from the nodes)
KUBELETS_EVERY = 1.0
MAX_RESTARTS = 5  # within RESTART_WINDOW seconds: more, and the run fails
RESTART_WINDOW = 60.0
NOTICES = 50
ACKS = 256
STDERR_TAIL = 20
DROPPED_EVERY = 5.0  # seconds between notices of dropped events, per shard


@dataclass
class Shard:
    index: int
    pods: dict[str, Pod] = field(default_factory=dict)  # local mode: the pods it runs
    # fed mode: what a new process of this shard must be told to stand where the last one was
    snapshots: dict[str, tuple[Pod, PodStatus]] = field(default_factory=dict)
    added: dict[str, dict[str, Any]] = field(default_factory=dict)
    process: asyncio.subprocess.Process | None = None
    writer: PodWriter = field(default_factory=PodWriter)
    reader: PodReader = field(default_factory=PodReader)
    rows: RowReader = field(default_factory=RowReader)  # this process's workers (rows.py)
    lateness: float = 0.0
    dropped: int = 0
    dropped_said: float = float("-inf")  # when the last notice of drops was given (monotonic)
    groups: frozenset[int] = frozenset()  # local mode: its containers' process groups
    # fed mode: the kubelet version told to this shard's process per pod (kube-probe/X.Y)
    kubelets: dict[str, str] = field(default_factory=dict)
    ended: bool = False
    started: int = 0  # processes started for this shard
    restarts: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_RESTARTS))
    stderr: deque[str] = field(default_factory=lambda: deque(maxlen=STDERR_TAIL))
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def send(self, frame: dict[str, Any]) -> bool:
        proc = self.process
        if proc is None or proc.returncode is not None or proc.stdin is None:
            return False
        if proc.stdin.is_closing():
            return False
        proc.stdin.write(p.dumps(frame))
        return True


class ShardPool:
    """Runs N shard processes behind one `Controls`. `mode` "local": the runtime is a
    `LocalRuntime` whose pods are split among the shards, each running its own; "fed": the
    runtime runs here, once, and its pods are routed (`probetui.shards.fed`)."""

    def __init__(
        self,
        runtime: Runtime,
        sinks: list[Any] | None = None,
        *,
        shards: int,
        mode: str = "local",
        kube_version: str | None = None,
        echo_stderr: bool = False,
        say: Callable[[str], None] | None = None,
        buffer: int | None = None,
        reach: dict[str, Any] | None = None,
        rows: bool = True,
    ) -> None:
        if shards < 1:
            raise ValueError("a pool has at least one shard")
        if mode not in ("local", "fed"):
            raise ValueError(f"unknown shard mode {mode!r}")
        self.runtime: Any = RuntimeView(runtime, self)
        self.sinks: list[Any] = list(sinks or [])
        # the kubelet's events the source reports here, masked as the shards' engines mask
        # theirs (the shards are told the same policy in their hello)
        self.redactor = Redactor(runtime.redaction)
        self.mode = mode
        self.kube_version = kube_version
        self.echo_stderr = echo_stderr
        # bytes a shard may hold for this process before it drops events (None: its default)
        self.buffer = buffer
        self.say = say
        # fed mode, the cluster: how its pods are reached, for the shards to follow the same
        # rules (`cluster.reach_settings`); and the shards' verdicts, for the divergence check
        self.reach = reach
        # ask the shards for attempts as rows (docs/stream.md); False: event frames, as before
        self.rows = rows
        from probetui.shards.verdicts import Verdicts

        self.verdicts = Verdicts()
        self.shards = [Shard(i) for i in range(shards)]
        self.notices: deque[str] = deque(maxlen=NOTICES)
        self.acks: deque[dict[str, Any]] = deque(maxlen=ACKS)
        self.dropped = 0
        self._ids = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._stopping = False
        self._failure: str | None = None
        self._wake: asyncio.Event | None = None
        self._owner: dict[str, int] = {}
        # local mode: each container's recent output as its shard last sent it
        self.tails: dict[tuple[str, str], list[str]] = {}
        if mode == "local":
            for pod in getattr(runtime, "pods", ()):
                self._own(pod.uid).pods[pod.uid] = pod

    # -- placement --------------------------------------------------------------------------

    def _own(self, uid: str) -> Shard:
        index = self._owner.get(uid)
        if index is None:
            index = self._owner[uid] = shard_of(uid, len(self.shards))
        return self.shards[index]

    def pids(self) -> list[int]:
        return [s.pid for s in self.shards if s.alive and s.pid is not None]

    # -- running ----------------------------------------------------------------------------

    async def run(self, duration: float | None = None) -> None:
        self._wake = asyncio.Event()
        used = [s for s in self.shards if s.pods] if self.mode == "local" else self.shards
        for s in self.shards:
            if s not in used:
                s.ended = True
        keepers = [asyncio.ensure_future(self._keep(s)) for s in used]
        source: asyncio.Future[None] | None = None
        try:
            await asyncio.wait_for(
                asyncio.gather(*(s.ready.wait() for s in used)), HELLO_SECONDS * 2
            )
            self._check_failure()
            if self.mode == "fed":
                source = asyncio.ensure_future(self.runtime.run(self._router()))
                keepers.append(asyncio.ensure_future(self._kubelets_loop()))
            loop = asyncio.get_running_loop()
            deadline = None if duration is None else loop.time() + duration
            while True:
                self._check_failure()
                if all(s.ended for s in self.shards) and self.mode == "local":
                    return
                if source is not None and source.done():
                    source.result()
                    return
                timeout = None if deadline is None else deadline - loop.time()
                if timeout is not None and timeout <= 0:
                    return
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout)
        except TimeoutError:
            raise RuntimeFailure(
                f"a shard did not start within {HELLO_SECONDS * 2:.0f} s "
                f"({self._last_words()}); try --shards 0"
            ) from None
        finally:
            self._stopping = True
            if source is not None and not source.done():
                source.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await source
            await self._stop_all()
            for k in keepers:
                k.cancel()
            await asyncio.gather(*keepers, return_exceptions=True)

    def _check_failure(self) -> None:
        if self._failure is not None:
            raise RuntimeFailure(self._failure)

    def _last_words(self) -> str:
        for s in self.shards:
            if s.stderr:
                return f"shard {s.index}: {s.stderr[-1]}"
        return "nothing on its stderr"

    def _notice(self, text: str) -> None:
        self.notices.append(text)
        if self.say is not None:
            self.say(text)

    def take_notice(self) -> str | None:
        """The oldest notice not yet shown (the UI polls it with the recorder's)."""
        return self.notices.popleft() if self.notices else None

    async def _keep(self, shard: Shard) -> None:
        """Run this shard's process; start it again when it dies, until the pool stops."""
        try:
            await self._keep_running(shard)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # e.g. no process could be started: the run fails, in one line
            log.exception("shard %d", shard.index)
            self._failure = f"shard {shard.index}: {e}; try --shards 0"
            shard.ready.set()
            self._poke()

    async def _keep_running(self, shard: Shard) -> None:
        while not self._stopping:
            code = await self._run_one(shard)
            if self._stopping or shard.ended:
                return
            now = time.monotonic()
            recent = [t for t in shard.restarts if now - t < RESTART_WINDOW]
            if len(recent) >= MAX_RESTARTS:
                self._failure = (
                    f"shard {shard.index} died {MAX_RESTARTS} times in {RESTART_WINDOW:.0f} s "
                    f"(last: {_status(code)}; {self._last_words()}); try --shards 0"
                )
                self._poke()
                return
            shard.restarts.append(now)
            self._notice(
                f"shard {shard.index} died ({_status(code)}); restarting it: its "
                f"{len(shard.pods) or len(shard.snapshots)} pod(s) resume"
            )
            await asyncio.sleep(RESTART_DELAY)

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _run_one(self, shard: Shard) -> int | None:
        env = dict(os.environ)
        env[PARENT_ENV] = str(os.getpid())
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "probetui.shards.child",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=p.MAX_FRAME,
            env=env,
        )
        shard.process = proc
        shard.started += 1
        shard.writer.forget()
        shard.reader = PodReader()
        shard.rows = RowReader()
        shard.send(self._hello(shard))
        if self.mode == "local":
            for pod in shard.pods.values():
                shard.send(shard.writer.frame(pod, PodStatus(phase="Pending")))
        else:
            shard.kubelets.clear()
            for pod, status in shard.snapshots.values():
                shard.send(shard.writer.frame(pod, status))
                self._send_kubelet(shard, pod)
            for frame in shard.added.values():
                shard.send(frame)
        shard.send({"k": p.START})
        errors = asyncio.ensure_future(self._stderr(shard, proc))
        try:
            await self._read(shard, proc)
        finally:
            code = await proc.wait()
            # what a shard killed outright did not stop: its containers (they must not hold
            # their ports against the next process of this shard, nor outlive probetui)
            _kill_groups(shard.groups)
            shard.groups = frozenset()
            await asyncio.wait({errors}, timeout=1.0)
            errors.cancel()
            shard.ready.set()  # a shard that died before its hello is not waited for
            self._poke()
        return code

    def _hello(self, shard: Shard) -> dict[str, Any]:
        rt = self.runtime
        return p.hello(
            "parent",
            shard=shard.index,
            shards=len(self.shards),
            mode=self.mode,
            source=rt.source,
            read_only=rt.read_only,
            observes_kubelet=rt.observes_kubelet,
            kube_version=self.kube_version,
            buffer=self.buffer,
            verdicts=self.mode == "fed",
            reach=self.reach,
            # attempts as compact rows, many a frame (docs/stream.md, "rows"): a shard that
            # does not know them sends event frames, which are read as ever
            rows=self.rows,
            # what of the pods' secrets the shards' engines may show (probetui.redact)
            redact=rt.redaction.to_json(),
        )

    async def _read(self, shard: Shard, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None
        first = True
        try:
            async for batch in lines(proc.stdout):
                for line in batch:
                    frame = p.loads(line)
                    if first:
                        if frame["k"] == p.FAIL:
                            self._failure = f"shard {shard.index}: {frame.get('message')}"
                            return
                        p.check_hello(frame)
                        if self.mode == "fed" and not frame.get("verdicts"):
                            raise p.ProtocolError(
                                "the shard sends no verdicts: run the same probetui version "
                                "on both ends"
                            )
                        first = False
                        # a new process: its workers start from nothing; the last verdicts
                        # stand until they have an opinion of their own (verdicts.py)
                        self.verdicts.hold_where(lambda uid: self._own(uid) is shard)
                        shard.ready.set()
                        continue
                    self._dispatch(shard, frame)
        except p.ProtocolError as e:
            self._failure = f"shard {shard.index}: {e}"
            proc.kill()
            self._poke()

    def _dispatch(self, shard: Shard, frame: dict[str, Any]) -> None:
        kind = frame["k"]
        if kind == ROWS:
            sinks = self.sinks
            for event in shard.rows.events(frame):
                for sink in sinks:
                    try:
                        sink.event(event)
                    except Exception:  # a broken sink must not stop the stream
                        log.exception("sink %r failed on %s", sink, event.type)
        elif kind == WORKER:
            shard.rows.declare(frame)
        elif kind == p.EVENT:
            event = event_from_frame(frame)
            for sink in self.sinks:
                try:
                    sink.event(event)
                except Exception:  # a broken sink must not stop the stream
                    log.exception("sink %r failed on %s", sink, event.type)
        elif kind == p.POD:
            pod, status = shard.reader.read(frame)
            for sink in self.sinks:
                try:
                    sink.pod(pod, status)
                except Exception:
                    log.exception("sink %r failed on a pod", sink)
        elif kind == p.VERDICT:
            self.verdicts.apply(frame)
        elif kind == p.LATE:
            shard.lateness = float(frame.get("s", 0.0))
        elif kind == p.ACK:
            frame["shard"] = shard.index
            self.acks.append(frame)
            waiting = self._waiting.pop(frame.get("id", -1), None)
            if waiting is not None and not waiting.done():
                waiting.set_result(frame)
        elif kind == p.DROPPED:
            n = int(frame.get("n", 0))
            fresh, shard.dropped = n - shard.dropped, n
            self.dropped += max(fresh, 0)
            if fresh > 0:
                # the gap goes to every sink as an event of its own, so a recording (and a
                # JSONL reader) holds where and how much is missing, not only the screen
                gap = dropped_event(shard.index, fresh, n, frame.get("by"), time.time())
                for sink in self.sinks:
                    try:
                        sink.event(gap)
                    except Exception:
                        log.exception("sink %r failed on %s", sink, gap.type)
            now = time.monotonic()
            # an overload sends one of these each time the reader catches up: say it at most
            # every few seconds, with the totals, not a notice per frame
            if now - shard.dropped_said >= DROPPED_EVERY:
                shard.dropped_said = now
                self._notice(
                    f"shard {shard.index}: events dropped, this process reads too slowly "
                    f"({n} in all, by type: {frame.get('by')}); the recording marks the gap "
                    "(EventsDropped)"
                )
        elif kind == p.TAIL:
            self.tails[(str(frame.get("uid")), str(frame.get("c")))] = list(frame.get("lines", ()))
        elif kind == p.GROUPS:
            shard.groups = frozenset(int(g) for g in frame.get("pgids", ()))
        elif kind == p.END:
            shard.ended = True
            self._poke()
        elif kind == p.FAIL:
            self._failure = f"shard {shard.index}: {frame.get('message')}"
            self._poke()

    async def _stderr(self, shard: Shard, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while True:
            line = await proc.stderr.readline()
            if not line:
                return
            text = line.decode(errors="replace").rstrip()
            shard.stderr.append(text)
            if self.echo_stderr:
                print(f"probetui: shard {shard.index}: {text}", file=sys.stderr)

    async def _stop_all(self) -> None:
        """Close every shard's stdin (it stops its engine and its containers), then SIGKILL
        what is left after STOP_SECONDS; every process is reaped before this returns."""
        procs = [s.process for s in self.shards if s.process is not None]
        for proc in procs:
            if proc.returncode is None and proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
        waits = [asyncio.ensure_future(proc.wait()) for proc in procs]
        if waits:
            await asyncio.wait(waits, timeout=STOP_SECONDS)
        for proc in procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGKILL)
        if waits:
            await asyncio.wait(waits, timeout=2.0)

    # -- fed mode ---------------------------------------------------------------------------

    def _router(self) -> Any:
        from probetui.shards.fed import RouterHost

        return RouterHost(
            self._route_pod,
            self._route_manager,
            self._report,
            self.lateness,
            self.verdicts,
            self._shadow_event,
        )

    def _route_pod(self, pod: Pod, status: PodStatus | None) -> None:
        shard = self._own(pod.uid)
        if status is None:
            shard.snapshots.pop(pod.uid, None)
            shard.added.pop(pod.uid, None)
        else:
            shard.snapshots[pod.uid] = (pod, status)
        shard.send(shard.writer.frame(pod, status))
        if status is None:
            shard.kubelets.pop(pod.uid, None)

    def _send_kubelet(self, shard: Shard, pod: Pod) -> None:
        """The kubelet version of the pod's node, when the runtime knows it and the shard has
        not been told it: the shard's probes then say kube-probe/X.Y as that kubelet's do."""
        version = self.runtime.kube_version_of(pod)
        if not version or shard.kubelets.get(pod.uid) == version:
            return
        if shard.send({"k": p.MGR, "op": "kubelet", "uid": pod.uid, "v": version}):
            shard.kubelets[pod.uid] = version

    async def _kubelets_loop(self) -> None:
        # not on each pod's way to its shard: asking the runtime before it has read the nodes
        # (its first list comes first) would make it read them once more
        while True:
            await asyncio.sleep(KUBELETS_EVERY)
            for shard in self.shards:
                if shard.alive:
                    for pod, _ in list(shard.snapshots.values()):
                        self._send_kubelet(shard, pod)

    def _route_manager(self, pod: Pod, frame: dict[str, Any]) -> None:
        shard = self._own(pod.uid)
        if frame["op"] == "add":
            shard.added[pod.uid] = frame
        elif frame["op"] == "remove":
            shard.added.pop(pod.uid, None)
            self.verdicts.forget_pod(pod.uid)
            self.redactor.forget(pod.uid)
        shard.send(frame)

    def _report(self, event: RuntimeEvent) -> None:
        ev = runtime_event(event)
        ev.fields = self.redactor.fields(self.redactor.pod(event.pod), ev.fields)
        for sink in self.sinks:
            sink.event(ev)

    def _shadow_event(self, pod: Pod | None, event: Any) -> None:
        """A node agent's event (the source reads the agents here): masked as the shards'
        engines mask their own, to every sink."""
        if pod is not None:
            from probetui.engine import masked_elsewhere

            event = masked_elsewhere(self.redactor, pod, event)
        for sink in self.sinks:
            try:
                sink.event(event)
            except Exception:  # a broken sink must not stop the stream
                log.exception("sink %r failed on %s", sink, event.type)

    # -- Controls ---------------------------------------------------------------------------

    def lateness(self) -> float:
        return max((s.lateness for s in self.shards if s.alive), default=0.0)

    def _command(self, op: str, pod_uid: str, container: str, probe: str | None) -> int | None:
        shard = self._own(pod_uid)
        self._ids += 1
        if not shard.send(p.command(self._ids, op, pod_uid, container, probe)):
            return None
        return self._ids

    async def command(
        self, op: str, key: ProbeKey | tuple[str, str], timeout: float = 5.0
    ) -> dict[str, Any]:
        """Send one command and wait for its ack (the ack carries the shard's number)."""
        probe = key[2].key if len(key) > 2 else None  # type: ignore[misc]
        cmd_id = self._command(op, key[0], key[1], probe)
        if cmd_id is None:
            return {"k": p.ACK, "ok": False, "error": "its shard is not running"}
        future = asyncio.get_running_loop().create_future()
        self._waiting[cmd_id] = future
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiting.pop(cmd_id, None)

    def _not_offered(self, pod_uid: str, container: str, probe_type: ProbeType) -> bool:
        """As the in-process engine's read-only rule: only a probe the runtime runs is offered
        (the cluster's `--via direct` ones run read-only; the local runtime's never do)."""
        shard = self._own(pod_uid)
        pod = shard.pods.get(pod_uid) or shard.reader.pods.get(pod_uid)
        spec = pod.container(container) if pod is not None else None
        if pod is None or spec is None:
            return True
        return self.runtime.not_probed(pod, spec, probe_type) is not None

    def probe_now(self, key: ProbeKey) -> bool:
        elsewhere = self.runtime.probe_elsewhere(key)
        if elsewhere is not None:
            return bool(elsewhere)
        if self.runtime.read_only and self._not_offered(*key):
            return False
        return self._command("probe", key.pod_uid, key.container, key.probe_type.key) is not None

    def probe_container(self, pod_uid: str, container: str) -> int:
        # the shard's ack says how many it triggered; the screen is told how many were asked
        shard = self._own(pod_uid)
        pod = shard.pods.get(pod_uid) or shard.reader.pods.get(pod_uid)
        spec = pod.container(container) if pod is not None else None
        probes = (
            sum(
                spec.probe(pt) is not None
                and not (self.runtime.read_only and self._not_offered(pod_uid, container, pt))
                for pt in ProbeType
            )
            if spec is not None
            else 0
        )
        if not probes or self._command("probe_container", pod_uid, container, None) is None:
            return 0
        return probes

    def set_paused(self, key: ProbeKey, paused: bool) -> bool:
        op = "pause" if paused else "resume"
        return self._command(op, key.pod_uid, key.container, key.probe_type.key) is not None


class RuntimeView:
    """Presents the runtime as the UI reads it, where what it asks lives in a shard: a
    container's output (the local runtime keeps it beside the process) comes from the shards' tail
    frames; the rest (source, read-only, not_probed, ...) is the runtime's own."""

    def __init__(self, runtime: Runtime, pool: ShardPool) -> None:
        self._runtime = runtime
        self._pool = pool
        # what the header adds to the runtime's source (the shards, visible)
        self.label = ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runtime, name)

    @property
    def source(self) -> str:
        return f"{self._runtime.source}{self.label}"

    def output_tail(self, pod_uid: str, container: str) -> list[str]:
        return list(self._pool.tails.get((pod_uid, container), ()))


def _kill_groups(groups: frozenset[int]) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def _status(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


__all__ = ["ShardPool"]
