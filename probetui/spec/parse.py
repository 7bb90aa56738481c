"""Parse manifests (YAML or JSON) into the frozen Pod model, with the API server's defaults applied.

A file may hold several documents and `kind: List` objects. Each Pod, and the pod template of
each workload kind below, gives one Pod; other kinds are skipped. Defaults follow
`pkg/apis/core/v1/defaults.go` (docs/kubelet-behaviour.md §2.1, §2.2). Type errors are reported the
way the API server's strict decoding would refuse them, naming the field and, for YAML, the
line.

This module reads objects: Pods, workloads and lists. Below it, `documents.py` turns the text
into documents that know their lines, `decode.py` reads values with their types and places,
and `containers.py` reads one container with its probes.
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from probetui.spec import yaml_safe
from probetui.spec.containers import containers_of, set_probe_defaults
from probetui.spec.decode import INT64, At, describe, integer, mapping, sequence, string
from probetui.spec.documents import documents, line_in
from probetui.spec.errors import ManifestError
from probetui.spec.model import Container, ContainerKind, Pod
from probetui.spec.validate import check_pod

__all__ = [
    "WORKLOAD_TEMPLATE_PATHS",
    "load_pods",
    "parse_object",
    "parse_pods",
    "set_probe_defaults",
]

# where each kind keeps its pod template; a Pod is its own template
WORKLOAD_TEMPLATE_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": (),
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def _timestamp(value: object, at: At) -> float | None:
    """Return an RFC 3339 time (YAML may already have made it a datetime) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError:
            at.fail(f"must be an RFC 3339 time, got {describe(value)}")
    if not isinstance(value, datetime.datetime):
        at.fail(f"must be an RFC 3339 time, got {describe(value)}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return value.timestamp()


def _labels(value: object, at: At) -> dict[str, str]:
    m = mapping(value, at)
    return {k: string(v, at.key(m, k)) or "" for k, v in m.items()}


@dataclass(frozen=True, slots=True)
class _Parsed:
    pod: Pod
    ephemeral: tuple[Container, ...]
    spec: dict[str, Any] = field(repr=False)

    def line_of(self, path: str) -> int | None:
        """Return the line of a validation error's path (`spec.containers[0]...`), or the
        nearest."""
        node: Any = self.spec
        line: int | None = getattr(node, "line", None)
        for key in _steps(path):
            found = (isinstance(node, dict) and key in node) or (
                isinstance(node, list) and isinstance(key, int) and key < len(node)
            )
            if not found:
                break
            line = line_in(node, key) or line
            node = node[key]
        return line


# every object's findings name the same few paths (`spec.containers[0].livenessProbe`): cut
# each once (splitting them was most of looking up the lines of lint's findings)
@lru_cache(maxsize=4096)
def _steps(path: str) -> tuple[str | int, ...]:
    parts = path.removeprefix("spec.").replace("[", ".").replace("]", "").split(".")
    return tuple(int(part) if part.isdigit() else part for part in parts)


def _synthetic_uid(kind: str, namespace: str, name: str) -> str:
    # stable across runs, so a reloaded manifest keeps its probe keys
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"probetui:{kind}/{namespace}/{name}"))


def pod_from_object(obj: dict[str, Any], source: str) -> Pod:
    """Return a Pod object from the API (a dict), parsed but not validated: the API server did
    that."""
    return _pod_from_object(obj, "Pod", source).pod


def parse_object(
    doc: dict[str, Any], kind: str, base: str, template_path: tuple[str, ...] | None = None
) -> _Parsed:
    """Return one object's pod template, parsed but not validated, with `line_of` for its spec's
    paths: `probetui lint` validates on its own terms. `template_path` is where a kind outside
    WORKLOAD_TEMPLATE_PATHS keeps its template (`spec.template` for any such workload)."""
    return _pod_from_object(doc, kind, base, template_path)


