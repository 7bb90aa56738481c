"""A format-2 row's checksum: the CRC-32 of a packed head (its numbers, its texts' and blobs'
lengths) and then those bytes, computed by a function generated per table rather than a loop
over the columns; and the rows the recorder rewrites keep theirs."""

from __future__ import annotations

import struct
import time
import zlib
from pathlib import Path

from probetui.record.checks import row_crc
from probetui.record.reader import open_recording
from probetui.record.recorder import Recorder
from tests.record.helpers import META, attempt, pod
from tests.record.test_faults import _status


def test_a_rows_checksum_is_the_crc_of_its_packed_head_then_its_texts_and_blobs() -> None:
    """The format: per column in order, an 8-byte little-endian integer or real, or a text's
    (UTF-8) or blob's 4-byte length, each column that may be NULL preceded by a byte saying
    whether it is; then the texts and blobs themselves; CRC-32 from the table name's, stored
    as a signed 32-bit integer."""

    def signed(c: int) -> int:
        return c - (1 << 32) if c >= 1 << 31 else c

    # chunks: id, probe_id, t0, t1, n, data, marks (may be NULL), steady (may be NULL)
    row = (7, 3, 1000.5, 1064.25, 32, b"\x01\x02", None, 12)
    head = struct.pack("<qqddqI?I?q", 7, 3, 1000.5, 1064.25, 32, 2, True, 0, False, 12)
    want = zlib.crc32(b"", zlib.crc32(b"\x01\x02", zlib.crc32(head, zlib.crc32(b"chunks"))))
    assert row_crc("chunks", row) == signed(want)
    # pods: id, uid, namespace, name, first_t, last_t, deleted_t (may be NULL)
    row2 = (1, "u-é", "ns", "web", 1.0, 2.0, None)
    head = struct.pack("<qIIIdd?d", 1, 4, 2, 3, 1.0, 2.0, True, 0.0)
    c = zlib.crc32(head, zlib.crc32(b"pods"))
    for text in (b"u-\xc3\xa9", b"ns", b"web"):
        c = zlib.crc32(text, c)
    assert row_crc("pods", row2) == signed(c)
    # an integer where a real is kept reads back as the real: the same checksum
    assert row_crc("pods", (1, "u-é", "ns", "web", 1, 2, None)) == row_crc("pods", row2)


def test_a_pods_row_rewritten_by_the_recorder_keeps_its_checksum(tmp_path: Path) -> None:
    """The recorder rewrites a pod's row when it was last used (once a minute) and when it
    is deleted, its checksum with it from what it keeps of the row."""
    path = tmp_path / "r.db"
    rec = Recorder(path, META, writer_options={"maintain_every": 0.0})
    p, q = pod(0), pod(1)
    now = time.time()
    rec.pod(p, _status())
    rec.pod(q, _status())
    for i in range(20):
        rec.event(attempt(p, now + 2 * i, i + 1))
        rec.event(attempt(q, now + 2 * i + 1, i + 1))
        if i == 10:
            rec.pod(q, None)
        rec.flush()
    rec.close()
    with open_recording(path) as r:
        pods = {info.name: info for info in r.pods()}
        assert pods[q.name].deleted is not None and pods[p.name].last_seen > now + 30
        assert len(list(r.events())) == 40
