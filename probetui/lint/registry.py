"""Keep every rule by its stable id, choose which of them run, and run them over objects.

`--disable` and `--enable` pick rules by id (or `all`); an object silences rules for itself
with the annotation `probetui.io/lint-disable: rule-a,rule-b` (or `all`) on its metadata or
its pod template's. Evidence, when there is any, goes to every rule; the rules that need it
run only then.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from probetui.lint.model import Evidence, Finding, Hit, LintObject, Rule, Severity
from probetui.lint.rules_evidence import RULES as EVIDENCE_RULES
from probetui.lint.rules_model import RULES as MODEL_RULES
from probetui.lint.rules_static import RULES as STATIC_RULES
from probetui.redact import DEFAULT, Policy, Redactor

DISABLE_ANNOTATION = "probetui.io/lint-disable"
ALL = "all"

RULES: dict[str, Rule] = {r.id: r for r in (*STATIC_RULES, *MODEL_RULES, *EVIDENCE_RULES)}


class UnknownRule(ValueError):
    pass


def rule(rule_id: str) -> Rule:
    try:
        return RULES[rule_id]
    except KeyError:
        raise UnknownRule(f"unknown rule {rule_id!r} (rules: {', '.join(RULES)})") from None


def _ids(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        for part in item.split(","):
            part = part.strip()
            if part and part != ALL:
                rule(part)
            if part:
                out.append(part)
    return out


def select(disable: Sequence[str] = (), enable: Sequence[str] = ()) -> list[Rule]:
    """Return the rules that run: the default set, less `--disable`, plus `--enable` (which
    wins)."""
    off, on = set(_ids(disable)), set(_ids(enable))
    chosen: list[Rule] = []
    for r in RULES.values():
        wanted = r.enabled_by_default and ALL not in off and r.id not in off
        if r.id in on or (ALL in on and r.id not in off):
            wanted = True
        if wanted:
            chosen.append(r)
    return chosen


def silenced(obj: LintObject) -> set[str]:
    text = obj.annotations.get(DISABLE_ANNOTATION, "")
    return {part.strip() for part in text.split(",") if part.strip()}


def run(
    objects: Iterable[LintObject],
    rules: Sequence[Rule],
    evidence: Evidence | None = None,
    policy: Policy = DEFAULT,
) -> list[Finding]:
    """Return the findings of `rules` on `objects`, their texts masked by the redaction `policy`."""
    redactor = Redactor(policy)
    findings: list[Finding] = []
    for obj in objects:
        quiet = silenced(obj)
        if ALL in quiet:
            continue
        for r in rules:
            if r.id in quiet or (r.needs_evidence and evidence is None):
                continue
            findings.extend(
                Finding(r, obj, _masked(redactor, hit)) for hit in r.check(obj, evidence)
            )
    return findings


def _masked(redactor: Redactor, hit: Hit) -> Hit:
    # a finding quotes the probe as written (its path, its command), where the rules find
    # what is secret; no finding quotes an env or header value, so no pod is redacted whole
    message, fix = redactor.text(None, hit.message), redactor.optional(None, hit.fix)
    if message is hit.message and fix is hit.fix:
        return hit
    return replace(hit, message=message, fix=fix)


def at_or_above(findings: Iterable[Finding], threshold: Severity | None) -> list[Finding]:
    if threshold is None:
        return []
    return [f for f in findings if f.severity.rank >= threshold.rank]