def _pod_from_object(
    doc: dict[str, Any], kind: str, base: str, template_path: tuple[str, ...] | None = None
) -> _Parsed:
    at = At(origin=f"{base} ({kind})", line=getattr(doc, "line", None))
    meta_at = at.key(doc, "metadata")
    meta = mapping(doc.get("metadata"), meta_at)
    name = string(meta.get("name"), meta_at.key(meta, "name")) or string(
        meta.get("generateName"), meta_at.key(meta, "generateName")
    )
    if not name:
        meta_at.key(meta, "name").fail("Required value", "give the object a name")
    namespace = string(meta.get("namespace"), meta_at.key(meta, "namespace")) or "default"
    uid = string(meta.get("uid"), meta_at.key(meta, "uid")) or _synthetic_uid(kind, namespace, name)
    at = at.replace(origin=f"{base} ({kind} {name})")
    deletion_at = meta_at.key(meta, "deletionTimestamp")
    deletion = _timestamp(meta.get("deletionTimestamp"), deletion_at)
    deletion_grace = integer(
        meta.get("deletionGracePeriodSeconds"),
        meta_at.key(meta, "deletionGracePeriodSeconds"),
        INT64,
    )

    template, template_at = doc, at
    for step in WORKLOAD_TEMPLATE_PATHS[kind] if template_path is None else template_path:
        template_at = template_at.key(template, step)
        if template.get(step) is None:
            template_at.fail("Required value", f"a {kind} needs a pod template")
        template = mapping(template.get(step), template_at)
    template_meta_at = template_at.key(template, "metadata")
    template_meta = mapping(template.get("metadata"), template_meta_at)
    labels = _labels(template_meta.get("labels"), template_meta_at.key(template_meta, "labels"))

    spec_at = template_at.key(template, "spec")
    spec = mapping(template.get("spec"), spec_at)
    containers = containers_of(spec, "containers", spec_at, ContainerKind.CONTAINER)
    init_containers = containers_of(spec, "initContainers", spec_at, ContainerKind.INIT)
    ephemeral = containers_of(spec, "ephemeralContainers", spec_at, ContainerKind.EPHEMERAL)
    restart_policy = string(spec.get("restartPolicy"), spec_at.key(spec, "restartPolicy"))
    tgps = integer(
        spec.get("terminationGracePeriodSeconds"),
        spec_at.key(spec, "terminationGracePeriodSeconds"),
        INT64,
    )
    pod = Pod(
        name=name,
        namespace=namespace,
        uid=uid,
        labels=labels,
        containers=tuple(containers),
        init_containers=tuple(init_containers),
        # SetDefaults_PodSpec
        restart_policy=restart_policy or "Always",
        termination_grace_period_seconds=30 if tgps is None else tgps,
        deletion_timestamp=deletion,
        deletion_grace_period_seconds=deletion_grace,
        source=at.origin,
    )
    return _Parsed(pod=pod, ephemeral=tuple(ephemeral), spec=spec)


def _from_document(doc: object, base: str, kinds_seen: list[str]) -> list[_Parsed]:
    if doc is None:
        return []  # an empty document between two '---'
    at = At(origin=base, line=getattr(doc, "line", None))
    if isinstance(doc, list):
        items: list[Any] = doc
    else:
        m = mapping(doc, at)
        kind = string(m.get("kind"), at.key(m, "kind"))
        if kind is None and "items" not in m:
            at.key(m, "kind").fail("Required value", "say what the object is, e.g. kind: Pod")
        if kind in WORKLOAD_TEMPLATE_PATHS:
            kinds_seen.append(kind)
            return [_pod_from_object(m, kind, base)]
        if "items" not in m or not (kind is None or kind.endswith("List")):
            kinds_seen.append(kind or "?")
            return []  # not something with pods in it (Service, ConfigMap, ...)
        items = sequence(m.get("items"), at.key(m, "items"))
    parsed: list[_Parsed] = []
    for i, item in enumerate(items, start=1):
        parsed.extend(_from_document(item, f"{base}, item {i}", kinds_seen))
    return parsed


def _parse(text: str, source: str) -> list[_Parsed]:
    kinds_seen: list[str] = []
    parsed: list[_Parsed] = []
    for n, doc in enumerate(documents(text, source), start=1):
        parsed.extend(_from_document(doc, f"{source}, document {n}", kinds_seen))
    if not parsed:
        seen = f" (found: {', '.join(dict.fromkeys(kinds_seen))})" if kinds_seen else ""
        raise ManifestError(
            f"no Pod or workload with a pod template{seen}",
            origin=source,
            fix="give a Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, "
            "ReplicationController, Job or CronJob",
        )
    return parsed


def parse_pods(text: str, source: str = "<string>", validate: bool = True) -> list[Pod]:
    """Pods from manifest text, defaulted; validated as the API server would unless told not to.

    Raises ManifestError (one line naming file, document, container and field) for syntax,
    type and, with `validate`, validation errors.
    """
    parsed = _parse(text, source)
    if validate:
        for p in parsed:
            check_pod(p.pod, p.ephemeral, p.line_of)
    return [p.pod for p in parsed]


def load_pods(path: str | Path, validate: bool = True) -> list[Pod]:
    """`parse_pods` on a file; the path as given names it in error messages."""
    try:
        text = yaml_safe.read_text(path, encoding="utf-8-sig")
    except OSError as e:
        raise ManifestError(f"cannot read: {e.strerror or e}", origin=str(path)) from None
    except yaml_safe.TextError as e:
        raise ManifestError(str(e), origin=str(path)) from None
    return parse_pods(text, str(path), validate=validate)
