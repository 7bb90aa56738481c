"""Measure how far behind its ticks the shadow prober runs: the worst lateness of recent attempts.

One process probes what a whole cluster's kubelets probe. Past what it can carry, attempts start
later than their ticks, and on a saturated event loop they time out for want of CPU rather than
for want of an answer (`benchmarks.engine` past its headroom shows it). The shadow's verdicts
then say nothing about the
containers, and the user must be told so rather than shown a cluster of failures.
"""

from __future__ import annotations

from collections import deque

# seconds of attempts looked at
WINDOW = 10
# this late, the shadow is behind: well past start-up jitter, a full GC or a busy moment
# (the lateness `benchmarks.engine` reports at the goal's rate)
BEHIND = 1.0


class Lateness:
    """Tracks the worst tick lateness (attempt start minus its tick) per second, for the last
    WINDOW s.

    `add` takes times in order (when each attempt ended): one entry per second, so at most
    WINDOW + 1 are kept."""

    __slots__ = ("_seconds",)

    def __init__(self) -> None:
        self._seconds: deque[list[float]] = deque()  # [second, worst lateness], oldest first

    def add(self, t: float, late: float) -> None:
        second = float(int(t))
        seconds = self._seconds
        if seconds and seconds[-1][0] == second:
            if late > seconds[-1][1]:
                seconds[-1][1] = late
        else:
            seconds.append([second, late])
        while seconds and seconds[0][0] <= second - WINDOW:
            seconds.popleft()

    def worst(self, now: float) -> float:
        """The worst lateness of the attempts started in the last WINDOW seconds (0 for none)."""
        horizon = int(now) - WINDOW
        return max((late for second, late in self._seconds if second > horizon), default=0.0)


def behind_words(late: float) -> str:
    """What the top bar and the headless warning say about a prober `late` seconds behind."""
    return f"shadow prober {late:.1f}s behind its ticks"


__all__ = ["BEHIND", "WINDOW", "Lateness", "behind_words"]
