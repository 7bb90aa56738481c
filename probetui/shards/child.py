"""Run a shard process: `python -m probetui.shards.child`, started by `ShardPool`, never by hand.

It reads frames on stdin and writes frames on stdout (docs/stream.md): the parent's hello (the
shard's number, the mode, the engine's settings), then its pods, then `start`; from then on
commands (answered by acks) and, in fed mode, the source's pod snapshots and manager calls. It
runs one `Engine` over its pods and streams every event and pod snapshot back.

It ends when its stdin closes (the parent is going or gone), on SIGTERM or SIGINT (the engine
is cancelled: the local runtime stops and reaps its containers), and when its parent dies by
any means, `kill -9` included (PR_SET_PDEATHSIG sends it SIGTERM).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from probetui.lifeline import die_with_parent as die
from probetui.memory import PROBER_YOUNG, CollectionLog, collect_young_rarely
from probetui.stream.protocol import (
    CMD,
    END,
    FAIL,
    GROUPS,
    LATE,
    MAX_FRAME,
    MGR,
    POD,
    START,
    TAIL,
    ProtocolError,
    ack,
    check_hello,
    dumps,
    hello,
    loads,
)

LATE_EVERY = 1.0  # seconds between lateness frames
TAIL_EVERY = 1.0  # seconds between looks at the containers' output
TAIL_LINES = 200  # of a container's output, at most, per tail frame
DRAIN_SECONDS = 2.0  # how long the last frames may take to leave on the way out
PARENT_ENV = "PROBETUI_SHARD_PARENT"
# a directory: each shard process writes a cProfile of itself there as it ends (.prof), and its
# garbage collector's passes by generation (.gc.json), for finding where a shard's CPU and its
# stalls go (benchmarks/shards.py --profile); PROFILE_AFTER_ENV seconds after its start it
# starts counting (the pods' setup is not what is measured); PROFILE_ENV_CALLS=0: no cProfile
# (its overhead changes what a busy shard does), the collector's passes alone
PROFILE_ENV = "PROBETUI_SHARD_PROFILE"
GC_YOUNG = PROBER_YOUNG  # the collector's first threshold in a shard (main)
GC_YOUNG_ENV = "PROBETUI_SHARD_GC_YOUNG"  # another, for a benchmark to compare (700: Python's)
PROFILE_AFTER_ENV = "PROBETUI_SHARD_PROFILE_AFTER"

log = logging.getLogger(__name__)


def die_with_parent() -> None:
    """SIGTERM to this process when its parent dies, however it dies (the engine then stops and
    its containers with it); a parent already gone (it died between spawning us and here) ends
    us at once."""
    expected = os.environ.get(PARENT_ENV)
    die(int(expected) if expected else None, signal.SIGTERM)


async def _pipes() -> tuple[asyncio.StreamReader, asyncio.WriteTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    # the stream owns the original stdout; anything else that prints goes to stderr
    out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, out)
    return reader, transport  # type: ignore[return-value]


async def _frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    line = await reader.readline()
    return loads(line) if line else None


async def serve() -> int:
    from probetui.engine import Engine
    from probetui.redact import Policy
    from probetui.stream.codec import PodReader
    from probetui.stream.sender import Sender, StreamSink

    reader, transport = await _pipes()
    sender = Sender(transport)
    first = await _frame(reader)
    if first is None:
        return 0
    try:
        setup = check_hello(first)
    except ProtocolError as e:
        transport.write(dumps({"k": FAIL, "message": str(e)}))
        return 2
    if setup.get("buffer"):
        sender.limit = int(setup["buffer"])
    mode = setup.get("mode", "fed")
    verdicts = mode == "fed" and bool(setup.get("verdicts"))
    rows = bool(setup.get("rows"))  # attempts as compact rows (probetui/stream/rows.py)
    sender.send(
        hello("shard", shard=setup.get("shard"), pid=os.getpid(), verdicts=verdicts, rows=rows)
    )
    pods = PodReader()
    held: list[dict[str, Any]] = []
    while True:
        frame = await _frame(reader)
        if frame is None:
            return 0
        if frame["k"] == START:
            break
        if mode == "local" and frame["k"] == POD:
            pods.read(frame)
        else:
            held.append(frame)
    runtime = _runtime(setup, mode, pods, sender)
    runtime.redaction = Policy.from_json(setup.get("redact"))
    if mode == "fed":
        for frame in held:
            runtime.feed(frame)  # type: ignore[attr-defined]
    sinks: list[Any] = [StreamSink(sender, rows=rows)]
    verdict_sink = None
    if verdicts:
        from probetui.shards.verdicts import VerdictSink

        # after the event's own frame: the parent reads the verdict once the event is in
        verdict_sink = VerdictSink(sender.send)
        sinks.append(verdict_sink)
    engine = Engine(
        runtime,
        sinks,
        kube_version=setup.get("kube_version") or _default_kube(),
    )
    loop = asyncio.get_running_loop()
    profile = _profiler(loop, setup.get("shard"))
    run = asyncio.ensure_future(engine.run())
    if verdict_sink is not None:
        verdict_sink.manager = _ManagerOf(engine)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, run.cancel)
    commands = asyncio.ensure_future(_commands(reader, engine, runtime, sender, run))
    late = asyncio.ensure_future(_lateness(engine, sender))
    tails = asyncio.ensure_future(_tails(runtime, sender)) if mode == "local" else None
    code = 0
    try:
        await run
        sender.send({"k": END})
    except asyncio.CancelledError:
        pass
    except Exception as e:  # the runtime failed: one line to the parent, which says it
        sender.send({"k": FAIL, "message": str(e) or type(e).__name__})
        code = 1
    finally:
        commands.cancel()
        late.cancel()
        if tails is not None:
            tails.cancel()
        sender.flush_report()
        await _drain(transport)
        if profile is not None:
            profile()
    return code


def _profiler(loop: asyncio.AbstractEventLoop, shard: Any) -> Callable[[], None] | None:
    """With PROFILE_ENV set: a cProfile started PROFILE_AFTER_ENV seconds from now, and the call
    that stops it and writes `<dir>/shard<N>-<pid>.prof`; else None."""
    where = os.environ.get(PROFILE_ENV)
    if not where:
        return None
    import cProfile
    import json

    profile = cProfile.Profile()
    collections = CollectionLog()
    calls = os.environ.get(PROFILE_ENV + "_CALLS", "1") != "0"  # 0: the collector's alone

    def start() -> None:
        collections.start()
        if calls:
            profile.enable()

    loop.call_later(float(os.environ.get(PROFILE_AFTER_ENV) or 0), start)

    def stop() -> None:
        profile.disable()
        collections.stop()
        name = os.path.join(where, f"shard{shard}-{os.getpid()}")
        if calls:
            profile.dump_stats(name + ".prof")
        with open(name + ".gc.json", "w") as f:
            json.dump({"passes": collections.passes, "thresholds": collections.thresholds()}, f)

    return stop


def _default_kube() -> str:
    from probetui.probe.base import DEFAULT_KUBE_VERSION

    return DEFAULT_KUBE_VERSION


def _runtime(setup: dict[str, Any], mode: str, pods: Any, sender: Any) -> Any:
    source = str(setup.get("source", "shard"))
    if mode == "local":
        from probetui.runtime.local.runtime import LocalRuntime

        registry = _reporting_registry(sender)
        # a SIGHUP or a crash of the shard kills its containers too (the local runtime's own)
        registry.install_exit_handlers((signal.SIGHUP,))
        return LocalRuntime(
            list(pods.pods.values()),
            source=source,
            read_only=bool(setup.get("read_only")),
            registry=registry,
        )
    from probetui.shards.fed import FedRuntime

    return FedRuntime(
        source,
        observes_kubelet=bool(setup.get("observes_kubelet")),
        reach=setup.get("reach"),
        read_only=bool(setup.get("read_only")),
    )


class _ManagerOf:
    """Holds the engine's manager, once its run has made one (the verdict sink reads it)."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine.manager, name)


