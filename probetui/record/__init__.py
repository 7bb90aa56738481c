"""Record (`--record FILE`) and read back (`probetui replay`, `open_recording`).

One SQLite file (stdlib `sqlite3`, WAL while written, application_id "PRBT", user_version the
format). Tables:

    sessions   one row per recording run: start, probetui and kube versions, runtime, source,
               via, context, namespace, selector, read-only
    pods       uid, namespace, name, first and last seen, deleted
    probes     (pod, container, probe type): the id chunks are filed under
    specs      a pod's spec as first seen and on each change: `spec.encode` JSON (the
               engine's redacted copy, `probetui.redact`), indexed by (pod, t)
    statuses   a pod's status on each change, NULL when deleted, indexed by (pod, t)
    events     every event that is not a per-probe item (the kubelet's, Divergence, ...):
               t, pod, type, container, probe, source and its fields as an interned string
    strings    interned texts (outputs, targets, body excerpts, errors, event messages,
               event fields), with when each was last used (retention drops the unused)
    shapes     interned item shapes (`codec.py`), JSON arrays referring to strings
    chunks     per probe, up to CHUNK_ITEMS (32) items spanning at most MAX_SPAN (600 s):
               t0, t1, n, the items' bytes (`codec.py`) and their marks (every
               MARK_EVERY-th item: where a seek may start decoding; NULL in files from
               before them); indexed by t0 and (probe, t0)
    recent     the items of segments not yet closed, one row each, written with each batch:
               what a `kill -9` leaves; a segment's rows become one chunk when it closes
    tally      per table read by time and 10 s bucket of that time: its rows and the sum of
               their checksums (format 2: every row carries `crc`; `checks.py`, `pages.py`)

An item (attempt, skip, worker state, result change) is a header byte and a few varints on top
of its shape: a steady attempt costs 4-6 bytes plus its share of the chunk row. Each chunk
starts from zeros (a keyframe), so a seek reads one chunk per probe. Writing: `recorder.py`
(the sink and its one thread), `writer.py` (rows, chunks, retention). Reading: `reader.py`
(`Recording`) on `source.py`, `pod_reads.py`, `segments.py`, `unbuilt.py` and `merge.py`;
`shapes.py`. `timespec.py` reads `03:10` / `-6h` / ISO times and durations, `selector.py`
kubectl's `-l`.
"""
