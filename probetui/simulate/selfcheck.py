"""Check the counterfactual's model: with the settings recorded, does it do what the kubelet did?

Only what the model could have seen is compared, and what is left out is counted.

Each side (the recording, the model's run) is a list of container instances in the window,
each with its start and end, and the times of its kills, restarts and Ready changes. A
recorded event and a modelled one are the same when they are within the tolerance (a probe
period and some) either in wall time, or in time since the start of the same instance (the
k-th of each side): the app's answers during a start are read by time since the start
(`recorded.py`), so a start the model makes a little earlier or later than the kubelet shifts
its start-up with it. A restart is the start of instance k, measured from the start of
instance k-1.

Left out, and counted:

- an event within the tolerance of the window's end: its counterpart may fall just past it;
- an event the other side ends too early to show: its instance there is still running when
  the window ends, younger than the event's age (or not started yet: a back-off that ran past
  the end);
- the kill of an instance already running when the window opened whose run of failures began
  before the window's first attempt of that probe (the kubelet counted failures the recording
  does not hold), with the model's kill of its own first instance for that run;
- a restart whose back-off the recording cannot settle: one measured from an exit before the
  window, or one at the edge of a back-off window on either side (`TIE`), where which side of
  the edge the kubelet saw depends on when it noticed the exit.

Nothing else is forgiven: a kill, restart or Ready change in the middle of the window that the
other side does not have, or has at another time, still fails the check.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from probetui.kubelet import backoff as bo

# a recorded event and the model's are the same one when this close, beyond one probe period
MATCH_SLACK = 2.0
# the share of recorded Ready changes the model must reproduce (flaps near a threshold edge
# can split one way or the other by a tick)
READY_MATCH = 0.9
# a restart's back-off decision this close to a window's edge goes either way: the kubelet
# sees an exit up to a PLEG relist late and syncs on a 1 s ticker, so the recording cannot say
# which side of the edge it stood on
TIE = bo.PLEG_RELIST_PERIOD + 1.0


def backoff_windows() -> list[float]:
    """Return the crash-loop windows of the kubelet's default back-off: 10, 20, 40, ... 300 s."""
    out, w = [], bo.INITIAL_CRASH_LOOP_BACK_OFF
    while w < bo.MAX_CRASH_LOOP_BACK_OFF:
        out.append(w)
        w *= 2
    out.append(bo.MAX_CRASH_LOOP_BACK_OFF)
    return out


_WINDOWS = backoff_windows()


@dataclass(slots=True)
class Lives:
    """Holds one side's container instances in the window, in order (ends at the window's end for
    one still running); `carried`: the first began before the window."""

    starts: list[float] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    carried: bool = False
    # the first instance's restart count: above 0, exits before the window set its back-off
    restarted_before: bool = False

    def __bool__(self) -> bool:
        return bool(self.starts)

    def where(self, t: float) -> int:
        """Return the instance running at t (the newest started by then), -1 before the first."""
        return bisect.bisect_right(self.starts, t) - 1

    def age(self, k: int, t: float) -> float | None:
        """Seconds from instance k's start to t; None where its start is not the model's to
        match (the instance carried into the window) or there is no such instance."""
        if k < 0 or k >= len(self.starts) or (k == 0 and self.carried):
            return None
        return t - self.starts[k]

    def cannot_show(self, k: int, age: float | None, tolerance: float, until: float) -> bool:
        """Tell whether this side's window ends before it could show an event `age` into its
        instance k: that instance still running at the end and younger than that, or not
        started by the end while the one before it ran to the end or stopped within a
        back-off window of it."""
        if not self.starts or k < 0:
            return False
        if k >= len(self.starts):
            last = self.ends[-1]
            return last >= until or until - last < bo.MAX_CRASH_LOOP_BACK_OFF + tolerance
        if age is None or self.ends[k] < until:
            return False  # it ended on its own before the end: it would have shown it
        return until - self.starts[k] < age + tolerance

    def tied(self, k: int) -> bool:
        """Tell whether the back-off decision for instance k's start is at a window's edge, or
        rests on exits before the window (which the recording cannot say)."""
        if k < 1 or k >= len(self.starts):
            return False
        if k == 1:
            return self.carried and self.restarted_before
        span = self.ends[k - 1] - self.ends[k - 2]
        return any(abs(span - w) <= TIE for w in _WINDOWS)


