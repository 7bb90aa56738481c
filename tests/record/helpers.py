"""Shared by the recording tests: synthetic events, a store's state to compare, file cleanup."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probetui.engine import Engine
from probetui.keys import ProbeKey
from probetui.probe.base import Attempt, Result
from probetui.prober.prober import ProbeEvent, ProbeOutcome
from probetui.prober.results import ResultValue
from probetui.prober.worker import ProbeRecord, Trigger
from probetui.record.recorder import Recorder
from probetui.record.schema import SessionMeta
from probetui.record.shapes import Template
from probetui.runtime.demo import load_demo
from probetui.runtime.local.runtime import LocalRuntime
from probetui.spec.model import Container, HTTPGetAction, HTTPHeader, Pod, Probe, ProbeType
from probetui.timeline.events import SHADOW, Event, attempt_fields
from probetui.timeline.store import Store

META = SessionMeta(0.0, "test", "1.35", "test", "test")
SECRET = "Bearer s3cr3t-t0ken-value"


def pod(i: int = 0, secret: str | None = None) -> Pod:
    headers = (HTTPHeader("Authorization", secret),) if secret else ()
    probe = Probe(http_get=HTTPGetAction(port=8080, path="/healthz", http_headers=headers))
    return Pod(
        f"p{i}",
        namespace="ns",
        uid=f"uid-{i}",
        labels={"app": f"a{i}"},
        containers=(Container("app", readiness_probe=probe),),
    )


def attempt(
    p: Pod,
    t: float,
    run: int,
    *,
    output: str = "",
    body: str | None = "ok",
    ok: bool = True,
    latency: float = 0.0021,
    trigger: Trigger = Trigger.TICK,
    tick: float | None = None,
) -> Event:
    key = ProbeKey(p.uid, "app", ProbeType.READINESS)
    a = Attempt(
        "http",
        "http://10.0.0.1:8080/healthz",
        Result.SUCCESS if ok else Result.FAILURE,
        output,
        None,
        latency,
        t,
        200 if ok else 500,
        body,
    )
    event = None if ok else ProbeEvent("Warning", "Unhealthy", f"Readiness probe failed: {output}")
    result = ResultValue.SUCCESS if ok else ResultValue.FAILURE
    outcome = ProbeOutcome(result, None, (a,), event)
    record = ProbeRecord(
        key,
        t,
        t - 0.0004 if tick is None else tick,
        trigger,
        "cid-1",
        outcome=outcome,
        finished_at=t + latency,
        result_run=run,
        last_result=result,
        published=ResultValue.SUCCESS,
    )
    return Event(
        "ProbeAttempt",
        t,
        p.uid,
        p.namespace,
        p.name,
        "app",
        "readiness",
        SHADOW,
        attempt_fields(record, "loopback"),
        record,
    )


def kinds_of(conn: sqlite3.Connection) -> Callable[[int], str]:
    """The item kind of each shape id, as a file's shapes table says (what `codec`'s decoders
    ask of a shape), read from the file itself rather than from the reader's own cache."""
    strings: dict[int | None, str] = dict(conn.execute("SELECT id, text FROM strings"))
    shapes = {
        i: Template(json.loads(body), strings.get)
        for i, body in conn.execute("SELECT id, body FROM shapes")
    }
    return lambda i: shapes[i].kind