def _reporting_registry(sender: Any) -> Any:
    """The local runtime's registry of container process groups, each change told to the
    parent: a shard killed outright (SIGKILL, the OOM killer) stops nothing itself, so the
    parent kills the groups it was last told of."""
    from probetui.runtime.local.groups import ProcessGroupRegistry

    class Reporting(ProcessGroupRegistry):
        def add(self, pgid: int) -> None:
            super().add(pgid)
            self._tell()

        def discard(self, pgid: int) -> None:
            super().discard(pgid)
            self._tell()

        def _tell(self) -> None:
            sender.send({"k": GROUPS, "pgids": sorted(self.groups())})

    return Reporting()


async def _commands(
    reader: asyncio.StreamReader,
    engine: Any,
    runtime: Any,
    sender: Any,
    run: asyncio.Future[None],
) -> None:
    from probetui.keys import ProbeKey
    from probetui.spec.model import ProbeType

    while True:
        try:
            frame = await _frame(reader)
        except ProtocolError as e:
            log.error("shard: %s", e)
            continue
        if frame is None:
            run.cancel()  # the parent closed our stdin: it is ending, or gone
            return
        kind = frame["k"]
        if kind in (POD, MGR):
            if hasattr(runtime, "feed"):  # fed mode; a local shard has its pods already
                runtime.feed(frame)
            continue
        if kind != CMD:
            continue
        op, uid, name = frame.get("op"), frame.get("uid", ""), frame.get("c", "")
        try:
            if op == "probe_container":
                n = engine.probe_container(uid, name)
                sender.send(ack(frame["id"], n > 0, n))
                continue
            key = ProbeKey(uid, name, ProbeType.parse(frame.get("probe", "")))
            if op == "probe":
                ok = engine.probe_now(key)
            elif op in ("pause", "resume"):
                ok = engine.set_paused(key, op == "pause")
            else:
                sender.send(ack(frame.get("id", -1), False, error=f"unknown command {op!r}"))
                continue
            sender.send(ack(frame["id"], ok, int(ok)))
        except (KeyError, ValueError) as e:
            sender.send(ack(frame.get("id", -1), False, error=f"bad command: {e}"))


