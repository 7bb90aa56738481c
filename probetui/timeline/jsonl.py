"""Write the headless output, one JSON object a line, flushed line by line (`--output jsonl`)."""

from __future__ import annotations

from typing import TextIO

from probetui.prober.status import PodStatus
from probetui.spec.model import Pod
from probetui.timeline.events import NOT_IN_JSONL, Event


class JsonlWriter:
    """Prints each event as it happens, so a reader (or a SIGINT) loses nothing."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.lines = 0
        self.broken = False

    def event(self, event: Event) -> None:
        if event.type in NOT_IN_JSONL or self.broken:
            return
        try:
            self.out.write(event.to_line() + "\n")
            self.out.flush()
        except BrokenPipeError:
            # the reader went away (`| head`): stop writing, let the engine wind down
            self.broken = True
            return
        self.lines += 1

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        return None
