"""Read what `probetui lint` is given, files, directories and stdin, into LintObjects.

The documents are read by `spec/documents.py` (lines kept) and each object's pod template by
`spec/parse.py`, as every other command reads a manifest. What lint adds is tolerance: a
malformed document, an unknown kind or an unrendered `{{ }}` template is one `Problem` naming
file and document, and the other documents and files are still linted. A YAML stream is read
whole first; only when that fails is it cut at its `---` lines and read a document at a time,
so that one broken document costs only itself.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probetui.lint.model import LintObject, Problem
from probetui.memory import no_collection_during_bulk_load
from probetui.spec import yaml_safe
from probetui.spec.documents import documents
from probetui.spec.errors import LimitExceeded, ManifestError
from probetui.spec.parse import WORKLOAD_TEMPLATE_PATHS, parse_object
from probetui.spec.yaml_safe import Bounds

STDIN = "-"
_SUFFIXES = (".yaml", ".yml", ".json")
_SEPARATOR = re.compile(r"^---(?:[ \t].*)?$")
_TEMPLATE = re.compile(r"\{\{.*?\}\}")
_DOC_INDEX = re.compile(r", document (\d+)")

# kinds that hold no pod template, skipped without a word (what `helm template` emits beside
# the workloads); anything else without spec.template.spec.containers is an unknown kind
_PODLESS_KINDS = frozenset(
    {
        "APIService",
        "Certificate",
        "ClusterIssuer",
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "CustomResourceDefinition",
        "Endpoints",
        "EndpointSlice",
        "Gateway",
        "GRPCRoute",
        "HorizontalPodAutoscaler",
        "HTTPRoute",
        "Ingress",
        "IngressClass",
        "Issuer",
        "LimitRange",
        "MutatingWebhookConfiguration",
        "Namespace",
        "NetworkPolicy",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "PodMonitor",
        "PriorityClass",
        "PrometheusRule",
        "ResourceQuota",
        "Role",
        "RoleBinding",
        "RuntimeClass",
        "Secret",
        "Service",
        "ServiceAccount",
        "ServiceMonitor",
        "StorageClass",
        "ValidatingWebhookConfiguration",
        "VerticalPodAutoscaler",
    }
)


@dataclass(slots=True)
class Loaded:
    objects: list[LintObject] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0  # files (or stdin) that could be read at all


def expand(paths: Iterable[str]) -> Iterator[str]:
    """Return each path, a directory's manifests (recursively, sorted), `-` for stdin."""
    for p in paths:
        path = Path(p)
        if p != STDIN and path.is_dir():
            found = sorted(f for f in path.rglob("*") if f.suffix in _SUFFIXES and f.is_file())
            yield from (str(f) for f in found)
        else:
            yield p


def load(paths: Iterable[str]) -> Loaded:
    # reading makes hundreds of thousands of objects that all stay and hold no cycles, so the
    # collector is off while they are made: its passes over them would free nothing
    # (guarded by benchmarks/lint.py)
    with no_collection_during_bulk_load():
        return _load(paths)


def _load(paths: Iterable[str]) -> Loaded:
    out = Loaded()
    for p in expand(paths):
        name = "<stdin>" if p == STDIN else p
        try:
            if p == STDIN:
                text = yaml_safe.read_stream(sys.stdin)
            else:
                text = yaml_safe.read_text(p, encoding="utf-8-sig")
        except OSError as e:
            out.problems.append(Problem(name, None, None, f"cannot read: {e.strerror or e}"))
            continue
        except yaml_safe.TextError as e:
            out.problems.append(Problem(name, None, None, str(e)))
            continue
        out.files += 1
        load_text(text, name, out)
    return out


def load_text(text: str, name: str, out: Loaded) -> None:
    templated = "{{" in text
    for index, doc in _documents(text, name, out):
        _objects(doc, name, str(index), templated, out)


def _documents(text: str, name: str, out: Loaded) -> Iterator[tuple[int, Any]]:
    # one budget for the aliases of the whole file, read whole or in parts
    bounds = Bounds()
    try:
        yield from enumerate(documents(text, name, bounds), start=1)
        return
    except LimitExceeded as e:
        out.problems.append(_problem(e, name))
        return
    except ManifestError as e:
        if text.lstrip()[:1] in ("{", "["):
            # a JSON stream has no separators to resynchronise on
            out.problems.append(_problem(e, name))
            return
    for index, (offset, chunk) in enumerate(_chunks(text), start=1):
        try:
            docs = documents(chunk, name, bounds)
        except LimitExceeded as e:
            out.problems.append(_problem(e, name, str(index), offset))
            return
        except ManifestError as e:
            template = _TEMPLATE.search(chunk)
            if template is not None:
                line = offset + chunk.count("\n", 0, template.start()) + 1
                out.problems.append(Problem(name, str(index), line, _unrendered(template[0])))
            else:
                out.problems.append(_problem(e, name, str(index), offset))
            continue
        for doc in docs:
            _shift(doc, offset)
            yield index, doc


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """Return the documents of a YAML stream as (lines before it, text), cut at `---` lines."""
    lines = text.splitlines(keepends=True)
    start, first = 0, True
    for i, line in enumerate(lines):
        if _SEPARATOR.match(line.rstrip("\r\n")):
            chunk = "".join(lines[start:i])
            if not first or _has_content(chunk):
                yield start, chunk
            start, first = i + 1, False
    chunk = "".join(lines[start:])
    if not first or _has_content(chunk):
        yield start, chunk


