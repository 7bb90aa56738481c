"""A damaged recording never replays as if whole: random bit flips in copies of a small real
recording, each replayed headless (`replay --no-ui`), must either print exactly what the whole
file printed (a flip in a free page, or in what nothing reads) with exit 0, or stop with exit 2
and one stderr line saying "damaged recording", after printing a prefix of the whole output:
no traceback, no "Exception ignored", bounded in time and memory."""

from __future__ import annotations

import contextlib
import io
import random
from pathlib import Path

import pytest

from probetui.cli import main
from probetui.prober.status import ContainerStatus, PodStatus, Running
from probetui.record.recorder import Recorder
from tests.record.helpers import META, attempt, pod

pytestmark = pytest.mark.timeout(120)

COPIES = 60
FLIPS = 3


def _record(path: Path) -> None:
    """Four pods probed every 2 s for 100 s (ten tally buckets), with a kubelet event each
    and a restart, a status change, a failure run and a result change among them."""
    rec = Recorder(path, META, clock=lambda: 999.0)
    pods = [pod(i) for i in range(4)]
    for p in pods:
        rec.pod(p, PodStatus(container_statuses=(ContainerStatus("app", "cid-1", Running(990.0)),)))
    run = [0] * len(pods)
    for i in range(50):
        for j, p in enumerate(pods):
            ok = not (j == 2 and 20 <= i < 25)
            run[j] = run[j] + 1 if ok == (run[j] >= 0) else 1
            rec.event(attempt(p, 1000.0 + 2 * i + j * 0.1, i + 1, ok=ok, output="" if ok else "no"))
        if i % 10 == 0:
            rec.flush()
    rec.close()


def _replay(path: Path) -> tuple[int, bytes, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["replay", str(path), "--no-ui"])
    return code, out.getvalue().encode(), err.getvalue()


def test_bit_flips_are_damage_or_harmless_never_other_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good_path = tmp_path / "good.db"
    _record(good_path)
    code, good, err = _replay(good_path)
    assert code == 0 and not err and good.count(b"\n") > 150
    data = good_path.read_bytes()
    rng = random.Random(20240601)
    seen = {"same": 0, "damaged": 0, "partial": 0}
    for k in range(COPIES):
        bad = bytearray(data)
        for _ in range(FLIPS):
            i = rng.randrange(100, len(bad))  # past the header SQLite checks on open
            bad[i] ^= 1 << rng.randrange(8)
        path = tmp_path / f"copy-{k}.db"
        path.write_bytes(bytes(bad))
        code, printed, err = _replay(path)
        assert "Traceback" not in err and "Exception ignored" not in err, (k, err)
        if code == 0:
            assert printed == good, k
            assert not err, (k, err)
            seen["same"] += 1
        else:
            lines = err.strip().splitlines()
            assert code == 2 and len(lines) == 1 and "damaged recording" in lines[0], (k, err)
            assert good.startswith(printed), k
            seen["damaged"] += 1
            seen["partial"] += bool(printed)
        path.unlink()
    # the seed gives both kinds, and damage that leaves what came before it readable
    assert seen["damaged"] and seen["same"] and seen["partial"], seen


def test_two_replays_of_a_damaged_file_print_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    _record(path)
    import sqlite3

    conn = sqlite3.connect(path)
    chunk, data = conn.execute(
        "SELECT id, data FROM chunks ORDER BY t0 LIMIT 1 OFFSET 4"
    ).fetchone()
    changed = bytearray(data)
    changed[2] ^= 4
    conn.execute("UPDATE chunks SET data = ? WHERE id = ?", (bytes(changed), chunk))
    conn.commit()
    conn.close()
    first, second = _replay(path), _replay(path)
    assert first == second and first[0] == 2
    assert f"chunks row {chunk} fails its checksum" in first[2]
