"""Prove an evidence rule's proposed setting on the kubelet's model before it is shown.

A rule hands over its proposal and the next ones to try (a longer timeout, a higher
threshold, in order), and what its problem is in a run (`Problem`: a probe's kills, seconds not
ready, Ready losses). `prove` replays each over the history of the pod that shows the problem
most: the counterfactual (`Observed.what_if`: the recorded answers through the kubelet's model,
the stretch up to a minute past the problem), or, where its self-check refuses that history,
the coarser model over the probe's recent attempts (`live.model_what_if`). The first candidate
whose run no longer has the problem is proposed. Where none ends it, the one that makes it
least is proposed if it makes it less, with words saying it does not end it; where none makes
it less, nothing is proposed and the finding says that no such setting fixes it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from probetui.lint.observed import Observed, PodHistory, Replays, Seen
from probetui.simulate.counterfactual import Counterfactual, RunSummary
from probetui.spec.model import ProbeType


class Problem(Enum):
    KILLS = "kills"
    NOT_READY = "seconds not ready"
    LOSSES = "Ready losses"


@dataclass(frozen=True, slots=True)
class Proven:
    """Holds the outcome: the setting to propose (empty where none helps) and the words saying how
    it fares (appended to the finding's message: "; counterfactual ...")."""

    overrides: tuple[str, ...]
    words: str
    ends: bool


def _measure(problem: Problem, probe: ProbeType, side: object) -> float:
    """Return the problem in one run: a counterfactual's `RunSummary` or the fallback's
    `ModelSide`."""
    if problem is Problem.KILLS:
        kills = getattr(side, "kills", 0)
        return float(kills.get(probe.key, 0) if isinstance(kills, dict) else kills)
    if problem is Problem.NOT_READY:
        return float(getattr(side, "not_ready_seconds", 0.0))
    if isinstance(side, RunSummary):
        return float(sum(1 for _, ready in side.ready_changes if not ready))
    return float(getattr(side, "losses", 0))


def _number(value: float, problem: Problem) -> str:
    return f"{value:.0f} s" if problem is Problem.NOT_READY else f"{value:.0f}"


def prove(
    observed: Observed,
    s: Seen | None,
    candidates: Sequence[tuple[str, ...]],
    problem: Problem,
    probe: ProbeType,
    focus: Callable[[Seen], float | None] | None,
    words: Callable[[Counterfactual | str, PodHistory], str],
) -> Proven:
    """Return the first of `candidates` that ends `problem` in the replay of `s`'s history (module
    docstring); `words` says a counterfactual in the finding's terms."""
    from probetui.lint.live import model_what_if

    first = tuple(candidates[0]) if candidates else ()
    if s is None or not candidates:
        return Proven(first, "", False)
    at = focus(s) if focus is not None else None
    container = s.container.name
    tried: list[tuple[tuple[str, ...], float, str]] = []
    refused = ""
    for overrides in candidates:
        cf = observed.what_if(s.history, container, overrides, at)
        if isinstance(cf, Counterfactual) and cf.check.passed and cf.what_if is not None:
            before = _measure(problem, probe, cf.recorded)
            after = _measure(problem, probe, cf.what_if)
            said = (
                words(cf, s.history)
                if observed.replay
                else f"the replay with {', '.join(overrides)}: {problem.value} "
                f"{_number(before, problem)} -> {_number(after, problem)}"
            )
        else:
            refused = refused or words(cf, s.history)
            rec = s.history.rec
            key = ("model", rec.pod, container, rec.since, rec.until, tuple(overrides))
            model = observed.replays.answers.get(key)
            if model is None:
                model = model_what_if(s.history, container, overrides)
                Replays._put(observed.replays.answers, key, model, observed.replays.size)
            assert not isinstance(model, Counterfactual)
            if isinstance(model, str):
                return Proven(first, f"; not proven on the kubelet's model: {model}", False)
            before = _measure(problem, probe, model.before)
            after = _measure(problem, probe, model.after)
            said = (
                f"the kubelet's model over the last {model.seconds / 60:.0f} min of attempts "
                f"with {', '.join(overrides)}: {problem.value} {_number(before, problem)} -> "
                f"{_number(after, problem)}"
            )
        if after <= 0.0:
            return Proven(tuple(overrides), f"; {said}", True)
        tried.append((tuple(overrides), after, said))
        if before <= 0.0:
            break  # the settings now do not have it either: nothing to end here
    best, least, said = min(tried, key=lambda x: x[1])
    last = candidates[len(tried) - 1]
    span = ", ".join(candidates[0])
    if len(tried) > 1:
        span += " to " + ", ".join(item.rpartition("=")[2] for item in last)
    first_before = before
    if least < first_before:
        return Proven(
            best,
            f"; {said}; none of {span} ends the {problem.value}: {', '.join(best)} leaves the "
            "fewest",
            False,
        )
    why = f" ({refused})" if refused else ""
    return Proven(
        (),
        f"; none of {span} changes the {problem.value} in the replay "
        f"({_number(first_before, problem)} -> {_number(least, problem)}){why}: no such "
        "setting fixes it",
        False,
    )


__all__ = ["Problem", "Proven", "prove"]
