"""Replay benchmark: the replay screen's data path on a large recording, and a day's what-if.

    python -m benchmarks.replay --probes 15000 --minutes 20 --period 10 [--seeks 10]
        [--json] [--out FILE]

(a) The screen over a recording of `--probes` steady HTTP readiness probes (one pod each) for
`--minutes` at `--period` (15,000 at 10 s is 1,500 attempts/s, the engine benchmark's load),
written through the real `Recorder` in virtual time. Timed: the first screen's data (open the
file, `Player` at the end: the pods, their statuses and the last window of events in the
store); seeks back to random moments (the store rebuilt: the cost of `@` and `[`), each with
the first slice of playing on from there (the stream goes on where the seek stopped); a step of
10 s forward (what one 0.1 s tick of playing at 100x must feed, so the speed playing reaches);
one slice of playing (a tick is fed in slices with the event loop served between them: what a
key press waits for before its repaint). Wall times and CPU: the machine is shared. A seek's cost is set by how
dense the recording is around the cursor, not by how long it is (chunks and rows are indexed
by time), so minutes at full density stand for a day.

(b) The counterfactual over 24 h of one pod (three probes at period 10 s, a liveness failure
window every hour that kills it), recorded through the `Recorder` from `SimKubelet`'s own run,
then `simulate --recording`'s path: `from_recording` and `counterfactual` with one override,
timed together.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import Parser, add_output_args, format_table, positive, report

GOAL_FIRST_S = 2.0
GOAL_SEEK_S = 0.2
GOAL_WHAT_IF_S = 1.0


def _clean(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@contextlib.contextmanager
def steady_recording(
    recording: str | None, probes: int, minutes: float, period: int, prefix: str
) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Yield the steady recording a screen benchmark reads, and what was written of it:
    `recording` (written there when absent, and kept), or one in a folder of its own that goes
    when the benchmark is done."""
    if recording is not None:
        path = Path(recording)
        yield path, {} if path.exists() else write_steady(path, probes, minutes, period)
        return
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    path = tmp / "steady.db"
    written = write_steady(path, probes, minutes, period)
    try:
        yield path, written
    finally:
        _clean(path)
        tmp.rmdir()


def _steady_pods(n: int) -> list[Any]:
    from probetui.spec.model import Container, HTTPGetAction, Pod, Probe

    out = []
    for i in range(n):
        probe = Probe(http_get=HTTPGetAction(port=8080, path="/healthz"))
        out.append(
            Pod(
                f"bench-{i:05d}",
                "bench",
                f"uid-{i}",
                containers=(Container("app", readiness_probe=probe),),
            )
        )
    return out


def write_steady(
    path: Path, probes: int, minutes: float, period: int, end: float | None = None
) -> dict[str, Any]:
    """`probes` steady probes for `minutes`, ending `end` (default now), appended to `path`
    as a session of their own."""
    from probetui.keys import ProbeKey
    from probetui.probe.base import Attempt, Result
    from probetui.prober.prober import ProbeOutcome
    from probetui.prober.results import ResultValue
    from probetui.prober.status import ContainerStatus, PodStatus, Running
    from probetui.prober.steady import SteadyPart
    from probetui.prober.worker import ProbeRecord, Trigger
    from probetui.record.recorder import Recorder
    from probetui.record.schema import SessionMeta
    from probetui.spec.model import ProbeType
    from probetui.timeline.events import record_event

    pods = _steady_pods(probes)
    # each probe's steady part, interned as its worker interns it
    parts: list[SteadyPart | None] = [None] * len(pods)
    rounds = int(minutes * 60 / period)
    start = (time.time() if end is None else end) - rounds * period
    rng = random.Random(7)
    t0 = time.perf_counter()
    # the pods seen before their first attempts, as live: a seek then feeds them too
    recorder = Recorder(
        path,
        SessionMeta(start - 1.0, "bench", "1.35", "benchmark", "kubernetes"),
        clock=lambda: start - 1.0,
    )
    running = ContainerStatus(
        name="app", container_id="bench://1", state=Running(start - 60), started=True, ready=True
    )
    for p in pods:
        recorder.pod(
            p, PodStatus(phase="Running", pod_ip="10.0.0.1", container_statuses=(running,))
        )
    for i in range(rounds):
        for j, p in enumerate(pods):
            tick = start + i * period + j * period / probes
            t = tick + rng.uniform(0.0001, 0.004)
            latency = rng.uniform(8e-4, 6e-3)
            a = Attempt("http", "http://10.0.0.1:8080/healthz", Result.SUCCESS, "", None, latency,
                        t, 200, "ok")  # fmt: skip
            record = ProbeRecord(
                ProbeKey(p.uid, "app", ProbeType.READINESS), t, tick, Trigger.TICK, "bench://1",
                outcome=ProbeOutcome(ResultValue.SUCCESS, None, (a,), None),
                finished_at=t + latency, result_run=i + 1, last_result=ResultValue.SUCCESS,
                published=ResultValue.SUCCESS, steady=parts[j],
            )  # fmt: skip
            parts[j] = record.steady
            recorder.event(record_event(p, record, "direct"))
        if i % 20 == 19:
            recorder.flush()
    recorder.close()
    return {
        "attempts": probes * rounds,
        "write_seconds": time.perf_counter() - t0,
        "file_mb": path.stat().st_size / 1e6,
    }


