"""History benchmark: what one hour of attempts for a cluster's worth of workers costs in memory.

    python -m benchmarks.history --workers 15000 --attempts 360 --period 10 [--json [PATH]]

Fills the real timeline `Store` (the UI's history, an engine sink) with `--attempts` doProbes
per worker, as the engine publishes them: for every tick of every worker a fresh `ProbeRecord`
with its `Attempt`, wrapped in the `Event` the engine builds (`attempt_fields` and all). The
workers are N/3 pods with a startup, a liveness and a readiness probe each (HTTP to a pod IP
of its own), with a realistic mix: most attempts succeed with a small body, 1% of workers fail
with 503 and a JSON body, 1% time out with Go's error text naming their own URL (a distinct
string per worker for the intern table), and the startup workers of started containers record
skips. Nothing is dialled: the addresses are only text.

Reported:
- bytes per stored attempt: (RSS after the fill - RSS before it) / entries held, and the
  store's own arrays (ring entries and kept details, allocated sizes) / entries;
- process RSS at the end (the goal: under 300 MB for 15,000 workers x one hour), with what it
  was before the store existed and after the pods were added;
- ingest: microseconds of `Store.event` per event (timed apart from building the events);
- the default ring's size when full (`Store` keeps DEFAULT_CAPACITY entries per probe, not one
  hour): the RSS projected for when every ring has wrapped, adding the measured ring bytes per
  entry for the entries still to come.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.common import (
    BenchError,
    Parser,
    add_output_args,
    environment,
    format_table,
    peak_rss_mb,
    positive,
    report,
    rss_mb,
)
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeOutcome, map_attempts
from probetui.prober.results import ResultValue
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.prober.steady import SteadyPart
from probetui.prober.worker import ProbeRecord, Skip, Trigger
from probetui.spec.model import Container, HTTPGetAction, Pod, Probe, ProbeType
from probetui.timeline.events import SHADOW, Event, attempt_fields
from probetui.timeline.history import REC
from probetui.timeline.store import DEFAULT_CAPACITY, DEFAULT_DETAIL, Store

NAME = "history"
GOAL_MB = 300.0
T0 = 1_760_000_000.0
_TIMEOUT_TEXT = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"


@dataclass(frozen=True)
class Config:
    workers: int = 15000
    attempts: int = 360  # per worker: one hour at period 10 s
    period: int = 10
    capacity: int = DEFAULT_CAPACITY
    detail: int = DEFAULT_DETAIL
    failing: float = 0.01  # share of workers answering 503
    timing_out: float = 0.01  # share of workers timing out
    seed: int = 1


@dataclass
class _Worker:
    pod: Pod
    key: ProbeKey
    container_id: str
    url: str
    kind: str  # ok, fail, timeout, skip
    part: SteadyPart | None = None  # its last record's steady part, as the worker keeps it


def _workers(
    config: Config, rng: random.Random
) -> tuple[list[tuple[Pod, PodStatus]], list[_Worker]]:
    pods: list[tuple[Pod, PodStatus]] = []
    workers: list[_Worker] = []
    n_pods = -(-config.workers // 3)
    types = (ProbeType.STARTUP, ProbeType.LIVENESS, ProbeType.READINESS)
    for i in range(n_pods):
        # an address of its own per pod, as pod IPs are; only ever text here
        ip = f"127.1.{i // 250}.{i % 250}"
        probes = {
            f"{pt.key}_probe": Probe(
                http_get=HTTPGetAction(port=8080, path=f"/{pt.key}"), period_seconds=config.period
            )
            for pt in types
        }
        container = Container("app", **probes)  # type: ignore[arg-type]
        pod = Pod(
            f"pod-{i:05d}", namespace=f"ns-{i % 50}", uid=f"hist-{i:05d}", containers=(container,)
        )
        cid = f"containerd://{i:064x}"
        status = PodStatus(
            pod_ip=ip,
            container_statuses=(
                ContainerStatus("app", cid, Running(T0 - 3600), started=True, ready=True),
            ),
        )
        pods.append((pod, status))
        for pt in types:
            if len(workers) == config.workers:
                break
            if pt is ProbeType.STARTUP:
                kind = "skip"  # a started container's startup worker runs no handler
            else:
                roll = rng.random()
                kind = (
                    "fail"
                    if roll < config.failing
                    else "timeout"
                    if roll < config.failing + config.timing_out
                    else "ok"
                )
            url = f"http://{ip}:8080/{pt.key}"
            workers.append(_Worker(pod, ProbeKey(pod.uid, "app", pt), cid, url, kind))
    return pods, workers


def _event(w: _Worker, t: float, run: int, rng: random.Random) -> Event:
    """One doProbe of worker `w` at `t`, as Worker._emit and Engine._on_record make it."""
    pod, key = w.pod, w.key
    if w.kind == "skip":
        record = ProbeRecord(
            key, t, t, Trigger.TICK, w.container_id, skip=Skip.STARTED,
            published=ResultValue.SUCCESS, steady=w.part,
        )  # fmt: skip
        w.part = record.steady
        fields: dict[str, Any] = {"reason": Skip.STARTED.value, "trigger": Trigger.TICK}
        return Event("ProbeSkipped", t, pod.uid, pod.namespace, pod.name, "app",
                     key.probe_type.key, SHADOW, fields, record)  # fmt: skip
    latency = rng.uniform(0.0005, 0.004)
    if w.kind == "ok":
        attempt = Attempt("http", w.url, Result.SUCCESS, output='{"status":"ok"}',
                          latency=latency, started_at=t, status_code=200,
                          body='{"status":"ok"}')  # fmt: skip
        published = ResultValue.SUCCESS
    elif w.kind == "fail":
        attempt = Attempt("http", w.url, Result.FAILURE,
                          output="HTTP probe failed with statuscode: 503", latency=latency,
                          started_at=t, status_code=503,
                          body='{"status":"down","db":"connection refused"}')  # fmt: skip
        published = ResultValue.FAILURE
    else:
        attempt = Attempt("http", w.url, Result.FAILURE, output=f'Get "{w.url}": {_TIMEOUT_TEXT}',
                          latency=1.0, started_at=t, timed_out=True)  # fmt: skip
        published = ResultValue.FAILURE
    outcome: ProbeOutcome = map_attempts(key.probe_type, [attempt])
    record = ProbeRecord(
        key, t, t, Trigger.TICK, w.container_id, outcome=outcome, finished_at=t + latency,
        result_run=run, last_result=outcome.result, published=published, steady=w.part,
    )  # fmt: skip
    w.part = record.steady
    return Event("ProbeAttempt", t, pod.uid, pod.namespace, pod.name, "app", key.probe_type.key,
                 SHADOW, attempt_fields(record, "direct"), record)  # fmt: skip


def store_bytes(store: Store) -> dict[str, int]:
    """Allocated bytes of the store's per-probe arrays (ring entries and kept details)."""
    rec = detail = 0
    for h in store.probes.values():
        rec += sys.getsizeof(h._rec)
        detail += sys.getsizeof(h._d)
    return {"ring": rec, "detail": detail, "texts": len(store.texts)}


