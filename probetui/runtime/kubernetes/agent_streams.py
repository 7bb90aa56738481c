"""Read the node agents for the cluster view: one stream per node, into the engine's sinks.

`AgentReader` is what `KubernetesRuntime` holds with `--via agent` or `auto`: it watches the
agents' pods (`agents.AgentDirectory`), reads the read token once (and again when an agent
refuses it), says which nodes it covers, and keeps one `NodeStream` per covered node that hosts
a pod the view shows. A node it covers stays covered for the run: a cut, an agent restarting or
replaced, a fault, each is waited out and resumed, never handed back to the view's own workers
(which would count the same probes twice).

Each `NodeStream` (`node_stream.py`) reads one node's agent, resumed where it stopped.

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
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import aiohttp

from probetui.agent.manifest import TOKEN_HEADER
from probetui.keys import ProbeKey
from probetui.prober.results import ResultValue
from probetui.prober.worker import WorkerState
from probetui.runtime.kubernetes.agents import (
    AgentDirectory,
    AgentPod,
    AgentProblem,
    list_problem,
    read_token,
)
from probetui.runtime.kubernetes.kubelet_counts import WINDOW, CountsJudge
from probetui.runtime.kubernetes.node_stream import (
    CONNECT_TIMEOUT,
    MODES,
    POD_QUERY_BUDGET,
    PROBE_PATH,
    REFUSED_RETRY,
    REOPEN_AFTER,
    REOPEN_SPREAD,
    STREAM_PATH,
    Fault,
    NodeStream,
    base_url,
    one_line,
    read_capped,
)
from probetui.runtime.kubernetes.proxy import api_forbidden, pod_proxy_prefix
from probetui.spec.model import ProbeType
from probetui.stream import protocol as p
from probetui.timeline.events import PROBE_ATTEMPT, SHADOW, WORKER_STATE, Event, EventType

if TYPE_CHECKING:
    from kubernetes_asyncio.client import ApiClient

log = logging.getLogger(__name__)


class AgentReader:
    """Reads the agents of one cluster view: which nodes they cover, and a stream per such node."""

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
        # the streams take their frames one turn at a time (NodeStream._frames)
        self.turn = asyncio.Lock()
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
        # per pod, each probe's state as its last summary gave it, until another event of the
        # pod comes: a stream opened again sends every summary again, and one that says what
        # the last said changes nothing for any sink
        self._summarized: dict[str, dict[tuple[str, str], tuple[Any, ...]]] = {}

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
        self._summarized.pop(uid, None)
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
        longer says so is opened again, at most once a `REOPEN_AFTER`, from its last `at`; those
        a change reopens together are spread over `REOPEN_SPREAD` more."""
        focus = None if uids is None else frozenset(uids)
        if focus == self.focus:
            return
        self.focus = focus
        due = [s for node, s in self.streams.items() if self.query_pods(node) != s.wanted]
        for i, stream in enumerate(due):
            stream.reopen_soon(REOPEN_AFTER + REOPEN_SPREAD * i / len(due))

    def summary(self, node: str, frame: dict[str, Any]) -> None:
        """A probe whose attempts this view does not take: its worker's state, for the list."""
        said = (frame.get("pub"), bool(frame.get("paused")), frame.get("next"))
        probe = (str(frame.get("c")), str(frame.get("probe")))
        probes = self._summarized.get(str(frame.get("uid")))
        if probes is not None and probes.get(probe) == said:
            # what a reopened stream sends is mostly this: dropped before anything is built
            return
        try:
            key = ProbeKey(str(frame["uid"]), str(frame["c"]), ProbeType.parse(frame["probe"]))
            pub = said[0]
            state = WorkerState(
                key,
                running=True,
                paused=said[1],
                next_tick=said[2],
                published=None if pub is None else ResultValue(int(pub)),
            )
        except (KeyError, TypeError, ValueError):
            return
        self._summarized.setdefault(key.pod_uid, {})[probe] = said
        event = Event(
            WORKER_STATE,
            float(frame.get("t") or time.time()),
            key.pod_uid,
            str(frame.get("ns") or ""),
            str(frame.get("pod") or ""),
            key.container,
            key.probe_type,
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
                body = await read_capped(resp)
                status = resp.status
        except asyncio.CancelledError:
            raise
        except Exception as e:
            return f"{what}: {one_line(e)}"
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
        params = {"rows": "1", "podframes": "0", "pods": uid, "since": repr(since)}
        latest: Event | None = None
        wanted = (uid, container, probe)

        def asked(e: Event) -> bool:
            return (
                e.type == EventType.PROBE_ATTEMPT
                and (e.pod_uid, e.container, e.probe) == wanted
                and (not now or bool(e.fields.get("manual")))
            )

        try:
            async with (
                asyncio.timeout(timeout),
                session.get(self.url(pod, STREAM_PATH), params=params, headers=headers) as resp,
                contextlib.aclosing(stream.decoded(pod, resp)) as frames,
            ):
                if resp.status != 200:
                    return None, stream._refusal(pod, resp.status, await read_capped(resp)).text
                async for kind, _, events in frames:
                    for e in filter(asked, events):
                        if now:
                            return e, ""
                        latest = e
                    if kind != p.LIVE:
                        continue
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
            return None, f"node {node}: agent pod {pod.name}: {one_line(e)}"
        return latest, "" if latest else "the stream ended"

    def url(self, pod: AgentPod, path: str) -> str:
        assert self.api is not None
        host = self.api.configuration.host
        return f"{base_url(host)}{pod_proxy_prefix(host, pod.namespace, pod.name, pod.port)}/{path}"

    # -- what comes -----------------------------------------------------------------------

    def take(self, node: str, event: Event) -> None:
        """One event of the agent on `node`: the shadow's, about a pod the view shows."""
        if event.source != SHADOW or event.pod_uid not in self.node_of:
            return
        if self._summarized:
            # the pod's state moved by other means: its next summary is taken whatever it says
            self._summarized.pop(event.pod_uid, None)
        fields = event.fields
        if "via" in fields or event.type == PROBE_ATTEMPT:
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


__all__ = [
    "MODES",
    "POD_QUERY_BUDGET",
    "PROBE_PATH",
    "STREAM_PATH",
    "AgentReader",
    "Fault",
    "NodeStream",
]
