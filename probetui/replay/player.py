"""The replay's time cursor: a recording fed into the store up to a moment, moved by the user.

`Player` stands where the live engine stands for the screen (`ui.controls.Controls`): the UI
reads the same `Store`, and its clock (`now`) is the cursor, so every pane shows the state at
the cursor: threshold runs, on hold, published results, readiness, restarts, the timeline up
to it. Moving the cursor forward feeds the store the events in between; moving it back, or
far ahead, rebuilds the store from a window before the cursor (up to 15 minutes, what the
timeline shows at its widest default zoom; shorter on a dense recording, so that a seek feeds
about 20,000 events), which is what a seek costs.

The state at a moment is what had been *published* by then, as the live store had it: an
attempt counts from when it ended (it is stamped with when it began), so one still in flight
at the cursor is not shown yet, and a result change comes with the attempt that caused it.
Cutting by the stamps instead would make the state depend on how the cursor got there.

Playing advances the cursor at 1x, 10x or 100x wall time on the player's own asyncio task.
Nothing is probed, paused or run: `probe_now` and `set_paused` do nothing and say why.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable

from probetui.prober.prober import MAX_PROBE_RETRIES
from probetui.prober.worker import ProbeKey
from probetui.record.reader import Recording
from probetui.record.schema import SessionMeta
from probetui.runtime.base import Runtime, RuntimeHost
from probetui.spec.model import Container, Pod, ProbeType
from probetui.timeline.events import Event
from probetui.timeline.store import Store

# seconds of history fed in before the cursor on a seek: at most WINDOW, and no more than
# about SEEK_EVENTS attempts' worth at the recording's density (a seek feeds every event of
# the window, some 10 µs each to read and to store), but never under MIN_WINDOW
WINDOW = 900.0
SEEK_EVENTS = 20_000
MIN_WINDOW = 10.0
# a forward move up to this far feeds the events in between; farther is a seek
FEED_LIMIT = 600.0
TICK = 0.1  # seconds between cursor steps while playing
SPEEDS = (1.0, 10.0, 100.0)
# what counts as a moment worth jumping to
NOTABLE = ("ResultChanged", "Killing", "BackOff", "Divergence")
NOTHING_RUNS = "this is a recording: nothing is probed or paused in a replay"
# what the threshold pane says where a live one says when the next attempt is
NOT_RUN = "replayed"


class ReplayRuntime(Runtime):
    """What the screen asks of a runtime, answered from the recording's first session."""

    def __init__(self, path: str, session: SessionMeta | None) -> None:
        self.source = f"replay {path}" + (f"  ({session.source})" if session else "")
        self.via = session.via or "" if session else ""
        self.observes_kubelet = session is not None and session.runtime == "kubernetes"

    async def run(self, host: RuntimeHost) -> None:  # pragma: no cover - never run
        raise RuntimeError("a replay has no runtime to run")

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        return NOT_RUN


