"""Carry messages between the widgets and the screen. Low rate only: user actions, never events."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from probetui.keys import ContainerKey


@dataclass
class ContainerSelected(Message):
    """Says the cursor of the workload list is on another container (or on none). On a workload's
    line `key` is its replica most in need of a look and `group` the workload's id."""

    key: ContainerKey | None
    group: str = ""
    # moved by the list's rebuild (a filter, a re-sort), not by a key moving the cursor
    rebuilt: bool = False
