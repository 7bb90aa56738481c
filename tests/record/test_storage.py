"""Compaction (bytes per attempt), retention, and the encoder's round trip of pod specs."""

from __future__ import annotations

import glob
import os
import time
from pathlib import Path

import pytest

from probetui.record.reader import open_recording
from probetui.record.recorder import Recorder
from probetui.runtime.demo import load_demo
from probetui.spec.encode import decode, encode
from probetui.spec.parse import load_pods
from tests.record.helpers import META, attempt, pod

pytestmark = pytest.mark.timeout(60)


def test_spec_round_trip_over_the_test_manifests_and_the_demo() -> None:
    pods = [p for f in sorted(glob.glob("tests/spec/data/*.yaml")) for p in load_pods(f, False)]
    pods += load_demo()
    assert len(pods) > 10
    for p in pods:
        back = decode(encode(p), p.source)
        assert back == p and back.labels == p.labels


def test_steady_attempts_cost_a_few_bytes_each(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    rec = Recorder(path, META)
    pods = [pod(i) for i in range(50)]
    n = 400
    for i in range(n):
        for j, p in enumerate(pods):
            rec.event(
                attempt(
                    p, 1000.0 + 10 * i + j * 0.01, i + 1, tick=1000.0 + 10 * i + j * 0.01 - 0.0003
                )
            )
        if i % 50 == 0:
            rec.flush()
    rec.close()
    with open_recording(path) as r:
        pages = r.conn.execute("PRAGMA page_count").fetchone()[0]
        assert pages * 4096 == os.path.getsize(path)  # the pages of `recent` went back
        # what grows with the attempts (the file's few fixed pages left out): the chunks
        grown = r.conn.execute(
            "SELECT SUM(pgsize) FROM dbstat WHERE name IN ('chunks', 'chunks_t0', "
            "'chunks_probe_t0')"
        ).fetchone()[0]
    per_attempt = grown / (n * len(pods))
    # each chunk's checksum (format 2) is 5 of its bytes: a sixth of a byte an attempt
    assert per_attempt < 10.5, per_attempt
    with open_recording(path) as r:
        records = r.attempts(r.probe_keys()[3])
        assert [x.result_run for x in records] == list(range(1, n + 1))
        assert abs(records[10].t - (1000.0 + 100 + 0.03)) < 1e-6


def test_retention_drops_the_oldest_and_keeps_what_is_in_force(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    hour = 3600.0
    rec = Recorder(
        path, META, retain=hour, writer_options={"maintain_every": 0.0, "chunk_span": 60.0}
    )
    p = pod(0)
    from tests.record.test_faults import _status

    # the sink stamps snapshots with the wall clock: the attempts end about now
    base = time.time() - 12000.0
    rec.pod(p, _status())
    for i in range(1200):  # 200 minutes at period 10 s
        rec.event(attempt(p, base + 10 * i, i + 1, output=f"o{i // 60}"))
        if i % 30 == 0:
            rec.flush()
    rec.close()
    with open_recording(path) as r:
        first, last = r.span() or (0, 0)
        assert last - first < hour + 200
        records = r.attempts(r.probe_keys()[0])
        assert records[0].t >= last - hour - 120 and abs(records[-1].t - (base + 11990)) < 1e-5
        assert records[0].outcome is not None  # its shape and strings survived
        assert r.status_at(p.uid, last) is not None and r.spec_at(p.uid, last) == p
        outputs = {s for (s,) in r.conn.execute("SELECT text FROM strings")}
        assert "o0" not in outputs and "o19" in outputs
