"""Frame the stream as newline-delimited JSON objects, each with a kind `k` (docs/stream.md).

Newline JSON and not a length prefix or msgpack: `json` escapes every newline inside a string,
so a line is a frame; a person can read the stream with `head`; and msgpack is not installed
here to be measured against (docs/stream.md says what would make it worth it).

The first frame each way is a `hello` naming the protocol version; a peer that speaks another
major version is refused with one line saying which, before anything else is read.
"""

from __future__ import annotations

import json
from typing import Any

VERSION = 1
# a frame longer than this is refused: bodies are cut to 10 KiB, a pod spec is a few KiB
MAX_FRAME = 1 << 20

# engine -> client
EVENT = "event"  # one Event: the JSONL object under "e", what the store needs under "x"
POD = "pod"  # a pod's latest snapshot (spec when it changed, status); status null: gone
ACK = "ack"  # the answer to one command, by its id
DROPPED = "dropped"  # frames a slow reader did not get, counted by kind since the start
LATE = "late"  # how far behind its ticks the prober runs, seconds
END = "end"  # the engine's runtime returned by itself (every pod ended)
# local mode: the process groups of the containers the engine runs now, for the client to
# kill should the engine die without stopping them (SIGKILL, the OOM killer)
GROUPS = "groups"
# local mode: a container's recent output lines, when they changed (the attempt log shows them)
TAIL = "tail"
FAIL = "fail"  # the engine cannot go on: one line
# fed mode, asked for in the client's hello ("verdicts": true): a worker's container, whether it
# has counted an attempt, and its published result, each time one changes (docs/stream.md)
VERDICT = "verdict"
# a node agent (probetui/agent, docs/agents.md): per probe, the kubelet's prober_probe_total
# beside the shadow's own count, after each scrape of the kubelet's /metrics/probes
COUNTS = "counts"
# a node agent: one line about the node that a client shows (the kubelet's counts cannot be
# read, and why); an empty text clears it
NOTE = "note"
# a node agent: one probe's state and counts, for a client that asked for summaries of the
# probes whose attempts it does not take
SUMMARY = "summary"
# a node agent: what was kept before the client came has all been sent; live from here
LIVE = "live"
# a node agent: its kubelet's version, learned or changed after the hello said it
KUBELET = "kubelet"
# client -> engine
CMD = "cmd"  # probe now, pause, resume; answered by an ack
START = "start"  # the pods sent so far are the engine's: run them
MGR = "mgr"  # fed mode: what the source told the prober's manager (add, update, remove)
# both ways
HELLO = "hello"

OPS = ("probe", "probe_container", "pause", "resume")


class ProtocolError(Exception):
    """Signals a frame that is not one of this protocol's; the message names what is wrong."""


class VersionMismatch(ProtocolError):
    pass


# one encoder for every frame: `json.dumps` with options builds a new one per call
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(frame: dict[str, Any]) -> bytes:
    return _ENCODER.encode(frame).encode() + b"\n"


def json_text(value: Any) -> str:
    """Return `value` as JSON, written as `dumps` writes it inside a frame."""
    return _ENCODER.encode(value)


def loads(line: bytes) -> dict[str, Any]:
    if len(line) > MAX_FRAME:
        raise ProtocolError(f"frame of {len(line)} bytes: over the {MAX_FRAME} byte limit")
    try:
        frame = json.loads(line)
    except ValueError as e:
        raise ProtocolError(f"not a JSON frame: {e}") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("k"), str):
        raise ProtocolError("a frame is a JSON object with a string 'k' (its kind)")
    return frame


def hello(role: str, **rest: Any) -> dict[str, Any]:
    return {"k": HELLO, "v": VERSION, "role": role, **rest}


def check_hello(frame: dict[str, Any]) -> dict[str, Any]:
    """`frame` if it is a hello of this version; else ProtocolError / VersionMismatch."""
    if frame.get("k") != HELLO:
        raise ProtocolError(f"expected a hello first, got a {frame.get('k')!r} frame")
    version = frame.get("v")
    if version != VERSION:
        raise VersionMismatch(
            f"stream protocol version {version!r} from the {frame.get('role', 'peer')}, this "
            f"probetui speaks {VERSION}: run the same probetui version on both ends"
        )
    return frame


def command(cmd_id: int, op: str, pod_uid: str, container: str, probe: str | None) -> dict:
    if op not in OPS:
        raise ProtocolError(f"unknown command {op!r} (one of {', '.join(OPS)})")
    frame: dict[str, Any] = {"k": CMD, "id": cmd_id, "op": op, "uid": pod_uid, "c": container}
    if probe is not None:
        frame["probe"] = probe
    return frame


def ack(cmd_id: int, ok: bool, n: int = 0, error: str | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"k": ACK, "id": cmd_id, "ok": ok, "n": n}
    if error is not None:
        frame["error"] = error
    return frame


__all__ = [
    "ACK",
    "CMD",
    "COUNTS",
    "DROPPED",
    "END",
    "EVENT",
    "FAIL",
    "GROUPS",
    "HELLO",
    "LATE",
    "LIVE",
    "MAX_FRAME",
    "MGR",
    "NOTE",
    "OPS",
    "POD",
    "START",
    "SUMMARY",
    "TAIL",
    "VERDICT",
    "VERSION",
    "ProtocolError",
    "VersionMismatch",
    "ack",
    "check_hello",
    "command",
    "dumps",
    "hello",
    "json_text",
    "loads",
]