def screen(probes: int, minutes: float, period: int, seeks: int) -> dict[str, Any]:
    from probetui.record.reader import open_recording
    from probetui.replay.player import Player

    tmp = Path(tempfile.mkdtemp(prefix="probetui-replay-bench-"))
    path = tmp / "steady.db"
    try:
        written = write_steady(path, probes, minutes, period)
        cpu = time.process_time
        t0, c0 = time.perf_counter(), cpu()
        with open_recording(path) as rec:
            player = Player(rec)
            first, first_cpu = time.perf_counter() - t0, cpu() - c0
            held = player.store.attempts()
            rng = random.Random(3)
            lo, hi = player.first + 60, player.last
            seek_times, seek_cpu, after_seek, fills, fill_batches = [], [], [], [], []
            for _ in range(seeks):
                at = rng.uniform(lo, hi)
                player.seek(player.last)  # from the end, so each one is a seek back
                t, c = time.perf_counter(), cpu()
                player.seek(at)
                seek_times.append(time.perf_counter() - t)
                seek_cpu.append(cpu() - c)
                # what the player's task does after the repaint: the deferred histories filled
                # a batch a wake, the loop served between (what a key then waits for: a batch)
                t = time.perf_counter()
                while player.store.deferred():
                    b = time.perf_counter()
                    player.fill_some()
                    fill_batches.append(time.perf_counter() - b)
                fills.append(time.perf_counter() - t)
                # playing on from there: the first slice reads on where the seek stopped
                t = time.perf_counter()
                player.step(player.slice)
                after_seek.append(time.perf_counter() - t)
            player.seek(lo)
            steps, slices = [], []
            for _ in range(min(seeks, 10)):
                t = time.perf_counter()
                player.step(10.0)
                steps.append(time.perf_counter() - t)
            # what a key waits for while playing: one slice of the tick's feeding
            for _ in range(20):
                t = time.perf_counter()
                player.step(player.slice)
                slices.append(time.perf_counter() - t)
        return {
            **written,
            "probes": probes,
            "minutes": minutes,
            "first_screen_s": first,
            "first_screen_cpu_s": first_cpu,
            "attempts_in_store": held,
            "seek_s": sorted(seek_times),
            "seek_cpu_s": sorted(seek_cpu),
            "first_slice_after_seek_s": sorted(after_seek),
            "fill_after_seek_s": sorted(fills),
            "fill_batch_s": sorted(fill_batches),
            "step_10s_s": sorted(steps),
            "slice_s": player.slice,
            "slice_feed_s": sorted(slices),
            # the speed playing reaches where it cannot keep up: recorded seconds per second
            "speed_reached": 10.0 / statistics.median(steps),
        }
    finally:
        _clean(path)
        tmp.rmdir()


GAP_HOURS = 6.0
GAP_MINUTES = 1.0  # each session's


def gap_seeks(probes: int, period: int, seeks: int) -> dict[str, Any]:
    """Seeks into the gap between two sessions `GAP_HOURS` apart (the recorder stopped for a
    night): no probe is attempted within the window, so every one is looked for before it."""
    from probetui.record.reader import open_recording
    from probetui.replay.player import Player

    tmp = Path(tempfile.mkdtemp(prefix="probetui-replay-bench-"))
    path = tmp / "gap.db"
    try:
        now = time.time()
        write_steady(path, probes, GAP_MINUTES, period, end=now - GAP_HOURS * 3600)
        write_steady(path, probes, GAP_MINUTES, period, end=now)
        with open_recording(path) as rec:
            player = Player(rec)
            # what the player's task does while idle after the first screen: the pods as
            # they stood where the gap begins decoded (the screen then reads them decoded)
            t = time.perf_counter()
            while player.warm():
                pass
            warm = time.perf_counter() - t
            rng = random.Random(5)
            lo, hi = player.first + GAP_MINUTES * 60 + 60, player.last - GAP_MINUTES * 60 - 60
            times = []
            for _ in range(seeks):
                at = rng.uniform(lo, hi)
                player.seek(player.last)
                t = time.perf_counter()
                player.seek(at)
                times.append(time.perf_counter() - t)
        return {"probes": probes, "gap_hours": GAP_HOURS, "seek_s": sorted(times), "warm_s": warm}
    finally:
        _clean(path)
        tmp.rmdir()


