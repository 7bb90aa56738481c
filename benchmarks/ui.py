"""UI benchmark: key press to repaint latency, and frames per second, under an attempt flood.

    python -m benchmarks.ui --containers 1000 --period 1 --duration 20 [--feed engine|store]
        [--handler tcp|http] [--json [PATH]]

Runs the real `ProbeApp` (the main screen, its widgets, the store poll, the GC pacer) with
N pods of one container each, every container with a startup, a liveness and a readiness probe
at `--period` seconds, and presses keys while the attempts pour in.

Feeds (`--feed`):
- `engine` (default): the real `probetui.engine.Engine` as `probetui` runs it: the app starts it
  as its own task on the same event loop, a synthetic runtime reports the pods (running for an
  hour, started, ready) and the real manager, workers and handlers dial a loopback target
  process (nginx when installed, else `benchmarks.target`). The started containers' startup
  workers run no handler, so the flood is 2N attempts and N skips per period: what the engine
  really does with such pods. `--handler tcp` (default) or `http` (the engine's HTTP handler).
- `store`: no engine; the store is fed 3N `ProbeAttempt` events per period directly, spread
  over 10 ms batches, each built as the engine builds it. This isolates the UI's own cost.

Both first fill the store with `--prefill` seconds of history per probe (the timeline is then
full, as after a few minutes of running), then wait `--warmup` seconds (the pods settle and the
app's GC pacer makes its first pass, as it would before a user's first key), then measure for
`--duration` seconds.

The terminal is a null terminal driver: Textual's headless driver with `is_headless` false, so
every screen update is encoded to escape sequences exactly as for a real terminal (the cost of
`App._display`), then discarded instead of written to a tty; bytes are counted.

Key press to repaint, per key: from handing the key event to the app as a terminal driver does
(`Driver.send_message`, what the input thread calls) until the end of the first screen update
written to the terminal (`App._display` with a compositor update, returned) in which the
widget that shows the key's effect was rendered in its new state:
- `j` / `k` (next / previous container): the timeline drawn for the newly selected container;
- `t` (probe now): the top bar drawn with the message that `t` flashed;
- `f` (follow): the timeline drawn with follow toggled;
- `enter` (details): the attempt log drawn in the toggled mode (full width: a new layout).
A key is pressed, its repaint awaited (at most `--key-timeout`), then the next follows after a
random pause (`--pause`, default 0.2-0.6 s: someone moving through the list; seeded), so
presses do not lock to the app's 100 ms poll. The pauses matter: the app's GC pacer collects
and freezes the heap only after 2 s without a key, so with `--pause 0.5,3` (someone reading
between keys) it gets its quiet moments, and with the default it never does in the window.

The table also splits each latency: queued (until the app dispatches the key event, seen by
Textual's message hook), handled and drawn (until the widget is rendered in its new state),
and to terminal (the rest of that frame until it is written).

Frames per second: screen updates written in the window, per second. Also reported: how long
each frame took to build and write (`Screen._on_timer_update` when it wrote a frame), the
store poll (`MainScreen.poll`), event-loop lag (how late a 50 ms sleep wakes), the cyclic
garbage collector's passes and longest pauses per generation, process CPU (the app, the engine
and the feed all share this process and one event loop) beside the target's and the rest of
the machine's, and the flood actually delivered (attempts and skips per second reaching the
store). The JSON also lists every press with its phases, and every frame that took over 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.common import (
    BenchError,
    add_output_args,
    environment,
    fmt_ms,
    format_table,
    machine_busy_seconds,
    peak_rss_mb,
    positive,
    report,
    rss_mb,
    summary_ms,
    terminal_size,
)
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.prober.worker import ProbeRecord, Skip, Trigger
from probetui.runtime.base import Runtime, RuntimeHost
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType, TCPSocketAction
from probetui.timeline.events import SHADOW, Event, attempt_fields
from probetui.timeline.store import Store

NAME = "ui"
KEYS = ("j", "t", "k", "f", "enter", "t", "enter", "f")  # j/k only outside details mode
KNOWN_KEYS = ("j", "k", "t", "f", "enter")
_CHARACTERS = {"enter": "\r"}
PAUSE = (0.2, 0.6)  # seconds between a key's repaint and the next key: a user scrolling
_LAG_INTERVAL = 0.05
_BATCH = 0.01  # the store feed's batch interval
_NAMESPACES = 7


@dataclass(frozen=True)
class Config:
    containers: int = 1000
    period: int = 1
    duration: float = 20.0
    warmup: float = 8.0
    prefill: float = 300.0
    feed: str = "engine"  # engine, store
    handler: str = "tcp"  # tcp, http (engine feed)
    impl: str | None = None  # the engine's HTTP handler, where the engine offers a choice
    size: tuple[int, int] = (160, 45)
    keys: tuple[str, ...] = KEYS
    key_timeout: float = 2.0
    pause: tuple[float, float] = PAUSE
    uvloop: bool = False
    seed: int = 1
    pace_gc: bool = True
    target: str | None = None  # HOST:PORT for the engine feed; None starts one
    shards: int = 0  # the engine feed's prober in N shard processes (probetui.shards, fed mode)


# -- pods ---------------------------------------------------------------------------------------


def make_pods(config: Config, port: int, now: float) -> list[tuple[Pod, PodStatus]]:
    """N pods, one container each with all three probes, running for an hour, started, ready."""
    if config.handler == "http":
        action: dict[str, Any] = {"http_get": HTTPGetAction(port=port, path="/healthz")}
    else:
        action = {"tcp_socket": TCPSocketAction(port=port)}
    probe = Probe(**action, period_seconds=config.period, timeout_seconds=1)
    out = []
    for i in range(config.containers):
        container = Container(
            "app", liveness_probe=probe, readiness_probe=probe, startup_probe=probe
        )
        pod = Pod(
            f"pod-{i:05d}",
            namespace=f"ns-{i % _NAMESPACES}",
            uid=f"ui-bench-{i:05d}",
            containers=(container,),
        )
        status = PodStatus(
            pod_ip="127.0.0.1",
            container_statuses=(
                ContainerStatus(
                    "app", f"bench://{i:05d}", Running(now - 3600), started=True, ready=True
                ),
            ),
        )
        out.append((pod, status))
    return out


class _Records:
    """Worker records as the engine makes them, and the events it publishes for them."""

    def __init__(self, pods: list[tuple[Pod, PodStatus]], handler: str, port: int) -> None:
        target = f"http://127.0.0.1:{port}/healthz" if handler == "http" else f"127.0.0.1:{port}"
        self.pods = pods
        self.ok = ProbeOutcome(
            ResultValue.SUCCESS,
            None,
            (Attempt(handler, target, Result.SUCCESS, latency=0.0004, status_code=None),),
            None,
        )

    def probe_keys(self) -> Iterator[tuple[Pod, ProbeKey]]:
        for pod, _ in self.pods:
            for pt in ProbeType:
                yield pod, ProbeKey(pod.uid, "app", pt)

    def event(self, pod: Pod, key: ProbeKey, t: float, skip_startup: bool) -> Event:
        cid = pod.uid.replace("ui-bench-", "bench://")
        if skip_startup and key.probe_type is ProbeType.STARTUP:
            record = ProbeRecord(
                key, t, t, Trigger.TICK, cid, skip=Skip.STARTED, published=ResultValue.SUCCESS
            )
            fields: dict[str, Any] = {"reason": Skip.STARTED.value, "trigger": Trigger.TICK}
            type_ = "ProbeSkipped"
        else:
            record = ProbeRecord(
                key,
                t,
                t,
                Trigger.TICK,
                cid,
                outcome=self.ok,
                finished_at=t + 0.0004,
                result_run=1,
                published=ResultValue.SUCCESS,
            )
            fields = attempt_fields(record, "loopback")
            type_ = "ProbeAttempt"
        return Event(
            type_, t, pod.uid, pod.namespace, pod.name, "app", key.probe_type.key, SHADOW, fields,
            record,
        )  # fmt: skip


def prefill(store: Store, records: _Records, period: int, seconds: float, end: float) -> int:
    """`seconds` of history per probe, ending at `end`; returns the events stored."""
    for pod, status in records.pods:
        store.pod(pod, status)
    n = 0
    ticks = int(seconds // period)
    for j in range(ticks, 0, -1):
        t = end - j * period
        for pod, key in records.probe_keys():
            # startup stopped probing long ago: its ticks are skips, as the engine records them
            store.event(records.event(pod, key, t, skip_startup=True))
            n += 1
    return n


# -- feeds ----------------------------------------------------------------------------------------


class _Counter:
    """An engine sink that counts what reaches the store, by event type."""

    def __init__(self) -> None:
        self.attempts = 0
        self.skips = 0
        self.other = 0

    def event(self, event: Event) -> None:
        if event.type == "ProbeAttempt":
            self.attempts += 1
        elif event.type == "ProbeSkipped":
            self.skips += 1
        else:
            self.other += 1

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        pass


class _SyntheticRuntime(Runtime):
    """Reports the pods once, as a cluster's initial list would, and then nothing."""

    source = "benchmark"

    def __init__(self, pods: list[tuple[Pod, PodStatus]]) -> None:
        self.pods = pods
        self.ready = asyncio.Event()

    async def run(self, host: RuntimeHost) -> None:
        for pod, status in self.pods:
            host.pod_snapshot(pod, status)
            host.manager.add_pod(pod, status)
        self.ready.set()
        await asyncio.Event().wait()


