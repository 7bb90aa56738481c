"""The demo recorded in-process beside a live Store and the JSONL writer, then read back:
the replayed store equals the live one, the export equals the live JSONL, specs round-trip."""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from probetui.record.reader import open_recording
from probetui.record.schema import FORMAT_VERSION
from probetui.replay.feed import feed_read
from probetui.replay.store import ReplayStore
from probetui.timeline.events import NOT_IN_JSONL
from probetui.timeline.jsonl import JsonlWriter
from probetui.timeline.store import Store
from tests.record.helpers import META, assert_same_store, record_demo

pytestmark = pytest.mark.timeout(60)

SECONDS = 5.0


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("rec") / "demo.db"
    store = Store()
    out = io.StringIO()
    recorder = record_demo(path, SECONDS, store, JsonlWriter(out))
    assert recorder.failure is None
    return {"path": path, "store": store, "jsonl": out.getvalue().splitlines()}


def test_replayed_store_equals_the_live_store(demo_run: dict[str, Any]) -> None:
    replayed = Store()
    with open_recording(demo_run["path"]) as rec:
        rec.replay_into(replayed)
    live: Store = demo_run["store"]
    assert live.probes and live.containers
    assert_same_store(live, replayed)
    assert replayed.events == live.events


def test_records_fed_by_their_shapes_leave_the_store_the_events_leave(
    demo_run: dict[str, Any],
) -> None:
    # a seek feeds recorded doProbes as their shape and their own numbers (`feed_shape`),
    # without building each record and event: the store must end as the events leave it
    live: Store = demo_run["store"]
    by_shape, by_event = ReplayStore(), Store()
    with open_recording(demo_run["path"]) as rec:
        snaps = [(t, -1, (pod, status)) for t, pod, status in rec.snapshots()]
        pending = [(p.t, 0, p) for p in rec.unbuilt_events(-math.inf)]
    kinds = Counter()
    for _, kind, x in sorted(snaps + pending, key=lambda x: (x[0], x[1])):
        if kind < 0:
            by_shape.pod(*x)
            by_event.pod(*x)
        else:
            kinds[x.type] += 1
            feed_read(by_shape, x)
            by_event.event(x.event())
    assert kinds["ProbeAttempt"] > 0 and kinds["ResultChanged"] > 0
    assert_same_store(by_event, by_shape)
    assert by_shape.events == by_event.events == live.events


def test_export_equals_the_live_jsonl(demo_run: dict[str, Any]) -> None:
    with open_recording(demo_run["path"]) as rec:
        lines = [e.to_line() for e in rec.events() if e.type not in NOT_IN_JSONL]
    live = demo_run["jsonl"]
    assert len(live) > 50
    # in time order, where the live output is in publication order (an attempt is published
    # when it ends, stamped when it began): the same lines, and per probe in the same order
    assert sorted(lines) == sorted(live)

    def per_probe(ls: list[str]) -> dict[tuple[str, str, str], list[str]]:
        out: dict[tuple[str, str, str], list[str]] = {}
        for line in ls:
            e = json.loads(line)
            if e["source"] == "shadow":
                out.setdefault((e["pod"], e["container"], e["probe"]), []).append(line)
        return out

    assert per_probe(lines) == per_probe(live)
    types = Counter(json.loads(line)["type"] for line in lines)
    assert types["ProbeAttempt"] > 5 and types["ResultChanged"] > 0


def test_specs_statuses_and_meta(demo_run: dict[str, Any]) -> None:
    live: Store = demo_run["store"]
    pods = {uid: e.pod for uid, e in live.pods.items()}
    with open_recording(demo_run["path"]) as rec:
        assert rec.meta.format_version == FORMAT_VERSION and rec.meta.first == META
        first, last = rec.span() or (0.0, 0.0)
        assert 0 < last - first < SECONDS + 2
        seen = {p.uid for p in rec.pods()}
        assert seen == set(pods)
        for uid, want in pods.items():
            got = rec.spec_at(uid, last)
            assert got == want and got.labels == want.labels
            assert rec.status_at(uid, first - 1) is None
            assert rec.status_at(uid, last + 1) == live.pods[uid].status
        keys = rec.probe_keys()
        assert set(live.probes) <= set(keys)  # and workers that only said their state
        key = max(keys, key=lambda k: len(rec.attempts(k)))
        records = rec.attempts(key)
        assert records and all(r.key == key for r in records)
        mid = records[len(records) // 2].t
        assert [r.t for r in rec.attempts(key, since=mid)] == [r.t for r in records if r.t >= mid]


def test_replay_cli_prints_the_lines_and_filters(
    demo_run: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from probetui.cli import main

    path = str(demo_run["path"])
    assert main(["replay", path, "--no-ui", "--output", "jsonl"]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(demo_run["jsonl"])
    assert main(["replay", path, "--no-ui", "--since", "-1s"]) == 0
    tail = capsys.readouterr().out.splitlines()
    assert 0 < len(tail) < len(demo_run["jsonl"])
    name = "app.kubernetes.io/instance"
    assert main(["replay", path, "--no-ui", "-l", f"{name}=web-flap-ft1"]) == 0
    only = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert only and {e["pod"] for e in only} == {"web-flap-ft1"}
    # the screen takes its cursor from --at; the export's filters are refused there
    assert main(["replay", path, "--since", "-1s"]) == 2
    assert "--since filters the --no-ui export" in capsys.readouterr().err


def test_a_finished_recording_is_one_compact_file(demo_run: dict[str, Any]) -> None:
    path: Path = demo_run["path"]
    assert not Path(f"{path}-wal").exists()
    with open_recording(path) as rec:
        assert rec.conn.execute("SELECT COUNT(*) FROM recent").fetchone()[0] == 0
        assert rec.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
