"""The cluster view reading the node agents: one stream per node, into the engine's sinks.

`AgentReader` is what `KubernetesRuntime` holds with `--via agent` or `auto`: it watches the
agents' pods (`agents.AgentDirectory`), reads the read token once (and again when an agent
refuses it), says which nodes it covers, and keeps one `NodeStream` per covered node that hosts
a pod the view shows. A node it covers stays covered for the run: a cut, an agent restarting or
replaced, a fault, each is waited out and resumed, never handed back to the view's own workers
(which would count the same probes twice).

A `NodeStream` is a GET of `pods/AGENT:PORT/proxy/v1/stream` through the view's own API client
(the read-only guard admits exactly that path of a checked agent), with `X-Probetui-Token`,
long-lived. It asks for rows, `pods=` the UIDs it shows in full (all of the node's pods the view
shows when they do not fit `POD_QUERY_BUDGET`, then filtered here) and `since=` the `at` of the
last frame it took, so a stream cut and opened again, even on a replaced agent, shows nothing
twice and misses nothing the agent kept (docs/agents.md, "Stamps, resuming, nothing twice").

What the agent sends becomes what the view's own shadow would have made:

- the shadow's events (attempts and skips, result changes, worker states, `ProbeNotRun`, the
  agent's `Divergence`), for pods the view shows, to `host.shadow_event`, which masks them by
  the view's policy and hands them to every sink; labelled `via: agent` and `node`. The agent's
  `source: kubelet` events are left out: the view's own watch reports the kubelet;
- `counts` frames to `kubelet_counts.CountsJudge`: `KubeletProbeCounts` and, past the phases'
  slack, a `Divergence`;
- `note` frames, faults and their fixes as one line naming the node (`say`: the UI's notices,
  headless stderr).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import aiohttp

from probetui.agent.server import TOKEN_HEADER
from probetui.prober.results import ResultValue
from probetui.prober.worker import ProbeKey, WorkerState
from probetui.runtime.kubernetes.agents import (
    READER_FIX,
    AgentDirectory,
    AgentPod,
    AgentProblem,
    list_problem,
    read_token,
)
from probetui.runtime.kubernetes.guard import ReadOnlyViolation
from probetui.runtime.kubernetes.kubelet_counts import WINDOW, CountsJudge
from probetui.runtime.kubernetes.proxy import api_forbidden, api_path_error, pod_proxy_prefix
from probetui.spec.model import ProbeType
from probetui.stream import protocol as p
from probetui.stream.codec import event_from_frame
from probetui.stream.reader import lines
from probetui.stream.rows import ROWS, WORKER, RowReader
from probetui.timeline.events import EVENTS_DROPPED, SHADOW, WORKER_STATE, Event

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

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
MODES = ("agent", "auto")


class Fault(Exception):
    """Why a stream stopped: `text` for the user (one line, the node and the fix), `wait`
    before trying again (None: the back-off), `token` when the read token was refused."""

    def __init__(self, text: str, wait: float | None = None, token: bool = False) -> None:
        super().__init__(text)
        self.text = text
        self.wait = wait
        self.token = token


@dataclass
class NodeStream:
    """One node's agent stream, opened again after every cut, resumed from `last_at`."""

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
                    f"({_one_line(e)}); resuming"
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

    def reopen_soon(self) -> None:
        """Open the stream again (its query changed) in `REOPEN_AFTER`, with what is wanted
        then: changes meanwhile ride on the same reopening."""
        if self._reopen_due is not None:
            return
        self._reopen_due = asyncio.get_running_loop().call_later(REOPEN_AFTER, self._reopen_now)

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
        q = {"rows": "1"}
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
                raise self._refusal(pod, resp.status, await _read_capped(resp))
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

    async def _frames(self, pod: AgentPod, resp: aiohttp.ClientResponse) -> None:
        reader = self.reader
        rows = RowReader()
        first = True
        async for batch in lines(resp.content):  # type: ignore[arg-type]
            for line in batch:
                frame = p.loads(line)
                if first:
                    first = False
                    self._hello(pod, frame)
                    continue
                self.frames += 1
                kind = frame["k"]
                if kind == ROWS:
                    at = frame.get("at")
                    if self._seen(at):
                        continue
                    for event in rows.events(frame):
                        reader.take(self.node, event)
                    self._advance(at)
                elif kind == WORKER:
                    rows.declare(frame)
                elif kind == p.EVENT:
                    at = frame.get("at")
                    if self._seen(at):
                        continue
                    reader.take(self.node, event_from_frame(frame))
                    self._advance(at)
                elif kind == p.COUNTS:
                    if reader.shows(str(frame.get("uid"))):
                        for event in reader.counts.frame(self.node, frame):
                            reader.publish(event)
                elif kind == p.NOTE:
                    self._note(frame)
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
                    raise Fault(
                        f"node {self.node}: agent pod {pod.name}: {frame.get('message')}; resuming"
                    )

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
        version = frame.get("kubeletVersion")
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