class _StoreControls:
    """The engine's commands for the store feed: there is no engine, so nothing runs."""

    def __init__(self) -> None:
        self.runtime = _SyntheticRuntime([])
        self.runtime.ready.set()

    async def run(self) -> None:
        await asyncio.Event().wait()

    def probe_now(self, key: ProbeKey) -> bool:
        return True

    def probe_container(self, pod_uid: str, container: str) -> int:
        return 3

    def set_paused(self, key: ProbeKey, paused: bool) -> bool:
        return True

    def lateness(self) -> float:
        return 0.0


async def _feed_store(store: Store, records: _Records, period: int, counter: _Counter) -> None:
    """3N attempts per period straight into the store, in 10 ms batches, each on its own time."""
    events = list(records.probe_keys())
    per_batch = len(events) * _BATCH / period  # fractional: carried over from batch to batch
    i = 0
    batches = 0
    loop = asyncio.get_running_loop()
    next_at = loop.time()
    while True:
        next_at += _BATCH
        await asyncio.sleep(max(0.0, next_at - loop.time()))
        batches += 1
        n = int(batches * per_batch) - int((batches - 1) * per_batch)
        t = time.time()
        for _ in range(n):
            pod, key = events[i]
            store.event(records.event(pod, key, t, skip_startup=False))
            counter.attempts += 1
            i = (i + 1) % len(events)


