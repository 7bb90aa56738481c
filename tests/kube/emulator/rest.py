"""get, list and watch on a resource, with the apiserver's resourceVersion semantics.

list: no resourceVersion = most recent; "0" = any (served like the watch cache: `limit` is
ignored); N with resourceVersionMatch=Exact = the state at N (410 when N left the window);
N otherwise = not older than N. `limit`/`continue` page through a consistent snapshot.

watch: no resourceVersion or "0" = synthetic ADDED for what exists, then changes; N = every
change after N, or, when N left the window, an ERROR event with a 410 Expired Status (as the
watch cache answers) or, in the "status" mode, an HTTP 410. allowWatchBookmarks gets BOOKMARKs
(periodically, 2 s before a timeoutSeconds deadline, and when the test asks). timeoutSeconds ends
the stream cleanly. sendInitialEvents=true ends the initial ADDEDs with a BOOKMARK annotated
k8s.io/initial-events-end.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from . import status
from .requestinfo import RequestInfo, parse_bool
from .resources import Obj, ResourceType
from .selectors import FieldSelector, LabelSelector, SelectorError, parse_fields, parse_labels
from .store import Expired, Store, Watcher, WatchItem

COMPACTED_IN_STREAM = "The resourceVersion for the provided watch is too old."
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


@dataclass
class WatchSettings:
    bookmark_interval: float | None = 60.0
    # how a watch that starts below the history window learns it: in-stream ERROR or HTTP 410
    expired_as: Literal["event", "status"] = "event"
    max_queue: int = 10_000


class BadRequest(Exception):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__(body.get("message"))
        self.body = body


@dataclass(frozen=True, slots=True)
class ListQuery:
    labels: LabelSelector
    fields: FieldSelector
    rv: str | None
    rv_match: str | None
    limit: int
    cont: str | None
    watch: bool
    bookmarks: bool
    timeout: int | None
    send_initial: bool | None


def _invalid(detail: str) -> BadRequest:
    return BadRequest(
        status.status(
            422,
            f'ListOptions.meta.k8s.io "" is invalid: {detail}',
            details={
                "group": "meta.k8s.io",
                "kind": "ListOptions",
                "causes": [{"message": detail}],
            },
        )
    )


def parse_query(view: ResourceType, query: Any) -> ListQuery:
    try:
        labels = parse_labels(query.get("labelSelector"))
        fields = parse_fields(query.get("fieldSelector"))
        fields.check(view.supports_field)
    except SelectorError as err:
        raise BadRequest(status.bad_request(str(err))) from err
    try:
        watch = bool(parse_bool(query.get("watch")))
        bookmarks = bool(parse_bool(query.get("allowWatchBookmarks")))
        send_initial = parse_bool(query.get("sendInitialEvents"))
    except ValueError as err:
        raise BadRequest(status.bad_request(str(err))) from err
    rv = query.get("resourceVersion") or None
    if rv is not None and rv != "0" and not rv.isdigit():
        raise BadRequest(status.bad_request(f"invalid resource version: {rv}"))
    rv_match = query.get("resourceVersionMatch") or None
    try:
        limit = int(query.get("limit") or 0)
        # an int64 upstream: "0.5" is refused, so no watch times out in under a second
        timeout = int(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
    except ValueError as err:
        raise BadRequest(status.bad_request(str(err))) from err
    cont = query.get("continue") or None
    if watch:
        if send_initial is not None and (not bookmarks or rv_match != "NotOlderThan"):
            raise _invalid(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless "
                "the WatchList feature gate is enabled and allowWatchBookmarks is set and "
                "resourceVersionMatch is NotOlderThan"
            )
        if rv_match and send_initial is None:
            raise _invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch "
                "unless sendInitialEvents is provided"
            )
    elif rv_match:
        if rv_match not in ("Exact", "NotOlderThan"):
            raise _invalid(f'resourceVersionMatch: Unsupported value: "{rv_match}"')
        if rv is None:
            raise _invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                "resourceVersion is provided"
            )
        if cont:
            raise _invalid(
                "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when "
                "continue is provided"
            )
        if rv_match == "Exact" and rv == "0":
            raise _invalid(
                'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
                'resourceVersion "0"'
            )
    return ListQuery(
        labels, fields, rv, rv_match, limit, cont, watch, bookmarks, timeout, send_initial
    )


def encode_continue(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}\x00"})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        ns, _, name = str(raw["start"]).rstrip("\x00").partition("/")
        return int(raw["rv"]), (ns, name)
    except (binascii.Error, ValueError, KeyError, TypeError) as err:
        raise BadRequest(status.bad_request(f"continue key is not valid: {err}")) from err


class Collections:
    def __init__(self, store: Store, settings: WatchSettings) -> None:
        self.store = store
        self.settings = settings
        self._changed: Callable[[], None] = lambda: None

    def on_watchers_changed(self, callback: Callable[[], None]) -> None:
        self._changed = callback

    def _matches(self, view: ResourceType, namespace: str, q: ListQuery, obj: Obj) -> bool:
        meta = obj.get("metadata", {})
        if namespace and meta.get("namespace") != namespace:
            return False
        return q.labels.matches(meta.get("labels")) and q.fields.matches(view.fields(obj))

    # ----- get -----

    def get(self, view: ResourceType, info: RequestInfo) -> web.Response:
        ns = info.namespace if view.namespaced else ""
        obj = self.store.get(view.storage, ns, info.path_name)
        if obj is None:
            return status.response(status.not_found(view.name, info.path_name, view.group))
        return status.json_response(view.to_wire(obj))

    # ----- list -----

    def list(self, view: ResourceType, info: RequestInfo, q: ListQuery) -> web.Response:
        store = self.store
        start: tuple[str, str] | None = None
        try:
            if q.cont:
                list_rv, start = decode_continue(q.cont)
                try:
                    state = store.snapshot(view.storage, list_rv)
                except Expired:
                    return status.response(status.expired(CONTINUE_EXPIRED))
            elif q.rv_match == "Exact":
                assert q.rv is not None
                list_rv = int(q.rv)
                if list_rv > store.rv:
                    return status.response(status.too_large_resource_version(list_rv, store.rv))
                state = store.snapshot(view.storage, list_rv)
            else:
                if q.rv not in (None, "0") and int(q.rv) > store.rv:
                    return status.response(status.too_large_resource_version(int(q.rv), store.rv))
                list_rv = store.rv
                state = store.objects[view.storage]
        except Expired as err:
            return status.response(status.expired(str(err)))
        keys = sorted(k for k, o in state.items() if self._matches(view, info.namespace, q, o))
        if start is not None:
            keys = [k for k in keys if k >= start]
        metadata: dict[str, Any] = {"resourceVersion": str(list_rv)}
        # the watch cache serves resourceVersion=0 whole, whatever the limit
        if q.limit > 0 and q.rv != "0" and len(keys) > q.limit:
            rest = keys[q.limit :]
            keys = keys[: q.limit]
            metadata["continue"] = encode_continue(list_rv, rest[0])
            if q.labels.empty and not q.fields.terms:
                metadata["remainingItemCount"] = len(rest)
        return status.json_response(
            {
                "kind": view.list_kind,
                "apiVersion": view.api_version,
                "metadata": metadata,
                "items": [view.list_item(state[k]) for k in keys],
            }
        )

    # ----- watch -----

    async def watch(
        self,
        request: web.Request,
        view: ResourceType,
        info: RequestInfo,
        q: ListQuery,
        user: str,
    ) -> web.StreamResponse:
        store = self.store
        namespace = info.namespace or None
        watcher = Watcher(
            view,
            namespace,
            q.labels,
            q.fields,
            q.bookmarks,
            user,
            since=store.rv,
            max_queue=self.settings.max_queue,
        )
        initial: list[WatchItem] = []
        rv = int(q.rv) if q.rv not in (None, "0") else None
        if rv is not None and rv > store.rv and not q.send_initial:
            initial.append(
                WatchItem("error", "ERROR", status.too_large_resource_version(rv, store.rv))
            )
        elif rv is not None and not q.send_initial:
            try:
                changes = list(store.changes_since(rv))
            except Expired as err:
                if self.settings.expired_as == "status":
                    return status.response(status.expired(str(err)))
                initial.append(WatchItem("error", "ERROR", status.expired(str(err))))
            else:
                watcher.since = rv
                for change in changes:
                    item = watcher.event_for(change)
                    if item is not None:
                        initial.append(item)
                watcher.since = store.rv
        else:
            for obj in store.items(view.storage):
                if watcher.passes(obj):
                    initial.append(WatchItem("event", "ADDED", view.to_wire(obj)))
            if q.send_initial:
                initial.append(
                    WatchItem("bookmark", obj=view.bookmark(store.rv, initial_events_end=True))
                )
        for item in initial:
            watcher.put(item)
        if not watcher.closed:
            store.watchers.add(watcher)
        self._changed()

        resp = web.StreamResponse(status=200)
        resp.content_type = "application/json"
        resp.enable_chunked_encoding()
        try:
            await resp.prepare(request)
            await self._stream(request, resp, watcher, q.timeout)
        except ConnectionError:
            pass  # the client went away; aiohttp's finish copes with the dead transport
        finally:
            store.watchers.discard(watcher)
            self._changed()
        return resp

    async def _stream(
        self,
        request: web.Request,
        resp: web.StreamResponse,
        watcher: Watcher,
        timeout: int | None,
    ) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout if timeout else None
        interval = self.settings.bookmark_interval if watcher.bookmarks else None
        next_bookmark = started + interval if interval else None
        # the cacher sends one bookmark 2 s before a timeout so the client can resume from it
        pre_timeout = None
        if watcher.bookmarks and timeout and timeout > 2:
            pre_timeout = started + timeout - 2.0
        while True:
            wakes = [t for t in (deadline, next_bookmark, pre_timeout) if t is not None]
            try:
                if wakes:
                    item = await asyncio.wait_for(
                        watcher.queue.get(), max(0.0, min(wakes) - loop.time())
                    )
                else:
                    item = await watcher.queue.get()
            except TimeoutError:
                now = loop.time()
                if deadline is not None and now >= deadline:
                    return
                if pre_timeout is not None and now >= pre_timeout:
                    pre_timeout = None
                    watcher.put(WatchItem("bookmark", obj=watcher.view.bookmark(self.store.rv)))
                if next_bookmark is not None and now >= next_bookmark:
                    assert interval is not None
                    next_bookmark = now + interval
                    watcher.put(WatchItem("bookmark", obj=watcher.view.bookmark(self.store.rv)))
                continue
            if item.kind == "end":
                return
            if item.kind == "bookmark" and not watcher.bookmarks:
                continue
            kind = {"event": item.type, "bookmark": "BOOKMARK", "error": "ERROR"}.get(item.kind)
            if item.kind == "cut":
                line = status.dumps(
                    {"type": "BOOKMARK", "object": watcher.view.bookmark(self.store.rv)}
                )
                await self._cut(request, resp, watcher, line)
                return
            line = status.dumps({"type": kind, "object": item.obj})
            if item.kind == "event" and watcher.cut_next:
                await self._cut(request, resp, watcher, line)
                return
            await resp.write(line)
            if item.kind == "error":
                return

    async def _cut(
        self, request: web.Request, resp: web.StreamResponse, watcher: Watcher, line: bytes
    ) -> None:
        """Send half a JSON line, then drop the connection without ending the chunked body."""
        watcher.closed = True
        await resp.write(line[: max(1, len(line) // 2)])
        resp.force_close()
        transport = request.transport
        if transport is not None:
            transport.close()
