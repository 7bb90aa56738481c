"""Engine benchmark: the real prober under a cluster's worth of probes, on one event loop.

    python -m benchmarks.engine --workers 15000 --period 10 --handler http --duration 60
        [--impl lean|httpx] [--uvloop] [--target HOST:PORT] [--callgrind PATH] [--json]
        [--out FILE]

Builds N synthetic pods, each with one container and one probe (readiness by default) whose pod
IP and port point at the target, and runs them through the real `Manager`, `Worker`s, results
caches and handlers (`HandlerRunner`), on the live `LoopClock`, exactly as `probetui` runs them.
With `--driver engine` the pods go through `probetui.engine.Engine` and a small synthetic runtime
instead, so the events the UI and the JSONL output receive are built too.

When `--target` is not given, a loopback target is started in its own process: nginx when
installed, else `benchmarks.target` (asyncio, on uvloop when it imports). `--target` must be a
loopback address unless `--allow-remote` is given: a benchmark is a load generator.

Measured over a window that starts after a warm-up (by default one period, the time the
manager's start-up jitter takes to spread the first probes) and lasts `--duration` seconds:

- attempts/s: attempts whose doProbe ran in the window, per second;
- tick lateness: when doProbe ran for a tick minus when the tick was due (`ProbeRecord.t -
  scheduled_at`), p50 / p99 / max; and handler start lateness, when the handler itself started
  (`Attempt.started_at`) minus the tick, which adds the probe task's start-up;
- missed ticks: for every worker, ticks due in the window (its period grid) minus ticks it ran;
  a tick is missed when the worker was still busy at the next one, or more than a period late;
- CPU: this process's user+system CPU in the window, as cores and per 1,000 attempts; the
  target's separately (from /proc), and any child processes of this one (rusage);
- peak RSS of this process; event-loop lag (how late a 50 ms sleep wakes), p99 / max;
- errors: attempts that did not succeed, by their output, timeouts among them, and probes that
  raised;
- with `--callgrind PATH`, instructions per attempt: the benchmark runs again under valgrind's
  callgrind (with PYTHONHASHSEED=0, so that runs repeat), counting nothing until the window
  opens and dumping its count at PATH.N when it closes; unlike CPU seconds, the count does not
  depend on how fast the machine runs. Its other figures are then valgrind's, not the engine's.

Prints a table; `--json` prints the result as one JSON object instead, and `--out FILE` also
writes it to FILE.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import contextlib
import gc
import ipaddress
import json
import logging
import math
import os
import platform
import random
import re
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.common import (
    BenchError,
    callgrind_control,
    callgrind_dump,
    machine_busy_seconds,
    quantile,
    run_main,
    run_under_callgrind,
)
from benchmarks.target import Target, start_target
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.clock import LoopClock
from probetui.prober.handlers import HandlerRunner
from probetui.prober.manager import Manager
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.prober.worker import ProbeRecord, Trigger
from probetui.spec.model import (
    Container,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    TCPSocketAction,
)

# a sample of this many tick latenesses is kept (reservoir), so a long run stays bounded
_MAX_SAMPLES = 1_000_000
_LAG_INTERVAL = 0.05
# in periods: how close to a tick's grid point a window bound counts as on it
_ON_GRID = 1e-4
_DEFAULT_PATH = "/healthz"


@dataclass(frozen=True)
class Config:
    workers: int
    period: int
    handler: str  # http, tcp, grpc
    impl: str  # httpx, lean (HTTP only)
    duration: float
    warmup: float
    timeout: int
    probe_type: str  # readiness, liveness
    uvloop: bool
    driver: str  # manager, engine
    target: str | None  # HOST:PORT, or None to start one
    prefer_nginx: bool = True
    # gc.freeze() once the pods are added: what the engine would do after its initial sync
    gc_freeze: bool = False
    # the node agent's tick grid (`--tick-align`): 0 arms ticks as the kubelet does
    tick_align: float = 0.0
    # where callgrind writes, when this process runs under it (`--callgrind`): the window's
    # instructions are counted
    callgrind: str | None = None


# ---------------------------------------------------------------------------------------------
# Statistics


class _Reservoir:
    """A bounded uniform sample of floats (Vitter's algorithm R)."""

    def __init__(self, cap: int, rng: random.Random) -> None:
        self.values = array.array("d")
        self.seen = 0
        self._cap = cap
        self._rng = rng

    def add(self, value: float) -> None:
        self.seen += 1
        if len(self.values) < self._cap:
            self.values.append(value)
        else:
            slot = self._rng.randrange(self.seen)
            if slot < self._cap:
                self.values[slot] = value

    def summary(self) -> dict[str, float | None]:
        if not self.values:
            return {"p50_ms": None, "p99_ms": None, "max_ms": None, "mean_ms": None}
        ordered = sorted(self.values)
        return {
            "p50_ms": round(quantile(ordered, 0.50) * 1000, 3),
            "p99_ms": round(quantile(ordered, 0.99) * 1000, 3),
            "max_ms": round(ordered[-1] * 1000, 3),
            "mean_ms": round(sum(ordered) / len(ordered) * 1000, 3),
        }


class Stats:
    """What the workers did, from their records: the listener of the manager."""

    def __init__(self, wall_minus_clock: Callable[[], float] = lambda: 0.0) -> None:
        rng = random.Random(7)
        # Attempt.started_at is wall-clock time; the records are on the prober's clock
        self._wall_minus_clock = wall_minus_clock
        self.window: tuple[float, float] | None = None
        self.tick_lateness = _Reservoir(_MAX_SAMPLES, rng)
        self.start_lateness = _Reservoir(_MAX_SAMPLES, rng)
        self.attempts = 0  # in the window, by doProbe time
        self.attempts_total = 0
        self.ticks_run: Counter[ProbeKey] = Counter()
        # when each worker's ticker started: its first doProbe (not a tick) plus one period
        self.first_probe: dict[ProbeKey, float] = {}
        self.skips: Counter[str] = Counter()
        self.failures: Counter[str] = Counter()
        self.timeouts = 0
        self.discarded = 0  # attempts with a handler error (retried, then thrown away)

    def on_record(self, record: ProbeRecord) -> None:
        outcome = record.outcome
        if outcome is None:
            self.skips[record.skip.value if record.skip else "?"] += 1
            return
        self.attempts_total += 1
        if record.trigger is Trigger.FIRST:
            # the time the ticker was armed from (t may be a clock reading later)
            self.first_probe[record.key] = record.scheduled_at
        window = self.window
        if window is None:
            return
        t0, t1 = window
        if t0 <= record.t < t1:
            self.attempts += 1
            attempt = outcome.attempt
            if attempt is not None:
                self._count_result(attempt)
        if record.trigger is Trigger.TICK and t0 <= record.scheduled_at < t1:
            self.ticks_run[record.key] += 1
            self.tick_lateness.add(record.t - record.scheduled_at)
            attempt = outcome.attempts[0] if outcome.attempts else None
            if attempt is not None:
                started = attempt.started_at - self._wall_minus_clock()
                self.start_lateness.add(max(0.0, started - record.scheduled_at))

    def _count_result(self, attempt: Attempt) -> None:
        if attempt.error is not None:
            self.discarded += 1
            self.failures[f"error: {_one_kind(attempt.error)}"] += 1
        elif attempt.result is not Result.SUCCESS:
            self.failures[f"{attempt.result.value}: {_one_kind(attempt.output)}"] += 1
        if attempt.timed_out:
            self.timeouts += 1


_QUOTED_URL = re.compile(r'"[a-z]+://[^"]*"')
_LOCAL_ADDRESS = re.compile(r"tcp \S+->")


def _one_kind(text: str) -> str:
    """An error text without what differs per pod or per connection, so like errors group."""
    return _LOCAL_ADDRESS.sub("tcp <local>->", _QUOTED_URL.sub('"<url>"', text))[:120]


class _RaisedCounter(logging.Handler):
    """Probes that raised: the manager logs them and counts nothing for the worker."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.count = 0
        self.first: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if self.first is None:
            self.first = record.getMessage()[:200]


class _GCWatch:
    """Collections of the cyclic garbage collector per generation, and the longest pause."""

    def __init__(self) -> None:
        self.counts = [0, 0, 0]
        self.max_pause = [0.0, 0.0, 0.0]
        self.total = 0.0
        self._started = 0.0
        self.active = False
        # objects the collector tracks at the window's end, frozen ones included: what each
        # full pass walks, unless frozen (machine-independent, unlike the pauses)
        self.tracked = 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        if not self.active:
            return
        pause = time.perf_counter() - self._started
        generation = info["generation"]
        self.counts[generation] += 1
        self.total += pause
        self.max_pause[generation] = max(self.max_pause[generation], pause)

    def summary(self) -> dict[str, Any]:
        return {
            "collections": list(self.counts),
            "max_pause_ms": [round(p * 1000, 1) for p in self.max_pause],
            "total_s": round(self.total, 3),
            "tracked": self.tracked,
        }


async def _watch_loop_lag(samples: _Reservoir, stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(_LAG_INTERVAL)
        samples.add(max(0.0, loop.time() - before - _LAG_INTERVAL))


# ---------------------------------------------------------------------------------------------
# Synthetic pods


def _probe(config: Config, port: int, index: int) -> Probe:
    if config.handler == "http":
        # a path of its own per pod: in a cluster every probe has its own URL (its pod IP), so
        # per-URL caches must hold them all, as they would there
        path = f"{_DEFAULT_PATH}/{index}"
        action: dict[str, Any] = {"http_get": HTTPGetAction(port=port, path=path)}
    elif config.handler == "tcp":
        action = {"tcp_socket": TCPSocketAction(port=port)}
    else:
        action = {"grpc": GRPCAction(port=port)}
    return Probe(**action, period_seconds=config.period, timeout_seconds=config.timeout)


def make_pods(config: Config, host: str, port: int, now: float) -> list[tuple[Pod, PodStatus]]:
    """N pods, one container each, running for an hour, started, with one probe to the target."""
    field_name = f"{config.probe_type}_probe"
    pods = []
    for i in range(config.workers):
        container = Container("app", **{field_name: _probe(config, port, i)})  # type: ignore[arg-type]
        pod = Pod(
            f"bench-{i:05d}", namespace="bench", uid=f"bench-uid-{i:05d}", containers=(container,)
        )
        status = PodStatus(
            phase="Running",
            pod_ip=host,
            container_statuses=(
                ContainerStatus(
                    "app", f"bench://{i:05d}", Running(now - 3600), started=True, ready=True
                ),
            ),
        )
        pods.append((pod, status))
    return pods


# ---------------------------------------------------------------------------------------------
# Handlers


def handler_runner() -> HandlerRunner:
    """As `probetui.engine.Engine` makes it (call it on the running loop)."""
    return HandlerRunner(loop=asyncio.get_running_loop())


@contextlib.contextmanager
def http_handler(impl: str) -> Iterator[None]:
    """Runs the product's HTTP handler (`lean`), or the tests' httpx oracle in its place.

    The product has one HTTP handler; `--impl httpx` measures the reference
    (`tests/probe/http_oracle.py`) by putting its `probe` where the runner calls the lean one.
    """
    if impl == "lean":
        yield
        return
    from probetui.probe import http_lean
    from tests.probe import http_oracle

    lean = http_lean.probe

    async def oracle(*args: Any, loop: Any = None, **kwargs: Any) -> Attempt:
        return await http_oracle.probe(*args, **kwargs)

    http_lean.probe = oracle  # type: ignore[assignment]
    try:
        yield
    finally:
        http_lean.probe = lean


# ---------------------------------------------------------------------------------------------
# Drivers: how the pods reach the manager


class _ManagerDriver:
    """The Manager, workers, results caches and HandlerRunner, wired as the engine wires them."""

    def __init__(self, config: Config, stats: Stats) -> None:
        self.config = config
        self.stats = stats
        self.statuses: dict[str, PodStatus] = {}
        self.manager: Manager | None = None

    async def start(self, clock: LoopClock, pods: list[tuple[Pod, PodStatus]]) -> None:
        runner = handler_runner()
        self.manager = Manager(
            clock,
            self.statuses.get,
            runner.run_probe,
            listener=self.stats.on_record,
            tick_align=self.config.tick_align,
        )
        for pod, status in pods:
            self.statuses[pod.uid] = status
            self.manager.add_pod(pod, status)

    def workers(self) -> dict[ProbeKey, Any]:
        assert self.manager is not None
        return self.manager.workers

    async def stop(self) -> None:
        if self.manager is not None:
            await self.manager.shutdown()


class _EngineDriver:
    """probetui.engine.Engine with a runtime that only reports the synthetic pods."""

    def __init__(self, config: Config, stats: Stats) -> None:
        self.config = config
        self.stats = stats
        self._task: asyncio.Task[None] | None = None
        self._engine: Any = None

    async def start(self, clock: LoopClock, pods: list[tuple[Pod, PodStatus]]) -> None:
        from probetui.engine import Engine
        from probetui.runtime.base import Runtime, RuntimeHost

        ready = asyncio.Event()

        class SyntheticRuntime(Runtime):
            source = "benchmark"

            async def run(self, host: RuntimeHost) -> None:
                for pod, status in pods:
                    host.pod_snapshot(pod, status)
                    host.manager.add_pod(pod, status)
                ready.set()
                await asyncio.Event().wait()

        stats = self.stats

        class RecordSink:
            def event(self, event: Any) -> None:
                if event.record is not None:
                    stats.on_record(event.record)

            def pod(self, pod: Pod, status: PodStatus | None) -> None:
                pass

        self._engine = Engine(
            SyntheticRuntime(),
            [RecordSink()],
            clock_factory=lambda: clock,
            tick_align=self.config.tick_align,
        )
        self._task = asyncio.get_running_loop().create_task(self._engine.run())
        await ready.wait()

    def workers(self) -> dict[ProbeKey, Any]:
        return self._engine.manager.workers

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


# ---------------------------------------------------------------------------------------------
# The run


@dataclass
class _CPU:
    process: float
    user: float
    system: float
    children: float
    target: float
    machine: float
    wall: float

    @classmethod
    def now(cls, target: Target | None) -> _CPU:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return cls(
            time.process_time(),
            own.ru_utime,
            own.ru_stime,
            kids.ru_utime + kids.ru_stime,
            target.cpu_seconds() if target is not None else 0.0,
            machine_busy_seconds(),
            time.monotonic(),
        )


def _expected_ticks(next_tick: float | None, period: float, t0: float, t1: float) -> int:
    """Grid points `next_tick + k * period` with t0 <= point < t1.

    Times are epoch seconds, good to about 0.2 us at this size: a bound within 0.1 ms of a
    grid point counts as on it (the first tick's bound is one by construction).
    """
    if next_tick is None:
        return 0
    low = (t0 - next_tick) / period
    high = (t1 - next_tick) / period
    first = round(low) if abs(low - round(low)) < _ON_GRID else math.ceil(low)
    last = round(high) - 1 if abs(high - round(high)) < _ON_GRID else math.floor(high)
    return max(0, last - first + 1)


@dataclass
class BenchResult:
    config: dict[str, Any]
    environment: dict[str, Any]
    window_s: float
    attempts: int
    attempts_per_s: float
    expected_per_s: float
    tick_lateness: dict[str, float | None]
    handler_start_lateness: dict[str, float | None]
    ticks_expected: int
    ticks_run: int
    missed_ticks: int
    workers_missing_ticks: int
    engine_cores: float
    engine_cpu_s: float
    engine_user_s: float
    engine_system_s: float
    cpu_s_per_1000_attempts: float | None
    target_cores: float | None
    children_cpu_s: float
    # everything else that ran on the machine meanwhile: other load skews every figure
    other_cores: float
    peak_rss_mb: float
    loop_lag: dict[str, float | None]
    gc: dict[str, Any]
    errors: int
    timeouts: int
    discarded: int
    raised: int
    skips: dict[str, int]
    top_errors: list[tuple[str, int]] = field(default_factory=list)
    # under callgrind: the instructions counted, and per attempt that ended meanwhile
    instructions: int | None = None
    instructions_per_attempt: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _loop_name() -> str:
    loop = asyncio.get_running_loop()
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


async def _run(config: Config, target: Target | None, host: str, port: int) -> BenchResult:
    clock = LoopClock()
    stats = Stats(lambda: time.time() - clock.now())
    raised = _RaisedCounter()
    prober_log = logging.getLogger("probetui.prober")
    prober_log.addHandler(raised)
    driver: _ManagerDriver | _EngineDriver = (
        _EngineDriver(config, stats) if config.driver == "engine" else _ManagerDriver(config, stats)
    )
    lag = _Reservoir(100_000, random.Random(11))
    gc_watch = _GCWatch()
    gc.callbacks.append(gc_watch)
    stop_lag = asyncio.Event()
    lag_task = asyncio.get_running_loop().create_task(_watch_loop_lag(lag, stop_lag))
    instructions: int | None = None
    counted_from = counted = 0
    try:
        await driver.start(clock, make_pods(config, host, port, clock.now()))
        if config.gc_freeze:
            # the pods, workers and caches live as long as the run: keep the cyclic collector
            # from walking them on every full collection
            gc.collect()
            gc.freeze()
        t0 = clock.now() + config.warmup
        t1 = t0 + config.duration
        stats.window = (t0, t1)
        await asyncio.sleep(max(0.0, t0 - clock.now()))
        lag.values = array.array("d")
        lag.seen = 0
        if config.callgrind is not None:
            # the loop waits for callgrind's answers: the attempts counted are exactly those
            # that ended between the two
            callgrind_control(os.getpid(), "--instr=on", "--zero")
            counted_from = stats.attempts_total
        before = _CPU.now(target)
        gc_watch.active = True
        await asyncio.sleep(max(0.0, t1 - clock.now()))
        gc_watch.active = False
        after = _CPU.now(target)
        gc_watch.tracked = len(gc.get_objects()) + gc.get_freeze_count()
        if config.callgrind is not None:
            counted = stats.attempts_total - counted_from
            instructions = await callgrind_dump(os.getpid(), config.callgrind, hold_loop=True)
        # the grid of every worker, before anything stops
        workers = driver.workers()
        period = float(config.period)
        expected = {
            key: _expected_ticks(
                w.next_tick, period, max(t0, stats.first_probe.get(key, t0) + period), t1
            )
            for key, w in workers.items()
        }
        # attempts that started in the window finish within their timeout (and their retries)
        busy = [w for w in workers.values() if w.in_flight]
        drain_until = clock.now() + config.timeout * 3 + 0.5
        while busy and clock.now() < drain_until:
            await asyncio.sleep(0.02)
            busy = [w for w in busy if w.in_flight]
    finally:
        stop_lag.set()
        await lag_task
        await driver.stop()
        prober_log.removeHandler(raised)
        gc.callbacks.remove(gc_watch)
        if config.gc_freeze:
            gc.unfreeze()

    window = t1 - t0
    ticks_expected = sum(expected.values())
    missed = 0
    workers_missing = 0
    for key, n in expected.items():
        gap = n - stats.ticks_run.get(key, 0)
        if gap > 0:
            missed += gap
            workers_missing += 1
    per_attempt = round(instructions / counted) if instructions is not None and counted else None
    engine_cpu = after.process - before.process
    target_cpu = after.target - before.target if target is not None else None
    errors = sum(stats.failures.values())
    return BenchResult(
        config=asdict(config),
        environment={
            "loop": _loop_name(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "target": target.kind if target is not None else "external",
            "target_address": f"{host}:{port}",
        },
        window_s=round(window, 3),
        attempts=stats.attempts,
        attempts_per_s=round(stats.attempts / window, 1),
        expected_per_s=round(config.workers / config.period, 1),
        tick_lateness=stats.tick_lateness.summary(),
        handler_start_lateness=stats.start_lateness.summary(),
        ticks_expected=ticks_expected,
        ticks_run=sum(stats.ticks_run.values()),
        missed_ticks=missed,
        workers_missing_ticks=workers_missing,
        engine_cores=round(engine_cpu / window, 3),
        engine_cpu_s=round(engine_cpu, 3),
        engine_user_s=round(after.user - before.user, 3),
        engine_system_s=round(after.system - before.system, 3),
        cpu_s_per_1000_attempts=(
            round(engine_cpu / stats.attempts * 1000, 4) if stats.attempts else None
        ),
        target_cores=round(target_cpu / window, 3) if target_cpu is not None else None,
        children_cpu_s=round(after.children - before.children, 3),
        other_cores=round(
            max(0.0, (after.machine - before.machine) - engine_cpu - (target_cpu or 0.0)) / window,
            3,
        ),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        loop_lag=lag.summary(),
        gc=gc_watch.summary(),
        errors=errors,
        timeouts=stats.timeouts,
        discarded=stats.discarded,
        raised=raised.count,
        skips=dict(stats.skips),
        top_errors=stats.failures.most_common(5),
        instructions=instructions,
        instructions_per_attempt=per_attempt,
    )


def _split_target(text: str, allow_remote: bool) -> tuple[str, int]:
    host, sep, port_text = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise BenchError(f"--target {text!r}: expected HOST:PORT, e.g. 127.0.0.1:8080")
    if not allow_remote:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise BenchError(
                f"--target {text}: not a loopback address; add --allow-remote to load another host"
            )
    return host, int(port_text)


def run(config: Config, *, allow_remote: bool = False) -> BenchResult:
    """Start the target (unless given), run the benchmark on the chosen loop, stop the target."""
    target: Target | None = None
    if config.target is not None:
        host, port = _split_target(config.target, allow_remote)
    else:
        try:
            target = start_target(config.handler, prefer_nginx=config.prefer_nginx, uvloop=True)
        except (OSError, RuntimeError) as exc:
            raise BenchError(f"could not start a loopback target: {exc}") from None
        host, port = target.host, target.port
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None
    if config.uvloop:
        try:
            import uvloop
        except ImportError:
            raise BenchError("--uvloop: uvloop is not installed; pip install uvloop") from None
        loop_factory = uvloop.new_event_loop
    try:
        with http_handler(config.impl), asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(_run(config, target, host, port))
    finally:
        if target is not None:
            target.stop()


# ---------------------------------------------------------------------------------------------
# Output


def format_table(result: BenchResult) -> str:
    c, e = result.config, result.environment
    tl, sl, lag = result.tick_lateness, result.handler_start_lateness, result.loop_lag
    impl = f" ({c['impl']})" if c["handler"] == "http" else ""
    per_1000 = result.cpu_s_per_1000_attempts
    rows = [
        (
            "setup",
            f"{c['workers']} {c['probe_type']} workers, period {c['period']} s, "
            f"{c['handler']}{impl}, {e['loop']}, driver {c['driver']}"
            + (", gc frozen after set-up" if c["gc_freeze"] else ""),
        ),
        ("target", f"{e['target']} at {e['target_address']}"),
        ("window", f"{result.window_s:.1f} s after {c['warmup']:.1f} s warm-up"),
        ("attempts/s", f"{result.attempts_per_s:.1f} (due {result.expected_per_s:.1f})"),
        (
            "tick lateness ms",
            f"p50 {_ms(tl['p50_ms'])}  p99 {_ms(tl['p99_ms'])}  max {_ms(tl['max_ms'])}",
        ),
        (
            "handler start ms",
            f"p50 {_ms(sl['p50_ms'])}  p99 {_ms(sl['p99_ms'])}  max {_ms(sl['max_ms'])}",
        ),
        (
            "missed ticks",
            f"{result.missed_ticks} of {result.ticks_expected} "
            f"({result.workers_missing_ticks} workers)",
        ),
        (
            "engine CPU",
            f"{result.engine_cores:.3f} cores; "
            + (f"{per_1000:.3f} s per 1,000 attempts" if per_1000 is not None else "no attempts")
            + f" (user {result.engine_user_s:.2f} s, sys {result.engine_system_s:.2f} s)",
        ),
        (
            "target CPU",
            f"{result.target_cores:.3f} cores"
            if result.target_cores is not None
            else "not measured",
        ),
        ("other load", f"{result.other_cores:.3f} cores (the rest of the machine)"),
        ("peak RSS", f"{result.peak_rss_mb:.1f} MB"),
        *(
            [("instructions", f"{result.instructions_per_attempt:,} an attempt (callgrind)")]
            if result.instructions_per_attempt is not None
            else []
        ),
        ("loop lag ms", f"p99 {_ms(lag['p99_ms'])}  max {_ms(lag['max_ms'])}"),
        (
            "gc",
            "collections {} / {} / {}, longest pause ms {} / {} / {} (gen 0 / 1 / 2); "
            "{:,} objects tracked".format(
                *result.gc["collections"], *result.gc["max_pause_ms"], result.gc["tracked"]
            ),
        ),
        (
            "errors",
            f"{result.errors} (timeouts {result.timeouts}, discarded {result.discarded}, "
            f"raised {result.raised})",
        ),
    ]
    for text, count in result.top_errors:
        rows.append(("", f"{count} x {text}"))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {value}" for name, value in rows)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.engine",
        description="Drive the real prober (manager, workers, results, handlers) at scale.",
    )
    p.add_argument("--workers", type=int, required=True, help="probe workers (one pod each)")
    p.add_argument("--period", type=int, default=10, help="periodSeconds of every probe")
    p.add_argument("--handler", choices=("http", "tcp", "grpc"), default="http")
    p.add_argument(
        "--impl",
        choices=("httpx", "lean"),
        help="HTTP handler (default: lean, as probetui runs; httpx is the reference)",
    )
    p.add_argument("--target", help="HOST:PORT to probe; default: start a loopback target")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --target")
    p.add_argument(
        "--no-nginx", action="store_true", help="use the asyncio target even if nginx is installed"
    )
    p.add_argument("--duration", type=float, default=30.0, help="measured seconds")
    p.add_argument("--warmup", type=float, help="seconds before measuring (default: one period)")
    p.add_argument("--timeout", type=int, default=1, help="timeoutSeconds of every probe")
    p.add_argument("--probe", choices=("readiness", "liveness"), default="readiness")
    p.add_argument("--driver", choices=("manager", "engine"), default="manager")
    p.add_argument("--uvloop", action="store_true", help="run the engine on uvloop")
    p.add_argument(
        "--gc-freeze",
        action="store_true",
        help="gc.freeze() after adding the pods (a proposed engine setting, measured here)",
    )
    p.add_argument(
        "--tick-align",
        type=float,
        default=0.0,
        help="round ticks up to a multiple of this many seconds, as a node agent does (0)",
    )
    p.add_argument(
        "--callgrind",
        metavar="PATH",
        help="run under valgrind's callgrind and report the instructions per attempt in the "
        "window (dumps at PATH.N; the CPU figures are then valgrind's, not the engine's)",
    )
    # the run under callgrind itself: it turns the counting on and dumps it
    p.add_argument("--instrumented", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--out", help="also write the JSON result to this file")
    return p


def config_from_args(args: argparse.Namespace) -> Config:
    if args.workers < 1:
        raise BenchError("--workers must be at least 1")
    if args.period < 1 or args.timeout < 1:
        raise BenchError("--period and --timeout are whole seconds, at least 1")
    if args.duration <= 0:
        raise BenchError("--duration must be more than 0 seconds")
    if args.impl is not None and args.handler != "http":
        raise BenchError("--impl applies to --handler http only")
    warmup = float(args.period) if args.warmup is None else args.warmup
    if warmup < 0:
        raise BenchError("--warmup cannot be negative")
    return Config(
        workers=args.workers,
        period=args.period,
        handler=args.handler,
        impl=args.impl or "lean",
        duration=args.duration,
        warmup=warmup,
        timeout=args.timeout,
        probe_type=args.probe,
        uvloop=args.uvloop,
        driver=args.driver,
        target=args.target,
        prefer_nginx=not args.no_nginx,
        gc_freeze=args.gc_freeze,
        tick_align=args.tick_align,
        callgrind=args.callgrind if args.instrumented else None,
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)

    def body() -> int:
        config = config_from_args(args)
        if args.callgrind and not args.instrumented:
            flags = [*(sys.argv[1:] if argv is None else argv), "--instrumented"]
            return run_under_callgrind(args.callgrind, "benchmarks.engine", flags).returncode
        result = run(config, allow_remote=args.allow_remote)
        payload = json.dumps(result.to_json(), indent=2)
        if args.out:
            with open(args.out, "w") as f:
                f.write(payload + "\n")
        print(payload if args.json else format_table(result))
        return 0

    return run_main("benchmarks.engine", body)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["BenchResult", "Config", "Stats", "format_table", "main", "make_pods", "run"]
