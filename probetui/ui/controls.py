"""Define what the UI needs from the engine: its runtime and the user's commands.

The workers' state comes through the store (`probetui.timeline.store`), never from here.

`probetui.engine.Engine` satisfies it; tests may pass a stand-in that runs nothing.
"""

from __future__ import annotations

from typing import Protocol

from probetui.keys import ProbeKey
from probetui.runtime.base import Runtime


class Controls(Protocol):
    runtime: Runtime

    async def run(self) -> None: ...

    def probe_now(self, key: ProbeKey) -> bool: ...

    def probe_container(self, pod_uid: str, container: str) -> int: ...

    def set_paused(self, key: ProbeKey, paused: bool) -> bool: ...

    def lateness(self) -> float:
        """Tell how far behind its ticks the prober runs (`probetui.prober.lateness`)."""
        ...
