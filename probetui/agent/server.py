"""Serve the agent's HTTP endpoints on the node's IP.

`/healthz`, `/readyz`, `/v1/stream`, `/metrics` and `POST /v1/probe`.

Who calls: the kubelet's liveness and readiness probes (`/healthz`: the process serves;
`/readyz`: its pod watch has listed and is connected; both answered to anyone, with no data)
and readers
through the API server's `pods/proxy`. The proxy presents no client certificate and drops the
reader's `Authorization`, so nothing on the connection tells the API server from any other
process on the node's network; `/v1/stream` and `/metrics` therefore want the read token in
`X-Probetui-Token` (compared in constant time with the token file, read again every minute).
Without it: 401 and no data. Readers get the token from a Secret only RBAC-chosen users may read
(docs/agents.md). `POST /v1/probe` (the token too; a JSON body `{"uid", "container", "probe"}`)
runs one probe once now, as the local `t` does: it reaches the agent only through a POST of
pods/proxy, which RBAC grants as `create` on pods/proxy (the manifest's `probetui-prober` Role),
never read-only.

Bounded: request lines and header fields (`MAX_LINE`, `MAX_FIELD`, `MAX_HEADERS`), connections
(`MAX_CONNECTIONS`; a connection whose first request has not arrived within `HEAD_TIMEOUT` is
closed), idle keep-alive (`KEEPALIVE`), stream clients (`max_clients`, then 503), each client's
buffer (`client.py`), and every write to a reader (`WRITE_TIMEOUT`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from probetui.agent.client import StreamClient
from probetui.agent.manifest import TOKEN_HEADER
from probetui.stream.protocol import dumps

if TYPE_CHECKING:
    from probetui.agent.hub import Hub

log = logging.getLogger(__name__)

MAX_LINE = 4096
MAX_FIELD = 4096
MAX_HEADERS = 32
MAX_CONNECTIONS = 64
HEAD_TIMEOUT = 10.0
KEEPALIVE = 15.0
WRITE_TIMEOUT = 30.0
MAX_PODS = 5000  # UIDs in one `pods=`
MAX_PROBE_BODY = 4096  # a probe-now request's JSON body
TOKEN_PERIOD = 60.0  # seconds between reads of the token file
MIN_TOKEN = 16  # characters a read token must have
NDJSON = "application/x-ndjson"
PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


class TokenError(Exception):
    """Signals that the token file cannot serve: the message names the file and the fix."""


class TokenFile:
    """Holds the read token, from the file the Secret is mounted as; read again every minute."""

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(path)
        self.clock = clock
        self._token = self._read()
        self._read_at = clock()

    def _read(self) -> bytes:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            raise TokenError(
                f"cannot read the read token {self.path}: {e.strerror if isinstance(e, OSError) else e} "
                "(mount the Secret of `probetui agent --print-manifest`, or pass --token-file)"
            ) from None
        if len(text) < MIN_TOKEN:
            raise TokenError(
                f"the read token in {self.path} has {len(text)} characters: at least "
                f"{MIN_TOKEN} are needed (`probetui agent --print-manifest` makes one)"
            )
        return text.encode("utf-8")

    def current(self) -> bytes:
        now = self.clock()
        if now - self._read_at >= TOKEN_PERIOD:
            self._read_at = now
            try:
                self._token = self._read()
            except TokenError as e:
                log.warning("%s; the token read before stays in force", e)
        return self._token

    def check(self, given: str | None) -> bool:
        if not given:
            return False
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self.current())


class StreamQuery:
    """Holds what a reader asked for in `/v1/stream`'s query; ValueError names a bad parameter."""

    def __init__(self, query: Any) -> None:
        pods = query.get("pods")
        if pods is None:
            self.pods: frozenset[str] | None = None
        else:
            uids = [u.strip() for u in pods.split(",") if u.strip()]
            if len(uids) > MAX_PODS or any(len(u) > 128 for u in uids):
                raise ValueError(f"pods: at most {MAX_PODS} UIDs of up to 128 characters")
            self.pods = frozenset(uids)
        self.summary = _flag(query, "summary")
        self.rows = _flag(query, "rows")
        # a reader that watches the pods itself (the cluster view) asks for no pod frames
        self.pod_frames = _flag(query, "podframes", "1")
        since = query.get("since")
        if since is None:
            self.since: float | None = None
        else:
            try:
                value = float(since)
            except ValueError:
                raise ValueError(
                    "since: seconds since the epoch, e.g. since=1764643516.649"
                ) from None
            if not math.isfinite(value):
                raise ValueError("since: a finite number of seconds since the epoch")
            self.since = value


