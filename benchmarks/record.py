"""Recording benchmark: what `--record` costs the live engine, and what it costs on disk.

    python -m benchmarks.record --workers 15000 --period 10 --duration 30 --rounds 3
        [--flush-every S] [--switch-interval S] [--json] [--out FILE]

(a) Write path: `benchmarks.engine` with `--driver engine` (the whole engine and its sinks,
real HTTP attempts to a loopback target), run without and with a `Recorder` among the sinks,
`--rounds` pairs of runs, the order alternating from pair to pair: the extra engine CPU (the
writer thread included: it is the same process) and the p99 tick lateness of each run, as
medians over the pairs with their ranges, the collector's full collections and longest pause,
and the load the rest of the machine put on it meanwhile (a shared 2-core machine: one pair
proves little). Beside the A/B, the recorder's own CPU in each recorded run (its writer
thread's CPU time and its sink calls on the loop) over the rest of the process's CPU in that
run, both from set-up to close: the extra it adds itself, whatever stall of the machine fell
on one side of a pair.

(b) Bytes on disk: `--steady` probes answering alike, recorded in virtual time through the real
recorder (`--hours` of them at `--period`), and the demo's mix recorded for `--demo-seconds`
with `probetui demo --no-ui --record`. Bytes per attempt count the pages of what grows with
the attempts (chunks and their indexes, events, strings, shapes; SQLite's `dbstat`), over the
per-probe items recorded. The projection: 24 h of 15,000 probes at period 10 s (129.6 M
attempts) at the steady figure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import engine
from benchmarks.common import BenchError, Parser, add_output_args, format_table, positive, report

GROWING = ("chunks", "chunks_t0", "chunks_probe_t0", "events", "events_t", "strings", "shapes")
GOAL_CPU = 0.15
GOAL_P99_MS = 50.0
GOAL_BYTES = 2e9
DAY_ATTEMPTS = 24 * 3600 / 10 * 15000


def _grown(path: Path) -> tuple[int, int]:
    """(bytes of the growing tables, per-probe items) of a closed recording."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(GROWING))
        size = conn.execute(
            f"SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name IN ({marks})", GROWING
        ).fetchone()[0]
        items = conn.execute("SELECT COALESCE(SUM(n), 0) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    return size, items


def _lateness_by_second(path: Path) -> list[float]:
    from probetui.record.reader import open_recording

    worst: dict[int, float] = {}
    with open_recording(path) as r:
        for e in r.events(types={"ProbeAttempt"}):
            assert e.record is not None
            second = int(e.t)
            late = e.t - e.record.scheduled_at
            worst[second] = max(worst.get(second, 0.0), late)
    return [round(worst[s] * 1000, 1) for s in sorted(worst)]


# -- (a) the write path -----------------------------------------------------------------------


def _config(workers: int, period: int, duration: float, warmup: float, gc_freeze: bool) -> Any:
    return engine.Config(
        workers=workers,
        period=period,
        handler="http",
        impl="lean",
        duration=duration,
        warmup=warmup,
        timeout=1,
        probe_type="readiness",
        uvloop=False,
        driver="engine",
        target=None,
        # as the cluster view does after its first list (Engine.collect_and_freeze): at 15,000
        # workers every full collection of the unfrozen heap stalls the loop 70-230 ms
        gc_freeze=gc_freeze,
    )


def _one_run(config: Any, record: bool, flush_every: float | None) -> dict[str, Any]:
    """One engine run, with a `Recorder` among its sinks or without."""
    import probetui.engine as engine_module
    from probetui.record.recorder import FLUSH_EVERY, Recorder
    from probetui.record.schema import SessionMeta

    load = os.getloadavg()[0]
    if not record:
        r = engine.run(config)
        return {"result": r, "load": load}
    tmp = Path(tempfile.mkdtemp(prefix="probetui-record-bench-"))
    path = tmp / "bench.db"
    meta = SessionMeta(time.time(), "bench", "1.35", "benchmark", "benchmark")
    sink_s = [0.0]

    class TimedRecorder(Recorder):
        """The recorder with the time its sink calls take on the event loop counted."""

        def event(self, event: Any) -> None:
            t = time.perf_counter()
            super().event(event)
            sink_s[0] += time.perf_counter() - t

    recorder = TimedRecorder(path, meta, flush_every=flush_every or FLUSH_EVERY)
    recorder.start()
    real = engine_module.Engine

    class RecordingEngine(real):  # type: ignore[misc,valid-type]
        """The engine the benchmark's driver builds, with the recorder among its sinks."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.sinks.append(recorder)

    engine_module.Engine = RecordingEngine  # type: ignore[misc]
    # the process's CPU over the recorder's whole life (set-up, warm-up, window, drain and
    # close), what its own CPU is set against: its thread's clock cannot be cut to the window
    c0 = time.process_time()
    try:
        r = engine.run(config)
    finally:
        engine_module.Engine = real  # type: ignore[misc]
        recorder.close()
    run_cpu = time.process_time() - c0
    out = {
        "result": r,
        "load": load,
        "file_bytes": os.path.getsize(path),
        "late": _lateness_by_second(path),
        "failure": recorder.failure,
        # the recorder's own CPU: its writer thread, and its sink calls on the loop
        "writer_cpu_s": recorder.writer_cpu_s,
        "sink_s": sink_s[0],
        "run_cpu_s": run_cpu,
    }
    with contextlib.suppress(OSError):
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    return out


def _spread(values: list[float]) -> dict[str, float]:
    """Median and range: the machine is shared, one run proves little."""
    return {
        "median": round(statistics.median(values), 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def write_path(
    workers: int,
    period: int,
    duration: float,
    warmup: float,
    gc_freeze: bool = True,
    rounds: int = 1,
    flush_every: float | None = None,
    switch_interval: float | None = None,
) -> dict[str, Any]:
    """`rounds` pairs of runs without and with the recorder, the order alternating from one
    pair to the next (without first, then with first ...), so that a change of the machine's
    load during the runs falls on both sides alike."""
    config = _config(workers, period, duration, warmup, gc_freeze)
    before_switch = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    pairs: list[dict[str, Any]] = []
    try:
        for i in range(rounds):
            order = (False, True) if i % 2 == 0 else (True, False)
            runs = {rec: _one_run(config, rec, flush_every) for rec in order}
            pairs.append({"plain": runs[False], "recorded": runs[True]})
    finally:
        sys.setswitchinterval(before_switch)
    per_round = []
    for pair in pairs:
        p, r = pair["plain"]["result"], pair["recorded"]["result"]
        rec = pair["recorded"]
        own = rec["writer_cpu_s"] + rec["sink_s"]
        per_round.append(
            {
                "extra_cpu": round((r.engine_cpu_s - p.engine_cpu_s) / p.engine_cpu_s, 4),
                # what the recorder itself spent, over what the rest of that run's engine did:
                # the extra it adds, apart from how the run went (the A/B above also holds a
                # stall of the machine falling on one side of the pair)
                "recorder_cpu_share": round(own / max(1e-9, rec["run_cpu_s"] - own), 4),
                "recorder_cpu_s": [round(rec["writer_cpu_s"], 3), round(rec["sink_s"], 3)],
                "engine_cores": [p.engine_cores, r.engine_cores],
                "attempts_per_s": [p.attempts_per_s, r.attempts_per_s],
                "tick_lateness_p99_ms": [p.tick_lateness["p99_ms"], r.tick_lateness["p99_ms"]],
                "tick_lateness_max_ms": [p.tick_lateness["max_ms"], r.tick_lateness["max_ms"]],
                "missed_ticks": [p.missed_ticks, r.missed_ticks],
                "errors": [p.errors, r.errors],
                "gc": [p.gc, r.gc],
                # the rest of the machine during each run, and the 1-min load average before it
                "other_cores": [p.other_cores, r.other_cores],
                "load_before": [
                    round(pair["plain"]["load"], 2),
                    round(pair["recorded"]["load"], 2),
                ],
                "recorder_failure": pair["recorded"]["failure"],
                "file_bytes": pair["recorded"]["file_bytes"],
                # from the recording itself: the worst tick lateness in each second of the run
                "worst_lateness_by_second_ms": pair["recorded"]["late"],
            }
        )

    def both(name: str, pick: Any = lambda v: v) -> list[float]:
        return [statistics.median(pick(x[name][side]) for x in per_round) for side in (0, 1)]

    def spread_of(name: str, side: int, pick: Any = lambda v: v) -> dict[str, float]:
        return _spread([pick(x[name][side]) for x in per_round])

    def full(g: dict[str, Any]) -> int:
        return int(g["collections"][2])

    def longest(g: dict[str, Any]) -> float:
        return float(max(g["max_pause_ms"]))

    failures = [x["recorder_failure"] for x in per_round if x["recorder_failure"]]
    return {
        "rounds": rounds,
        "flush_every": flush_every,
        "switch_interval": switch_interval if switch_interval is not None else before_switch,
        "gc_freeze": gc_freeze,
        # medians over the rounds (without, with); their ranges below
        "attempts_per_s": both("attempts_per_s"),
        "engine_cores": both("engine_cores"),
        "extra_cpu": round(statistics.median(x["extra_cpu"] for x in per_round), 4),
        "extra_cpu_range": _spread([x["extra_cpu"] for x in per_round]),
        "recorder_cpu_share": _spread([x["recorder_cpu_share"] for x in per_round]),
        "tick_lateness_p99_ms": both("tick_lateness_p99_ms"),
        "tick_lateness_p99_range_ms": [spread_of("tick_lateness_p99_ms", s) for s in (0, 1)],
        "missed_ticks": both("missed_ticks"),
        "errors": [sum(x["errors"][s] for x in per_round) for s in (0, 1)],
        "full_collections": [spread_of("gc", s, full) for s in (0, 1)],
        "longest_gc_pause_ms": [spread_of("gc", s, longest) for s in (0, 1)],
        "other_cores": [spread_of("other_cores", s) for s in (0, 1)],
        "recorder_failure": failures[0] if failures else None,
        "file_bytes": per_round[-1]["file_bytes"],
        "per_round": per_round,
    }


# -- (b) bytes on disk ------------------------------------------------------------------------


def _pod(i: int) -> Any:
    from probetui.spec.model import Container, HTTPGetAction, Pod, Probe

    probe = Probe(http_get=HTTPGetAction(port=8080, path=f"/healthz/{i}"))
    return Pod(
        f"bench-{i:05d}", "bench", f"uid-{i}", containers=(Container("app", readiness_probe=probe),)
    )


# per pod UID: its probe's last steady part (`_attempt`)
_PARTS: dict[str, Any] = {}


def _attempt(pod: Any, t: float, tick: float, run: int, latency: float) -> Any:
    """An HTTP 200 attempt as the engine publishes it (benchmarks.engine's pods and target)."""
    from probetui.keys import ProbeKey
    from probetui.probe.base import Attempt, Result
    from probetui.prober.prober import ProbeOutcome
    from probetui.prober.results import ResultValue
    from probetui.prober.worker import ProbeRecord, Trigger
    from probetui.spec.model import ProbeType
    from probetui.timeline.events import SHADOW, Event, attempt_fields

    key = ProbeKey(pod.uid, "app", ProbeType.READINESS)
    path = pod.containers[0].readiness_probe.http_get.path
    a = Attempt(
        "http", f"http://127.0.0.1:8080{path}", Result.SUCCESS, "", None, latency, t, 200, "ok"
    )
    outcome = ProbeOutcome(ResultValue.SUCCESS, None, (a,), None)
    record = ProbeRecord(
        key, t, tick, Trigger.TICK, "bench://1", outcome=outcome, finished_at=t + latency,
        result_run=run, last_result=ResultValue.SUCCESS, published=ResultValue.SUCCESS,
        # the steady part as `Worker._emit` interns it: one per probe while it says the same
        steady=_PARTS.get(pod.uid),
    )  # fmt: skip
    _PARTS[pod.uid] = record.steady
    fields = attempt_fields(record, "direct")
    return Event(
        "ProbeAttempt",
        t,
        pod.uid,
        pod.namespace,
        pod.name,
        "app",
        "readiness",
        SHADOW,
        fields,
        record,
    )


def steady(probes: int, hours: float, period: int) -> dict[str, Any]:
    from probetui.record.recorder import Recorder
    from probetui.record.schema import SessionMeta

    tmp = Path(tempfile.mkdtemp(prefix="probetui-record-bench-"))
    path = tmp / "steady.db"
    recorder = Recorder(path, SessionMeta(0.0, "bench", "1.35", "benchmark", "benchmark"))
    pods = [_pod(i) for i in range(probes)]
    n = int(hours * 3600 / period)
    start = time.time() - n * period
    rng = __import__("random").Random(5)
    for i in range(n):
        for j, p in enumerate(pods):
            tick = start + i * period + j * period / probes
            # loopback latencies and tick lateness as the engine benchmark sees them
            recorder.event(
                _attempt(p, tick + rng.uniform(0.0001, 0.004), tick, i + 1, rng.uniform(8e-4, 6e-3))
            )
        if i % 20 == 0:
            recorder.flush()
    recorder.close()
    size, items = _grown(path)
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    per = size / items
    return {"probes": probes, "attempts": items, "bytes": size, "bytes_per_attempt": per}


def demo_mix(seconds: float) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="probetui-record-bench-"))
    path = tmp / "demo.db"
    done = subprocess.run(
        [sys.executable, "-m", "probetui", "demo", "--no-ui", "--duration", str(seconds),
         "--record", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=seconds + 60,
    )  # fmt: skip
    if done.returncode != 0:
        raise BenchError(f"probetui demo failed: {done.stderr.strip()[-200:]}")
    size, items = _grown(path)
    total = os.path.getsize(path)
    for f in tmp.iterdir():
        f.unlink()
    tmp.rmdir()
    return {
        "seconds": seconds,
        "items": items,
        "bytes": size,
        "file_bytes": total,
        "bytes_per_item": size / items if items else None,
    }


def compute(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if not args.skip_write_path:
        result["write_path"] = write_path(
            args.workers,
            args.period,
            args.duration,
            args.warmup,
            not args.no_gc_freeze,
            rounds=getattr(args, "rounds", 1),
            flush_every=getattr(args, "flush_every", None),
            switch_interval=getattr(args, "switch_interval", None),
        )
    s = steady(args.steady, args.hours, args.period)
    s["projection_24h_15000_bytes"] = round(s["bytes_per_attempt"] * DAY_ATTEMPTS)
    result["steady"] = s
    if args.demo_seconds:
        result["demo"] = demo_mix(args.demo_seconds)
    return result


def table(result: dict[str, Any]) -> str:
    rows: list[tuple[str, str]] = []
    w = result.get("write_path")
    if w:

        def rng(d: dict[str, float], scale: float = 1.0, fmt: str = ".1f") -> str:
            lo, hi = d["min"] * scale, d["max"] * scale
            return f"{d['median'] * scale:{fmt}} ({lo:{fmt}}-{hi:{fmt}})"

        p99 = w["tick_lateness_p99_range_ms"]
        full = w["full_collections"]
        pause = w["longest_gc_pause_ms"]
        other = w["other_cores"]
        rows += [
            (
                "rounds",
                f"{w['rounds']} pairs without/with, medians (ranges); flush every "
                f"{w['flush_every'] or 'default'} s, switch interval {w['switch_interval']} s",
            ),
            (
                "attempts/s",
                f"{w['attempts_per_s'][0]:.0f} without, {w['attempts_per_s'][1]:.0f} with",
            ),
            (
                "engine cores",
                f"{w['engine_cores'][0]:.3f} without, {w['engine_cores'][1]:.3f} with",
            ),
            (
                "extra CPU",
                f"{rng(w['extra_cpu_range'], 100)} % (goal <= {GOAL_CPU * 100:.0f} %)",
            ),
            (
                "recorder's own CPU",
                f"{rng(w['recorder_cpu_share'], 100)} % of the rest of its run's process CPU "
                "(its writer thread and its sink calls on the loop, set-up to close)",
            ),
            (
                "p99 tick lateness",
                f"{rng(p99[0])} ms without, {rng(p99[1])} ms with (goal < {GOAL_P99_MS:.0f} ms)",
            ),
            ("missed ticks", f"{w['missed_ticks'][0]:g} without, {w['missed_ticks'][1]:g} with"),
            (
                "full collections",
                f"{rng(full[0], fmt='.0f')} without, {rng(full[1], fmt='.0f')} with; longest "
                f"pause {rng(pause[0])} / {rng(pause[1])} ms",
            ),
            ("other load", f"{rng(other[0], fmt='.2f')} / {rng(other[1], fmt='.2f')} cores"),
            ("recorder", w["recorder_failure"] or f"ok, {w['file_bytes'] / 1e6:.1f} MB written"),
        ]
    s = result["steady"]
    rows += [
        (
            "steady probe",
            f"{s['bytes_per_attempt']:.2f} bytes/attempt ({s['attempts']} attempts, "
            f"{s['probes']} probes)",
        ),
        (
            "24 h x 15,000 probes",
            f"{s['projection_24h_15000_bytes'] / 1e9:.2f} GB projected (goal < 2 GB)",
        ),
    ]
    d = result.get("demo")
    if d:
        rows.append(
            (
                "demo mix",
                f"{d['bytes_per_item']:.2f} bytes/item over {d['items']} items in "
                f"{d['seconds']:g} s (file {d['file_bytes'] / 1e3:.0f} kB)",
            )
        )
    return format_table("probetui --record", rows)


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="python -m benchmarks.record", description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=positive(int, "--workers"), default=15000)
    p.add_argument("--period", type=positive(int, "--period"), default=10)
    p.add_argument("--duration", type=positive(float, "--duration"), default=30.0)
    p.add_argument("--warmup", type=positive(float, "--warmup"), default=10.0)
    p.add_argument("--skip-write-path", action="store_true", help="only the bytes on disk")
    p.add_argument(
        "--no-gc-freeze", action="store_true", help="leave the collector unfrozen in both runs"
    )
    p.add_argument(
        "--rounds",
        type=positive(int, "--rounds"),
        default=3,
        help="pairs of runs without/with the recorder (medians and ranges are reported)",
    )
    p.add_argument(
        "--flush-every", type=positive(float, "--flush-every"), help="the recorder's interval"
    )
    p.add_argument(
        "--switch-interval",
        type=positive(float, "--switch-interval"),
        help="sys.setswitchinterval for the runs (default: Python's 0.005 s)",
    )
    p.add_argument("--steady", type=positive(int, "--steady"), default=1000, help="probes")
    p.add_argument("--hours", type=positive(float, "--hours"), default=1.0)
    p.add_argument("--demo-seconds", type=float, default=60.0, help="0: leave the demo out")
    add_output_args(p)
    args = p.parse_args(argv)
    return report("record", args, lambda: compute(args), table)


if __name__ == "__main__":
    sys.exit(main())
