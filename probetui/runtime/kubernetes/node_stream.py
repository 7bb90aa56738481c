"""Read one node's agent stream, opened again after every cut and resumed where it stopped.

A `NodeStream` is a GET of `pods/AGENT:PORT/proxy/v1/stream` through the view's own API client
(the read-only guard admits exactly that path of a checked agent), with `X-Probetui-Token`,
long-lived. It asks for rows, `pods=` the UIDs it shows in full (all of the node's pods the view
shows when they do not fit `POD_QUERY_BUDGET`, then filtered here) and `since=` the `at` of the
last frame it took, so a stream cut and opened again, even on a replaced agent, shows nothing
twice and misses nothing the agent kept (docs/agents.md, "Stamps, resuming, nothing twice").
What it reads goes to its `AgentReader` (`agent_streams.py`), which holds one per covered node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp

from probetui.agent.manifest import TOKEN_HEADER
from probetui.runtime.kubernetes.agents import READER_FIX, AgentPod
from probetui.runtime.kubernetes.guard import ReadOnlyViolation
from probetui.runtime.kubernetes.proxy import api_forbidden, api_path_error
from probetui.stream import protocol as p
from probetui.stream.codec import event_from_frame
from probetui.stream.reader import lines
from probetui.stream.rows import ROWS, WORKER, RowReader
from probetui.timeline.events import EVENTS_DROPPED, SHADOW, Event

if TYPE_CHECKING:
    from probetui.runtime.kubernetes.agent_streams import AgentReader

log = logging.getLogger(__name__)

STREAM_PATH = "v1/stream"
PROBE_PATH = "v1/probe"
# UIDs named in `pods=` at most this many characters: the agent reads request lines of 4 KiB
POD_QUERY_BUDGET = 3000
# the agent says `late` every 5 s and the API server flushes every 200 ms: a quiet stream is dead
READ_IDLE = 30.0
CONNECT_TIMEOUT = 10.0
BACKOFF_FIRST = 0.5
BACKOFF_CAP = 10.0
# a refusal (RBAC, a token the agent does not take) is not retried at once
REFUSED_RETRY = 30.0
# how long a change of the wanted pods waits for more before the stream is opened again
REOPEN_AFTER = 1.0
# the streams a change reopens together are opened over this much more, evenly: each opening
# is a TLS handshake and a request through the API server, and dozens at one instant would
# hold the loop in one piece, a key pressed then waiting behind all of them
REOPEN_SPREAD = 0.5
MODES = ("agent", "auto")
# connections of the agents' client: a stream per node holds one for good, and a cluster has
# at most 5,000 nodes, so no stream ever waits for another to end
STREAMS_MAX = 6000
# seconds of frames a stream takes before it gives the loop back: an agent's stream opened
# again sends its node's summaries (and, if older, its pods) at once, and streams reopened
# together would otherwise hold the loop in turn, each repaint waiting for all of them
TURN = 0.002
# how every `pod` frame begins (`codec.pod_frame` puts the kind first): the largest frames an
# agent sends, which the view, watching the pods itself, passes over undecoded
POD_FRAME = p.dumps({"k": p.POD})[:-2] + b","


class Fault(Exception):
    """Says why a stream stopped: `text` for the user (one line, the node and the fix), `wait`
    before trying again (None: the back-off), `token` when the read token was refused."""

    def __init__(self, text: str, wait: float | None = None, token: bool = False) -> None:
        super().__init__(text)
        self.text = text
        self.wait = wait
        self.token = token


@dataclass
class NodeStream:
    """Reads one node's agent stream, opened again after every cut, resumed from `last_at`."""

    node: str
    reader: AgentReader
    last_at: float | None = None
    agent_start: float | None = None  # the hello's `start` of the agent last read
    agent_uid: str = ""  # the agent pod last read
    connections: int = 0
    live: bool = False
    wanted: frozenset[str] | None = None  # UIDs asked for in `pods=` (None: every pod)
    reopen: asyncio.Event = field(default_factory=asyncio.Event)
    frames: int = 0
    dropped: int = 0
    notes: dict[str, str] = field(default_factory=dict)  # topic -> text in force
    _reopen_due: asyncio.TimerHandle | None = None

    async def run(self) -> None:
        delay = BACKOFF_FIRST
        while True:
            pod = self.reader.directory.of(self.node)
            if pod is None:
                self.reader.say_once(self.node, f"node {self.node}: {self._no_agent()}")
                await self.reader.agent_changed(self.node)
                continue
            fault: Fault | None = None
            try:
                if await self._read(pod):
                    continue  # opened again for other pods: at once, nothing missed
                fault = Fault(f"node {self.node}: the stream of agent pod {pod.name} ended")
            except asyncio.CancelledError:
                raise
            except Fault as f:
                fault = f
            except ReadOnlyViolation as e:  # a bug: the guard admits every path asked here
                fault = Fault(f"node {self.node}: {e}", wait=REFUSED_RETRY)
            except (aiohttp.ClientError, OSError, TimeoutError, p.ProtocolError) as e:
                fault = Fault(
                    f"node {self.node}: the stream of agent pod {pod.name} was cut "
                    f"({one_line(e)}); resuming"
                )
            cut = self.live
            self.live = False
            for event in self.reader.counts.gap(self.node):
                self.reader.publish(event)
            if fault.token:
                await self.reader.refresh_token()
            if cut:
                # a stream that had gone live was healthy: resume at once, quietly
                delay = BACKOFF_FIRST
                log.info("%s", fault.text)
            else:
                self.reader.say_once(self.node, fault.text)
            wait = fault.wait if fault.wait is not None else delay
            delay = min(BACKOFF_CAP, delay * 2)
            await self.reader.wait_or_change(self.node, wait, self.reopen)

    def reopen_soon(self, after: float = REOPEN_AFTER) -> None:
        """Open the stream again (its query changed) in `after` seconds, with what is wanted
        then: changes meanwhile ride on the same reopening."""
        if self._reopen_due is not None:
            return
        self._reopen_due = asyncio.get_running_loop().call_later(after, self._reopen_now)

    def _reopen_now(self) -> None:
        self._reopen_due = None
        self.reopen.set()

    def _no_agent(self) -> str:
        d = self.reader.directory
        rejected = "; ".join(f"{n}: {why}" for n, why in sorted(d.rejected.items())[:3])
        return (
            f"no Ready agent pod of the DaemonSet probetui-agent here "
            f"{'(' + rejected + ') ' if rejected else ''}"
            "(is the DaemonSet rolling? `kubectl -n "
            f"{d.namespace} get pods -o wide`); the view waits for one"
        )

    def query(self) -> dict[str, str]:
        # the view watches the pods itself: an agent that knows `podframes` sends none
        q = {"rows": "1", "podframes": "0"}
        if self.last_at is not None:
            q["since"] = repr(self.last_at)
        if self.wanted is not None:
            q["pods"] = ",".join(sorted(self.wanted))
        if self.reader.focus is not None:
            q["summary"] = "1"  # the screen shows the others' state from summaries
        return q

    async def _read(self, pod: AgentPod) -> bool:
        """One connection, until it ends (False) or the pods wanted change (True)."""
        reader = self.reader
        self.wanted = reader.query_pods(self.node)
        self.reopen.clear()
        api = reader.api
        assert api is not None
        url = reader.url(pod, STREAM_PATH)
        headers = {TOKEN_HEADER: reader.token or "", "Accept": "application/x-ndjson"}
        queries: list[Any] = []
        await api.update_params_for_auth(headers, queries, ["BearerToken"])
        session: aiohttp.ClientSession = api.rest_client.pool_manager
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=CONNECT_TIMEOUT, sock_read=READ_IDLE
        )
        self.connections += 1
        async with session.get(
            url, params=self.query(), headers=headers, timeout=timeout, allow_redirects=False
        ) as resp:
            if resp.status != 200:
                raise self._refusal(pod, resp.status, await read_capped(resp))
            reading = asyncio.ensure_future(self._frames(pod, resp))
            reopen = asyncio.ensure_future(self.reopen.wait())
            try:
                await asyncio.wait({reading, reopen}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                reopen.cancel()
                if not reading.done():
                    # between two reads: no frame is half taken, and what the socket held
                    # comes again from `since`
                    reading.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await reading
            if reading.cancelled():
                return True
            reading.result()
            return False

    def _refusal(self, pod: AgentPod, status: int, body: bytes) -> Fault:
        """A non-200 answer as one line: the API server's own, or the agent's."""
        where = f"node {self.node}"
        ns = self.reader.directory.namespace
        forbidden = api_forbidden(status, body)
        if forbidden is not None:
            return Fault(
                f"{where}: cannot read its agent: {forbidden} ({READER_FIX.format(ns=ns)})",
                wait=REFUSED_RETRY,
            )
        path_error = api_path_error(status, body)
        if path_error is not None:
            return Fault(f"{where}: agent pod {pod.name}: {path_error}; retrying")
        text = body.decode("utf-8", "replace").strip().splitlines()
        said = text[0][:200] if text else f"HTTP {status}"
        if status == 401:
            return Fault(
                f"{where}: agent pod {pod.name} refused the read token ({said}): the Secret "
                "probetui-agent-read and the token the agent mounted differ (the kubelet "
                "updates a mounted Secret within a minute or two; else apply the manifest "
                "again)",
                wait=REFUSED_RETRY,
                token=True,
            )
        if status == 404:
            return Fault(
                f"{where}: agent pod {pod.name} is gone ({said}); waiting for its successor"
            )
        if status == 503:
            return Fault(f"{where}: agent pod {pod.name}: {said}", wait=REFUSED_RETRY)
        return Fault(f"{where}: agent pod {pod.name} answered {status}: {said}")

    async def decoded(
        self,
        pod: AgentPod,
        resp: aiohttp.ClientResponse,
        *,
        resume: bool = False,
        turn: asyncio.Lock | None = None,
        records_only: bool = False,
    ) -> AsyncIterator[tuple[str, dict[str, Any], Sequence[Event]]]:
        """Check the stream's hello, then yield each later frame with its kind and the events
        it carries (a `rows` or `event` frame's; none for the others), `wk` frames declared;
        `pod` frames are passed over undecoded.

        With `resume`, a `rows` or `event` frame stamped at or before `last_at` is not yielded
        (a `rows` frame's records are kept for the rows after it) and `last_at` follows each
        one taken: a stream opened again shows nothing twice.
        With `turn` (shared by the streams of a reader, whose caller takes each frame without
        awaiting), frames are yielded `TURN` seconds at a time, the turn held over one pass of
        the loop after each: what else is ready (a key press, a repaint) runs before another
        stream's frames, however many streams burst at once.
        With `records_only`, a row's event carries its record and no fields (`RowReader`), for
        the host, which builds it again from its masked record.
        """
        rows = RowReader(records_only)
        first = True
        hold: contextlib.AbstractAsyncContextManager[Any] = (
            turn if turn is not None else contextlib.nullcontext()
        )
        async for batch in lines(resp.content):  # type: ignore[arg-type]
            at = 0
            while at < len(batch):
                async with hold:
                    start, until = at, time.perf_counter() + TURN
                    while at < len(batch):
                        if turn is not None and at > start and time.perf_counter() >= until:
                            break
                        line = batch[at]
                        at += 1
                        if not first and line.startswith(POD_FRAME):
                            self.frames += 1
                            continue
                        frame = p.loads(line)
                        if first:
                            first = False
                            self._hello(pod, frame)
                            continue
                        self.frames += 1
                        kind = frame["k"]
                        if kind == ROWS or kind == p.EVENT:
                            stamp = frame.get("at")
                            if resume and self._seen(stamp):
                                if kind == ROWS:
                                    rows.pass_over(frame)  # later rows may repeat its records
                                continue
                            events = (
                                rows.events(frame) if kind == ROWS else (event_from_frame(frame),)
                            )
                            yield kind, frame, events
                            if resume:
                                self._advance(stamp)
                            continue
                        if kind == WORKER:
                            rows.declare(frame)
                        yield kind, frame, ()
                    if turn is not None:
                        await asyncio.sleep(0)

    async def _frames(self, pod: AgentPod, resp: aiohttp.ClientResponse) -> None:
        turn = self.reader.turn
        # the host builds each attempt's event again from its masked record (`shadow_event`)
        frames = self.decoded(pod, resp, resume=True, turn=turn, records_only=True)
        async with contextlib.aclosing(frames):
            async for kind, frame, events in frames:
                self._take(pod, kind, frame, events)

    def _take(
        self, pod: AgentPod, kind: str, frame: dict[str, Any], events: Sequence[Event]
    ) -> None:
        """Take one frame: its events to the reader, counts, notes and states to theirs."""
        reader = self.reader
        if kind == ROWS or kind == p.EVENT:
            for event in events:
                reader.take(self.node, event)
        elif kind == p.COUNTS:
            if reader.shows(str(frame.get("uid"))):
                for event in reader.counts.frame(self.node, frame):
                    reader.publish(event)
        elif kind == p.NOTE:
            self._note(frame)
        elif kind == p.KUBELET:
            self._kubelet_version(frame.get("version"))
        elif kind == p.SUMMARY:
            uid = str(frame.get("uid"))
            if reader.shows(uid) and self.wanted is not None and uid not in self.wanted:
                reader.summary(self.node, frame)
        elif kind == p.LIVE:
            if not self.live:
                self.live = True
                reader.healthy(self.node)
        elif kind == p.DROPPED:
            self._dropped(frame)
        elif kind == p.FAIL:
            raise Fault(f"node {self.node}: agent pod {pod.name}: {frame.get('message')}; resuming")

    def _hello(self, pod: AgentPod, frame: dict[str, Any]) -> None:
        try:
            p.check_hello(frame)
        except p.VersionMismatch:
            raise Fault(
                f"node {self.node}: agent pod {pod.name} speaks stream protocol version "
                f"{frame.get('v')!r} (probetui {frame.get('probetui', '?')}), this probetui "
                f"{p.VERSION}: run the same probetui version as the agents (upgrade one or the "
                "other: `probetui agent --print-manifest --image ...`)",
                wait=REFUSED_RETRY * 4,
            ) from None
        if frame.get("role") != "agent":
            raise Fault(
                f"node {self.node}: pod {pod.name} is no probetui agent", wait=REFUSED_RETRY
            )
        start = frame.get("start")
        if self.agent_start is not None and start != self.agent_start:
            # another agent process (restarted or replaced): its counts start a new span
            for event in self.reader.counts.gap(self.node):
                self.reader.publish(event)
        kept = frame.get("kept")
        if (
            self.last_at is not None
            and isinstance(kept, int | float)
            and kept > self.last_at
            and (self.agent_uid == pod.uid or self.agent_start == start)
        ):
            self.reader.say(
                f"node {self.node}: agent pod {pod.name} no longer keeps what it published "
                f"between {_clock(self.last_at)} and {_clock(kept)}: those attempts are "
                "missing here (its --retain)"
            )
        if self.agent_uid and pod.uid != self.agent_uid:
            log.info("node %s: agent pod %s replaced by %s", self.node, self.agent_uid, pod.uid)
        self.agent_start = start if isinstance(start, int | float) else None
        self.agent_uid = pod.uid
        self._kubelet_version(frame.get("kubeletVersion"))

    def _kubelet_version(self, version: Any) -> None:
        if isinstance(version, str) and version:
            self.reader.kubelet_versions[self.node] = version

    def _seen(self, at: Any) -> bool:
        """A frame stamped at or before the last one taken: never shown twice."""
        return isinstance(at, int | float) and self.last_at is not None and at <= self.last_at

    def _advance(self, at: Any) -> None:
        if isinstance(at, int | float) and math.isfinite(at):
            self.last_at = float(at)

    def _note(self, frame: dict[str, Any]) -> None:
        topic = str(frame.get("topic") or "")
        text = str(frame.get("text") or "")
        before = self.notes.get(topic, "")
        if text == before:
            return
        if text:
            self.notes[topic] = text
            self.reader.say(text if self.node in text else f"node {self.node}: {text}")
        else:
            self.notes.pop(topic, None)
            what = "the kubelet's counts are read again" if topic == "kubelet-counts" else topic
            self.reader.say(f"node {self.node}: {what}")

    def _dropped(self, frame: dict[str, Any]) -> None:
        n = int(frame.get("n", 0))
        fresh, self.dropped = n - self.dropped, n
        if fresh <= 0:
            return
        fields = {
            "node": self.node,
            "count": fresh,
            "total": n,
            "byType": dict(frame.get("by") or {}),
        }
        self.reader.publish(
            Event(EVENTS_DROPPED, time.time(), "", "", "", None, None, SHADOW, fields)
        )
        self.reader.say(
            f"node {self.node}: its agent dropped {fresh} events this view read too slowly "
            "(the recording marks the gap: EventsDropped)"
        )


def base_url(host: str) -> str:
    """Return the API server's address without its path or query."""
    from yarl import URL

    return str(URL(host).with_path("").with_query(None)).rstrip("/")


def one_line(e: BaseException) -> str:
    """Say an exception in one line: its text with the whitespace folded, else its type."""
    text = " ".join(str(e).split())
    return text or type(e).__name__


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


async def read_capped(resp: aiohttp.ClientResponse, limit: int = 4096) -> bytes:
    """Read at most `limit` bytes of an answer's body, what came before a fault included."""
    body = b""
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        while len(body) < limit and (chunk := await resp.content.read(limit - len(body))):
            body += chunk
    return body


__all__ = [
    "BACKOFF_CAP",
    "BACKOFF_FIRST",
    "CONNECT_TIMEOUT",
    "MODES",
    "POD_FRAME",
    "POD_QUERY_BUDGET",
    "PROBE_PATH",
    "READ_IDLE",
    "REFUSED_RETRY",
    "REOPEN_AFTER",
    "REOPEN_SPREAD",
    "STREAMS_MAX",
    "STREAM_PATH",
    "TURN",
    "Fault",
    "NodeStream",
    "base_url",
    "one_line",
    "read_capped",
]