def _flag(query: Any, name: str, default: str = "0") -> bool:
    value = query.get(name, default).lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no", ""):
        return False
    raise ValueError(f"{name}: 1 or 0")


class _GuardedServer(web.Server):
    """Wraps aiohttp's low-level server with a cap on connections and a deadline on the first
    request's head (aiohttp has none: a client that sends its headers a byte a minute would
    hold a connection for good)."""

    def __init__(self, *args: Any, max_connections: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_connections = max_connections
        # connections whose first request has come (RequestHandler takes no weak reference)
        self.served: set[RequestHandler] = set()

    def connection_made(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        super().connection_made(handler, transport)
        if len(self._connections) > self.max_connections:
            transport.close()
            return
        self._loop.call_later(HEAD_TIMEOUT, self._head_due, handler, transport)

    def connection_lost(self, handler: RequestHandler, exc: BaseException | None = None) -> None:
        super().connection_lost(handler, exc)
        self.served.discard(handler)

    def _head_due(self, handler: RequestHandler, transport: asyncio.Transport) -> None:
        if handler not in self.served and not transport.is_closing():
            transport.close()


class AgentServer:
    """Serves the hub's stream and the agent's metrics; `hello(query)` writes the first frame."""

    def __init__(
        self,
        hub: Hub,
        token: TokenFile,
        *,
        hello: Callable[[StreamQuery], dict[str, Any]],
        metrics: Callable[[], str],
        replay_window: Callable[[], float | None],
        ready: Callable[[], str | None] = lambda: None,
        probe: Callable[[str, str, str], tuple[int, str]] | None = None,
        max_clients: int = 8,
        client_buffer: int = 2 << 20,
    ) -> None:
        self.hub = hub
        self.token = token
        self.hello = hello
        self.metrics = metrics
        self.replay_window = replay_window
        self.ready = ready
        # probe now: (uid, container, probe) -> (HTTP status, one line)
        self.probe = probe
        self.max_clients = max_clients
        self.client_buffer = client_buffer
        self._server: _GuardedServer | None = None
        self._runner: web.ServerRunner | None = None
        self._streams: set[asyncio.Task[Any]] = set()
        self.refused = 0  # requests without the right token

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen on host:port (0: one the OS picks); the address listened on."""
        self._server = _GuardedServer(
            self._handle,
            max_connections=MAX_CONNECTIONS,
            keepalive_timeout=KEEPALIVE,
            max_line_size=MAX_LINE,
            max_field_size=MAX_FIELD,
            max_headers=MAX_HEADERS,
            access_log=None,
        )
        self._runner = web.ServerRunner(self._server, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=64)
        await site.start()
        address = self._runner.addresses[0]
        return address[0], address[1]

    async def close(self, reason: str) -> None:
        """Tell every stream client `reason` and stop serving."""
        for client in list(self.hub.clients):
            self.hub.detach(client)
            client.close(reason)
        if self._streams:
            await asyncio.wait(self._streams, timeout=2.0)
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if self._server is not None:
            self._server.served.add(request.protocol)  # type: ignore[arg-type]
        path = request.path
        if path == "/v1/probe":
            return await self._probe(request)
        if request.method not in ("GET", "HEAD"):
            return _text(405, "only GET is served here", {"Allow": "GET"})
        if path == "/healthz":
            return _text(200, "ok")
        if path == "/readyz":
            why = self.ready()
            return _text(200, "ok") if why is None else _text(503, f"not ready: {why}")
        if path not in ("/v1/stream", "/metrics"):
            return _text(
                404,
                "not found (the agent serves /healthz, /readyz, /v1/stream, /metrics, "
                "POST /v1/probe)",
            )
        if not self.token.check(request.headers.get(TOKEN_HEADER)):
            self.refused += 1
            return _text(
                401,
                f"unauthorized: send the agent's read token in {TOKEN_HEADER} (docs/agents.md)",
            )
        if path == "/metrics":
            return web.Response(body=self.metrics().encode(), headers={"Content-Type": PROMETHEUS})
        if request.method != "GET":
            return _text(405, "the stream is read with GET", {"Allow": "GET"})
        return await self._stream(request)

    async def _probe(self, request: web.BaseRequest) -> web.StreamResponse:
        """Probe now: one run of a worker, counted like a tick, as the local `t`."""
        if request.method != "POST":
            return _text(405, "probe now is a POST", {"Allow": "POST"})
        if not self.token.check(request.headers.get(TOKEN_HEADER)):
            self.refused += 1
            return _text(
                401,
                f"unauthorized: send the agent's read token in {TOKEN_HEADER} (docs/agents.md)",
            )
        if self.probe is None:
            return _text(404, "this agent runs no probe now")
        if (request.content_length or 0) > MAX_PROBE_BODY:
            return _text(413, f"a probe-now request is at most {MAX_PROBE_BODY} bytes")
        try:
            body = await asyncio.wait_for(request.content.read(MAX_PROBE_BODY + 1), HEAD_TIMEOUT)
            doc = json.loads(body) if len(body) <= MAX_PROBE_BODY else None
            asked = tuple(str(doc[k]) for k in ("uid", "container", "probe"))  # type: ignore[index]
        except (ValueError, TypeError, KeyError, TimeoutError):
            return _text(400, 'bad request: a JSON body {"uid", "container", "probe"}')
        status, text = self.probe(*asked)
        return _text(status, text)

    async def _stream(self, request: web.BaseRequest) -> web.StreamResponse:
        try:
            query = StreamQuery(request.query)
        except ValueError as e:
            return _text(400, f"bad query: {e}")
        if len(self._streams) >= self.max_clients:
            return _text(
                503,
                f"too many clients: this agent serves {self.max_clients} streams at once",
                {"Retry-After": "10"},
            )
        task = asyncio.current_task()
        assert task is not None
        self._streams.add(task)
        try:
            return await self._serve(request, query)
        finally:
            self._streams.discard(task)

    async def _serve(self, request: web.BaseRequest, query: StreamQuery) -> web.StreamResponse:
        transport = request.transport

        def downstream() -> int:
            return transport.get_write_buffer_size() if transport is not None else 0

        client = StreamClient(
            pods=query.pods,
            summary=query.summary,
            rows=query.rows,
            pod_frames=query.pod_frames,
            limit=self.client_buffer,
            downstream=downstream,
        )
        resp = web.StreamResponse(
            headers={
                "Content-Type": NDJSON,
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            }
        )
        resp.enable_chunked_encoding()

        async def write(data: bytes) -> None:
            await asyncio.wait_for(resp.write(data), WRITE_TIMEOUT)

        hello = dumps(self.hello(query))
        self.hub.attach(client)  # the pods and notes as they are now wait in the client's queue
        try:
            await resp.prepare(request)
            client.sender.flush()
            await write(hello + client.queue.take_now())
            await client.replay(
                self.hub.ring,
                query.since if query.since is not None else -math.inf,
                self.replay_window(),
                write,
                lambda: self.hub.went_live(client),
            )
            while True:
                data = await client.queue.take()
                if not data:
                    break
                await write(data)
            with contextlib.suppress(Exception):
                await resp.write_eof()
        except (ConnectionError, TimeoutError):
            pass  # the reader is gone, or too slow to take a write
        finally:
            self.hub.detach(client)
            client.queue.close()
        return resp


def _text(status: int, text: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text + "\n", headers=headers)


__all__ = [
    "MAX_PODS",
    "AgentServer",
    "StreamQuery",
    "TokenError",
    "TokenFile",
]
