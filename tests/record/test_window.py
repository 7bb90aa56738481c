"""A seek decodes a chunk only as far as the cursor needs (`codec.window`, `events(slack=)`):
what it keeps equals what decoding every chunk whole and filtering keeps, over random windows
of a real recording of the demo, their ends on recorded instants and between them."""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from probetui.record import codec
from probetui.record.reader import open_recording
from probetui.replay.feed import lookback
from tests.record.helpers import kinds_of, record_demo

pytestmark = pytest.mark.timeout(60)

SECONDS = 6.0


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("window") / "demo.db"
    record_demo(path, SECONDS, *())
    return path


def _whole(data: bytes, kind_of: Any, lo: int, hi: int) -> list[tuple[int, codec.Item]]:
    """The definition: every item decoded, keyed by the latest time so far, then filtered."""
    out, key = [], -math.inf
    for item in codec.items(data, kind_of):
        key = max(key, item.t)
        if lo <= item.t <= hi:
            out.append((int(key), item))
    return out


def _chunks(path: Path) -> list[bytes]:
    conn = sqlite3.connect(path)
    try:
        out = [bytes(d) for (d,) in conn.execute("SELECT data FROM chunks")]
        # an open segment is its rows in `recent`, joined
        open_segs: dict[int, bytes] = {}
        for seg, d in conn.execute("SELECT seg, data FROM recent ORDER BY id"):
            open_segs[seg] = open_segs.get(seg, b"") + bytes(d)
    finally:
        conn.close()
    return out + list(open_segs.values())


def test_a_chunk_decoded_to_a_window_keeps_what_the_whole_decode_keeps(demo: Path) -> None:
    rng = random.Random(14)
    with open_recording(demo) as rec:
        kind_of = kinds_of(rec.conn)
        slack = round(lookback(rec) * codec.US)
        chunks = _chunks(demo)
        assert len(chunks) >= 10
        for data in chunks:
            times = [i.t for i in codec.items(data, kind_of)]
            for _ in range(12):
                # ends on an item's own instant, a microsecond either side, or anywhere
                a, b = sorted(rng.choice(times) + rng.choice((-1, 0, 1, 0)) for _ in range(2))
                if rng.random() < 0.3:
                    a = -(1 << 62)
                want = _whole(data, kind_of, a, b)
                assert codec.window(data, kind_of, a, b, 1 << 62) == want
                # cut short past the window's end: nothing at or before it is lost
                assert codec.window(data, kind_of, a, b, b + slack) == want


def test_events_read_with_a_slack_equal_events_read_whole(demo: Path) -> None:
    rng = random.Random(7)
    with open_recording(demo) as rec:
        first, last = rec.span()  # type: ignore[misc]
        back = lookback(rec)
        instants = [e.t for e in rec.events()]

        def seen(**kw: Any) -> list[tuple[Any, ...]]:
            return [(e.to_line(), e.record, e.state) for e in rec.events(**kw)]

        for _ in range(25):
            lo, hi = sorted(
                rng.choice((rng.choice(instants), rng.uniform(first, last))) for _ in "ab"
            )
            assert seen(since=lo, until=hi, slack=back) == seen(since=lo, until=hi), (lo, hi)
        assert seen(until=rng.uniform(first, last), slack=back) != []


def test_events_without_records_carry_the_same_fields(demo: Path) -> None:
    with open_recording(demo) as rec:
        whole = list(rec.events())
        bare = list(rec.events(records=False))
    assert [e.to_line() for e in bare] == [e.to_line() for e in whole]
    assert all(e.record is None for e in bare if e.type == "ProbeAttempt")
    assert any(e.type == "ProbeAttempt" for e in bare)