@dataclass(slots=True)
class Compared:
    """Holds one kind of event compared: pairs, counts and what was left out."""

    matched: int = 0
    recorded: int = 0
    modelled: int = 0
    left_out: int = 0
    tied: int = 0  # restarts paired at a back-off edge
    worst: float = 0.0

    @property
    def fits(self) -> bool:
        return self.matched == self.recorded == self.modelled

    def counts(self) -> tuple[int, int, int]:
        return self.matched, self.recorded, self.modelled


def _compare(
    rec_times: Sequence[float],
    mod_times: Sequence[float],
    rec: Lives,
    mod: Lives,
    tolerance: float,
    until: float | None,
    *,
    lag: int = 0,
    unseen: tuple[set[float], set[float]] = (set(), set()),
    tied: Callable[[int], bool] | None = None,
) -> Compared:
    """Pairs recorded and modelled times greedily in time order (module docstring); `lag` 1
    measures a restart from the instance before it; `unseen` are times left out beforehand;
    `tied(k)` pairs restarts of instance k whatever their times."""
    out = Compared()
    end = float("inf") if until is None else until

    def place(lives: Lives, t: float) -> tuple[int, float | None]:
        k = lives.where(t) - lag
        if lag:
            # a restart is measured from the exit before it: its back-off's own clock
            return k, (t - lives.ends[k] if 0 <= k < len(lives.ends) else None)
        return k, lives.age(k, t)

    rec_at = [place(rec, t) for t in rec_times]
    mod_at = [place(mod, t) for t in mod_times]
    used = [False] * len(mod_times)
    paired = [False] * len(rec_times)
    for j, t in enumerate(rec_times):
        if t in unseen[0]:
            continue
        k, age = rec_at[j]
        best, best_d, best_tie = -1, tolerance, False
        for i, m in enumerate(mod_times):
            if used[i] or m in unseen[1]:
                continue
            mk, mage = mod_at[i]
            d = abs(m - t)
            if mk == k and age is not None and mage is not None:
                d = min(d, abs(mage - age))
            if d <= best_d:
                best, best_d, best_tie = i, d, False
            elif best < 0 and tied is not None and mk == k and tied(k + lag):
                best, best_tie = i, True
        if best >= 0:
            used[best] = paired[j] = True
            out.matched += 1
            if best_tie:
                out.tied += 1
            else:
                out.worst = max(out.worst, best_d)

    def counted(
        times: Sequence[float],
        at: list[tuple[int, float | None]],
        done: list[bool],
        other: Lives,
        gone: set[float],
    ) -> int:
        n = 0
        for t, (k, age), d in zip(times, at, done, strict=True):
            # a restart (lag 1) is shown where the other side started that instance at all
            unshown = (
                other.cannot_show(k + 1, None, tolerance, end)
                if lag
                else other.cannot_show(k, age, tolerance, end)
            )
            if not d and (t in gone or t > end - tolerance or unshown):
                out.left_out += 1
            else:
                n += 1
        return n

    out.recorded = counted(rec_times, rec_at, paired, mod, unseen[0])
    out.modelled = counted(mod_times, mod_at, used, rec, unseen[1])
    return out