def what_if_day() -> dict[str, Any]:
    from probetui.prober.status import PodStatus
    from probetui.record.reader import open_recording
    from probetui.record.recorder import Recorder
    from probetui.record.schema import SessionMeta
    from probetui.simulate.counterfactual import counterfactual
    from probetui.simulate.recorded import from_recording
    from probetui.simulate.run import SimKubelet
    from probetui.simulate.scenario import App, Behaviour, Scenario
    from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType

    def probe() -> Probe:
        return Probe(exec=ExecAction(("check",)), period_seconds=10, failure_threshold=3)

    c = Container("app", command=("x",), liveness_probe=probe(), readiness_probe=probe(),
                  startup_probe=probe())  # fmt: skip
    pod = Pod("web", uid="u-web", containers=(c,))
    fails = tuple((h * 3600.0 + 600, h * 3600.0 + 640) for h in range(24))
    app = App(start_after=1.0, probes={ProbeType.LIVENESS: Behaviour(fail_between=fails)})
    sim = SimKubelet(Scenario(pod=pod, container="app", duration=86400.0, app=app))
    sim.run()
    # the pod is seen (recorder.pod) now, stamped with the wall clock: its events come after
    base = float(int(time.time())) + 5.0
    tmp = Path(tempfile.mkdtemp(prefix="probetui-replay-bench-"))
    path = tmp / "day.db"
    try:
        recorder = Recorder(path, SessionMeta(base, "bench", "1.35", "benchmark", "local"))
        recorder.pod(pod, PodStatus(phase="Pending"))
        for e in sim.events:
            recorder.event(e.shifted(base))
        recorder.close()
        t0, c0 = time.perf_counter(), time.process_time()
        with open_recording(path) as rec:
            recorded = from_recording(rec, "default/web", None, None)
        cf = counterfactual(recorded, "app", ["liveness.failureThreshold=5"])
        took, took_cpu = time.perf_counter() - t0, time.process_time() - c0
        assert cf.what_if is not None
        return {
            "attempts": recorded.attempts,
            "seconds": took,
            "cpu_seconds": took_cpu,
            "self_check": cf.check.passed,
            "kills": [cf.recorded.kills["liveness"], cf.what_if.kills["liveness"]],
        }
    finally:
        _clean(path)
        tmp.rmdir()


def compute(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "screen": screen(args.probes, args.minutes, args.period, args.seeks),
        "gap": gap_seeks(args.probes, args.period, min(args.seeks, 5)),
        "what_if": what_if_day(),
    }


def table(result: dict[str, Any]) -> str:
    s, w, g = result["screen"], result["what_if"], result["gap"]

    def spread(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms"

    rows = [
        (
            "recording",
            f"{s['probes']} probes x {s['minutes']:g} min: {s['attempts']} attempts, "
            f"{s['file_mb']:.1f} MB, written in {s['write_seconds']:.0f} s",
        ),
        (
            "first screen",
            f"{s['first_screen_s']:.2f} s ({s['first_screen_cpu_s']:.2f} s CPU) to the store at "
            f"the end ({s['attempts_in_store']} attempts held; goal < {GOAL_FIRST_S:g} s)",
        ),
        (
            "seek back",
            f"{spread(s['seek_s'])}; CPU {spread(s['seek_cpu_s'])} "
            f"(goal < {GOAL_SEEK_S * 1000:.0f} ms)",
        ),
        (
            "seek into a gap",
            f"{spread(g['seek_s'])} (between two sessions {g['gap_hours']:g} h apart: every "
            "probe looked for before the window; the pods where the gap begins decoded by the "
            f"player's idle task first, in {g['warm_s'] * 1000:.0f} ms)",
        ),
        (
            "filling after a seek",
            f"{spread(s['fill_after_seek_s'])} in all, a batch {spread(s['fill_batch_s'])} (the "
            "deferred histories, as the player's task fills them after the repaint: what a key "
            "pressed then waits for is a batch)",
        ),
        (
            "first slice after a seek",
            f"{spread(s['first_slice_after_seek_s'])} (playing on from a seek, once filled)",
        ),
        (
            "10 s forward",
            f"{spread(s['step_10s_s'])} (a 0.1 s tick at 100x): playing reaches "
            f"{s['speed_reached']:.0f}x",
        ),
        (
            "a slice of playing",
            f"{spread(s['slice_feed_s'])} to feed {s['slice_s']:g} s (what a key waits for "
            "while playing, before its repaint)",
        ),
        (
            "what-if, 24 h of one pod",
            f"{w['seconds']:.2f} s ({w['cpu_seconds']:.2f} s CPU) for {w['attempts']} recorded "
            "attempts, self-check "
            f"{'passed' if w['self_check'] else 'FAILED'}, kills {w['kills'][0]} -> "
            f"{w['kills'][1]} (goal < {GOAL_WHAT_IF_S:g} s)",
        ),
    ]
    return format_table("probetui replay", rows)


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="python -m benchmarks.replay", description=__doc__.split("\n\n")[0])
    p.add_argument("--probes", type=positive(int, "--probes"), default=15000)
    p.add_argument("--minutes", type=positive(float, "--minutes"), default=20.0)
    p.add_argument("--period", type=positive(int, "--period"), default=10)
    p.add_argument("--seeks", type=positive(int, "--seeks"), default=10)
    add_output_args(p)
    args = p.parse_args(argv)
    return report("replay", args, lambda: compute(args), table)


if __name__ == "__main__":
    raise SystemExit(main())
