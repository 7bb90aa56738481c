"""Tell which workload a ReplicaSet's pods belong to, confirmed from the ReplicaSet itself.

A pod names its ReplicaSet, not the Deployment: `observed.owner_of` takes the Deployment from
the ReplicaSet's name and the pod's `pod-template-hash` (the Deployment controller names them
so), with no request. That guess is wrong in two cases a user meets: a ReplicaSet made by hand
whose name happens to end in its pods' hash, and a ReplicaSet orphaned when its Deployment was
deleted with `--cascade=orphan` (its pods then belong to the ReplicaSet alone). So where the
user may list ReplicaSets (the `view` ClusterRole covers them; a list is a read, allowed in
read-only mode), their own controller references settle it: one `list replicasets` over the
watched namespace(s) after the first list of pods, again at most once a minute when a pod
names a ReplicaSet not seen yet. A 401, 403 or 404 is remembered and nothing is asked again;
the guess from the name then stands, and nothing else changes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from probetui.runtime.kubernetes.relist import Relisted

if TYPE_CHECKING:
    from kubernetes_asyncio.client import AppsV1Api

Key = tuple[str, str]  # (namespace, ReplicaSet name)


def replicaset_of(meta: Mapping[str, Any]) -> str | None:
    """Return the name of the ReplicaSet that controls the pod, from its own metadata, or None."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True:
            if ref.get("kind") == "ReplicaSet" and isinstance(ref.get("name"), str):
                return ref["name"]
            return None
    return None


def _controller(meta: Mapping[str, Any], rs: str) -> tuple[str, str]:
    refs = meta.get("ownerReferences")
    for ref in refs if isinstance(refs, list) else ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            kind, name = ref.get("kind"), ref.get("name")
            if isinstance(kind, str) and isinstance(name, str) and kind and name:
                return kind, name
    return "ReplicaSet", rs  # no controller: the ReplicaSet is the workload


class ReplicaSetOwners(Relisted):
    """Maps (namespace, ReplicaSet) -> the workload that controls it, as the ReplicaSet says.

    `on_change` is told when a read changed what some ReplicaSet's pods belong to, so the
    runtime can show those pods under their workload again.
    """

    what = "replicasets"

    def __init__(
        self,
        namespace: str | None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(clock)
        self.namespace = namespace  # None: all namespaces
        self.owners: dict[Key, tuple[str, str]] = {}
        self.on_change: Callable[[], None] | None = None
        self._apps: AppsV1Api | None = None

    def connect(self, apps: AppsV1Api) -> None:
        self._apps = apps

    def of(self, namespace: str, rs: str) -> tuple[str, str] | None:
        """Return the confirmed workload of the ReplicaSet, or None (not read, or not readable)."""
        owner = self.owners.get((namespace, rs))
        if owner is None:
            self._read_soon()
        return owner

    def _can_read(self) -> bool:
        return self._apps is not None

    def _call(self) -> Awaitable[Any]:
        assert self._apps is not None
        if self.namespace is None:
            return self._apps.list_replica_set_for_all_namespaces(_preload_content=False)
        return self._apps.list_namespaced_replica_set(self.namespace, _preload_content=False)

    def _take(self, body: dict[str, Any]) -> None:
        fresh: dict[Key, tuple[str, str]] = {}
        for item in body.get("items") or ():
            meta = item.get("metadata") or {}
            ns, name = meta.get("namespace"), meta.get("name")
            if isinstance(ns, str) and isinstance(name, str):
                fresh[(ns, name)] = _controller(meta, name)
        # a ReplicaSet gone since is forgotten; its pods keep the owner they were last shown
        changed = fresh != self.owners
        self.owners = fresh
        if changed and self.on_change is not None:
            self.on_change()


__all__ = ["ReplicaSetOwners", "replicaset_of"]
