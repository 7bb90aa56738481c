"""Judge what a recording or a live session showed of the probes: the evidence rules.

Each rule reads `Observed` (`observed.py`: the same for a recording, `lint --cluster` and the
UI's store) and runs only when there is evidence. Each proposes a setting (`Hit.overrides`, in
`simulate --set` terms) and, where the history holds the shadow's attempts to replay, says what
that setting would have changed through the counterfactual (`simulate/counterfactual.py`): the
recorded kills, restarts and seconds not ready beside the model's with the proposed setting.
The counterfactual runs only after its self-check passed (the model with the recorded settings
reproduces what the kubelet did); otherwise the finding says why there is no what-if.

The thresholds below are the line between a finding and a near miss; the tests pin both sides.
The § items cited are docs/kubelet-behaviour.md's.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from probetui.lint import budget, prove, simulated
from probetui.lint.model import PROBE_FIELD, Evidence, Hit, LintObject, Rule, Severity, Slot
from probetui.lint.observed import ANSWERED, Observed, PodHistory, Seen
from probetui.lint.rules_static import seconds
from probetui.prober.outcome import Kind
from probetui.simulate.counterfactual import Counterfactual
from probetui.spec.model import ProbeType

MIN_ATTEMPTS = 20  # fewer answers than this say nothing about a p99
TIMEOUT_SHARE = 0.01  # 1% of attempts at or past the timeout
HEADROOM = 0.8  # a p99 (or a start) at 80% of its limit leaves too little room
START_MARGIN = 1.5  # the start-up budget proposed, against the slowest start seen
STEPS = 4  # settings a proposal is tried at (it, and the next ones up) before giving up
OUTAGE_SECONDS = 60.0  # failing this long is an outage to report, not a flap to ride out
FLAPS_MIN = 3  # Ready lost at least this often ...
FLAPS_PER_HOUR = 6.0  # ... and at least this often an hour
ERRORS_MIN = 3
ERROR_SHARE = 0.01


def _observed(evidence: Evidence | None) -> Observed | None:
    return evidence if isinstance(evidence, Observed) else None


def _probes(obj: LintObject) -> Iterator[tuple[Slot, ProbeType]]:
    for slot in obj.slots():
        for pt, _probe, _path in slot.probes():
            yield slot, pt


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def _ms(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _pods(seen: list[Seen]) -> str:
    n = len({s.history.rec.pod.uid for s in seen})
    span = max(s.history.seconds for s in seen)
    return f"{n} pod{'s' if n != 1 else ''} over {_span(span)}"


def _span(value: float) -> str:
    if value < 120:
        return f"{value:.0f} s"
    if value < 7200:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


# -- the counterfactual, in one clause -------------------------------------------------------


def _replayable(s: Seen) -> bool:
    return any(inst.answers for inst in s.container.instances)


def what_if_words(
    observed: Observed,
    s: Seen | None,
    overrides: tuple[str, ...],
    focus: Callable[[Seen], float | None] | None = None,
) -> str:
    """'; counterfactual (pod web-1, 5 min) with ...: kills 3 -> 0, restarts 3 -> 0, not ready
    95 s -> 12 s', or why there is none. Empty without a proposed setting. `focus` gives the
    time of the problem in the history: the replay is the stretch up to it (`Observed.what_if`)."""
    if not overrides or not observed.replay:
        return ""
    if s is None:
        return "; no shadow attempts were recorded to replay the proposal against"
    at = focus(s) if focus is not None else None
    cf = observed.what_if(s.history, s.container.name, overrides, at)
    return "; " + counterfactual_words(cf, s.history)


def counterfactual_words(cf: Counterfactual | str, history: PodHistory) -> str:
    span = history.seconds if isinstance(cf, str) else cf.until - cf.since
    where = f"pod {history.pod.name}, {_span(span)}"
    if isinstance(cf, str):
        return f"no counterfactual ({where}): {cf}"
    if not cf.check.passed or cf.what_if is None:
        return f"no counterfactual ({where}): the model does not fit this history ({cf.check.why})"
    r, w = cf.recorded, cf.what_if
    kills_r, kills_w = sum(r.kills.values()), sum(w.kills.values())
    return (
        f"counterfactual ({where}) with {', '.join(cf.overrides)}: kills {kills_r} -> {kills_w}, "
        f"restarts {r.restarts} -> {w.restarts}, not ready {r.not_ready_seconds:.0f} s -> "
        f"{w.not_ready_seconds:.0f} s ({w.inferred_share:.0%} of answers inferred)"
    )


def _proven_words(proven: prove.Proven, s: Seen | None) -> str:
    """Tell how the proposal fared on the model, or why it could not be tried."""
    if s is None:
        return "; not proven: no shadow attempts were recorded to try the proposal against"
    return proven.words


def _last(times: Iterable[float]) -> float | None:
    return max(times, default=None)


def _last_start_trouble(s: Seen) -> float | None:
    """Return the last kill, else the end of the slowest start."""
    kill = _last(t for t, _ in s.container.kills)
    if kill is not None:
        return kill
    slowest = max(
        (i for i in s.container.instances if i.startup_end is not None),
        key=lambda i: (i.startup_end or 0.0) - i.start,
        default=None,
    )
    return slowest.startup_end if slowest is not None else None


def _worst(seen: list[Seen], score: object) -> Seen | None:
    """Return the replayable history that shows the problem most (by `score`), or None."""
    candidates = [s for s in seen if _replayable(s)]
    if not candidates:
        return None
    return max(candidates, key=score)  # type: ignore[arg-type]


# -- latency against timeoutSeconds ---------------------------------------------------------


def observed_latency_near_timeout(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    observed = _observed(evidence)
    if observed is None:
        return
    for slot, pt in _probes(obj):
        c = slot.container
        probe = c.probe(pt)
        assert probe is not None
        seen = observed.seen(obj, c.name)
        timeout = float(probe.timeout_seconds)
        latencies = [
            timeout if kind == Kind.TIMEOUT else latency
            for s in seen
            for _, kind, latency in s.answers(pt)
            if kind in ANSWERED
        ]
        if len(latencies) < MIN_ATTEMPTS:
            continue
        worst = p99(latencies)
        over = sum(1 for v in latencies if v >= timeout)
        share = over / len(latencies)
        if share < TIMEOUT_SHARE and worst < HEADROOM * timeout:
            continue
        proposed = max(probe.timeout_seconds + 1, math.ceil(1.5 * worst))
        if share >= TIMEOUT_SHARE:
            said = (
                f"{share:.1%} of {len(latencies)} attempts would time out at "
                f"{probe.timeout_seconds} s (p99 {_ms(worst)})"
            )
        else:
            said = (
                f"p99 latency {_ms(worst)} of {len(latencies)} attempts is "
                f"{worst / timeout:.0%} of timeoutSeconds {probe.timeout_seconds}"
            )
        if proposed >= probe.period_seconds:
            said += f"; a timeout of {proposed} s reaches periodSeconds {probe.period_seconds}"
        overrides = (f"{pt.key}.timeoutSeconds={proposed}",)
        # a timed-out answer's latency is known only to be past the old timeout: the replay
        # lets it time out at the new one too, so it cannot show the proposal ending those
        timed_out = sum(1 for v in latencies if v >= timeout)
        caveat = (
            f"; {proposed} s is unproven for the {timed_out} that timed out (no answer past a "
            "timeout is recorded: a replay times them out again)"
            if timed_out
            else ""
        )
        s = _worst(seen, lambda s, pt=pt: sum(1 for _, k, _ in s.answers(pt) if k == Kind.TIMEOUT))
        yield Hit(
            path=f"{slot.path}.{PROBE_FIELD[pt]}.timeoutSeconds",
            container=c.name,
            probe=pt,
            message=f"{c.name!r} {pt.key}: {said} ({_pods(seen)}){caveat}"
            + what_if_words(
                observed,
                s,
                overrides,
                # a list, not a generator: the attempts near the timeout are most of them
                lambda s, pt=pt, limit=HEADROOM * timeout: _last(
                    [t for t, k, v in s.answers(pt) if k == Kind.TIMEOUT or v >= limit]
                ),
            ),
            fix=f"timeoutSeconds: {proposed}, or make the endpoint answer faster",
            overrides=overrides,
        )


# -- start-up against the startup budget ----------------------------------------------------


def observed_start_near_budget(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    observed = _observed(evidence)
    if observed is None:
        return
    for slot in obj.slots():
        c = slot.container
        limits = simulated.budget_seconds(c)
        seen = observed.seen(obj, c.name)
        starts = observed.starts(obj, c.name)
        if limits is None or not seen or starts is None:
            continue
        limit, pt = limits
        probe = c.probe(pt)
        assert probe is not None
        if not starts.killed and (starts.finished or 0.0) < HEADROOM * limit:
            continue
        field_ = PROBE_FIELD[pt]
        against = (
            f"a budget of {seconds(limit)} ({pt.key}: delay {probe.initial_delay_seconds} + "
            f"failureThreshold {probe.failure_threshold} x periodSeconds {probe.period_seconds})"
        )
        if starts.guess:
            said = f"{c.name!r} is killed before it has started, against {against}: "
            said += f"{starts.words()} ({_pods(seen)})"
        else:
            said = f"{c.name!r} {starts.words()} against {against} ({_pods(seen)})"
        wanted = budget.wanted_seconds(starts, START_MARGIN)
        assert wanted is not None
        proposal = budget.propose(obj.pod, c, starts, wanted)
        if isinstance(proposal, str):
            yield Hit(
                path=f"{slot.path}.{field_}",
                container=c.name,
                probe=pt,
                message=f"{said}; {proposal}",
                fix=f"find what fails {c.name!r}'s {pt.key} probe after it has started",
            )
            continue
        threshold = proposal.failure_threshold
        overrides = (f"{pt.key}.failureThreshold={threshold}",)
        if proposal.guess:
            verdict = (
                f"; a budget of {seconds(proposal.seconds)} (failureThreshold {threshold}) is a "
                "guess above it"
            )
        else:
            verdict = f"; simulate: {proposal.model_words()}"
        unreplayable = ""
        if starts.killed:
            # a start killed unfinished has no recorded answer past its kill: a replay would
            # answer the rest of it with its last failure, whatever the budget
            unreplayable = (
                f"no start killed before it finished has answers past its kill (the longest "
                f"lived {seconds(round(starts.survived or 0.0, 1))}): a replay would repeat its "
                "last failure, whatever the budget"
            )
            replayed = f"; no counterfactual: {unreplayable}" if observed.replay else ""
        else:
            s = _worst(seen, lambda s: (s.never_started(), len(s.container.kills)))
            replayed = what_if_words(observed, s, overrides, _last_start_trouble)
        yield Hit(
            path=f"{slot.path}.{field_}.failureThreshold",
            container=c.name,
            probe=pt,
            message=said + verdict + replayed,
            fix=f"{field_}.failureThreshold: {threshold}"
            + ("" if pt is ProbeType.STARTUP else ", or add a startupProbe with that budget"),
            overrides=overrides,
            verified=proposal.model_words(),
            unreplayable=unreplayable,
        )


# -- readiness flapping -----------------------------------------------------------------------


def _flaps(s: Seen) -> int:
    return sum(1 for _, ready in s.container.ready if not ready)


def _failure_run(s: Seen, at: float, period: float) -> int:
    """Return the readiness failures in a row around the Ready loss at `at` (errors are dropped by
    the kubelet, §5.11: they neither count nor break the run). An attempt within half a period
    of the one before is the kubelet's own re-probe after the Ready change (a manual trigger)
    and is not counted: with a higher threshold there is no such change to trigger it."""
    answers: list[tuple[float, int]] = []
    for t, k, _ in s.answers(ProbeType.READINESS):
        if k == Kind.ERROR or (answers and t - answers[-1][0] < period / 2):
            continue
        answers.append((t, k))
    i = bisect.bisect_right([t for t, _ in answers], at) - 1
    if i < 0 or answers[i][1] not in (Kind.FAILURE, Kind.TIMEOUT):
        return 0
    lo = hi = i
    while lo > 0 and answers[lo - 1][1] in (Kind.FAILURE, Kind.TIMEOUT):
        lo -= 1
    while hi + 1 < len(answers) and answers[hi + 1][1] in (Kind.FAILURE, Kind.TIMEOUT):
        hi += 1
    return hi - lo + 1


def readiness_flapping(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    observed = _observed(evidence)
    if observed is None:
        return
    for slot in obj.slots():
        c = slot.container
        probe = c.readiness_probe
        seen = observed.seen(obj, c.name)
        if probe is None or not seen:
            continue
        flaps = sum(_flaps(s) for s in seen)
        hours = sum(s.history.seconds for s in seen) / 3600.0
        rate = flaps / hours if hours > 0 else 0.0
        if flaps < FLAPS_MIN or rate < FLAPS_PER_HOUR:
            continue
        threshold = max(3, probe.failure_threshold + 2)
        s = _worst(seen, _flaps)
        # a threshold one above the longest run of failures behind a loss rides them all out;
        # past OUTAGE_SECONDS that would hide a real outage as long, so it is not proposed
        runs = max(
            (
                _failure_run(s, t, probe.period_seconds)
                for s in seen
                for t, r in s.container.ready
                if not r
            ),
            default=0,
        )
        longest = ""
        if runs + 1 > threshold:
            if (runs + 1) * probe.period_seconds <= OUTAGE_SECONDS:
                threshold = runs + 1
            else:
                longest = (
                    f"; the longest run of failures behind a loss was {runs} "
                    f"({seconds(runs * probe.period_seconds)}): a threshold that rides it out "
                    "would hide an outage that long"
                )
        proven = prove.prove(
            observed,
            s,
            [(f"readiness.failureThreshold={threshold + i}",) for i in range(STEPS)],
            prove.Problem.LOSSES,
            ProbeType.READINESS,
            lambda s: _last(t for t, r in s.container.ready if not r),
            counterfactual_words,
        )
        if proven.overrides:
            threshold = int(proven.overrides[0].rpartition("=")[2])
        yield Hit(
            path=f"{slot.path}.readinessProbe.failureThreshold",
            container=c.name,
            probe=ProbeType.READINESS,
            message=f"{c.name!r} lost Ready {flaps} times ({rate:.0f} an hour, {_pods(seen)}) "
            f"with readiness failureThreshold {probe.failure_threshold} x periodSeconds "
            f"{probe.period_seconds}: each loss takes the pod out of its Services"
            + _proven_words(proven, s)
            + longest,
            fix=f"readinessProbe.failureThreshold: {threshold}, or find what makes it fail"
            if proven.overrides
            else "find what makes readiness fail: its outages outlast any threshold tried",
            overrides=proven.overrides,
        )


# -- attempts that error ----------------------------------------------------------------------


def probe_errors_dropped(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    observed = _observed(evidence)
    if observed is None:
        return
    for slot, pt in _probes(obj):
        c = slot.container
        seen = observed.seen(obj, c.name)
        kinds = [kind for s in seen for _, kind, _ in s.answers(pt)]
        errors = sum(1 for k in kinds if k == Kind.ERROR)
        if errors < ERRORS_MIN or errors < ERROR_SHARE * len(kinds):
            continue
        texts = Counter(
            (a.error or a.output or "error")
            for s in seen
            for inst in s.container.instances
            for a in inst.answers.get(pt, ())
            if a.kind == Kind.ERROR
        )
        text = texts.most_common(1)[0][0]
        yield Hit(
            path=f"{slot.path}.{PROBE_FIELD[pt]}",
            container=c.name,
            probe=pt,
            message=f"{c.name!r} {pt.key}: {errors} of {len(kinds)} attempts errored "
            f"({errors / len(kinds):.1%}; {text!r}, {_pods(seen)}): the kubelet drops an "
            "attempt that errors (no failure counted, the last result stays, §5.11), so a "
            "probe that cannot run looks healthy",
            fix=f"make the {pt.key} probe's handler runnable (its target, port or command): {text}",
        )


# -- the shadow against the kubelet ------------------------------------------------------------


def shadow_diverges(obj: LintObject, evidence: Evidence | None) -> Iterator[Hit]:
    observed = _observed(evidence)
    if observed is None:
        return
    for slot in obj.slots():
        c = slot.container
        seen = observed.seen(obj, c.name)
        events = [e for s in seen for e in s.divergences()]
        if not events:
            continue
        by_probe: dict[str, list] = {}
        for e in events:
            by_probe.setdefault(e.probe or "", []).append(e)
        for key, group in by_probe.items():
            pt = ProbeType.parse(key) if key else ProbeType.READINESS
            probe = c.probe(pt)
            last = max(group, key=lambda e: e.t)
            reasons = [str(r) for r in last.fields.get("likely", ())]
            overrides: tuple[str, ...] = ()
            if probe is not None and probe.failure_threshold == 1:
                overrides = (f"{pt.key}.failureThreshold=3",)
                fix = f"{PROBE_FIELD[pt]}.failureThreshold: 3 (one slow answer flips the verdict)"
            elif str(last.fields.get("via", "")) in ("port-forward", "proxy"):
                fix = (
                    "run probetui inside the cluster (--via direct), where it dials the pod IP "
                    "as the kubelet does, before trusting the shadow's verdict"
                )
            else:
                fix = "compare the two verdicts' timing in the timeline; see the reasons"
            why = "; ".join(reasons) if reasons else "no reason given"
            yield Hit(
                path=f"{slot.path}.{PROBE_FIELD[pt]}",
                container=c.name,
                probe=pt,
                message=f"{c.name!r} {pt.key}: the shadow diverged from the kubelet "
                f"{len(group)} time{'s' if len(group) != 1 else ''} ({_pods(seen)}; last: "
                f"{last.fields.get('message', '')}); likely: {why}",
                fix=fix,
                overrides=overrides,
            )


_EVIDENCE = (
    "Evidence rule: runs only with --recording FILE, --cluster, or in the UI over the "
    "session's history."
)

RULES = (
    Rule(
        id="observed-latency-near-timeout",
        severity=Severity.WARNING,
        summary="observed probe latency reaches timeoutSeconds",
        fix="raise timeoutSeconds above the observed p99 latency, or speed the endpoint up",
        explain="An attempt that takes timeoutSeconds is a failure (§5.4, §16.1): a p99 at or "
        f"near the timeout means failures the app did not cause. Fires when {TIMEOUT_SHARE:.0%} "
        f"or more of at least {MIN_ATTEMPTS} observed attempts reach the timeout, or the p99 is "
        f"at {HEADROOM:.0%} of it; proposes timeoutSeconds at 1.5 x the p99. {_EVIDENCE}",
        credit="probetui (observed attempts; kubectl-probes timeout-at-default looks only at "
        "the setting)",
        check=observed_latency_near_timeout,
        needs_evidence=True,
        simulated=True,
    ),
    Rule(
        id="observed-start-near-budget",
        severity=Severity.WARNING,
        summary="observed start-up times reach the startup budget",
        fix="raise the startup probe's failureThreshold above the slowest observed start",
        explain="The startup budget (initialDelaySeconds + failureThreshold x periodSeconds of "
        "the startup probe, else liveness) is how long a container may take to start before it "
        "is killed (§6.2, §6.3). Fires when an observed start took "
        f"{HEADROOM:.0%} of the budget or more, or a start was killed before it ended; "
        f"proposes a budget of {START_MARGIN:g} x the slowest start (or the longest a killed "
        "start lived, if longer), as failureThreshold, and only once the kubelet's model shows "
        "a start that long no longer killed (else the threshold is raised until it is). Where "
        "no start has finished yet, all the kills prove is that a start takes longer than it "
        f"lived: the proposal is then a guess, {budget.GUESS_FACTOR:g} x the longest survival "
        f"and at least {budget.GUESS_EXTRA:.0f} s more, and says so. A start is measured from "
        f"the container's start to its gate probe's first success. {_EVIDENCE}",
        credit="probetui (observed starts; the model's startup-budget-too-short uses a declared "
        "start)",
        check=observed_start_near_budget,
        needs_evidence=True,
        simulated=True,
    ),
    Rule(
        id="readiness-flapping",
        severity=Severity.WARNING,
        summary="the kubelet's Ready flips often",
        fix="raise readinessProbe.failureThreshold, or fix what makes readiness fail briefly",
        explain="Each Ready loss takes the pod out of its Services' endpoints (§10); a readiness "
        "probe that loses Ready on one or two slow answers flaps. Fires when Ready was lost "
        f"{FLAPS_MIN} times or more and {FLAPS_PER_HOUR:.0f} or more an hour (over every pod "
        f"of the object); proposes failureThreshold + 2. {_EVIDENCE}",
        credit="probetui (observed Ready changes); kubectl-probes probe-failures-recent reads "
        "Unhealthy events",
        check=readiness_flapping,
        needs_evidence=True,
        simulated=True,
    ),
    Rule(
        id="probe-errors-dropped",
        severity=Severity.WARNING,
        summary="probe attempts error, which the kubelet silently drops",
        fix="make the probe's handler runnable: its target, port or command",
        explain="A probe attempt that errors (a port that resolves to nothing, an exec that "
        "cannot start) counts neither as a success nor as a failure: the kubelet logs it and "
        "keeps the last result (§5.11, §16.4), so a liveness probe that cannot run never kills "
        f"and a readiness probe never changes. Fires on {ERRORS_MIN} or more errors and at "
        f"least {ERROR_SHARE:.0%} of the attempts. {_EVIDENCE}",
        credit="probetui (observed attempts)",
        check=probe_errors_dropped,
        needs_evidence=True,
    ),
    Rule(
        id="shadow-diverges",
        severity=Severity.WARNING,
        summary="the shadow prober's verdict diverged from the kubelet's",
        fix="see the likely reasons: network path, timing, flakiness, vantage",
        explain="The shadow runs the kubelet's own probe logic beside it; where the two "
        "verdicts (Ready, Started) differed for longer than a period, something differs "
        "between them: the network path (port-forward or proxy against the node's dial), the "
        "instants within each period, a failureThreshold of 1 that one slow answer flips, or "
        "where each stands. The finding lists the reasons the divergence named. "
        f"{_EVIDENCE}",
        credit="probetui (the shadow's Divergence events)",
        check=shadow_diverges,
        needs_evidence=True,
    ),
)
