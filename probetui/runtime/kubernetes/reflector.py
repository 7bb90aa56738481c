"""List, then watch, one collection; survive the API server's faults without losing or repeating.

client-go's Reflector in small: list to get a snapshot and its resourceVersion, watch from that
version (with bookmarks), and keep a cache of what was delivered so that every recovery path
delivers differences only:

- the stream ends (the server's `timeoutSeconds`, a cut connection, a payload error): watch again
  from the last resourceVersion seen, so nothing in between is lost;
- `410 Gone` (the version was compacted; in-stream as an ERROR event or as the response): list
  again and deliver the difference against the cache: ADDED and MODIFIED for what is new or
  changed (by resourceVersion), DELETED for what disappeared;
- 5xx, 429, connection refused, a timeout: back off (doubling, capped, jittered) and retry.

Objects stay dicts: deserialising generated models costs about 30x `json.loads`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# the watch line limit: the API server caps a single object at ~1.5 MiB (etcd's request limit)
MAX_LINE_BYTES = 3 * 1024 * 1024


class Gone(Exception):
    """The resourceVersion is too old (410): list again."""


class Response(Protocol):
    """What `_preload_content=False` hands back: the aiohttp response, unread."""

    status: int
    content: aiohttp.StreamReader

    async def read(self) -> bytes: ...

    def release(self) -> Any: ...


# list_fn(resource_version, watch) -> raw response; the caller binds namespace/selectors
Lister = Callable[[str | None, bool], Awaitable[Response]]
OnEvent = Callable[[str, dict[str, Any]], None]


@dataclass(slots=True)
class Backoff:
    """client-go's reflector back-off: 800 ms doubling to 30 s, reset after a good list."""

    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    _next: float = 0.0
    rng: random.Random = field(default_factory=random.Random)

    def delay(self) -> float:
        self._next = self.initial if self._next == 0 else min(self._next * self.factor, self.cap)
        return self._next * (1 + self.rng.random() * self.jitter * 0.1)

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
        backoff: Backoff | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_state: Callable[[str], None] | None = None,
    ) -> None:
        self.lister = lister
        self.on_event = on_event
        self.name = name
        self.backoff = backoff or Backoff()
        self._sleep = sleep
        self._on_state = on_state
        self.items: dict[str, dict[str, Any]] = {}
        self.resource_version: str | None = None
        self.lists = 0
        self.watches = 0
        self.synced = asyncio.Event()

    def _state(self, text: str) -> None:
        if self._on_state is not None:
            self._on_state(text)

    async def run(self) -> None:
        """Until cancelled."""
        while True:
            try:
                if self.resource_version is None:
                    await self._list()
                    self.backoff.reset()
                await self._watch()
            except Gone:
                log.info(
                    "%s: resourceVersion %s gone; listing again", self.name, self.resource_version
                )
                self.resource_version = None
            except asyncio.CancelledError:
                raise
            except _RETRIABLE as e:
                delay = self.backoff.delay()
                self._state(f"{self.name}: {_describe(e)}; retrying in {delay:.1f}s")
                await self._sleep(delay)

    # -- list -------------------------------------------------------------------------------

    async def _list(self) -> None:
        resp = await self.lister(None, False)
        try:
            if resp.status != 200:
                raise _status_error(resp.status, await resp.read())
            body = json.loads(await resp.read())
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
                self.on_event(ADDED, obj)
            elif _rv(old) != _rv(obj):
                self.items[key] = obj
                self.on_event(MODIFIED, obj)
        for key in [k for k in self.items if k not in fresh]:
            self.on_event(DELETED, self.items.pop(key))
        self.resource_version = (body.get("metadata") or {}).get("resourceVersion") or ""
        self.synced.set()
        self._state("")

    # -- watch ------------------------------------------------------------------------------

    async def _watch(self) -> None:
        resp = await self.lister(self.resource_version, True)
        try:
            if resp.status == 410:
                raise Gone()
            if resp.status != 200:
                raise _status_error(resp.status, await resp.read())
            self.watches += 1
            async for line in _lines(resp.content):
                self._apply(json.loads(line))
        finally:
            resp.release()

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
            self.items.pop(key, None)
            self.on_event(DELETED, obj)
        elif kind in (ADDED, MODIFIED):
            old = self.items.get(key)
            if old is not None and _rv(old) == rv:
                return  # already delivered (a re-watch can repeat the edge)
            self.items[key] = obj
            self.on_event(MODIFIED if old is not None else ADDED, obj)
        if rv:
            self.resource_version = rv


class ApiStatusError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status


def _status_error(status: int, body: bytes) -> Exception:
    if status == 410:
        return Gone()
    try:
        message = json.loads(body).get("message") or ""
    except (ValueError, AttributeError):
        message = body[:200].decode("utf-8", "replace")
    return ApiStatusError(status, message)


_RETRIABLE = (
    ApiStatusError,
    aiohttp.ClientError,
    asyncio.TimeoutError,
    ConnectionError,
    ValueError,  # a line cut mid-JSON
    OSError,
)


def _describe(e: BaseException) -> str:
    if isinstance(e, ApiStatusError):
        return f"API server answered {e}"
    if isinstance(e, asyncio.TimeoutError):
        return "API server timed out"
    if isinstance(e, ValueError):
        return "watch stream cut mid-event"
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
