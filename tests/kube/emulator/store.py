"""Objects, one global resourceVersion, a bounded change history, and the open watches.

This is the part of the apiserver + etcd + watch cache a client can observe:
- every write takes the next global resourceVersion (etcd's revision), shared by all kinds;
- the history is a window like the watch cache's: a watch or a consistent read at a
  resourceVersion older than the window is `410 Expired`;
- each change fans out to the open watches, filtered by namespace and selectors the way
  `cacheWatcher.convertToWatchEvent` does (an object that stops matching arrives as DELETED).
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from .resources import STORAGES, Obj, ResourceType
from .selectors import FieldSelector, LabelSelector

Key = tuple[str, str]  # (namespace or "" for cluster-scoped, name)
ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Expired(Exception):
    """A resourceVersion older than the history window; the text is the apiserver's message."""


@dataclass(frozen=True, slots=True)
class Change:
    rv: int
    type: ChangeType
    storage: str
    key: Key
    obj: Obj  # the object after the change; for DELETED, the last state at the deletion's RV
    prev: Obj | None


@dataclass(slots=True)
class WatchItem:
    """One thing a watch stream writes: an event line, or an instruction to its writer."""

    kind: Literal["event", "bookmark", "error", "end", "cut"]
    type: str = ""
    obj: Obj | None = None


@dataclass(eq=False)
class Watcher:
    view: ResourceType
    namespace: str | None
    labels: LabelSelector
    fields: FieldSelector
    bookmarks: bool
    user: str
    since: int  # events with a larger RV are this watch's to deliver
    queue: asyncio.Queue[WatchItem] = field(default_factory=asyncio.Queue)
    # set by cut_streams(on_next_event=True): the writer cuts the next event line in half
    cut_next: bool = False
    closed: bool = False
    max_queue: int = 10_000

    def passes(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(
            self.view.fields(obj)
        )

    def event_for(self, change: Change) -> WatchItem | None:
        """The event this watch sees for a change, or None (cacheWatcher.convertToWatchEvent)."""
        if change.storage != self.view.storage or change.rv <= self.since:
            return None
        cur = change.type != "DELETED" and self.passes(change.obj)
        old = self.passes(change.prev)
        if cur and not old:
            return WatchItem("event", "ADDED", self.view.to_wire(change.obj))
        if cur and old:
            return WatchItem("event", "MODIFIED", self.view.to_wire(change.obj))
        if old:
            # the previous content, stamped with the RV of the change that removed it from view
            gone = copy.deepcopy(change.prev)
            assert gone is not None
            gone.setdefault("metadata", {})["resourceVersion"] = str(change.rv)
            return WatchItem("event", "DELETED", self.view.to_wire(gone))
        return None

    def put(self, item: WatchItem) -> None:
        if self.closed:
            return
        if item.kind in ("error", "end", "cut"):
            self.closed = True
        if self.queue.qsize() >= self.max_queue:
            # the cacher drops a watcher that cannot keep up; the client sees the stream end
            self.closed = True
            self.queue.put_nowait(WatchItem("end"))
            return
        self.queue.put_nowait(item)

    def offer(self, change: Change) -> None:
        item = self.event_for(change)
        if item is not None:
            self.put(item)


class Store:
    def __init__(self, *, start_rv: int = 1000, history_limit: int = 10_000) -> None:
        self.rv = start_rv
        # the oldest RV a watch may resume from; raised by compaction and by the window sliding
        self.floor = start_rv
        self.history_limit = history_limit
        self.objects: dict[str, dict[Key, Obj]] = {s: {} for s in STORAGES}
        self.history: deque[Change] = deque()
        self.watchers: set[Watcher] = set()

    # ----- reads -----

    def get(self, storage: str, namespace: str, name: str) -> Obj | None:
        return self.objects[storage].get((namespace, name))

    def items(self, storage: str, state: dict[Key, Obj] | None = None) -> list[Obj]:
        """Objects in etcd key order (namespace, then name)."""
        objs = self.objects[storage] if state is None else state
        return [objs[k] for k in sorted(objs)]

    def snapshot(self, storage: str, rv: int) -> dict[Key, Obj]:
        """The collection as it was at `rv`, rebuilt by undoing later changes."""
        if rv < self.floor:
            raise Expired(f"too old resource version: {rv} ({self.floor})")
        state = dict(self.objects[storage])
        for change in reversed(self.history):
            if change.rv <= rv:
                break
            if change.storage != storage:
                continue
            if change.type == "ADDED":
                state.pop(change.key, None)
            else:
                assert change.prev is not None
                state[change.key] = change.prev
        return state

    def changes_since(self, rv: int) -> Iterator[Change]:
        if rv < self.floor:
            raise Expired(f"too old resource version: {rv} ({self.floor})")
        for change in self.history:
            if change.rv > rv:
                yield change

    # ----- writes -----

    def put(self, storage: str, obj: Obj, *, namespaced: bool) -> Change:
        """Create or replace an object; the stored copy is never mutated afterwards."""
        new = copy.deepcopy(obj)
        meta: dict[str, Any] = new.setdefault("metadata", {})
        name = meta.get("name")
        if not name:
            raise ValueError(f"{storage}: metadata.name is required")
        if namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        key = (meta.get("namespace", ""), name)
        prev = self.objects[storage].get(key)
        if prev is None:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", now_rfc3339())
        else:
            meta.setdefault("uid", prev["metadata"]["uid"])
            meta.setdefault("creationTimestamp", prev["metadata"].get("creationTimestamp"))
        self.rv += 1
        meta["resourceVersion"] = str(self.rv)
        self.objects[storage][key] = new
        change = Change(self.rv, "ADDED" if prev is None else "MODIFIED", storage, key, new, prev)
        self._commit(change)
        return change

    def delete(self, storage: str, namespace: str, name: str) -> Change | None:
        prev = self.objects[storage].pop((namespace, name), None)
        if prev is None:
            return None
        self.rv += 1
        last = copy.deepcopy(prev)
        last["metadata"]["resourceVersion"] = str(self.rv)
        change = Change(self.rv, "DELETED", storage, (namespace, name), last, prev)
        self._commit(change)
        return change

    def compact(self) -> int:
        """Forget all history, as an etcd compaction at the current revision would."""
        self.history.clear()
        self.floor = self.rv
        return self.floor

    def _commit(self, change: Change) -> None:
        self.history.append(change)
        while len(self.history) > self.history_limit:
            self.floor = max(self.floor, self.history.popleft().rv)
        for watcher in list(self.watchers):
            watcher.offer(change)
