"""Move the replay's time cursor: a recording fed into the store up to a moment the user picks.

`Player` stands where the live engine stands for the screen (`ui.controls.Controls`): the UI
reads its `ReplayStore`, and its clock (`now`) is the cursor, so every pane shows the state at
the cursor: threshold runs, on hold, published results, readiness, restarts, the timeline up to
it. Moving the cursor forward feeds the store the events in between; moving it back, or far
ahead, builds the state anew into a fresh store, swapped in, from a window before the cursor (up
to 15 minutes, what the timeline shows at its widest default zoom; shorter on a dense recording,
so that a seek feeds about 15,000 events, never under 10 s), which is what a seek costs; a probe
not attempted within the window is fed its last chunk before it (a keyframe: every record
carries the probe's state). A rebuild feeds pod after pod (`rebuild`: a pod's state depends only
on the order of its own events), not 15,000 probes merged by time; a probe that did one thing
all through is not read at all: the store is given its state and fills its entries from the
recording when something reads them (`ReplayStore.defer_entries`), or the player's task does
after the repaint. Moving forward reads on one stream (`Stream`, begun where the cursor stands
when first asked): each chunk is decoded once.

The state at a moment is what had been *published* by then, as the live store had it: an
attempt counts from when it ended (it is stamped with when it began), so one still in flight
at the cursor is not shown yet, and a result change comes with the attempt that caused it.
Cutting by the stamps instead would make the state depend on how the cursor got there.

Playing advances the cursor at 1x, 10x or 100x wall time on the player's own asyncio task,
a tick's feeding cut into slices with the loop served between them (a key waits one slice);
where feeding cannot keep up (15,000 probes at 100x), it plays slower and says how fast.
Nothing is probed, paused or run: `probe_now` and `set_paused` do nothing and say why.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from probetui import memory
from probetui.keys import ProbeKey
from probetui.prober.prober import MAX_PROBE_RETRIES
from probetui.record.reader import Recording
from probetui.record.schema import Damaged, SessionMeta
from probetui.replay.feed import Rebuilt, Stream, fill, just_after, keyframes, probing, rebuild
from probetui.replay.store import ReplayStore
from probetui.runtime.base import NodeKubelet, Runtime, RuntimeHost
from probetui.spec.model import Container, Pod, ProbeType
from probetui.timeline.events import EventType

# seconds of history fed in before the cursor on a seek: at most WINDOW, and no more than
# about SEEK_EVENTS attempts' worth at the recording's density (a seek feeds every event of
# the window, so the window bounds what a seek costs), but never under MIN_WINDOW; a probe
# not attempted within the window is keyframed (`Player._keyframes`). The timeline reads what
# is older from the recording
WINDOW = 900.0
SEEK_EVENTS = 15_000
MIN_WINDOW = 10.0
# a forward move up to this far (and within the seek window) feeds the events in between;
# farther is a seek
FEED_LIMIT = 600.0
TICK = 0.1  # seconds between cursor steps while playing
# while playing, what a wake must feed is cut into slices, the loop served between them, so a
# key waits one slice, not a tick's feeding (guarded by benchmarks/replay_keys.py); a slice
# covers at most this many events' worth of recorded time
SLICE_EVENTS = 1500
# within that, a slice is sized to feed in about this much wall time, and never covers less
# than MIN_SLICE recorded seconds
SLICE_WALL = 0.005
MIN_SLICE = 0.01
# deferred histories filled per wake of the player's task while idle, so a wake stays short
# (up to 500 are read by their ids, more by reading every chunk of the window)
FILL_BATCH = 500
# and not before this long after the seek: its repaint comes first
FILL_DELAY = 0.3
# where playing is behind, feeding takes at most this share of the event loop; the rest is the
# screen's (keys, frames, polls), with at least MIN_GAP between two slices
FEED_SHARE = 0.5
MIN_GAP = 0.002
# a wake moves the cursor by at most this much wall time at the speed: where feeding cannot
# keep up, playing goes slower (the top bar says how fast) instead of falling ever behind
MAX_TICK = 2 * TICK
SPEEDS = (1.0, 10.0, 100.0)
# what counts as a moment worth jumping to
NOTABLE = (
    EventType.RESULT_CHANGED,
    EventType.KILLING,
    EventType.BACK_OFF,
    EventType.DIVERGENCE,
)
NOTHING_RUNS = "this is a recording: nothing is probed or paused in a replay"
# where damage is found, the cursor stays this much before it; and a seek that finds damage
# before the place it held the cursor to tries again before that, at most this often
DAMAGE_MARGIN = 1e-3
DAMAGE_TRIES = 4
# what the threshold pane says where a live one says when the next attempt is
NOT_RUN = "replayed"
# the same, where the cursor is between two sessions: no recorder ran, so nothing is known
# after what was last seen
NOT_RECORDED = "not recorded here"


class ReplayRuntime(Runtime):
    """Answers what the screen asks of a runtime from the recording's first session."""

    def __init__(
        self,
        path: str,
        session: SessionMeta | None,
        gap: Callable[[], tuple[float, float] | None],
    ) -> None:
        self.source = f"replay {path}" + (f"  ({session.source})" if session else "")
        self.via = session.via or "" if session else ""
        self.observes_kubelet = session is not None and session.runtime == "kubernetes"
        if session is not None:
            self.configured_kubelet = session.kube_version
        self._gap = gap

    async def run(self, host: RuntimeHost) -> None:  # pragma: no cover - never run
        raise RuntimeError("a replay has no runtime to run")

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        return NOT_RECORDED if self._gap() is not None else NOT_RUN

    def node_kubelet(self, pod: Pod) -> NodeKubelet:
        # the session's configured release is recorded, the nodes' own are not
        if not self.observes_kubelet:
            return NodeKubelet()
        return NodeKubelet(unknown="the recording keeps no node's version")