class AgentReader:
    """The agents of one cluster view: which nodes they cover, and a stream per such node."""

    def __init__(
        self,
        mode: str,
        namespace: str,
        paths: Any,
        *,
        say: Callable[[str], None] | None = None,
        window: float = WINDOW,
        since: float | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"agent mode must be one of {', '.join(MODES)}")
        self.mode = mode
        self.directory = AgentDirectory(namespace, paths, on_change=self._changed)
        self.counts = CountsJudge(window=window)
        self.api: ApiClient | None = None
        self.core: Any = None
        self.token: str | None = None
        # why the agents are not used at all (None: they are, where found)
        self.problem: str | None = None
        self.publish_to: Callable[[Event], None] | None = None
        self.say_to = say
        # the view's pods on each node, and the node of each (set by ClusterPods)
        self.pods_on: dict[str, set[str]] = {}
        self.node_of: dict[str, str] = {}
        # nodes covered for the run, and what they were told last
        self.covered: set[str] = set()
        self.streams: dict[str, NodeStream] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._said: dict[str, str] = {}
        self._changes: dict[str, asyncio.Event] = {}
        self._token_lock = asyncio.Lock()
        self.on_cover: Callable[[str], None] | None = None
        self.kubelet_versions: dict[str, str] = {}
        # the pods the screen shows in full (None: every pod, headless)
        self.focus: frozenset[str] | None = None
        # attempts of the agents from this moment on: what was published before the view came
        # is not shown (a first stream's `since`)
        self.started = time.time() if since is None else since
        self._running = False
        self.lasting = False  # the problem, if any, stays
        self._any = asyncio.Event()  # the directory changed
        self._posts: set[asyncio.Future[None]] = set()  # probe-now requests in flight

    # -- what the runtime asks ------------------------------------------------------------

    def usable(self) -> bool:
        return self.problem is None and self.token is not None

    def covers(self, node: str | None) -> bool:
        """Whether the agent on `node` probes its pods (then the view's own workers do not)."""
        if not node or not self.usable():
            return False
        if node in self.covered:
            return True
        if self.directory.of(node) is not None:
            self.covered.add(node)
            return True
        return False

    def why_not(self, node: str | None) -> str:
        """Why the agents do not probe the pods of `node`."""
        if self.problem is not None:
            return self.problem
        if not node:
            return "the pod is not on a node yet"
        return self.directory.why_not(node)

    def shows(self, uid: str) -> bool:
        return uid in self.node_of

    def placed(self, uid: str, node: str) -> None:
        """A pod the view shows is on `node` (covered): its attempts are wanted."""
        before = self.node_of.get(uid)
        if before == node:
            return
        if before is not None:
            self.pods_on.get(before, set()).discard(uid)
        self.node_of[uid] = node
        self.pods_on.setdefault(node, set()).add(uid)
        self._want(node)

    def gone(self, uid: str) -> None:
        node = self.node_of.pop(uid, None)
        self.counts.forget_pod(uid)
        if node is not None:
            self.pods_on.get(node, set()).discard(uid)

    def query_pods(self, node: str) -> frozenset[str] | None:
        """The UIDs a stream of `node` asks for in `pods=`: the view's pods there, or those of
        them on the screen (`focus`); None for every pod (more than a request line holds)."""
        uids = self.pods_on.get(node, set())
        if self.focus is not None:
            uids = uids & self.focus
        if sum(len(u) + 1 for u in uids) > POD_QUERY_BUDGET:
            return None
        return frozenset(uids)

    def set_focus(self, uids: Iterable[str] | None) -> None:
        """The pods the screen shows in full (None: all, headless). A stream whose `pods=` no
        longer says so is opened again, at most once a `REOPEN_AFTER`, from its last `at`."""
        focus = None if uids is None else frozenset(uids)
        if focus == self.focus:
            return
        self.focus = focus
        for node, stream in self.streams.items():
            if self.query_pods(node) != stream.wanted:
                stream.reopen_soon()

    def summary(self, node: str, frame: dict[str, Any]) -> None:
        """A probe whose attempts this view does not take: its worker's state, for the list."""
        try:
            key = ProbeKey(str(frame["uid"]), str(frame["c"]), ProbeType.parse(frame["probe"]))
            pub = frame.get("pub")
            state = WorkerState(
                key,
                running=True,
                paused=bool(frame.get("paused")),
                next_tick=frame.get("next"),
                published=None if pub is None else ResultValue(int(pub)),
            )
        except (KeyError, TypeError, ValueError):
            return
        event = Event(
            WORKER_STATE,
            float(frame.get("t") or time.time()),
            key.pod_uid,
            str(frame.get("ns") or ""),
            str(frame.get("pod") or ""),
            key.container,
            key.probe_type.key,
            SHADOW,
            {"node": node},
            state=state,
        )
        self.publish(event)

    # -- starting -------------------------------------------------------------------------

    async def start(self, api: ApiClient, core: Any, first_list: Callable[[], Any]) -> None:
        """The agents' first list and the token, before the view's pods are placed. A problem
        makes `problem` say why (`auto`: the view probes itself meanwhile; `lasting` when
        asking again will not help) or, with `--via agent`, raises AgentProblem."""
        self.api, self.core = api, core
        try:
            try:
                await first_list()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                raise list_problem(e, self.directory.namespace) from None
            if not self.directory.by_node:
                raise AgentProblem(self._none_found(), lasting=False)
            self.token = await read_token(core, self.directory.namespace)
        except AgentProblem as e:
            self.problem = str(e)
            self.lasting = e.lasting
            if self.mode == "agent":
                raise

    @property
    def watching(self) -> bool:
        """Whether the agents' pods are watched on: in use, or perhaps so soon."""
        return self.problem is None or not self.lasting

    async def _late_start(self) -> None:
        """`auto` without agents at the start: once some come (installed, or a fault of the
        moment passed), the token, and the nodes they serve are theirs from then on."""
        while True:
            self._any.clear()
            if not self.directory.by_node:
                await self._any.wait()
                continue
            try:
                self.token = await read_token(self.core, self.directory.namespace)
            except AgentProblem as e:
                self.say(f"node agents found, not used: {e}")
                if e.lasting:
                    self.problem, self.lasting = str(e), True
                    return
                await asyncio.sleep(REFUSED_RETRY)
                continue
            self.problem = None
            nodes = sorted(self.directory.by_node)
            self.say(f"node agents found on {len(nodes)} node(s): they probe those nodes' pods")
            for node in nodes:
                self._changed(node)
            return

    def _none_found(self) -> str:
        d = self.directory
        rejected = "; ".join(f"{n}: {why}" for n, why in sorted(d.rejected.items())[:3])
        if rejected:
            return f"no usable node agent in namespace {d.namespace} ({rejected})"
        return (
            f"no node agents in namespace {d.namespace} (install them: `probetui agent "
            "--print-manifest | kubectl apply -f -`; --agent-namespace if elsewhere)"
        )

    async def refresh_token(self) -> None:
        """The agents refused the token: read the Secret again (once for all the nodes)."""
        if self._token_lock.locked():
            async with self._token_lock:
                return
        async with self._token_lock:
            try:
                self.token = await read_token(self.core, self.directory.namespace)
            except AgentProblem as e:
                self.say(str(e))

    # -- the streams ----------------------------------------------------------------------

    async def run(self) -> None:
        """Keep a stream open for every covered node that hosts a pod the view shows."""
        self._running = True
        try:
            for node in list(self.pods_on):
                self._want(node)
            if not self.usable():
                await self._late_start()
            await asyncio.Event().wait()
        finally:
            self._running = False
            tasks = list(self._tasks.values())
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _want(self, node: str) -> None:
        if not self._running or node not in self.covered or not self.pods_on.get(node):
            return
        stream = self.streams.get(node)
        if stream is None:
            stream = self.streams[node] = NodeStream(node, self, last_at=self.started)
        task = self._tasks.get(node)
        if task is None or task.done():
            self._tasks[node] = asyncio.create_task(stream.run(), name=f"agent stream {node}")
        elif stream.wanted is not None and self.query_pods(node) != stream.wanted:
            # a pod came that the open stream does not carry: open it again from its last
            # `at`, which gives the new pod's attempts since then as well
            stream.reopen_soon()

    def _changed(self, node: str) -> None:
        self._any.set()
        event = self._changes.get(node)
        if event is not None:
            event.set()
        if self.usable() and node not in self.covered and self.directory.of(node) is not None:
            self.covered.add(node)
            if self.on_cover is not None:
                self.on_cover(node)
            self._want(node)

    async def agent_changed(self, node: str) -> None:
        """Until the agent serving `node` changes (at once where it changed since last asked)."""
        event = self._changes.setdefault(node, asyncio.Event())
        await event.wait()
        event.clear()

    async def wait_or_change(self, node: str, seconds: float, *others: asyncio.Event) -> None:
        """Wait `seconds`, or less when the agent of `node` (or anything in `others`) changes;
        a change since the last wait ends it at once (a wake too many only looks again)."""
        event = self._changes.setdefault(node, asyncio.Event())
        waits = [asyncio.ensure_future(e.wait()) for e in (event, *others)]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()
        event.clear()

    # -- probe now ------------------------------------------------------------------------

    def probe_now(self, uid: str, container: str, probe: str) -> bool:
        """Ask the agent of `uid`'s node to run one probe now (a POST of pods/proxy, as the
        local `t`): False where it cannot be asked. Its attempt comes with the stream; a
        refusal is said as one line."""
        node = self.node_of.get(uid)
        pod = self.directory.of(node) if node is not None else None
        if pod is None or self.api is None:
            return False
        task = asyncio.ensure_future(self._post_probe(pod, uid, container, probe))
        self._posts.add(task)
        task.add_done_callback(self._posts.discard)
        return True

    async def _post_probe(self, pod: AgentPod, uid: str, container: str, probe: str) -> None:
        refused = await self.post_probe(pod, uid, container, probe)
        if refused is not None:
            self.say(refused)

    async def post_probe(self, pod: AgentPod, uid: str, container: str, probe: str) -> str | None:
        """POST `/v1/probe` to agent `pod` through pods/proxy: None when it took it, else
        why not, one line naming the node and the fix."""
        assert self.api is not None
        headers = {TOKEN_HEADER: self.token or ""}
        await self.api.update_params_for_auth(headers, [], ["BearerToken"])
        session: aiohttp.ClientSession = self.api.rest_client.pool_manager
        what = f"node {pod.node}: probe now of {probe} of {container} through agent pod {pod.name}"
        try:
            async with session.post(
                self.url(pod, PROBE_PATH),
                json={"uid": uid, "container": container, "probe": probe},
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=CONNECT_TIMEOUT),
                allow_redirects=False,
            ) as resp:
                body = await _read_capped(resp)
                status = resp.status
        except asyncio.CancelledError:
            raise
        except Exception as e:
            return f"{what}: {_one_line(e)}"
        if status == 200:
            return None
        forbidden = api_forbidden(status, body)
        if forbidden is not None:
            return (
                f"{what}: {forbidden} (bind the probetui-prober Role of `probetui agent "
                f"--print-manifest`: create on pods/proxy in namespace {pod.namespace})"
            )
        text = body.decode("utf-8", "replace").strip().splitlines()
        return f"{what}: {status} {text[0][:200] if text else ''}".rstrip()

    async def attempt(
        self,
        node: str,
        uid: str,
        container: str,
        probe: str,
        *,
        now: bool,
        since: float,
        timeout: float,
    ) -> tuple[Event | None, str]:
        """One attempt of a probe as the agent on `node` made it: with `now`, one it makes on
        request (a POST, as `t`); else the last it kept since `since`. (the attempt, or None
        and why not)."""
        pod = self.directory.of(node)
        if pod is None or self.api is None:
            return None, self.why_not(node)
        stream = NodeStream(node, self)
        headers = {TOKEN_HEADER: self.token or "", "Accept": "application/x-ndjson"}
        await self.api.update_params_for_auth(headers, [], ["BearerToken"])
        session: aiohttp.ClientSession = self.api.rest_client.pool_manager
        params = {"rows": "1", "pods": uid, "since": repr(since)}
        latest: Event | None = None
        try:
            async with asyncio.timeout(timeout):
                async with session.get(
                    self.url(pod, STREAM_PATH), params=params, headers=headers
                ) as resp:
                    if resp.status != 200:
                        return None, stream._refusal(
                            pod, resp.status, await _read_capped(resp)
                        ).text
                    rows = RowReader()
                    first = True
                    async for batch in lines(resp.content):  # type: ignore[arg-type]
                        for line in batch:
                            frame = p.loads(line)
                            if first:
                                first = False
                                stream._hello(pod, frame)
                                continue
                            kind = frame["k"]
                            if kind == WORKER:
                                rows.declare(frame)
                            events = (
                                rows.events(frame)
                                if kind == ROWS
                                else [event_from_frame(frame)]
                                if kind == p.EVENT
                                else []
                            )
                            for e in events:
                                if (
                                    e.type == "ProbeAttempt"
                                    and (e.pod_uid, e.container, e.probe) == (uid, container, probe)
                                    and (not now or e.fields.get("manual"))
                                ):
                                    if now:
                                        return e, ""
                                    latest = e
                            if kind == p.LIVE:
                                if not now:
                                    return latest, "" if latest else "no attempt kept since then"
                                refused = await self.post_probe(pod, uid, container, probe)
                                if refused is not None:
                                    return None, refused
        except Fault as f:
            return None, f.text
        except TimeoutError:
            return latest, "" if latest else f"no attempt within {timeout:g}s"
        except (aiohttp.ClientError, OSError, p.ProtocolError) as e:
            return None, f"node {node}: agent pod {pod.name}: {_one_line(e)}"
        return latest, "" if latest else "the stream ended"

    def url(self, pod: AgentPod, path: str) -> str:
        assert self.api is not None
        host = self.api.configuration.host
        return f"{_base(host)}{pod_proxy_prefix(host, pod.namespace, pod.name, pod.port)}/{path}"

    # -- what comes -----------------------------------------------------------------------

    def take(self, node: str, event: Event) -> None:
        """One event of the agent on `node`: the shadow's, about a pod the view shows."""
        if event.source != SHADOW or event.pod_uid not in self.node_of:
            return
        fields = event.fields
        if "via" in fields or event.type == "ProbeAttempt":
            fields["via"] = "agent"
        fields["node"] = node
        self.publish(event)

    def publish(self, event: Event) -> None:
        if self.publish_to is not None:
            self.publish_to(event)

    def say(self, text: str) -> None:
        log.info("%s", text)
        if self.say_to is not None:
            self.say_to(text)

    def say_once(self, node: str, text: str) -> None:
        """`text` about `node`, unless it is what was said last about it."""
        if self._said.get(node) == text:
            return
        self._said[node] = text
        self.say(text)

    def healthy(self, node: str) -> None:
        """The stream of `node` is live: a fault said before no longer holds."""
        if self._said.pop(node, None) is not None:
            self.say(f"node {node}: reading its agent again")

    def nodes(self) -> Iterable[str]:
        return self.streams.keys()


def _base(host: str) -> str:
    from yarl import URL

    return str(URL(host).with_path("").with_query(None)).rstrip("/")


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text or type(e).__name__


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


async def _read_capped(resp: aiohttp.ClientResponse, limit: int = 4096) -> bytes:
    body = b""
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        while len(body) < limit and (chunk := await resp.content.read(limit - len(body))):
            body += chunk
    return body


__all__ = [
    "MODES",
    "POD_QUERY_BUDGET",
    "PROBE_PATH",
    "STREAM_PATH",
    "TOKEN_HEADER",
    "AgentReader",
    "Fault",
    "NodeStream",
]
