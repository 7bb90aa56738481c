"""Read a list once, and again only when asked for something it lacks.

`NodeVersions` (nodes.py) and `ReplicaSetOwners` (owners.py) each hold what one list of a
resource said (the nodes' kubelet versions, the ReplicaSets' controllers). Both read it after
the first list of pods, read it again at most once a minute when a pod names an object not seen
yet, and remember a refusal (401, 403, 404) so nothing is asked again: the runtime then does
without, and says so where it matters.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

TIMEOUT = 10.0  # seconds for the one list
AGAIN_AFTER = 60.0  # seconds before something unknown has the list read again
REFUSED = (401, 403, 404)


class Relisted:
    """Relists a resource; subclasses give `what` (the resource, for messages), `_call()` (the
    list request, unread: `_preload_content=False`) and `_take(body)` (what to keep of its
    answer)."""

    what = "objects"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.unreadable: str | None = None  # why the resource cannot be read, once tried
        self.lists = 0
        self._clock = clock
        self._read_at: float | None = None
        self._task: asyncio.Task[None] | None = None

    def _can_read(self) -> bool:
        raise NotImplementedError

    def _call(self) -> Awaitable[Any]:
        raise NotImplementedError

    def _take(self, body: dict[str, Any]) -> None:
        raise NotImplementedError

    def _read_soon(self) -> None:
        """Something asked for is not known: read again, at most once a minute."""
        if self.unreadable is not None or not self._can_read():
            return
        due = self._read_at is None or self._clock() - self._read_at >= AGAIN_AFTER
        if not due or (self._task is not None and not self._task.done()):
            return
        try:
            self._task = asyncio.get_running_loop().create_task(self.read(), name=self.what)
        except RuntimeError:
            return  # no loop: asked from outside the engine (a test drawing once)

    async def read(self) -> None:
        """List once; on a refusal remember why and stop asking."""
        if not self._can_read():
            return
        self._read_at = self._clock()
        try:
            resp = await asyncio.wait_for(self._call(), TIMEOUT)
            try:
                if resp.status != 200:
                    if resp.status in REFUSED:
                        self.unreadable = f"{self.what} not readable (HTTP {resp.status})"
                    return
                body = json.loads(await resp.read())
            finally:
                resp.release()
        except asyncio.CancelledError:
            raise
        except Exception as e:  # kubernetes_asyncio raises ApiException for a status too
            status = getattr(e, "status", None)
            if status in REFUSED:
                self.unreadable = f"{self.what} not readable (HTTP {status})"
            log.info("cannot list %s: %s", self.what, e)
            return
        self.lists += 1
        self._take(body)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


__all__ = ["AGAIN_AFTER", "TIMEOUT", "Relisted"]