class Player:
    """Holds the cursor over a recording, and the store it keeps at the cursor's state."""

    def __init__(
        self,
        recording: Recording,
        store: ReplayStore | None = None,
        *,
        start: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.recording = recording
        self.store = store if store is not None else ReplayStore()
        span = recording.span()
        self.first, self.last = span if span is not None else (0.0, 0.0)
        self.gaps = recording.gaps()
        # how the top bar words a time (the screen's zone); None: a gap is not given its ends
        self.clock_words: Callable[[float], str] | None = None
        self.runtime = ReplayRuntime(str(recording.path), recording.meta.first, self.gap)
        self._clock = clock
        self.playing = False
        self.speed = SPEEDS[0]
        self.cursor = self.first
        self._fed = self.first  # what was published up to here is in the store
        # where the recording is damaged (the earliest found): the cursor stays before it
        self.damage: Damaged | None = None
        # as in a feed: every spec decoded, and kept
        with memory.no_collection_during_bulk_load():
            try:
                self.lookback, rate = probing(recording)
            except Damaged as e:
                self._damaged(e)
                self.lookback, rate = MAX_PROBE_RETRIES * 10.0 + 1.0, 0.0
        self.window = max(MIN_WINDOW, min(WINDOW, SEEK_EVENTS / rate)) if rate else WINDOW
        self._stream: Stream | None = None
        self._keys: list[ProbeKey] | None = None
        # the last rebuild, whose deferred histories `_fill` feeds
        self._rebuilt: Rebuilt | None = None
        self._fill_from = 0.0  # the player's clock from which its task fills them
        # the gaps whose pods in force the player's task has yet to decode (`warm`)
        self._cold = [a for a, _ in self.gaps]
        self.store.loader = self._fill
        # recorded seconds per slice of playing
        self.slice = min(self.window, max(TICK, SLICE_EVENTS / rate)) if rate else self.window
        self._span = self.slice  # the next slice's, fitted to how fast slices feed (`_fit`)
        self.reached: float | None = None  # the speed playing reached lately (x wall time)
        self.seek(self.last if start is None else start)

    # -- the cursor -----------------------------------------------------------------------

    def now(self) -> float:
        return self.cursor

    def seek(self, t: float) -> None:
        """Move the cursor to `t` (held within the recording, and before where it is damaged:
        damage found on the way holds the cursor before it, and the top bar says where)."""
        for _ in range(DAMAGE_TRIES):
            try:
                self._seek(t)
                return
            except Damaged as e:
                self._damaged(e)
                self._stream = None  # what it read ends at the damage: a rebuild reads anew
        # damaged wherever it is read: nothing is shown
        self.store.swap_in(self.store.fresh_for_seek())
        self.cursor = self._fed = self.first

    def _damaged(self, e: Damaged) -> None:
        """Keep the earliest damage found, and the cursor's range before it."""
        if self.damage is None or e.sooner(self.damage):
            self.damage = e
        t = e.t if e.t is not None else self.first
        self.last = max(self.first, min(self.last, t - DAMAGE_MARGIN))
        self.playing = self.playing and self.cursor < self.last

    def _seek(self, t: float) -> None:
        t = min(max(t, self.first), self.last)
        # a move forward within the seek window feeds what is in between; farther, a rebuild
        # from the window before `t` feeds less and comes to the same state
        limit = min(FEED_LIMIT, self.window)
        # the whole move: the keyframes after a rebuild set off full collections
        with memory.no_collection_during_bulk_load() as collecting:
            if self._stream is not None and self._fed <= t <= self._fed + limit:
                if t > self._fed:
                    # what comes after a deferred history's entries needs them before it,
                    # and the stream's first step the rest of what the rebuild read
                    self.store.fill_deferred()
                    # what was published in between, on top of what the store holds
                    self._stream.feed(self.store, self._fed, t)
            else:
                # the state at `t` built into a fresh store that takes back the screen's
                # store's objects as they are fed, then swapped in: where the pods are the
                # same, the list keeps its layout and sorts again only what lists otherwise now
                fresh = self.store.fresh_for_seek()
                lo = max(self.first, t - self.window) - 1e-6
                try:
                    # probes that did one thing all through what is read are given their
                    # state, and their entries when something reads them
                    steady = self.recording.steady_probes(t, t - self.lookback)
                    rebuilt = rebuild(fresh, self.recording, lo, t, self.lookback, steady)
                    self._rebuilt = rebuilt
                    self._fill_from = self._clock() + FILL_DELAY
                    # playing on reads on from where the rebuild stopped reading
                    self._stream = rebuilt.stream
                    self._keyframes(fresh, lo)
                finally:
                    self.store.swap_in(fresh)
                if collecting:
                    # the store made anew out of the collector's way, as the engine freezes
                    # after a first list, so the screen's relisting right after sets off no
                    # passes that walk all of it; freed by reference counting at the next refill
                    memory.freeze_what_lives()
        self.cursor = self._fed = t

    def gap(self) -> tuple[float, float] | None:
        """The stretch between two sessions the cursor is in (nothing recorded), if any."""
        for a, b in self.gaps:
            if a < self.cursor < b:
                return a, b
        return None

    def step(self, seconds: float) -> None:
        self.seek(self.cursor + seconds)

    def _keyframes(self, store: ReplayStore, lo: float) -> None:
        """A probe not attempted within the seek window (its period is longer than a dense
        recording's window) stands as it did at the window's start: its last chunk before
        it, fed up to there, gives its published result, run and hold, which every record
        carries. One pass over the chunks before the window for all such probes; none where the
        window holds every probe."""
        if self._keys is None:
            self._keys = self.recording.probe_keys()
        missing = [k for k in self._keys if k not in store.probes and k.pod_uid in store.pods]
        keyframes(store, self.recording, missing, lo)

    def _fill(self, keys: list[ProbeKey]) -> None:
        """The store's loader: deferred histories fed what the last rebuild deferred (damage
        found meanwhile: kept, the next move of the cursor holds it before it)."""
        if self._rebuilt is not None:
            try:
                fill(self.store, self.recording, self._rebuilt, keys)
            except Damaged as e:
                self._damaged(e)

    def warm(self) -> bool:
        """Decode the pods as they stood where one gap between sessions begins (its specs and
        statuses, kept by the recording): a seek into the gap then reads them decoded, not
        every pod's status for the first time. The player's task
        does one gap a wake while idle; whether any are left."""
        if self._cold:
            at = just_after(self._cold.pop())
            try:
                for _ in self.recording.snapshots(at, at):
                    break
            except Damaged as e:
                self._damaged(e)
        return bool(self._cold)

    def fill_some(self, n: int = FILL_BATCH) -> bool:
        """Fill up to `n` deferred histories (the player's task does it while idle, so that
        playing on from a seek finds them filled); whether any are left."""
        left = self.store.deferred_keys(n)
        if left:
            self.store.fill_deferred(left)
        if self.damage is not None and self.cursor > self.last:
            self.seek(self.last)  # a fill found damage before the cursor
        return self.store.deferred() > 0

    def notable(self, direction: int) -> float | None:
        """The time of the next (1) or previous (-1) notable moment from the cursor: an event
        of `NOTABLE`, or either end of a gap between sessions (a night without a recorder
        would otherwise be crossed only by playing through it)."""
        found = self._notable_event(direction)
        ends = [t for gap in self.gaps for t in gap]
        if direction > 0:
            ends = [t for t in ends if t >= just_after(self.cursor)]
            return min([*ends, found] if found is not None else ends, default=None)
        ends = [t for t in ends if t < self.cursor - 1e-6]
        return max([*ends, found] if found is not None else ends, default=None)

    def _notable_event(self, direction: int) -> float | None:
        try:
            found = self._notable_in(direction)
        except Damaged as e:
            self._damaged(e)
            return None
        return found if found is None or found <= self.last else None

    def _notable_in(self, direction: int) -> float | None:
        if direction > 0:
            for e in self.recording.events(since=just_after(self.cursor), types=NOTABLE):
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
        self.reached = None

    def status(self) -> str:
        """For the top bar: REPLAY, playing or paused, the speed, the speed reached where
        feeding cannot keep up with it, and whether the cursor is where nothing was recorded."""
        gap = ""
        if (span := self.gap()) is not None:
            words = self.clock_words
            gap = " · not recorded " + (
                f"{words(span[0])}-{words(span[1])}" if words is not None else "here"
            )
        damage = self.damage
        if damage is not None:
            words = self.clock_words
            at = "" if damage.t is None or words is None else f" from {words(damage.t)}"
            gap += f" · damaged recording{at} ({damage.where})"
        if not self.playing:
            return "REPLAY ‖" + gap
        slow = self.reached is not None and self.reached < 0.8 * self.speed
        return f"REPLAY ▶ {self.speed:g}x" + (f" (at {self.reached:.0f}x)" if slow else "") + gap

    async def run(self) -> None:
        """Advance the cursor while playing, a slice at a time; stop at the recording's end.

        Each wake feeds one slice towards where the speed has taken the cursor since the last
        wake (at most `MAX_TICK` of wall time: where feeding cannot keep up it plays slower
        rather than falling ever behind). Where it is behind, the next slice follows after a
        pause that leaves the screen `1 - FEED_SHARE` of the loop: a key's way to its repaint
        is several hops through Textual's queues, a frame and a poll, and a bare yield between
        slices would give it one hop a slice. A slice is sized to
        take about `SLICE_WALL` (its recorded length follows how fast the last ones fed,
        within `slice`), so that is what a key waits for."""
        last = self._clock()
        pause = TICK
        while True:
            await asyncio.sleep(pause)
            now = self._clock()
            pause = TICK
            if self.store.deferred() and (self.playing or now >= self._fill_from):
                # a seek's deferred histories, a batch a wake with the loop served between;
                # playing begins once they are filled, so a key waits a batch, not all of them
                if self.fill_some():
                    pause = MIN_GAP
                # what the batch made lives on in the store: out of the collector's way, as
                # what a slice of playing leaves (young passes walked it inside frames)
                memory.freeze_what_lives()
                last = now
                continue
            if self._cold and not self.playing and now >= self._fill_from:
                self.warm()
            if self.playing:
                began = self.cursor
                target = min(self.last, began + min(now - last, MAX_TICK) * self.speed)
                if target > began:
                    at = min(target, began + min(self._span, self.slice))
                    fed = time.perf_counter()
                    self.seek(at)
                    # what the slice read ahead and stored is alive for a while: young, the
                    # collector would walk it at each pass, inside a frame as often as not.
                    # Frozen, it is freed by reference counting as it is fed;
                    # the GC pacer's full passes unfreeze and collect (`memory.GcPacer`)
                    memory.freeze_what_lives()
                    took = time.perf_counter() - fed
                    self._fit(at - began, took)
                    if self.cursor < target:
                        pause = max(MIN_GAP, took * (1.0 - FEED_SHARE) / FEED_SHARE)
                if self.cursor >= self.last:
                    self.playing = False
                done = self._clock()
                if done > last and self.cursor >= began:
                    rate = (self.cursor - began) / (done - last)
                    self.reached = rate if self.reached is None else 0.8 * self.reached + 0.2 * rate
            last = now

    def _fit(self, span: float, took: float) -> None:
        """The next slice's recorded length: what takes `SLICE_WALL` at the last one's pace."""
        if span <= 0.0 or took <= 0.0:
            return
        wanted = span * SLICE_WALL / took
        self._span = min(self.slice, max(MIN_SLICE, 0.5 * (self._span + wanted)))

    # -- Controls: nothing runs in a replay -----------------------------------------------

    def probe_now(self, key: ProbeKey) -> bool:
        return False

    def probe_container(self, pod_uid: str, container: str) -> int:
        return 0

    def set_paused(self, key: ProbeKey, paused: bool) -> bool:
        return False

    def lateness(self) -> float:
        return 0.0


__all__ = [
    "NOTABLE",
    "NOTHING_RUNS",
    "SPEEDS",
    "Player",
    "ReplayRuntime",
]