async def _lateness(engine: Any, sender: Any) -> None:
    while True:
        await asyncio.sleep(LATE_EVERY)
        sender.send({"k": LATE, "s": round(engine.lateness(), 4)})


async def _tails(runtime: Any, sender: Any) -> None:
    """Each container's recent output, sent when it changed: the UI's attempt log shows it
    (the local runtime keeps it in the process that runs the container: this one)."""
    sent: dict[tuple[str, str], list[str]] = {}
    while True:
        await asyncio.sleep(TAIL_EVERY)
        for pod in runtime.pods:
            for container in (*pod.init_containers, *pod.containers):
                lines = runtime.output_tail(pod.uid, container.name)[-TAIL_LINES:]
                key = (pod.uid, container.name)
                if lines != sent.get(key, []):
                    sent[key] = lines
                    sender.send({"k": TAIL, "uid": pod.uid, "c": container.name, "lines": lines})


async def _drain(transport: asyncio.WriteTransport) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DRAIN_SECONDS
    # polled: a plain Protocol's transport has no "buffer empty" callback to wait on
    while transport.get_write_buffer_size() and loop.time() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    transport.close()


def main() -> int:
    die_with_parent()
    # A young collection every 700 net allocations (the default) catches every attempt in
    # flight, so their futures and buffers are promoted, and the old generations fill with
    # what reference counting frees a moment later; the full passes that follow walk every
    # worker and make the long tail of tick lateness. A shard holds no cycles of its own worth
    # collecting often, so its young threshold is raised (guarded by benchmarks/shards.py
    # --profile, the .gc.json files).
    collect_young_rarely(int(os.environ.get(GC_YOUNG_ENV) or GC_YOUNG))
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="shard: %(message)s")
    return asyncio.run(serve())


if __name__ == "__main__":
    sys.exit(main())
