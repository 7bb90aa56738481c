"""Write `probetui lint`'s output for people: findings by object, worst first, and a count.

Coloured on a terminal (ANSI, nothing when NO_COLOR is set or the output is not a TTY); inputs
that could not be read are counted (each is its own line on stderr, whatever the format)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from probetui.lint.model import Finding, LintObject, Problem, Rule, Severity

_COLOUR = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}
_BOLD, _DIM = "1", "2"
_WIDTH = max(len(s.value) for s in Severity)


def _paint(text: str, code: str, colour: bool) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if colour else text


def render(
    objects: Sequence[LintObject],
    findings: Sequence[Finding],
    problems: Sequence[Problem],
    *,
    colour: bool,
) -> str:
    lines: list[str] = []
    by_object: dict[int, list[Finding]] = {}
    for f in findings:
        by_object.setdefault(id(f.obj), []).append(f)
    for obj in objects:
        found = by_object.get(id(obj))
        if not found:
            continue
        head = f"{obj.file}, document {obj.document}: {obj.ref}"
        if obj.document.startswith("pod "):
            # an object of a recording or a cluster: the pod whose spec was linted
            head = f"{obj.file}: {obj.ref} (spec of {obj.document})"
        lines.append(_paint(head, _BOLD, colour))
        found.sort(key=lambda f: (-f.severity.rank, f.line or 0, f.rule.id))
        for f in found:
            level = _paint(f.severity.value.ljust(_WIDTH), _COLOUR[f.severity], colour)
            where = f"line {f.line}" if f.line else "-"
            lines.append(f"  {level}  {where:>9}  {f.rule.id}: {f.hit.message}")
            lines.append(_paint(f"  {'':{_WIDTH}}  {'':>9}  fix: {f.fix}", _DIM, colour))
    counts = Counter(f.severity for f in findings)
    parts = [f"{counts[s]} {s.value}" for s in reversed(Severity) if counts[s]]
    summary = f"{len(objects)} object{'s' if len(objects) != 1 else ''}, "
    summary += f"{len(findings)} finding{'s' if len(findings) != 1 else ''}"
    if parts:
        summary += f" ({', '.join(parts)})"
    if problems:
        summary += f", {len(problems)} not linted (listed on stderr)"
    if lines:
        lines.append("")
    lines.append(summary)
    return "\n".join(lines) + "\n"


def explain(rule: Rule) -> str:
    return (
        f"{rule.id} ({rule.severity.value})\n"
        f"  {rule.summary}\n\n"
        f"{_wrap(rule.explain)}\n\n"
        f"fix: {rule.fix}\n"
        f"from: {rule.credit}\n"
    )


def rule_list(rules: Sequence[Rule], enabled: set[str]) -> str:
    width = max(len(r.id) for r in rules)
    lines = []
    for r in rules:
        state = "" if r.id in enabled else "  (off)"
        lines.append(f"{r.id:<{width}}  {r.severity.value:<{_WIDTH}}  {r.summary}{state}")
    return "\n".join(lines) + "\n"


def _wrap(text: str, width: int = 92) -> str:
    import textwrap

    return textwrap.fill(text, width=width)