# -- measuring --------------------------------------------------------------------------------


@dataclass
class _Press:
    key: str
    t0: float
    done: Callable[[Any], bool]  # does this render of a widget show the key's effect?
    widget: str  # the class name of the widget that shows it
    message: Any = None  # the Key event handed to the app
    t_dispatch: float | None = None  # when the app began handling it
    t_render: float | None = None  # when the widget was drawn in its new state
    rendered: bool = False
    t_done: float | None = None
    event: asyncio.Event = field(default_factory=asyncio.Event)


class _Recorder:
    """Hooks into the app: frames written, renders of the widgets keys change, polls."""

    def __init__(self) -> None:
        self.frames: list[float] = []  # when each frame finished writing
        # (when, seconds, with a new layout) per written frame
        self.frame_build: list[tuple[float, float, bool]] = []
        self.polls: list[tuple[float, float]] = []
        self.press: _Press | None = None
        self.flashed_at = 0.0
        self._undo: list[Callable[[], None]] = []

    def _patch(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        had = name in vars(owner)
        original = getattr(owner, name)
        setattr(owner, name, make(original))

        def undo() -> None:
            if had:
                setattr(owner, name, original)
            else:
                delattr(owner, name)

        self._undo.append(undo)

    def install(self, app: Any) -> None:
        from probetui.ui.screens.main import MainScreen
        from probetui.ui.widgets.attempts import AttemptLog
        from probetui.ui.widgets.header import TopBar
        from probetui.ui.widgets.timeline import Timeline

        rec = self
        self._written = False

        def display(original: Any) -> Any:
            def wrapper(screen: Any, renderable: Any) -> None:
                original(screen, renderable)
                if renderable is None:
                    return
                now = time.perf_counter()
                rec.frames.append(now)
                rec._written = True
                press = rec.press
                if press is not None and press.rendered and press.t_done is None:
                    press.t_done = now
                    press.event.set()

            return wrapper

        self._patch(app, "_display", display)

        def timer_update(original: Any) -> Any:
            def wrapper(self: Any) -> None:
                rec._written = False
                layout = bool(self._layout_required)
                start = time.perf_counter()
                original(self)
                if rec._written:
                    rec.frame_build.append((start, time.perf_counter() - start, layout))

            return wrapper

        self._patch(MainScreen, "_on_timer_update", timer_update)

        def poll(original: Any) -> Any:
            def wrapper(self: Any) -> None:
                start = time.perf_counter()
                original(self)
                rec.polls.append((start, time.perf_counter() - start))

            return wrapper

        self._patch(MainScreen, "poll", poll)

        def flash(original: Any) -> Any:
            def wrapper(self: Any, message: str, style: str = "") -> None:
                rec.flashed_at = time.perf_counter()
                original(self, message, style)

            return wrapper

        self._patch(TopBar, "flash", flash)

        for cls in (TopBar, Timeline, AttemptLog):
            self._patch(cls, "render", self._render_hook(cls.__name__))

    def _render_hook(self, widget: str) -> Callable[[Any], Any]:
        rec = self

        def make(original: Any) -> Any:
            def wrapper(self: Any) -> Any:
                out = original(self)
                rec.drawn(widget, self)
                return out

            return wrapper

        return make

    def drawn(self, widget: str, obj: Any) -> None:
        """`obj`, of the class named `widget`, was just drawn: the press in flight is drawn
        if that is its widget and it shows the key's effect."""
        press = self.press
        if press is not None and not press.rendered and press.widget == widget:
            press.rendered = press.done(obj)
            if press.rendered:
                press.t_render = time.perf_counter()

    def on_message(self, message: Any) -> None:
        """Textual's message hook: the first pump to dispatch the key's event is the app."""
        press = self.press
        if press is not None and press.t_dispatch is None and message is press.message:
            press.t_dispatch = time.perf_counter()

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()


def _expect(key: str, screen: Any, rec: _Recorder, t0: float) -> tuple[str, Callable[[Any], bool]]:
    """Which widget shows `key`'s effect, and how to tell it is drawn in its new state."""
    if key in ("j", "k"):
        before = screen.selected
        return "Timeline", lambda w: w.key is not None and w.key != before
    if key == "f":
        follow = screen.timeline.follow
        return "Timeline", lambda w: w.follow != follow
    if key == "enter":
        details = screen.details
        return "AttemptLog", lambda w: w.details != details
    if key == "t":
        return "TopBar", lambda w: rec.flashed_at >= t0
    raise BenchError(f"--keys: no effect is defined for {key!r} (use {', '.join(KNOWN_KEYS)})")


class _GCWatch:
    """Collections of the cyclic garbage collector in the window, per generation, and pauses."""

    def __init__(self) -> None:
        self.active = False
        self.counts = [0, 0, 0]
        self.pauses: list[list[float]] = [[], [], []]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.active:
            generation = info["generation"]
            self.counts[generation] += 1
            self.pauses[generation].append(time.perf_counter() - self._started)

    def summary(self) -> dict[str, Any]:
        return {
            "collections": list(self.counts),
            "max_pause_ms": [round(max(p, default=0.0) * 1000, 1) for p in self.pauses],
            "total_ms": round(sum(map(sum, self.pauses)) * 1000, 1),
        }


async def _watch_lag(samples: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        before = loop.time()
        await asyncio.sleep(_LAG_INTERVAL)
        samples.append(max(0.0, loop.time() - before - _LAG_INTERVAL))


def _null_terminal() -> type:
    from textual.drivers.headless_driver import HeadlessDriver

    class NullTerminal(HeadlessDriver):
        """Encodes every screen update as for a real terminal, then drops it."""

        written = 0

        @property
        def is_headless(self) -> bool:
            return False

        def write(self, data: str) -> None:
            NullTerminal.written += len(data.encode())

    return NullTerminal


# -- the run ------------------------------------------------------------------------------------


async def _run(config: Config) -> dict[str, Any]:
    rng = random.Random(config.seed)
    target = None
    port = 9  # the store feed dials nothing: the port only appears in texts
    if config.feed == "engine":
        if config.target is not None:
            host, _, port_text = config.target.rpartition(":")
            if host not in ("127.0.0.1", "localhost", "::1") or not port_text.isdigit():
                raise BenchError(f"--target {config.target}: expected 127.0.0.1:PORT (loopback)")
            port = int(port_text)
        else:
            from benchmarks.target import start_target

            try:
                target = start_target(config.handler)
            except (OSError, RuntimeError) as exc:
                raise BenchError(f"could not start a loopback target: {exc}") from None
            port = target.port
    try:
        return await _measure(config, rng, port, target)
    finally:
        if target is not None:
            target.stop()


async def _measure(config: Config, rng: random.Random, port: int, target: Any) -> dict[str, Any]:
    from datetime import UTC

    from probetui.engine import Engine
    from probetui.ui.app import ProbeApp

    now = time.time()
    pods = make_pods(config, port, now)
    records = _Records(pods, config.handler, port)
    store = Store()
    rss_before = rss_mb()
    started = time.perf_counter()
    prefilled = prefill(store, records, config.period, config.prefill, now)
    prefill_s = time.perf_counter() - started
    counter = _Counter()
    feed_task: asyncio.Task[None] | None = None
    if config.feed == "engine":
        runtime = _SyntheticRuntime(pods)
        extra = {"http_impl": config.impl} if config.impl is not None else {}
        controls: Any = Engine(runtime, [store, counter], **extra)
        if config.shards:
            from probetui.shards.pool import ShardPool

            controls = ShardPool(
                runtime, [store, counter], shards=config.shards, mode="fed", **extra
            )
    else:
        controls = _StoreControls()
    app = ProbeApp(controls, store, tz=UTC, pace_gc=config.pace_gc)
    null_terminal = _null_terminal()
    app.driver_class = null_terminal
    rec = _Recorder()
    rec.install(app)
    lag: list[float] = []
    stop_lag = asyncio.Event()
    presses: list[_Press] = []
    gc_watch = _GCWatch()
    gc.callbacks.append(gc_watch)
    try:
        async with app.run_test(
            headless=False, size=config.size, message_hook=rec.on_message
        ) as pilot:
            await pilot.pause()
            lag_task = asyncio.create_task(_watch_lag(lag, stop_lag))
            try:
                if config.feed == "engine":
                    await asyncio.wait_for(controls.runtime.ready.wait(), 60)
                else:
                    feed_task = asyncio.create_task(
                        _feed_store(store, records, config.period, counter)
                    )
                await asyncio.sleep(config.warmup)
                screen = app.screen
                # the measured window
                lag.clear()
                n_frames, n_builds, n_polls = (
                    len(rec.frames),
                    len(rec.frame_build),
                    len(rec.polls),
                )
                counts0 = (counter.attempts, counter.skips)
                bytes0 = null_terminal.written
                cpu0, wall0 = time.process_time(), time.perf_counter()
                busy0 = machine_busy_seconds()
                target0 = target.cpu_seconds() if target is not None else 0.0
                gc_passes0 = app.gc_pacer.passes if app.gc_pacer is not None else 0
                end = wall0 + config.duration
                gc_watch.active = True
                i = 0
                while time.perf_counter() < end:
                    key = config.keys[i % len(config.keys)]
                    i += 1
                    t0 = time.perf_counter()
                    widget, done = _expect(key, screen, rec, t0)
                    press = _Press(key, t0, done, widget, message=_key_event(key))
                    rec.press = press
                    app._driver.send_message(press.message)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(press.event.wait(), config.key_timeout)
                    rec.press = None
                    presses.append(press)
                    await asyncio.sleep(rng.uniform(*config.pause))
                wall1, cpu1 = time.perf_counter(), time.process_time()
                gc_watch.active = False
                busy1 = machine_busy_seconds()
                target1 = target.cpu_seconds() if target is not None else 0.0
                counts1 = (counter.attempts, counter.skips)
                bytes1 = null_terminal.written
                gc_passes1 = app.gc_pacer.passes if app.gc_pacer is not None else 0
            finally:
                stop_lag.set()
                await lag_task
                if feed_task is not None:
                    feed_task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await feed_task
                await app.stop_engine()
    finally:
        rec.uninstall()
        gc.callbacks.remove(gc_watch)
    window = wall1 - wall0
    frames = [t for t in rec.frames[n_frames:] if t <= wall1]
    frame_builds = [b for b in rec.frame_build[n_builds:] if b[0] <= wall1]
    builds = [d for _, d, _ in frame_builds]
    slow_frames = [
        {"at_s": round(t - wall0, 3), "ms": round(d * 1000, 1), "layout": layout}
        for t, d, layout in frame_builds
        if d > 0.05
    ]
    target_cpu = target1 - target0
    # everything else the machine did meanwhile: other load skews every figure here
    other = max(0.0, (busy1 - busy0) - (cpu1 - cpu0) - target_cpu)
    polls = [d for t, d in rec.polls[n_polls:] if t <= wall1]
    latencies = [p.t_done - p.t0 for p in presses if p.t_done is not None]
    by_key: dict[str, list[float]] = {}
    for p in presses:
        if p.t_done is not None:
            by_key.setdefault(p.key, []).append(p.t_done - p.t0)
    missed = [p.key for p in presses if p.t_done is None]
    complete = [p for p in presses if p.t_done and p.t_dispatch and p.t_render]
    phases = {
        "queued": summary_ms(p.t_dispatch - p.t0 for p in complete),  # type: ignore[operator]
        "handled_and_drawn": summary_ms(p.t_render - p.t_dispatch for p in complete),  # type: ignore[operator]
        "to_terminal": summary_ms(p.t_done - p.t_render for p in complete),  # type: ignore[operator]
    }
    attempts = counts1[0] - counts0[0]
    skips = counts1[1] - counts0[1]
    key_summary = summary_ms(latencies)
    return {
        "benchmark": NAME,
        "config": asdict(config),
        "environment": environment(
            loop=_loop_name(), textual=_textual_version(), target=_target_kind(target, config)
        ),
        "window_s": round(window, 3),
        "flood": {
            "attempts_per_s": round(attempts / window, 1),
            "skips_per_s": round(skips / window, 1),
            "due_doprobes_per_s": round(3 * config.containers / config.period, 1),
        },
        "prefill": {"events": prefilled, "seconds": round(prefill_s, 2)},
        "key_to_repaint": key_summary,
        "key_to_repaint_by_key": {k: summary_ms(v) for k, v in sorted(by_key.items())},
        # where the time goes: waiting for the app's queue, handling the key until the widget
        # is drawn anew, and the rest of that frame until it is written
        "key_to_repaint_phases": phases,
        "keys_pressed": len(presses),
        "keys_without_repaint": missed,
        "goal_p99_ms": 100.0,
        "goal_met": bool(key_summary["n"]) and not missed and key_summary["p99_ms"] < 100.0,
        "frames_per_s": round(len(frames) / window, 2),
        "frame_build": summary_ms(builds),
        "frame_build_with_layout": summary_ms(d for _, d, layout in frame_builds if layout),
        "slow_frames": slow_frames,
        "bytes_per_s": round((bytes1 - bytes0) / window),
        "store_poll": summary_ms(polls),
        "loop_lag": summary_ms(lag),
        "process_cores": round((cpu1 - cpu0) / window, 3),
        "target_cores": round(target_cpu / window, 3) if target is not None else None,
        "other_cores": round(other / window, 3),
        "presses": [press_row(p, wall0) for p in presses],
        "gc": gc_watch.summary(),
        "gc_pacer_passes": {"before_window": gc_passes0, "in_window": gc_passes1 - gc_passes0},
        "rss_mb": {"before_store": round(rss_before, 1), "peak": round(peak_rss_mb(), 1)},
        "store_attempts_held": store.attempts(),
    }


def _ms(start: float | None, end: float | None) -> float | None:
    return round((end - start) * 1000, 2) if start is not None and end is not None else None


def press_row(p: _Press, wall0: float) -> dict[str, Any]:
    """One press for the JSON: when in the window, its latency and its phases (ms)."""
    return {
        "key": p.key,
        "at_s": round(p.t0 - wall0, 3),
        "ms": _ms(p.t0, p.t_done),
        "queued_ms": _ms(p.t0, p.t_dispatch),
        "drawn_ms": _ms(p.t_dispatch, p.t_render),
        "written_ms": _ms(p.t_render, p.t_done),
    }


def _key_event(key: str) -> Any:
    from textual import events

    return events.Key(key, _CHARACTERS.get(key, key if len(key) == 1 else None))


def _loop_name() -> str:
    loop = asyncio.get_running_loop()
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def _textual_version() -> str:
    from importlib.metadata import version

    return version("textual")


def _target_kind(target: Any, config: Config) -> str | None:
    if config.feed != "engine":
        return None
    return target.kind if target is not None else f"external {config.target}"


@contextlib.contextmanager
def _terminal_env() -> Iterator[None]:
    """The terminal a user would have: 24-bit colour, so frames carry what they carry there."""
    saved = {k: os.environ.get(k) for k in ("COLORTERM", "TERM")}
    os.environ.setdefault("COLORTERM", "truecolor")
    os.environ.setdefault("TERM", "xterm-256color")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run(config: Config) -> dict[str, Any]:
    if config.impl is not None:
        import inspect

        from probetui.engine import Engine

        if "http_impl" not in inspect.signature(Engine).parameters:
            raise BenchError("--impl: this engine has no choice of HTTP handler; leave --impl out")
    loop_factory = None
    if config.uvloop:
        try:
            import uvloop
        except ImportError:
            raise BenchError("--uvloop: uvloop is not installed; pip install uvloop") from None
        loop_factory = uvloop.new_event_loop
    gc_was_frozen = gc.get_freeze_count()
    try:
        with _terminal_env(), asyncio.Runner(loop_factory=loop_factory) as runner:
            return runner.run(_run(config))
    finally:
        if gc.get_freeze_count() != gc_was_frozen:
            gc.unfreeze()  # the app's GC pacer froze the heap; give it back to the caller


def table(result: dict[str, Any]) -> str:
    c, f = result["config"], result["flood"]
    feed = (
        f"engine ({c['handler']}{' ' + c['impl'] if c['impl'] else ''} probes to "
        f"{result['environment']['target']})"
        if c["feed"] == "engine"
        else "store (no engine)"
    )
    rows = [
        (
            "setup",
            f"{c['containers']} containers x 3 probes, period {c['period']} s, "
            f"{c['size'][0]}x{c['size'][1]} terminal, {result['environment']['loop']}, "
            f"{c['pause'][0]:g}-{c['pause'][1]:g} s between keys",
        ),
        ("feed", feed),
        (
            "flood",
            f"{f['attempts_per_s']:.0f} attempts/s + {f['skips_per_s']:.0f} skips/s "
            f"(doProbe due {f['due_doprobes_per_s']:.0f}/s)",
        ),
        ("window", f"{result['window_s']:.1f} s after {c['warmup']:.1f} s warm-up"),
        ("key -> repaint ms", fmt_ms(result["key_to_repaint"])),
    ]
    for key, s in result["key_to_repaint_by_key"].items():
        rows.append((f"  {key}", fmt_ms(s)))
    ph = result["key_to_repaint_phases"]
    rows += [
        ("  phase: queued", fmt_ms(ph["queued"])),
        ("  phase: drawn", fmt_ms(ph["handled_and_drawn"])),
        ("  phase: written", fmt_ms(ph["to_terminal"])),
        (
            "no repaint",
            f"{len(result['keys_without_repaint'])} of {result['keys_pressed']} keys "
            f"within {c['key_timeout']:.1f} s",
        ),
        ("goal p99 < 100 ms", "met" if result["goal_met"] else "NOT met"),
        ("frames/s", f"{result['frames_per_s']:.1f} ({result['bytes_per_s'] / 1000:.0f} kB/s)"),
        ("frame build ms", fmt_ms(result["frame_build"])),
        ("  with a layout", fmt_ms(result["frame_build_with_layout"])),
        ("frames > 50 ms", f"{len(result['slow_frames'])}"),
        ("store poll ms", fmt_ms(result["store_poll"])),
        ("loop lag ms", fmt_ms(result["loop_lag"])),
        (
            "CPU cores",
            f"{result['process_cores']:.2f} this process (app + engine + feed); target "
            + (f"{result['target_cores']:.2f}" if result["target_cores"] is not None else "-")
            + f"; other load {result['other_cores']:.2f}",
        ),
        ("peak RSS", f"{result['rss_mb']['peak']:.0f} MB"),
        (
            "gc",
            "collections {} / {} / {}, longest pause ms {} / {} / {} (gen 0 / 1 / 2)".format(
                *result["gc"]["collections"], *result["gc"]["max_pause_ms"]
            ),
        ),
        (
            "gc pacer",
            f"{result['gc_pacer_passes']['before_window']} passes before, "
            f"{result['gc_pacer_passes']['in_window']} in the window",
        ),
    ]
    return format_table("probetui UI: key press to repaint under an attempt flood", rows)


def _parser() -> argparse.ArgumentParser:
    from benchmarks.common import Parser

    p = Parser(prog="python -m benchmarks.ui", description=__doc__.split("\n\n")[0])
    p.add_argument("--containers", type=positive(int, "--containers"), default=1000)
    p.add_argument("--period", type=positive(int, "--period"), default=1, help="periodSeconds")
    p.add_argument("--duration", type=positive(float, "--duration"), default=20.0)
    p.add_argument("--warmup", type=float, default=8.0, help="seconds before measuring")
    p.add_argument("--prefill", type=float, default=300.0, help="seconds of history to start with")
    p.add_argument("--feed", choices=("engine", "store"), default="engine")
    p.add_argument("--handler", choices=("tcp", "http"), default="tcp")
    p.add_argument(
        "--impl",
        choices=("httpx", "lean"),
        help="the engine's HTTP handler (only where the engine offers the choice)",
    )
    p.add_argument("--target", help="127.0.0.1:PORT to probe (engine feed); default: start one")
    p.add_argument("--size", default="160x45", help="terminal COLSxROWS")
    p.add_argument("--keys", default=",".join(KEYS), help="keys pressed in turn, comma-separated")
    p.add_argument("--key-timeout", type=positive(float, "--key-timeout"), default=2.0)
    p.add_argument(
        "--pause",
        default=f"{PAUSE[0]:g},{PAUSE[1]:g}",
        help="MIN,MAX seconds between a repaint and the next key (uniform, seeded)",
    )
    p.add_argument("--uvloop", action="store_true", help="run on uvloop")
    p.add_argument("--no-gc-pacer", action="store_true", help="turn the app's GC pacer off")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--shards",
        type=int,
        default=0,
        help="engine feed: the prober in N shard processes (its CPU is not in this process's)",
    )
    add_output_args(p)
    return p


def config_from_args(args: argparse.Namespace) -> Config:
    size = terminal_size(args.size)
    keys = tuple(k.strip() for k in args.keys.split(",") if k.strip())
    unknown = [k for k in keys if k not in KNOWN_KEYS]
    if not keys or unknown:
        raise BenchError(f"--keys: use some of {', '.join(KNOWN_KEYS)}, comma-separated")
    low, sep, high = args.pause.partition(",")
    try:
        pause = (float(low), float(high))
    except ValueError:
        pause = (-1.0, -1.0)
    if not sep or not 0 <= pause[0] <= pause[1]:
        raise BenchError(f"--pause {args.pause!r}: expected MIN,MAX seconds, e.g. 0.2,0.6")
    if args.warmup < 0 or args.prefill < 0:
        raise BenchError("--warmup and --prefill cannot be negative")
    return Config(
        containers=args.containers,
        period=args.period,
        duration=args.duration,
        warmup=args.warmup,
        prefill=args.prefill,
        feed=args.feed,
        handler=args.handler,
        impl=args.impl,
        size=size,
        keys=keys,
        key_timeout=args.key_timeout,
        pause=pause,
        uvloop=args.uvloop,
        seed=args.seed,
        pace_gc=not args.no_gc_pacer,
        target=args.target,
        shards=args.shards,
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return report(NAME, args, lambda: run(config_from_args(args)), table)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Config", "main", "make_pods", "run", "table"]