def run(config: Config) -> dict[str, Any]:
    rng = random.Random(config.seed)
    gc.collect()
    rss_start = rss_mb()
    pods, workers = _workers(config, rng)
    store = Store(capacity=config.capacity, detail=config.detail)
    for pod, status in pods:
        store.pod(pod, status)
    gc.collect()
    rss_setup = rss_mb()
    ingest = 0.0
    build = 0.0
    started = time.perf_counter()
    for j in range(config.attempts):
        t = T0 + j * config.period
        b = time.perf_counter()
        batch = [_event(w, t + (i % 1000) * 1e-3, j + 1, rng) for i, w in enumerate(workers)]
        s = time.perf_counter()
        event = store.event
        for e in batch:
            event(e)
        ingest += time.perf_counter() - s
        build += s - b
    del batch
    fill_s = time.perf_counter() - started
    gc.collect()
    rss_end = rss_mb()
    held = store.attempts()
    events = config.workers * config.attempts
    arrays = store_bytes(store)
    per_entry_rss = (rss_end - rss_setup) * 1e6 / held if held else None
    ring_per_entry = arrays["ring"] / held if held else None
    # once every ring has wrapped: the entries still to come cost their ring bytes each (the
    # detail rings and texts are already at their final size)
    # the store sizes each ring by the probe's period (an hour and a half of it, capped)
    ring = max((h.capacity for h in store.probes.values()), default=config.capacity)
    more = config.workers * max(0, ring - config.attempts)
    projected_full = rss_end + (ring_per_entry or REC * 4) * more / 1e6
    return {
        "benchmark": NAME,
        "config": asdict(config),
        "environment": environment(),
        "events": events,
        "entries_held": held,
        "bytes_per_attempt": {
            "rss": round(per_entry_rss, 1) if per_entry_rss is not None else None,
            "ring_arrays": round(ring_per_entry, 1) if ring_per_entry is not None else None,
            "ring_payload": REC * 4,
            "detail_arrays_per_worker": round(arrays["detail"] / max(1, len(store.probes))),
        },
        "rss_mb": {
            "start": round(rss_start, 1),
            "after_pods": round(rss_setup, 1),
            "end": round(rss_end, 1),
            "history": round(rss_end - rss_setup, 1),
            "peak": round(peak_rss_mb(), 1),
        },
        "distinct_texts": arrays["texts"],
        "goal_mb": GOAL_MB,
        "goal_met": rss_end < GOAL_MB,
        "ingest_us_per_event": round(ingest / events * 1e6, 2),
        "build_us_per_event": round(build / events * 1e6, 2),
        "fill_s": round(fill_s, 1),
        "full_ring": {
            "entries_per_probe": ring,
            "covers_s": ring * config.period,
            "projected_rss_mb": round(projected_full),
        },
    }