class Player:
    """The cursor over a recording, and the store it keeps at the cursor's state."""

    def __init__(
        self,
        recording: Recording,
        store: Store | None = None,
        *,
        start: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.recording = recording
        self.store = store if store is not None else Store()
        span = recording.span()
        self.first, self.last = span if span is not None else (0.0, 0.0)
        self.runtime = ReplayRuntime(str(recording.path), recording.meta.first)
        self._clock = clock
        self.playing = False
        self.speed = SPEEDS[0]
        self.cursor = self.first
        self._fed = self.first  # what was published up to here is in the store
        self.lookback, rate = _probing(recording)
        self.window = max(MIN_WINDOW, min(WINDOW, SEEK_EVENTS / rate)) if rate else WINDOW
        self._seeks = 0
        self.seek(self.last if start is None else start)

    # -- the cursor -----------------------------------------------------------------------

    def now(self) -> float:
        return self.cursor

    def seek(self, t: float) -> None:
        """Move the cursor to `t` (held within the recording)."""
        t = min(max(t, self.first), self.last)
        if self._seeks and self._fed <= t <= self._fed + FEED_LIMIT:
            if t > self._fed:
                # what was published in between, on top of what the store holds
                feed(self.store, self.recording, self._fed, t, self.lookback)
        else:
            self.store.reset()
            lo = max(self.first, t - self.window)
            feed(self.store, self.recording, lo - 1e-6, t, self.lookback)
        self._seeks += 1
        self.cursor = self._fed = t

    def step(self, seconds: float) -> None:
        self.seek(self.cursor + seconds)

    def notable(self, direction: int) -> float | None:
        """The time of the next (1) or previous (-1) notable moment from the cursor."""
        if direction > 0:
            for e in self.recording.events(since=_after(self.cursor), types=NOTABLE):
                return e.t
            return None
        span = 60.0
        while True:
            lo = max(self.first, self.cursor - span)
            found = None
            for e in self.recording.events(since=lo, until=self.cursor, types=NOTABLE):
                if e.t < self.cursor - 1e-6:
                    found = e.t
            if found is not None or lo <= self.first:
                return found
            span *= 8

    def jump(self, direction: int) -> float | None:
        t = self.notable(direction)
        if t is not None:
            self.seek(t)
        return t

    # -- playing --------------------------------------------------------------------------

    def toggle(self) -> bool:
        self.playing = not self.playing and self.cursor < self.last
        return self.playing

    def set_speed(self, speed: float) -> None:
        self.speed = speed

    def status(self) -> str:
        """For the top bar: REPLAY, playing or paused, and the speed."""
        state = f"▶ {self.speed:g}x" if self.playing else "‖"
        return f"REPLAY {state}"

    async def run(self) -> None:
        """Advance the cursor while playing; stop at the recording's end."""
        last = self._clock()
        while True:
            await asyncio.sleep(TICK)
            now = self._clock()
            if self.playing:
                self.step((now - last) * self.speed)
                if self.cursor >= self.last:
                    self.playing = False
            last = now

    # -- Controls: nothing runs in a replay -----------------------------------------------

    def probe_now(self, key: ProbeKey) -> bool:
        return False

    def probe_container(self, pod_uid: str, container: str) -> int:
        return 0

    def set_paused(self, key: ProbeKey, paused: bool) -> bool:
        return False

    def lateness(self) -> float:
        return 0.0


def lookback(recording: Recording) -> float:
    """How long before its publication an event can be stamped: the longest an attempt takes,
    all its tries at the longest timeout of any recorded probe, and a second more."""
    return _probing(recording)[0]


def _probing(recording: Recording) -> tuple[float, float]:
    """(lookback, attempts per second) from the recorded specs."""
    longest, rate = 1.0, 0.0
    seen: set[str] = set()
    for pod in recording.specs():
        # the rate from each pod's first spec, as before; the timeouts from all of them
        first = pod.uid not in seen
        seen.add(pod.uid)
        for c in pod.probed_containers():
            for pt in ProbeType:
                p = c.probe(pt)
                if p is not None:
                    longest = max(longest, float(p.timeout_seconds))
                    if first:
                        rate += 1.0 / max(1, p.period_seconds)
    return MAX_PROBE_RETRIES * longest + 1.0, rate


def published(event: Event) -> float:
    """When the engine published an event: an attempt when it ended, the rest when stamped."""
    r = event.record
    return r.finished_at if r is not None and r.finished_at is not None else event.t


def feed(store: Store, recording: Recording, after: float, until: float, back: float) -> int:
    """Feed `store` what was published in (after, until], pods' specs and statuses with it;
    returns the events fed.

    A result change is published just before the attempt that caused it and belongs with it:
    it is fed exactly when that attempt is (the attempt's end is only known to the
    microsecond of its latency, and a cut between the two would reverse them)."""
    window = list(recording.events(since=after - back, until=until + back, slack=back))
    when = [published(e) for e in window]
    # the attempt after each result change of the same probe
    following: dict[tuple[str, str | None, str | None], int] = {}
    for i in range(len(window) - 1, -1, -1):
        e = window[i]
        k = (e.pod_uid, e.container, e.probe)
        if e.type == "ResultChanged":
            j = following.get(k)
            if j is not None and window[j].t <= e.t <= when[j] + 1.0:
                when[i] = when[j]
        elif e.type == "ProbeAttempt":
            following[k] = i
    snaps = ((t, 0, (pod, status)) for t, pod, status in recording.snapshots(_after(after), until))
    events = ((e.t, 1, e) for e, w in zip(window, when, strict=True) if after < w <= until)
    n = 0
    for _, kind, x in heapq.merge(snaps, events, key=lambda item: item[0]):
        if kind == 0:
            store.pod(*x)  # type: ignore[misc]
        else:
            store.event(x)  # type: ignore[arg-type]
            n += 1
    return n


def _after(t: float) -> float:
    # the reader's windows include both ends; a microsecond on is the next recorded instant
    return t + 1e-6


__all__ = [
    "NOTABLE",
    "NOTHING_RUNS",
    "SPEEDS",
    "Player",
    "ReplayRuntime",
    "feed",
    "lookback",
    "published",
]