@dataclass(slots=True)
class SelfCheck:
    kills: tuple[int, int, int]  # (matched, recorded, modelled)
    restarts: tuple[int, int, int]
    ready: tuple[int, int, int]
    worst_offset: float  # seconds between a recorded event and the model's, at most
    passed: bool
    why: str = ""
    # left out as the model could not have seen them (module docstring)
    left_out: tuple[int, int, int] = (0, 0, 0)  # kills, restarts, Ready changes
    tied_restarts: int = 0  # restarts paired at a back-off window's edge

    def to_json(self) -> dict[str, Any]:
        return {
            "kills": dict(zip(("matched", "recorded", "modelled"), self.kills, strict=True)),
            "restarts": dict(zip(("matched", "recorded", "modelled"), self.restarts, strict=True)),
            "ready_changes": dict(
                zip(("matched", "recorded", "modelled"), self.ready, strict=True)
            ),
            "worst_offset_seconds": round(self.worst_offset, 3),
            "passed": self.passed,
            "why": self.why,
            "left_out": dict(
                zip(("kills", "restarts", "ready_changes"), self.left_out, strict=True)
            ),
            "restarts_at_backoff_edge": self.tied_restarts,
        }

    def left_out_words(self) -> str:
        """'left out 1 kill and 2 Ready changes the model could not have seen', or ''."""
        parts = []
        for n, noun in zip(self.left_out, ("kill", "restart", "Ready change"), strict=True):
            if n:
                parts.append(f"{n} {noun}{'s' if n != 1 else ''}")
        if not parts:
            return ""
        listed = ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
        return f"left out {listed} near the window's ends the model could not have seen"


def self_check(
    recorded: Any, model: Any, tolerance: float, until: float | None = None
) -> SelfCheck:
    """Return the model's run with the recorded settings against the recording (module docstring).
    `recorded` and `model` are `counterfactual.RunSummary`s."""
    rec: Lives = getattr(recorded, "lives", None) or Lives()
    mod: Lives = getattr(model, "lives", None) or Lives()
    unseen = (
        set(getattr(recorded, "unseen_kills", ())),
        set(getattr(model, "unseen_kills", ())),
    )
    kills = _compare(
        recorded.kill_times, model.kill_times, rec, mod, tolerance, until, unseen=unseen
    )

    def tied(k: int) -> bool:
        return rec.tied(k) or mod.tied(k)

    restarts = _compare(
        recorded.restart_times,
        model.restart_times,
        rec,
        mod,
        tolerance + MATCH_SLACK,
        until,
        lag=1,
        tied=tied if rec and mod else None,
    )
    rec_ready = [t for t, _ in recorded.ready_changes]
    mod_ready = [t for t, _ in model.ready_changes]

    def near(times: list[float], kills: set[float]) -> set[float]:
        # the Ready loss an unseen kill brings is no more the model's to see than the kill
        return {t for t in times if any(abs(t - k) <= tolerance for k in kills)}

    ready = _compare(
        rec_ready,
        mod_ready,
        rec,
        mod,
        tolerance,
        until,
        unseen=(near(rec_ready, unseen[0]), near(mod_ready, unseen[1])),
    )
    why = ""
    if not kills.fits:
        why = (
            f"the model kills {kills.modelled} times where the kubelet killed {kills.recorded} "
            f"({kills.matched} match)"
        )
    elif not restarts.fits:
        why = (
            f"the model restarts {restarts.modelled} times where the container restarted "
            f"{restarts.recorded} ({restarts.matched} match)"
        )
    elif ready.recorded and (
        ready.matched < READY_MATCH * ready.recorded or ready.matched < READY_MATCH * ready.modelled
    ):
        why = (
            f"the model changes Ready {ready.modelled} times where the kubelet did "
            f"{ready.recorded} ({ready.matched} match)"
        )
    return SelfCheck(
        kills.counts(),
        restarts.counts(),
        ready.counts(),
        max(kills.worst, restarts.worst, ready.worst),
        not why,
        why,
        (kills.left_out, restarts.left_out, ready.left_out),
        restarts.tied,
    )


__all__ = ["MATCH_SLACK", "READY_MATCH", "TIE", "Lives", "SelfCheck", "self_check"]