def table(r: dict[str, Any]) -> str:
    c, b, m, full = r["config"], r["bytes_per_attempt"], r["rss_mb"], r["full_ring"]
    hours = c["attempts"] * c["period"] / 3600
    rows = [
        (
            "setup",
            f"{c['workers']} workers x {c['attempts']} doProbes (period {c['period']} s: "
            f"{hours:g} h), ring cap {c['capacity']} entries (sized by period), {c['detail']} detailed",
        ),
        ("entries held", f"{r['entries_held']:,} ({r['distinct_texts']:,} distinct texts)"),
        (
            "bytes/attempt",
            f"{b['rss']} by RSS; ring arrays {b['ring_arrays']} "
            f"(payload {b['ring_payload']}), + {b['detail_arrays_per_worker']} B detail/worker",
        ),
        (
            "RSS MB",
            f"{m['end']:.0f} at the end (start {m['start']:.0f}, with pods {m['after_pods']:.0f}, "
            f"history {m['history']:.0f}, peak {m['peak']:.0f})",
        ),
        (f"goal < {r['goal_mb']:.0f} MB", "met" if r["goal_met"] else "NOT met"),
        (
            "ingest",
            f"{r['ingest_us_per_event']:.1f} us/event in Store.event "
            f"(+ {r['build_us_per_event']:.1f} us building it); fill {r['fill_s']:.0f} s",
        ),
        (
            "full ring",
            f"{full['entries_per_probe']} entries/probe = {full['covers_s'] / 3600:g} h at this "
            f"period: ~{full['projected_rss_mb']:.0f} MB projected",
        ),
    ]
    return format_table("probetui history: the timeline store's memory", rows)


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m benchmarks.history", description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=positive(int, "--workers"), default=15000)
    p.add_argument(
        "--attempts", type=positive(int, "--attempts"), default=360, help="doProbes per worker"
    )
    p.add_argument("--period", type=positive(int, "--period"), default=10)
    p.add_argument(
        "--capacity", type=positive(int, "--capacity"), default=DEFAULT_CAPACITY,
        help="ring entries per probe (the Store's default)",
    )  # fmt: skip
    p.add_argument("--detail", type=int, default=DEFAULT_DETAIL, help="detailed attempts per probe")
    p.add_argument("--failing", type=float, default=0.01, help="share of workers answering 503")
    p.add_argument("--timing-out", type=float, default=0.01, help="share of workers timing out")
    p.add_argument("--seed", type=int, default=1)
    add_output_args(p)
    return p


def config_from_args(args: argparse.Namespace) -> Config:
    if not (0 <= args.failing <= 1 and 0 <= args.timing_out <= 1 - args.failing):
        raise BenchError("--failing and --timing-out are shares between 0 and 1, together <= 1")
    if args.detail < 0:
        raise BenchError("--detail cannot be negative")
    return Config(
        workers=args.workers,
        attempts=args.attempts,
        period=args.period,
        capacity=args.capacity,
        detail=args.detail,
        failing=args.failing,
        timing_out=args.timing_out,
        seed=args.seed,
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return report(NAME, args, lambda: run(config_from_args(args)), table)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Config", "main", "run", "store_bytes", "table"]