def clean(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def store_state(store: Store) -> dict[str, Any]:
    """Everything a Store holds that a recording carries (not `next_tick`: a recording has no
    schedule), times to the millisecond, as the rings hold them."""
    probes: dict[ProbeKey, Any] = {}
    for key, h in store.probes.items():
        entries = [
            (
                v.kind,
                v.trigger,
                v.skip,
                round(v.latency, 5),
                v.status_code,
                v.result_run,
                v.published,
                v.output,
                v.detail,
                v.target,
                v.body,
                v.error,
                v.event,
                v.tries,
            )
            for v in h.recent(10**6)
        ]
        times = [v.t for v in h.recent(10**6)]
        changes = h.changes(-math.inf, math.inf)
        probes[key] = {
            "entries": entries,
            "times": times,
            "published": h.published,
            "run": h.result_run,
            "on_hold": h.on_hold,
            "paused": h.paused,
            "last_result": h.last_result,
            "counts": list(h.counts),
            "changes": [(r, t) for t, r in changes],
        }
    containers = {
        k: {
            "marks": [(m.t, m.type, m.source, m.probe, m.fields) for m in c.marks],
            "reports": [(m.t, m.type, m.source, m.probe, m.fields) for m in c.reports],
            "divergences": c.divergences,
        }
        for k, c in store.containers.items()
    }
    pods = {uid: (e.pod, e.pod.labels, e.status) for uid, e in store.pods.items()}
    return {"probes": probes, "containers": containers, "pods": pods}


def probe_state(store: Store) -> dict[ProbeKey, tuple[Any, ...]]:
    """What the list and the threshold pane read of each probe at the cursor: a seek's window
    holds less history than everything fed from the start, the same last entry and state."""
    out = {}
    for key, h in store.probes.items():
        last = h.recent(1)
        entry = (last[0].kind, last[0].result_run, last[0].published) if last else None
        out[key] = (h.published, h.result_run, h.last_result, h.on_hold, h.paused, entry)
    return out


def assert_same_store(live: Store, replayed: Store) -> None:
    a, b = store_state(live), store_state(replayed)
    assert a["pods"] == b["pods"]
    assert a["probes"].keys() == b["probes"].keys()
    for key, want in a["probes"].items():
        got = b["probes"][key]
        for name in ("entries", "published", "run", "on_hold", "paused", "last_result", "counts"):
            assert got[name] == want[name], (key, name)
        assert len(got["times"]) == len(want["times"])
        assert all(abs(x - y) < 0.0015 for x, y in zip(got["times"], want["times"], strict=True))
        assert [r for r, _ in got["changes"]] == [r for r, _ in want["changes"]], key
        assert all(
            abs(x - y) < 1e-5
            for (_, x), (_, y) in zip(got["changes"], want["changes"], strict=True)
        )
    assert a["containers"].keys() == b["containers"].keys()
    for key, want in a["containers"].items():
        got = b["containers"][key]
        assert got["divergences"] == want["divergences"]
        for name in ("marks", "reports"):
            assert [m[1:] for m in got[name]] == [m[1:] for m in want[name]], (key, name)
            assert all(abs(x[0] - y[0]) < 1e-5 for x, y in zip(got[name], want[name], strict=True))


def as_format_1(conn: sqlite3.Connection) -> None:
    """Make a recording a format-1 file, as probetui wrote it before checksums: no `crc`
    columns, no tallies."""
    from probetui.record.checks import COLUMNS
    from probetui.record.schema import TIME_INDEX

    # the time indexes carry `crc` in format 2: as format 1 had them, on the time alone, and
    # what a seek asks of the chunks in an index of its own
    for table, index in TIME_INDEX.items():
        column = "t0" if table == "chunks" else "t"
        conn.execute(f"DROP INDEX {index}")
        conn.execute(f"CREATE INDEX {index} ON {table} ({column})")
    conn.execute("CREATE INDEX chunks_t0_steady ON chunks (t0, probe_id, steady)")
    for table in COLUMNS:
        if table != "tally":
            conn.execute(f"ALTER TABLE {table} DROP COLUMN crc")
    conn.execute("DROP TABLE tally")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()


def record_demo(path: Path, seconds: float, *sinks: Any) -> Recorder:
    """Run the demo for `seconds` with a recorder writing `path` beside `sinks`; closed."""
    recorder = Recorder(path, META, flush_every=0.2)
    recorder.start()
    engine = Engine(LocalRuntime(load_demo(), source="demo"), [*sinks, recorder])
    try:
        asyncio.run(engine.run(seconds))
    finally:
        recorder.close()
    return recorder
