"""Define what `probetui lint` judges and what it says: the object, the rule, the finding, evidence.

A rule is a function of one object and, optionally, evidence about how its probes behave in
practice (a recording, a live session). The static rules take the evidence argument and ignore
it; a rule with `needs_evidence` runs only when evidence is there. That one signature is the
seam the evidence rules (`rules_evidence.py`) plug into without changing the runner.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Protocol

from probetui.spec.model import Container, Pod, Probe, ProbeType
from probetui.spec.validate import FieldError

if TYPE_CHECKING:
    from probetui.lint.budget import Starts


class Severity(Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}

# the order a container's probes are reported in, as the kubelet makes their workers (§3.1)
PROBE_ORDER = (ProbeType.STARTUP, ProbeType.READINESS, ProbeType.LIVENESS)
PROBE_FIELD = {
    ProbeType.LIVENESS: "livenessProbe",
    ProbeType.READINESS: "readinessProbe",
    ProbeType.STARTUP: "startupProbe",
}


@dataclass(frozen=True, slots=True)
class Slot:
    """Holds one container of the object, with the path of its entry in the manifest."""

    container: Container
    path: str  # "spec.template.spec.containers[0]"
    # made once with the slot: every rule walks them
    _probes: tuple[tuple[ProbeType, Probe, str], ...] = field(
        default=(), init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        probes = []
        for pt in PROBE_ORDER:
            probe = self.container.probe(pt)
            if probe is not None:
                probes.append((pt, probe, f"{self.path}.{PROBE_FIELD[pt]}"))
        object.__setattr__(self, "_probes", tuple(probes))

    def probes(self) -> Iterator[tuple[ProbeType, Probe, str]]:
        """Return the container's probes in report order, each with its manifest path."""
        return iter(self._probes)


@dataclass(slots=True)
class LintObject:
    """Describes one manifest object with a pod template, as the rules see it.

    `pod` is the defaulted model (`spec/`), not validated: validation is a rule here.
    `spec_path` is where the pod spec sits in the object ("spec.template.spec"), so a finding
    names the field as the file has it; `line_of` maps such a path to its line.
    """

    kind: str
    name: str
    namespace: str
    file: str
    document: str  # "3", or "3, item 2" inside a List
    line: int | None
    pod: Pod
    spec_path: str
    annotations: dict[str, str]
    line_of: Callable[[str], int | None]
    ephemeral: tuple[Container, ...] = ()
    # filled on first use: every validation-backed rule reads the same list
    _validation: list[FieldError] | None = field(default=None, repr=False)
    # the slots, probed only and all, made on first use: every rule walks them
    _slots: dict[bool, tuple[Slot, ...]] = field(default_factory=dict, repr=False)

    @property
    def ref(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    @property
    def runs_to_completion(self) -> bool:
        """A Job's pods (or a bare Pod that never restarts) serve no traffic."""
        return self.kind in ("Job", "CronJob") or self.pod.restart_policy == "Never"

    def slots(self, *, probed_only: bool = True) -> Iterator[Slot]:
        """Regular containers, then init containers (only sidecars when `probed_only`)."""
        made = self._slots.get(probed_only)
        if made is None:
            made = self._slots[probed_only] = tuple(self._make_slots(probed_only))
        return iter(made)

    def _make_slots(self, probed_only: bool) -> Iterator[Slot]:
        for i, c in enumerate(self.pod.containers):
            yield Slot(c, f"{self.spec_path}.containers[{i}]")
        for i, c in enumerate(self.pod.init_containers):
            if c.is_restartable_init or not probed_only:
                yield Slot(c, f"{self.spec_path}.initContainers[{i}]")

    def line_at(self, path: str) -> int | None:
        rel = path.removeprefix(self.spec_path)
        return self.line_of("spec" + rel) or self.line

    def validation(self) -> list[FieldError]:
        if self._validation is None:
            from probetui.spec.validate import validate_pod

            self._validation = validate_pod(self.pod, self.ephemeral)
        return self._validation

    def refuses(self, container: str) -> bool:
        """Tell whether the API server rejects this container or the pod as a whole."""
        return any(err.container in (None, container) for err in self.validation())


class Evidence(Protocol):
    """Tells what was observed of an object's probes (a recording, a live session).

    Static lint passes None. A rule asks only for what it needs; None from a method means
    "not observed", and the rule falls back to what the manifest declares.
    """

    def start_seconds(self, obj: LintObject, container: str) -> float | None:
        """Tell how long the container was seen to take from start to answering its probes."""
        ...

    def starts(self, obj: LintObject, container: str) -> Starts | None:
        """Tell what was seen of the container's starts: those that finished, and those killed
        before they did (how long they lived)."""
        ...

    # the evidence rules read the full observations (`lint/observed.py`'s `Observed` is the
    # one implementation); a rule with `needs_evidence` checks for them with isinstance


@dataclass(frozen=True, slots=True)
class Hit:
    """Holds what a rule found, before the runner adds the object and the rule's own texts."""

    path: str  # the field in the manifest, full path from the object's root
    message: str
    container: str | None = None
    probe: ProbeType | None = None
    fix: str | None = None  # overrides the rule's fix when the numbers make a better one
    # the proposed setting as `simulate --set` items ("readiness.timeoutSeconds=3"): what the
    # UI's what-if and the counterfactual try
    overrides: tuple[str, ...] = ()
    # what the kubelet's model showed of the proposal before it was made ("a 20 s start: now 3
    # kills in 60 s, never Ready; with failureThreshold 13 no kill, Ready at 21 s")
    verified: str = ""
    # why replaying the history cannot judge the proposal, where it cannot (the UI's what-if
    # says so instead of showing a replay that would mislead)
    unreplayable: str = ""


Check = Callable[[LintObject, "Evidence | None"], Iterable[Hit]]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    severity: Severity
    summary: str  # one line: what the rule is about
    fix: str  # one line: what to change
    explain: str  # `--explain`: why, what it rests on, examples
    credit: str  # where the rule comes from: another linter, or the kubelet's model
    check: Check
    needs_evidence: bool = False
    enabled_by_default: bool = True
    # its message carries what a run of the kubelet's model showed ("simulate: ...")
    simulated: bool = False


@dataclass(frozen=True, slots=True)
class Finding:
    rule: Rule
    obj: LintObject
    hit: Hit

    @property
    def severity(self) -> Severity:
        return self.rule.severity

    @property
    def fix(self) -> str:
        return self.hit.fix or self.rule.fix

    @property
    def line(self) -> int | None:
        return self.obj.line_at(self.hit.path)


@dataclass(frozen=True, slots=True)
class Problem:
    """Reports input that could not be linted: one line naming file and document."""

    file: str
    document: str | None
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.document:
            where += f", document {self.document}"
        if self.line:
            where += f", line {self.line}"
        return " ".join(f"{where}: {self.message}".split())
