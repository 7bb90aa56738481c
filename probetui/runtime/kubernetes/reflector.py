"""List, then watch, one collection; survive the API server's faults without losing or repeating.

client-go's Reflector in small: list to get a snapshot and its resourceVersion, watch from that
version (with bookmarks), and keep a cache of what was delivered so that every recovery path
delivers differences only:

- the stream ends (the server's `timeoutSeconds`, a cut connection, a payload error): watch again
  from the last resourceVersion seen, so nothing in between is lost;
- `410 Gone` (the version was compacted; in-stream as an ERROR event or as the response): list
  again and deliver the difference against the cache: ADDED and MODIFIED for what is new or
  changed (by resourceVersion), DELETED for what disappeared; a 410 again with nothing
  delivered in between backs off instead of re-listing in a loop;
- 5xx, 429, connection refused, a timeout: back off (doubling, capped, jittered, never less
  than the server's `Retry-After`) and retry. A watch that ends cleanly within a second having
  delivered nothing is treated as a fault too (client-go's "very short watch"), so a server or
  proxy that closes every watch at once is not hammered.

`first_list()` is the start-up check: the first list either succeeds or raises, after a few
tries for what is transient (429, 5xx), at once for the rest (refused connection, 401, 403):
a headless run that cannot see the cluster says so and stops instead of retrying in silence.

Objects stay dicts, because deserialising generated models costs many times `json.loads`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# the watch line limit: the API server caps a single object at ~1.5 MiB (etcd's request limit)
MAX_LINE_BYTES = 3 * 1024 * 1024


class Gone(Exception):
    """Signals that the resourceVersion is too old (410): list again."""


class Response(Protocol):
    """Holds what `_preload_content=False` hands back: the aiohttp response, unread."""

    status: int
    content: aiohttp.StreamReader

    async def read(self) -> bytes: ...

    def release(self) -> Any: ...


# list_fn(resource_version, watch) -> raw response; the caller binds namespace/selectors
Lister = Callable[[str | None, bool], Awaitable[Response]]
OnEvent = Callable[[str, dict[str, Any]], None]
# a watch that ends by itself sooner than this, with nothing delivered, counts as a fault
SHORT_WATCH = 1.0
# the list's own time limit; a watch gets its timeoutSeconds plus this margin
LIST_TIMEOUT = 60.0
WATCH_MARGIN = 30.0


def api_lister(
    list_fn: Callable[..., Awaitable[Any]],
    *args: Any,
    watch_timeout: int = 300,
    **params: Any,
) -> Lister:
    """Return a `Lister` over a kubernetes-asyncio list call, e.g. `CoreV1Api.list_namespaced_pod`.

    `args` and `params` (namespace, `label_selector`, ...) are bound; the response comes back
    unread (`_preload_content=False`) so that the objects stay dicts. Watches ask for bookmarks
    and end on the server after `watch_timeout` seconds (an int: the API takes whole seconds).
    """

    async def lister(resource_version: str | None, watch: bool) -> Any:
        call: dict[str, Any] = {**params, "_preload_content": False}
        if watch:
            call.update(
                watch=True,
                allow_watch_bookmarks=True,
                timeout_seconds=int(watch_timeout),
                resource_version=resource_version or "",
                _request_timeout=watch_timeout + WATCH_MARGIN,
            )
        else:
            call["_request_timeout"] = LIST_TIMEOUT
        return await list_fn(*args, **call)

    return lister


@dataclass(slots=True)
class ReflectorBackoff:
    """Mirrors client-go's reflector back-off: 800 ms doubling to 30 s, reset after a good list."""

    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    _next: float = 0.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self, at_least: float = 0.0) -> float:
        self._next = self.initial if self._next == 0 else min(self._next * self.factor, self.cap)
        jittered = self._next * (1 + self.rng.random() * self.jitter * 0.1)
        return max(jittered, min(at_least, self.cap))

    def reset(self) -> None:
        self._next = 0.0


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return meta.get("uid") or f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _rv(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("resourceVersion", "")


class Reflector:
    def __init__(
        self,
        lister: Lister,
        on_event: OnEvent,
        *,
        name: str = "pods",
        backoff: ReflectorBackoff | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_state: Callable[[str], None] | None = None,
    ) -> None:
        self.lister = lister
        self.on_event = on_event
        self.name = name
        self.backoff = backoff or ReflectorBackoff()
        self._sleep = sleep
        self._on_state = on_state
        self.items: dict[str, dict[str, Any]] = {}
        self.resource_version: str | None = None
        self.lists = 0
        self.watches = 0
        self._received = 0  # lines the current watch carried (errors not counted)
        self.synced = asyncio.Event()

    def _state(self, text: str) -> None:
        if self._on_state is not None:
            self._on_state(text)

    async def first_list(self, tries: int = 3) -> None:
        """The first list, or the error that stopped it: `tries` for 429/5xx, one for the rest."""
        for attempt in range(1, tries + 1):
            try:
                await self._list()
            except _RETRIABLE as e:
                if attempt == tries or not transient(e):
                    raise
                delay = self.backoff.delay(_retry_after(e))
                self._state(f"{self.name}: {describe(e)}; retrying in {delay:.1f}s")
                await self._sleep(delay)
            else:
                self.backoff.reset()
                return

    async def run(self) -> None:
        """Until cancelled. Lists first unless `first_list()` has already done so."""
        gone_in_a_row = 0
        while True:
            try:
                if self.resource_version is None:
                    await self._list()
                    self.backoff.reset()
                if await self._watch():
                    gone_in_a_row = 0
            except Gone:
                log.info(
                    "%s: resourceVersion %s gone; listing again", self.name, self.resource_version
                )
                self.resource_version = None
                gone_in_a_row = 0 if self._received else gone_in_a_row + 1
                if gone_in_a_row > 1:
                    # gone again with nothing in between: something is wrong; do not spin
                    await self._pause(Gone("watch expired again straight after a list"))
            except asyncio.CancelledError:
                raise
            except _RETRIABLE as e:
                await self._pause(e)

    async def _pause(self, e: BaseException) -> None:
        delay = self.backoff.delay(_retry_after(e))
        self._state(f"{self.name}: {describe(e)}; retrying in {delay:.1f}s")
        await self._sleep(delay)

    def _deliver(self, kind: str, obj: dict[str, Any]) -> None:
        # the consumer's failure is not the stream's: never let it look like a cut watch
        try:
            self.on_event(kind, obj)
        except Exception:
            log.exception("%s: handling %s failed", self.name, kind)

    # -- list -------------------------------------------------------------------------------

    async def _list(self) -> None:
        resp = await self.lister(None, False)
        try:
            if resp.status != 200:
                raise _status_error(resp.status, await resp.read(), resp)
            try:
                body = json.loads(await resp.read())
            except ValueError:
                raise BadResponse("the list answer is not JSON (is this an API server?)") from None
            if not isinstance(body, dict):
                raise BadResponse("the list answer is not a Kubernetes list")
        finally:
            resp.release()
        self.lists += 1
        fresh = {object_key(o): o for o in body.get("items") or ()}
        # a List's items carry no kind; the watch's objects do: keep them alike
        kind = (body.get("kind") or "").removesuffix("List")
        for key, obj in fresh.items():
            if kind:
                obj.setdefault("kind", kind)
            old = self.items.get(key)
            if old is None:
                self.items[key] = obj
                self._deliver(ADDED, obj)
            elif _rv(old) != _rv(obj):
                self.items[key] = obj
                self._deliver(MODIFIED, obj)
        for key in [k for k in self.items if k not in fresh]:
            self._deliver(DELETED, self.items.pop(key))
        self.resource_version = (body.get("metadata") or {}).get("resourceVersion") or ""
        self.synced.set()
        self._state("")

    # -- watch ------------------------------------------------------------------------------

    async def _watch(self) -> int:
        """Return one watch until it ends; how many lines it carried. Raises on every fault."""
        started = time.monotonic()
        received = self._received = 0
        resp = await self.lister(self.resource_version, True)
        try:
            if resp.status == 410:
                raise Gone()
            if resp.status != 200:
                raise _status_error(resp.status, await resp.read(), resp)
            self.watches += 1
            self._state("")
            async for line in _lines(resp.content):
                self._apply(json.loads(line))
                if not received:
                    self.backoff.reset()  # the watch carries something: healthy again
                received = self._received = received + 1
        finally:
            resp.release()
        if not received and time.monotonic() - started < SHORT_WATCH:
            raise ShortWatch("the watch ended at once with nothing delivered")
        return received

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise Gone()
            raise _status_error(int(code or 500), json.dumps(obj).encode())
        rv = _rv(obj)
        if kind == "BOOKMARK":
            if rv:
                self.resource_version = rv
            return
        key = object_key(obj)
        if kind == DELETED:
            # gone already (a re-list saw it go first): say nothing twice
            if self.items.pop(key, None) is not None:
                self._deliver(DELETED, obj)
        elif kind in (ADDED, MODIFIED):
            old = self.items.get(key)
            if old is None or _rv(old) != rv:
                self.items[key] = obj
                self._deliver(MODIFIED if old is not None else ADDED, obj)
            # else: already delivered (a re-watch can repeat the edge)
        if rv:
            self.resource_version = rv

    def offer(self, obj: dict[str, Any]) -> bool:
        """An object read outside the watch (a get): delivered as an update when it is newer
        than the one held. Resource versions are opaque to clients except for equality, so
        "newer" is judged only where both are the integers etcd gives; otherwise the read is
        dropped rather than risk putting an older state over a newer one the watch brought."""
        key = object_key(obj)
        old = self.items.get(key)
        if old is None:
            return False  # the watch has not brought it (or has deleted it): not ours to add
        held, fresh = _rv(old), _rv(obj)
        if not (held.isdigit() and fresh.isdigit()) or int(fresh) <= int(held):
            return False
        self.items[key] = obj
        self._deliver(MODIFIED, obj)
        return True


class ApiStatusError(Exception):
    """Signals that the API server answered with an error status (or an in-stream ERROR event)."""

    def __init__(self, status: int, message: str, retry_after: float = 0.0) -> None:
        super().__init__(f"{status}: {message}" if message else str(status))
        self.status = status
        self.message = message
        self.retry_after = retry_after


class ShortWatch(Exception):
    """Signals a watch that ended at once without delivering anything."""


class BadResponse(ValueError):
    """Signals an answer that is not what an API server sends."""


def _status_error(status: int, body: bytes, resp: Any = None) -> Exception:
    if status == 410:
        return Gone()
    try:
        message = json.loads(body).get("message") or ""
    except (ValueError, AttributeError):
        message = body[:200].decode("utf-8", "replace").strip()
    retry_after = 0.0
    headers = getattr(resp, "headers", None)
    if headers is not None:
        try:
            retry_after = float(headers.get("Retry-After") or 0)
        except ValueError:
            retry_after = 0.0
    return ApiStatusError(status, " ".join(message.split()), retry_after)


def _retry_after(e: BaseException) -> float:
    return e.retry_after if isinstance(e, ApiStatusError) else 0.0


_RETRIABLE = (
    ApiStatusError,
    ShortWatch,
    Gone,
    aiohttp.ClientError,
    asyncio.TimeoutError,
    ConnectionError,
    ValueError,  # a line cut mid-JSON
    OSError,
)


def transient(e: BaseException) -> bool:
    """Worth retrying at start-up: the server is there but busy or failing (429, 5xx)."""
    return isinstance(e, ApiStatusError) and (e.status == 429 or e.status >= 500)


def describe(e: BaseException) -> str:
    """Return one line for the header and for errors: what went wrong with the API server."""
    if isinstance(e, ApiStatusError):
        return f"API server answered {e}"
    if isinstance(e, asyncio.TimeoutError):
        return "API server timed out"
    if isinstance(e, BadResponse):
        return str(e)
    if isinstance(e, aiohttp.ClientPayloadError | ValueError):
        return "watch stream cut mid-event"
    if isinstance(e, aiohttp.ClientConnectorError):
        return f"cannot connect to the API server: {e.os_error.strerror or e.os_error}"
    if isinstance(e, aiohttp.ServerDisconnectedError):
        return "the API server closed the connection"
    if isinstance(e, ShortWatch | Gone):
        return str(e)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


async def _lines(stream: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Newline-delimited JSON without aiohttp's 64 KiB readline limit; a partial tail raises."""
    buf = bytearray()
    async for chunk in stream.iter_any():
        buf += chunk
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(buf[:nl]).strip()
            del buf[: nl + 1]
            if line:
                yield line
        if len(buf) > MAX_LINE_BYTES:
            raise ValueError("watch event larger than the API server's limit")
    if bytes(buf).strip():
        # the connection ended inside an event: a cut stream, not the end of the watch
        raise ValueError("watch stream ended mid-event")
