"""Compute container restart back-off (CrashLoopBackOff) as the kubelet does, with time passed in.

Two upstream pieces are modelled here:

- `Backoff` is client-go's `util/flowcontrol.Backoff`: one entry per key holding the current
  window and the time the window was last moved. `next` doubles the window up to the maximum,
  or starts it again at the initial value when the key is new or its entry has expired. Every
  method takes the current time as an argument instead of reading a clock.
- `do_back_off` is kuberuntime's `doBackOff` for one container: asked just before the kubelet
  starts a container, it says whether the start must wait.

Numbers (`pkg/kubelet/kubelet.go`, `newCrashLoopBackOff`, v1.35 defaults):

- The window starts at 10 s, doubles on each restart and stops at 300 s: 10, 20, 40, 80, 160,
  300, 300, ... The kubelet builds the back-off with `NewBackOff`, so there is no jitter.
- ReduceDefaultCrashLoopBackOffDecay (alpha since 1.33, off by default in 1.35) would make it
  1 s up to 60 s. KubeletCrashLoopBackOffMax (beta and on by default since 1.35) takes the
  maximum from the kubelet config `crashLoopBackOff.maxContainerRestartPeriod`. That field
  defaults to 300 s, so the default curve does not change. When the configured maximum is
  below the initial value, the initial value is lowered to it. `crash_loop_backoff` builds
  either variant.
- client-go forgets an entry once `eventTime - lastUpdate` exceeds twice the maximum. The
  kubelet replaces that rule with a fixed 600 s (its `HasExpiredFunc`), whatever the maximum
  is. Both rules give 600 s at the default maximum.

Which exited instance the window is measured from. `doBackOff` walks the runtime's statuses
for the pod, newest created first, and takes the first instance of the container that has
exited. The check is "now - that instance's FinishedAt < current window", and it is strict.
When the check fails, the start goes ahead and `next(key, FinishedAt)` moves the window.
`lastUpdate` becomes the time of that sync, which is roughly the restart time. So the 600 s
reset compares the next exit with the previous restart: the window starts again only after a
container ran for more than ten minutes. When no exited instance exists, which is the case on
the very first start and often after the first crash, `doBackOff` returns at once. It does not
call `next`, so the first restart after a first crash is immediate (kubernetes#133472,
open). Only the following crash finds a 10 s window.

A kill and a restart in the same pod sync. `computePodActions` reads one pod-status snapshot,
taken before anything is done. A liveness or startup kill then puts the container both in
ContainersToKill and in ContainersToStart. SyncPod stops the container, which blocks up to the
grace period, and then starts the new one in the same sync. `doBackOff` still sees the snapshot,
in which the killed instance is Running. It therefore skips that instance and measures from the
previous exited instance, if the runtime still keeps one. That instance usually finished long
ago, so the start is not delayed and `next` is called with the old FinishedAt. The killed
instance's FinishedAt then plays no part: the next check comes after the new container exits
and measures from that container's own FinishedAt. Only when the start was delayed (the previous
window was still open) does the next sync find the killed instance as the newest exited one and
measure from its FinishedAt. That next sync is the one PLEG's ContainerDied for the killed
instance causes, right after the kill's sync: it records a second BackOff event and its requeue
(at that FinishedAt + window) replaces the first sync's, since the pod work queue holds one
time per pod. It also asks again whether the container restarts at all, with the exit code
the kill left (`ShouldContainerBeRestarted`): OnFailure and an exit 0 end it there.
Housekeeping calls `gc` every 2 s (`HandlePodCleanups`). It drops any entry whose last
`next` is more than 600 s old, so a kill of a container that ran for a long time starts again
from 10 s.

Retrying when the window ends (kubernetes#133066, present at v1.35; kubernetes#123602).
`doBackOff` now returns a `BackoffError` (`pkg/kubelet/container/sync_result.go`)
carrying FinishedAt + window. The pod worker's `completeWork` finds the earliest such time with
`MinBackoffExpiration`. It requeues the pod for that moment, clamped to [0, resync interval] and
stretched by up to 50 % (`wait.Jitter(d, 0.5)`). Before this change a failed sync was retried
after the generic 10 s error back-off (10-15 s with jitter), which added up to 10 s to every
CrashLoopBackOff wait. `BackOffCheck.retry_at` is the expiry the error carries.

Where real timing also depends on the kubelet's loops (`pkg/kubelet/kubelet.go`,
`pod_workers.go`):

- PLEG relists the runtime every 1 s (`genericPlegRelistPeriod`), so an exit is seen up to about
  1 s late, and FinishedAt comes from the runtime, not from when the kubelet saw the exit.
- The sync loop drains the pod work queue on a 1 s ticker. The periodic resync is
  `syncFrequency`, default 1 min, stretched by up to 50 % (60-90 s).
- A sync that fails for another reason is retried after `backOffPeriod` 10 s (10-15 s with
  jitter). A transient network-not-ready error is retried after 1 s.
- A liveness or startup Failure triggers a pod sync at once (`handleProbeSync`), so the kill
  follows the published result after only the pod worker's queueing delay.
- Stopping the container takes up to the kill's grace period (`kuberuntime.kill_grace_period`)
  before the new container can start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from probetui.spec.model import Container, Pod

# pkg/kubelet/kubelet.go and kubelet config v1beta1 defaults
INITIAL_CRASH_LOOP_BACK_OFF = 10.0
MAX_CRASH_LOOP_BACK_OFF = 300.0
REDUCED_INITIAL_CRASH_LOOP_BACK_OFF = 1.0
REDUCED_MAX_CRASH_LOOP_BACK_OFF = 60.0
# the kubelet's HasExpiredFunc: a fixed 10 minutes, independent of the maximum
CRASH_LOOP_RESET_AFTER = 600.0
# how often HandlePodCleanups runs, and with it Backoff.GC
HOUSEKEEPING_PERIOD = 2.0
# kubelet sync loop timings, for callers that model them (see the module docstring)
PLEG_RELIST_PERIOD = 1.0
POD_WORKER_ERROR_BACK_OFF = 10.0


@dataclass(slots=True)
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    """Mirrors client-go `flowcontrol.Backoff`, keyed by string, with every time passed in.

    `expire_after` replaces client-go's default expiry of `2 * max` seconds (the kubelet's
    `HasExpiredFunc`). `jitter_factor` and `random` reproduce `NewBackOffWithJitter`. The
    kubelet passes no jitter, and without a `random` source no jitter is added.
    """

    __slots__ = ("_entries", "expire_after", "initial", "jitter_factor", "max", "random")

    def __init__(
        self,
        initial: float = INITIAL_CRASH_LOOP_BACK_OFF,
        max: float = MAX_CRASH_LOOP_BACK_OFF,  # upstream's name
        *,
        expire_after: float | None = None,
        jitter_factor: float = 0.0,
        random: Callable[[], float] | None = None,
    ) -> None:
        self.initial = initial
        self.max = max
        self.expire_after = 2 * max if expire_after is None else expire_after
        self.jitter_factor = jitter_factor
        self.random = random
        self._entries: dict[str, _Entry] = {}

    def _has_expired(self, event_time: float, last_update: float) -> bool:
        # strictly greater: an exit exactly at the limit still doubles
        return event_time - last_update > self.expire_after

    def _jitter(self, delay: float) -> float:
        if self.random is None or self.jitter_factor <= 0:
            return 0.0
        return self.random() * self.jitter_factor * delay

    def get(self, key: str) -> float:
        """Return the current window in seconds, 0.0 for an unknown key."""
        entry = self._entries.get(key)
        return entry.backoff if entry is not None else 0.0

    def last_update(self, key: str) -> float | None:
        entry = self._entries.get(key)
        return entry.last_update if entry is not None else None

    def next(self, key: str, event_time: float, now: float) -> float:
        """Move the window for `key` and return it.

        A new or expired key starts at `initial`; the initial value is not capped by `max`,
        as upstream. Otherwise the window doubles and is capped at `max`. `now` becomes the
        entry's last update; upstream reads it from the Backoff's clock.
        """
        entry = self._entries.get(key)
        if entry is None or self._has_expired(event_time, entry.last_update):
            entry = _Entry(self.initial, now)
            entry.backoff += self._jitter(entry.backoff)
            self._entries[key] = entry
        else:
            delay = entry.backoff * 2 + self._jitter(entry.backoff)
            entry.backoff = min(delay, self.max)
        entry.last_update = now
        return entry.backoff

    def is_in_backoff_since(self, key: str, event_time: float, now: float) -> bool:
        """True while `now - event_time` is shorter than the window (strict, as upstream)."""
        entry = self._entries.get(key)
        if entry is None:
            return False
        if self._has_expired(event_time, entry.last_update):
            return False
        return now - event_time < entry.backoff

    def is_in_backoff_since_update(self, key: str, event_time: float) -> bool:
        """client-go `IsInBackOffSinceUpdate`: measured from the last `next`, not an exit."""
        entry = self._entries.get(key)
        if entry is None:
            return False
        if self._has_expired(event_time, entry.last_update):
            return False
        return event_time - entry.last_update < entry.backoff

    def reset(self, key: str) -> None:
        self._entries.pop(key, None)

    def gc(self, now: float) -> None:
        """Drop entries whose last `next` is older than the expiry (kubelet housekeeping)."""
        for key in [k for k, e in self._entries.items() if self._has_expired(now, e.last_update)]:
            del self._entries[key]

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


def crash_loop_backoff(
    *,
    reduce_default_decay: bool = False,
    max_container_restart_period: float | None = None,
) -> Backoff:
    """Return the kubelet's container back-off (`newCrashLoopBackOff` plus its `HasExpiredFunc`).

    `reduce_default_decay` is the ReduceDefaultCrashLoopBackOffDecay gate (off by default).
    `max_container_restart_period` is `crashLoopBackOff.maxContainerRestartPeriod` under
    KubeletCrashLoopBackOffMax (on by default since 1.35, config default 300 s). None leaves
    the maximum at the gate's default.
    """
    initial, maximum = INITIAL_CRASH_LOOP_BACK_OFF, MAX_CRASH_LOOP_BACK_OFF
    if reduce_default_decay:
        initial, maximum = REDUCED_INITIAL_CRASH_LOOP_BACK_OFF, REDUCED_MAX_CRASH_LOOP_BACK_OFF
    if max_container_restart_period is not None:
        maximum = max_container_restart_period
        initial = min(initial, maximum)
    return Backoff(initial, maximum, expire_after=CRASH_LOOP_RESET_AFTER)


def backoff_key(pod: Pod, container: Container) -> str:
    """Return a stable per-container key, like kuberuntime's `getStableKey`.

    Upstream also hashes the image and the resources, so changing either starts a fresh
    window. The model has no resources, so only the image is part of the key.
    """
    return f"{pod.name}_{pod.namespace}_{pod.uid}_{container.name}_{container.image or ''}"


@dataclass(frozen=True, slots=True)
class BackOffCheck:
    """Holds what `doBackOff` decided for one container start.

    `delay` is the window the BackOff event and the CrashLoopBackOff message name. When the
    start goes ahead, it is the window `next` just set, which the next exit will face (0.0 if
    `next` was not called). `retry_at` is FinishedAt + window, the time the pod worker (v1.35)
    requeues the pod for. It is None when the start is not delayed.
    """

    in_backoff: bool
    delay: float
    retry_at: float | None = None


def do_back_off(
    backoff: Backoff, key: str, *, last_exit_finished_at: float | None, now: float
) -> BackOffCheck:
    """kuberuntime `doBackOff` for one container, just before the kubelet would start it.

    `last_exit_finished_at` is the FinishedAt of the newest exited instance of this container
    in the sync's pod-status snapshot, or None if there is none (see the module docstring for
    why a kill and restart in one sync look at the instance before the killed one). When the
    start is allowed, this calls `backoff.next` as upstream does. Call `backoff.gc(now)` from a
    housekeeping tick (every `HOUSEKEEPING_PERIOD` s) to match the kubelet.
    """
    if last_exit_finished_at is None:
        return BackOffCheck(in_backoff=False, delay=backoff.get(key))
    if backoff.is_in_backoff_since(key, last_exit_finished_at, now):
        delay = backoff.get(key)
        return BackOffCheck(in_backoff=True, delay=delay, retry_at=last_exit_finished_at + delay)
    delay = backoff.next(key, last_exit_finished_at, now)
    return BackOffCheck(in_backoff=False, delay=delay)
