"""Write `probetui lint`'s output for programs: `--output json` and `--output sarif`.

The JSON is probetui's own schema, versioned; SARIF 2.1.0 is what code-scanning UIs read.

The JSON document's `schema` names its version; a change that removes or renames a field gets
a new one. SARIF levels are error, warning and note (for info); a finding's location is the
file and line of the field it is about, and its logical location the object and container.
Inputs that could not be linted are `problems` in JSON and tool execution notifications in
SARIF, so neither format loses them.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from json.encoder import encode_basestring as _string  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any
from urllib.parse import quote

from probetui.lint.model import Finding, LintObject, Problem, Rule, Severity

JSON_SCHEMA = "probetui.lint/v1"
SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _version() -> str:
    from probetui import __version__

    return __version__


def dumps(doc: Any) -> str:
    """`json.dumps(doc, indent=2, ensure_ascii=False) + "\n"`, the same bytes for any value.

    json.dumps with an indent runs the pure-Python encoder; this writes the same text for the
    plain values the documents hold, much faster for tens of thousands of findings (guarded by
    benchmarks/lint.py), and leaves anything else to json.dumps."""
    out: list[str] = []
    try:
        _encode(doc, out, "\n")
    except TypeError:
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    out.append("\n")
    return "".join(out)


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value.__class__ is str:
        return _string(value)  # type: ignore[no-any-return]
    if value.__class__ is int:
        return int.__repr__(value)  # type: ignore[arg-type]
    if value.__class__ is float:
        assert isinstance(value, float)
        if value != value:
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise TypeError(type(value).__name__)


def _encode(value: object, out: list[str], newline: str) -> None:
    cls = value.__class__
    if cls is dict:
        assert isinstance(value, dict)
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        sep = "{" + inner
        for key, item in value.items():
            if key.__class__ is not str:
                raise TypeError(type(key).__name__)
            out.append(sep)
            out.append(_string(key))
            out.append(": ")
            kind = item.__class__
            if kind is str:
                out.append(_string(item))
            elif kind is dict or kind is list or kind is tuple:
                _encode(item, out, inner)
            else:
                out.append(_scalar(item))
            sep = "," + inner
        out.append(newline + "}")
    elif cls is list or cls is tuple:
        assert isinstance(value, list | tuple)
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        sep = "[" + inner
        for item in value:
            out.append(sep)
            kind = item.__class__
            if kind is str:
                out.append(_string(item))
            elif kind is dict or kind is list or kind is tuple:
                _encode(item, out, inner)
            else:
                out.append(_scalar(item))
            sep = "," + inner
        out.append(newline + "]")
    else:
        out.append(_scalar(value))


def _finding(f: Finding) -> dict[str, Any]:
    obj = f.obj
    return {
        "rule": f.rule.id,
        "severity": f.severity.value,
        "message": f.hit.message,
        "fix": f.fix,
        "file": obj.file,
        "document": obj.document,
        "line": f.line,
        "object": {"kind": obj.kind, "namespace": obj.namespace, "name": obj.name},
        "container": f.hit.container,
        "probe": f.hit.probe.key if f.hit.probe else None,
        "field": f.hit.path,
        # the proposed setting in `simulate --set` terms (evidence rules); added in v1
        "proposed": list(f.hit.overrides),
    }


def _problem(p: Problem) -> dict[str, Any]:
    return {"file": p.file, "document": p.document, "line": p.line, "message": p.message}


def to_json(
    objects: Sequence[LintObject],
    findings: Sequence[Finding],
    problems: Sequence[Problem],
    rules: Sequence[Rule],
    *,
    fail_on: Severity | None,
    failed: bool,
) -> str:
    counts = Counter(f.severity.value for f in findings)
    doc = {
        "schema": JSON_SCHEMA,
        "tool": {"name": "probetui", "version": _version()},
        "summary": {
            "objects": len(objects),
            "findings": len(findings),
            "by_severity": {s.value: counts.get(s.value, 0) for s in Severity},
            "not_linted": len(problems),
            "fail_on": fail_on.value if fail_on else "never",
            "failed": failed,
        },
        "rules": [
            {"id": r.id, "severity": r.severity.value, "summary": r.summary, "from": r.credit}
            for r in rules
        ],
        "findings": [_finding(f) for f in findings],
        "problems": [_problem(p) for p in problems],
    }
    return dumps(doc)


def _uri(file: str) -> str:
    if file == "<stdin>":
        return "stdin"
    path = Path(file)
    if path.is_absolute():
        try:
            path = path.relative_to(Path.cwd())
        except ValueError:
            return path.as_uri()
    return quote(path.as_posix().replace(os.sep, "/"))


def _location(file: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(file)}}
    if line:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _sarif_rule(r: Rule) -> dict[str, Any]:
    return {
        "id": r.id,
        "name": "".join(part.capitalize() for part in r.id.split("-")),
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.explain},
        "help": {"text": f"{r.fix}. From: {r.credit}."},
        "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
        "properties": {"from": r.credit},
    }


def _sarif_result(f: Finding, index: dict[str, int]) -> dict[str, Any]:
    obj = f.obj
    location = _location(obj.file, f.line)
    name = f"{obj.kind}/{obj.namespace}/{obj.name}"
    if f.hit.container:
        name += f"/{f.hit.container}"
    location["logicalLocations"] = [{"fullyQualifiedName": name, "kind": "object"}]
    return {
        "ruleId": f.rule.id,
        "ruleIndex": index[f.rule.id],
        "level": _SARIF_LEVEL[f.severity],
        "message": {"text": f"{f.hit.message} (fix: {f.fix})"},
        "locations": [location],
        "partialFingerprints": {"probetuiField/v1": f"{name}:{f.hit.path}:{f.rule.id}"},
        "properties": {"document": obj.document, "field": f.hit.path},
    }


def to_sarif(
    findings: Sequence[Finding], problems: Sequence[Problem], rules: Sequence[Rule]
) -> str:
    listed = list(rules)
    for f in findings:  # a rule silenced by nothing but run anyway still needs its entry
        if f.rule not in listed:
            listed.append(f.rule)
    index = {r.id: i for i, r in enumerate(listed)}
    notifications = [
        {
            "level": "error",
            "message": {"text": str(p)},
            "locations": [_location(p.file, p.line)],
        }
        for p in problems
    ]
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "probetui",
                        "version": _version(),
                        "rules": [_sarif_rule(r) for r in listed],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": [_sarif_result(f, index) for f in findings],
            }
        ],
    }
    return dumps(doc)