def _has_content(chunk: str) -> bool:
    return any(ln.strip() and not ln.lstrip().startswith("#") for ln in chunk.splitlines())


def _shift(node: Any, offset: int) -> None:
    """Lines of a document read on its own, moved to where it sits in the file."""
    if not offset:
        return
    if isinstance(node, dict | list):
        if getattr(node, "line", None):
            node.line += offset  # type: ignore[union-attr]
        lines = getattr(node, "lines", None)
        if isinstance(lines, dict):
            for k in lines:
                lines[k] += offset
        elif isinstance(lines, list):
            lines[:] = [n + offset for n in lines]
        for child in node.values() if isinstance(node, dict) else node:
            _shift(child, offset)


def _problem(e: ManifestError, name: str, document: str | None = None, shift: int = 0) -> Problem:
    """Return a spec reader's error as a Problem: the document it names kept apart from the rest."""
    match = _DOC_INDEX.search(e.origin)
    if match is not None and document is None:
        document = match[1]
    rest = e.origin[match.end() :].strip(" ,") if match else ""
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    text = ManifestError(
        e.detail,
        origin=rest,
        container=e.container,
        container_kind=e.container_kind,
        field=e.field,
        fix=e.fix,
        more=e.more,
    ).message
    return Problem(name, document, e.line + shift if e.line else None, text)


def _unrendered(template: str) -> str:
    return f"unrendered template {template}: render it first (helm template ... | probetui lint -)"


def _template_path(doc: dict[str, Any]) -> tuple[str, ...] | None:
    """("spec", "template") when the object holds spec.template.spec.containers."""
    spec = doc.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(pod_spec, dict) and isinstance(pod_spec.get("containers"), list):
        return ("spec", "template")
    return None


def _objects(doc: Any, name: str, index: str, templated: bool, out: Loaded) -> None:
    if doc is None:
        return
    line = getattr(doc, "line", None)
    if not isinstance(doc, dict):
        out.problems.append(Problem(name, index, line, "not an object (a mapping with kind)"))
        return
    kind = doc.get("kind")
    if not isinstance(kind, str) or not kind:
        out.problems.append(Problem(name, index, line, "no kind: say what the object is"))
        return
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"], start=1):
            _objects(item, name, f"{index}, item {i}", templated, out)
        return
    path: tuple[str, ...] | None = WORKLOAD_TEMPLATE_PATHS.get(kind)
    if path is None:
        path = _template_path(doc)
    if path is None:
        if kind not in _PODLESS_KINDS:
            api = doc.get("apiVersion")
            out.problems.append(
                Problem(
                    name,
                    index,
                    line,
                    f"unknown kind {kind}{f' ({api})' if isinstance(api, str) else ''}: "
                    "no pod template at spec.template.spec.containers; skipped",
                )
            )
        return
    if templated:
        found = _first_template(doc)
        if found is not None:
            out.problems.append(Problem(name, index, found[1] or line, _unrendered(found[0])))
            return
    try:
        parsed = parse_object(doc, kind, f"{name}, document {index}", path)
    except ManifestError as e:
        out.problems.append(_problem(e, name))
        return
    pod = parsed.pod
    out.objects.append(
        LintObject(
            kind=kind,
            name=pod.name,
            namespace=pod.namespace,
            file=name,
            document=index,
            line=line,
            pod=pod,
            spec_path=".".join((*path, "spec")),
            annotations=_annotations(doc, path),
            line_of=parsed.line_of,
            ephemeral=parsed.ephemeral,
        )
    )


def _annotations(doc: dict[str, Any], path: tuple[str, ...]) -> dict[str, str]:
    """Return the object's annotations, the pod template's over them."""
    merged: dict[str, str] = {}
    node: Any = doc
    for step in ("", *path):
        if step:
            node = node.get(step) if isinstance(node, dict) else None
        meta = node.get("metadata") if isinstance(node, dict) else None
        notes = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(notes, dict):
            merged.update({str(k): str(v) for k, v in notes.items()})
    return merged


def _first_template(node: Any, line: int | None = None) -> tuple[str, int | None] | None:
    """Return the first `{{ ... }}` in a document's keys or values, with its line."""
    if isinstance(node, str):
        m = _TEMPLATE.search(node)
        return (m[0], line) if m else None
    if isinstance(node, dict):
        items: Iterable[tuple[Any, Any]] = node.items()
    elif isinstance(node, list):
        items = enumerate(node)
    else:
        return None
    lines = getattr(node, "lines", None)
    for key, value in items:
        at = (lines.get(key) if isinstance(lines, dict) else None) or line
        if isinstance(lines, list) and isinstance(key, int) and key < len(lines):
            at = lines[key]
        found = _first_template(key, at) if isinstance(key, str) else None
        found = found or _first_template(value, at)
        if found:
            return found
    return None
