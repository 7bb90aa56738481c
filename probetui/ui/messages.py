"""Messages between the widgets and the screen. Low rate only: user actions, never store events."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from probetui.timeline.store import ContainerKey


@dataclass
class ContainerSelected(Message):
    """The cursor of the workload list is on another container (or on none)."""

    key: ContainerKey | None
