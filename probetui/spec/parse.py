"""Manifests (YAML or JSON) to the frozen Pod model, with the API server's defaults applied.

A file may hold several documents and `kind: List` objects. Each Pod, and the pod template of
each workload kind below, gives one Pod; other kinds are skipped. Defaults follow
`pkg/apis/core/v1/defaults.go` (docs/kubelet-behaviour.md §2.1, §2.2). Type errors are reported the
way the API server's strict decoding would refuse them, naming the field and, for YAML, the
line.
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import yaml

from probetui.spec.errors import ManifestError
from probetui.spec.model import (
    Container,
    ContainerKind,
    ContainerPort,
    EnvVar,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Pod,
    Probe,
    RestartRule,
    TCPSocketAction,
)
from probetui.spec.validate import check_pod

__all__ = ["WORKLOAD_TEMPLATE_PATHS", "load_pods", "parse_pods", "set_probe_defaults"]

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

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

# v1.Container's fields, used only to catch near-miss spellings ("livenesProbe")
_CONTAINER_FIELDS = (
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "restartPolicyRules",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
    "targetContainerName",
)
# v1.Probe's fields: a closed set, so anything else is refused as strict decoding does
_PROBE_FIELDS = (
    "exec",
    "httpGet",
    "tcpSocket",
    "grpc",
    "initialDelaySeconds",
    "timeoutSeconds",
    "periodSeconds",
    "successThreshold",
    "failureThreshold",
    "terminationGracePeriodSeconds",
)
_HANDLER_FIELDS = {
    "exec": ("command",),
    "httpGet": ("path", "port", "host", "scheme", "httpHeaders"),
    "tcpSocket": ("port", "host"),
    "grpc": ("port", "service"),
}
_KIND_WORDS = {
    ContainerKind.CONTAINER: "container",
    ContainerKind.INIT: "init container",
    ContainerKind.EPHEMERAL: "ephemeral container",
}


# --- YAML with line numbers ---


class _LineDict(dict):  # type: ignore[type-arg]
    """A mapping that remembers the line of each key (1-based)."""

    __slots__ = ("line", "lines")

    def __init__(self) -> None:
        super().__init__()
        self.line: int | None = None
        self.lines: dict[Any, int] = {}


class _LineList(list):  # type: ignore[type-arg]
    """A sequence that remembers the line of each item (1-based)."""

    __slots__ = ("line", "lines")

    def __init__(self) -> None:
        super().__init__()
        self.line: int | None = None
        self.lines: list[int] = []


_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    pass


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterable[_LineDict]:
    data = _LineDict()
    data.line = node.start_mark.line + 1
    yield data
    # go-yaml refuses a key set twice in one mapping; PyYAML would silently keep the last
    seen: dict[str, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
            continue
        line = key_node.start_mark.line + 1
        if key_node.value in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f'key "{key_node.value}" already set in this mapping (first on line '
                f"{seen[key_node.value]})",
                key_node.start_mark,
            )
        seen[key_node.value] = line
    data.update(loader.construct_mapping(node))
    for key_node, _ in node.value:
        # an unhashable key was already refused by construct_mapping
        with contextlib.suppress(TypeError):
            data.lines[loader.construct_object(key_node)] = key_node.start_mark.line + 1


def _construct_seq(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Iterable[_LineList]:
    data = _LineList()
    data.line = node.start_mark.line + 1
    yield data
    data.extend(loader.construct_sequence(node))
    data.lines = [item.start_mark.line + 1 for item in node.value]


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


def _yaml_fix(text: str, line: int | None) -> str | None:
    # libyaml's message does not name the tab, so look at the line itself
    lines = text.splitlines()
    if line is not None and 0 <= line < len(lines):
        indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
        if "\t" in indent:
            return "YAML indentation must use spaces, not tabs"
    return None


def _yaml_documents(text: str, source: str) -> list[Any]:
    loader = _Loader(text)
    docs: list[Any] = []
    try:
        while loader.check_data():
            docs.append(loader.get_data())
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "cannot parse"
        where = f", column {mark.column + 1}" if mark is not None else ""
        raise ManifestError(
            f"invalid YAML: {problem}{where}",
            origin=f"{source}, document {len(docs) + 1}",
            line=mark.line + 1 if mark is not None else None,
            fix=_yaml_fix(text, mark.line if mark is not None else None),
        ) from None
    except yaml.YAMLError as e:
        raise ManifestError(
            f"invalid YAML: {e}", origin=f"{source}, document {len(docs) + 1}"
        ) from None
    finally:
        loader.dispose()
    return docs


def _json_documents(text: str, source: str) -> list[Any]:
    # a stream of JSON values, as kubectl accepts; JSON itself has no line numbers to keep
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return docs
        try:
            doc, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise ManifestError(
                f"invalid JSON: {e.msg}, column {e.colno}",
                origin=f"{source}, document {len(docs) + 1}",
                line=e.lineno,
            ) from None
        docs.append(doc)


def _documents(text: str, source: str) -> list[Any]:
    if text.startswith("\ufeff"):
        text = text[1:]
    if text.lstrip()[:1] not in ("{", "["):
        return _yaml_documents(text, source)
    try:
        docs = _json_documents(text, source)
    except ManifestError as json_error:
        # "{a: 1}" is a YAML flow mapping, not JSON: report the JSON error only if YAML fails too
        try:
            return _yaml_documents(text, source)
        except ManifestError:
            raise json_error from None
    # JSON is (nearly) YAML: read it again as YAML for line numbers, when that gives the same data
    try:
        with_lines = _yaml_documents(text, source)
    except ManifestError:
        return docs
    return with_lines if with_lines == docs else docs


# --- typed access with locations ---


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _line_in(parent: object, key: object) -> int | None:
    lines = getattr(parent, "lines", None)
    if isinstance(lines, dict):
        return lines.get(key)
    if isinstance(lines, list) and isinstance(key, int) and 0 <= key < len(lines):
        return lines[key]
    return None


@dataclass(frozen=True, slots=True)
class _At:
    """Where a value sits: document, container, field path and line, for error messages."""

    origin: str
    path: str = ""
    line: int | None = None
    container: str | None = None
    container_kind: str = "container"

    def key(self, parent: object, key: str) -> _At:
        path = f"{self.path}.{key}" if self.path else key
        return replace(self, path=path, line=_line_in(parent, key) or self.line)

    def index(self, parent: object, i: int) -> _At:
        return replace(self, path=f"{self.path}[{i}]", line=_line_in(parent, i) or self.line)

    def fail(self, detail: str, fix: str | None = None) -> NoReturn:
        raise ManifestError(
            detail,
            origin=self.origin,
            line=self.line,
            container=self.container,
            container_kind=self.container_kind,
            field=self.path or None,
            fix=fix,
        )


def _mapping(value: object, at: _At) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        at.fail(f"must be a mapping (key: value pairs), got {_describe(value)}")
    for key in value:
        if not isinstance(key, str):
            at.key(value, key).fail(f"field names must be strings, got {_describe(key)}")
    return value


def _sequence(value: object, at: _At) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        fix = "write it as a list: [ ... ] or lines starting with '- '"
        at.fail(f"must be a list, got {_describe(value)}", fix)
    return value


def _string(value: object, at: _At) -> str | None:
    if value is None or isinstance(value, str):
        return value
    fix = None
    if isinstance(value, bool | int | float):
        fix = "quote it to make it a string"
    at.fail(f"must be a string, got {_describe(value)}", fix)


def _strings(value: object, at: _At) -> tuple[str, ...]:
    items = _sequence(value, at)
    return tuple(_string(item, at.index(items, i)) or "" for i, item in enumerate(items))


def _integer(value: object, at: _At, bounds: tuple[int, int] = _INT32) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # sigs.k8s.io/yaml prints 3.0 as 3 before decoding
    if isinstance(value, bool) or not isinstance(value, int):
        fix = None
        if isinstance(value, str):
            digits = value.strip().removesuffix("s")
            if digits.isdigit():
                fix = f"write a plain number of seconds or count: {int(digits)}"
        at.fail(f"must be an integer, got {_describe(value)}", fix)
    lo, hi = bounds
    if not lo <= value <= hi:
        bits = 32 if bounds == _INT32 else 64
        at.fail(f"must fit in a {bits}-bit integer, got {value}")
    return value


def _int_or_string(value: object, at: _At) -> int | str | None:
    # IntOrString keeps the written type: "8080" in quotes stays a string (a port name)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        at.fail(f"must be a port number or a port name, got {_describe(value)}")
    return _integer(value, at)


def _check_fields(
    m: dict[str, Any], known: tuple[str, ...], at: _At, *, strict: bool, what: str
) -> None:
    """Refuse unknown fields (strict), or only the near-misses of known ones."""
    for key in m:
        if key in known:
            continue
        close = [k for k in known if k.lower() == key.lower()]
        close = close or difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        if not strict and not close:
            continue
        fix = f'did you mean "{close[0]}"?' if close else f"{what} fields: {', '.join(known)}"
        if key == "sleep" and what == "probe":
            fix = "probes have no sleep handler; sleep exists only for lifecycle hooks"
        replace(at, line=_line_in(m, key) or at.line).fail(f'unknown field "{key}"', fix)


# --- the model ---


def set_probe_defaults(probe: Probe) -> Probe:
    """`SetDefaults_Probe` (§2.1): a timeoutSeconds, periodSeconds, successThreshold or
    failureThreshold of 0 becomes 1, 10, 1 or 3. initialDelaySeconds keeps its 0, and negative
    values stay as they are, for validation to refuse."""
    return replace(
        probe,
        timeout_seconds=probe.timeout_seconds or 1,
        period_seconds=probe.period_seconds or 10,
        success_threshold=probe.success_threshold or 1,
        failure_threshold=probe.failure_threshold or 3,
    )


def _probe(value: object, at: _At) -> Probe | None:
    """A probe with `SetDefaults_Probe` and `SetDefaults_HTTPGetAction` applied (§2.1, §2.2)."""
    if value is None:
        return None
    m = _mapping(value, at)
    _check_fields(m, _PROBE_FIELDS, at, strict=True, what="probe")

    def number(key: str) -> int:
        # an absent field is the Go zero value, which defaulting then treats as a written 0
        return _integer(m.get(key), at.key(m, key)) or 0

    tgps = _integer(
        m.get("terminationGracePeriodSeconds"), at.key(m, "terminationGracePeriodSeconds"), _INT64
    )
    return set_probe_defaults(
        Probe(
            exec=_exec(m.get("exec"), at.key(m, "exec")),
            http_get=_http_get(m.get("httpGet"), at.key(m, "httpGet")),
            tcp_socket=_tcp_socket(m.get("tcpSocket"), at.key(m, "tcpSocket")),
            grpc=_grpc(m.get("grpc"), at.key(m, "grpc")),
            initial_delay_seconds=number("initialDelaySeconds"),
            timeout_seconds=number("timeoutSeconds"),
            period_seconds=number("periodSeconds"),
            success_threshold=number("successThreshold"),
            failure_threshold=number("failureThreshold"),
            termination_grace_period_seconds=tgps,
        )
    )


def _handler_map(value: object, at: _At, name: str) -> dict[str, Any] | None:
    if value is None:
        return None
    m = _mapping(value, at)
    _check_fields(m, _HANDLER_FIELDS[name], at, strict=False, what=name)
    return m


def _exec(value: object, at: _At) -> ExecAction | None:
    m = _handler_map(value, at, "exec")
    if m is None:
        return None
    return ExecAction(command=_strings(m.get("command"), at.key(m, "command")))


def _port(m: dict[str, Any], at: _At) -> int | str:
    port = _int_or_string(m.get("port"), at.key(m, "port"))
    # a missing IntOrString is the integer 0, which validation then refuses
    return 0 if port is None else port


def _http_get(value: object, at: _At) -> HTTPGetAction | None:
    m = _handler_map(value, at, "httpGet")
    if m is None:
        return None
    headers_at = at.key(m, "httpHeaders")
    headers = _sequence(m.get("httpHeaders"), headers_at)
    parsed: list[HTTPHeader] = []
    for i, item in enumerate(headers):
        h_at = headers_at.index(headers, i)
        h = _mapping(item, h_at)
        parsed.append(
            HTTPHeader(
                name=_string(h.get("name"), h_at.key(h, "name")) or "",
                value=_string(h.get("value"), h_at.key(h, "value")) or "",
            )
        )
    return HTTPGetAction(
        port=_port(m, at),
        path=_string(m.get("path"), at.key(m, "path")) or "/",
        host=_string(m.get("host"), at.key(m, "host")) or "",
        scheme=_string(m.get("scheme"), at.key(m, "scheme")) or "HTTP",
        http_headers=tuple(parsed),
    )


def _tcp_socket(value: object, at: _At) -> TCPSocketAction | None:
    m = _handler_map(value, at, "tcpSocket")
    if m is None:
        return None
    return TCPSocketAction(port=_port(m, at), host=_string(m.get("host"), at.key(m, "host")) or "")


def _grpc(value: object, at: _At) -> GRPCAction | None:
    m = _handler_map(value, at, "grpc")
    if m is None:
        return None
    port_at = at.key(m, "port")
    raw = m.get("port")
    if isinstance(raw, str):
        port_at.fail(
            f"must be an integer, got {_describe(raw)}",
            "gRPC probes take a port number; named ports are not supported",
        )
    return GRPCAction(
        port=_integer(raw, port_at) or 0,
        service=_string(m.get("service"), at.key(m, "service")),
    )


def _plain(value: Any) -> Any:
    """Drop the line bookkeeping from values kept as written (env valueFrom)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _env(value: object, at: _At) -> tuple[EnvVar, ...]:
    items = _sequence(value, at)
    out: list[EnvVar] = []
    for i, item in enumerate(items):
        e_at = at.index(items, i)
        e = _mapping(item, e_at)
        value_from = e.get("valueFrom")
        if value_from is not None:
            value_from = _plain(_mapping(value_from, e_at.key(e, "valueFrom")))
        literal = _string(e.get("value"), e_at.key(e, "value"))
        if literal is None and value_from is None:
            literal = ""  # v1.EnvVar.Value is a plain string: absent means empty, still set
        out.append(
            EnvVar(
                name=_string(e.get("name"), e_at.key(e, "name")) or "",
                value=literal,
                value_from=value_from,
            )
        )
    return tuple(out)


def _ports(value: object, at: _At) -> tuple[ContainerPort, ...]:
    items = _sequence(value, at)
    out: list[ContainerPort] = []
    for i, item in enumerate(items):
        p_at = at.index(items, i)
        p = _mapping(item, p_at)
        out.append(
            ContainerPort(
                container_port=_integer(p.get("containerPort"), p_at.key(p, "containerPort")) or 0,
                name=_string(p.get("name"), p_at.key(p, "name")) or None,
                # SetDefaults_ContainerPort
                protocol=_string(p.get("protocol"), p_at.key(p, "protocol")) or "TCP",
            )
        )
    return tuple(out)


def _restart_rules(value: object, at: _At) -> tuple[RestartRule, ...]:
    items = _sequence(value, at)
    out: list[RestartRule] = []
    for i, item in enumerate(items):
        r_at = at.index(items, i)
        r = _mapping(item, r_at)
        codes_at = r_at.key(r, "exitCodes")
        if r.get("exitCodes") is None:
            codes_at.fail("Required value: must be specified")
        codes = _mapping(r.get("exitCodes"), codes_at)
        values_at = codes_at.key(codes, "values")
        values = _sequence(codes.get("values"), values_at)
        out.append(
            RestartRule(
                action=_string(r.get("action"), r_at.key(r, "action")) or "",
                operator=_string(codes.get("operator"), codes_at.key(codes, "operator")) or "",
                values=tuple(
                    _integer(v, values_at.index(values, j)) or 0 for j, v in enumerate(values)
                ),
            )
        )
    return tuple(out)


def _container(value: object, at: _At, kind: ContainerKind) -> Container:
    m = _mapping(value, at)
    name = _string(m.get("name"), at.key(m, "name")) or ""
    if name:
        # below here, fields are named relative to the container
        at = replace(at, container=name, container_kind=_KIND_WORDS[kind], path="")
    _check_fields(m, _CONTAINER_FIELDS, at, strict=False, what="container")
    lifecycle_at = at.key(m, "lifecycle")
    lifecycle = _mapping(m.get("lifecycle"), lifecycle_at)
    pre_stop = lifecycle.get("preStop")
    if pre_stop is not None:
        _mapping(pre_stop, lifecycle_at.key(lifecycle, "preStop"))
    return Container(
        name=name,
        kind=kind,
        image=_string(m.get("image"), at.key(m, "image")),
        command=_strings(m.get("command"), at.key(m, "command")),
        args=_strings(m.get("args"), at.key(m, "args")),
        working_dir=_string(m.get("workingDir"), at.key(m, "workingDir")) or None,
        env=_env(m.get("env"), at.key(m, "env")),
        ports=_ports(m.get("ports"), at.key(m, "ports")),
        liveness_probe=_probe(m.get("livenessProbe"), at.key(m, "livenessProbe")),
        readiness_probe=_probe(m.get("readinessProbe"), at.key(m, "readinessProbe")),
        startup_probe=_probe(m.get("startupProbe"), at.key(m, "startupProbe")),
        restart_policy=_string(m.get("restartPolicy"), at.key(m, "restartPolicy")),
        restart_policy_rules=_restart_rules(
            m.get("restartPolicyRules"), at.key(m, "restartPolicyRules")
        ),
        has_pre_stop=pre_stop is not None,
    )


def _containers(spec: dict[str, Any], key: str, at: _At, kind: ContainerKind) -> list[Container]:
    list_at = at.key(spec, key)
    items = _sequence(spec.get(key), list_at)
    return [_container(item, list_at.index(items, i), kind) for i, item in enumerate(items)]


def _timestamp(value: object, at: _At) -> float | None:
    """An RFC 3339 time (YAML may already have made it a datetime) as epoch seconds."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.datetime.fromisoformat(value)
        except ValueError:
            at.fail(f"must be an RFC 3339 time, got {_describe(value)}")
    if not isinstance(value, datetime.datetime):
        at.fail(f"must be an RFC 3339 time, got {_describe(value)}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.UTC)
    return value.timestamp()


def _labels(value: object, at: _At) -> dict[str, str]:
    m = _mapping(value, at)
    return {k: _string(v, at.key(m, k)) or "" for k, v in m.items()}


@dataclass(frozen=True, slots=True)
class _Parsed:
    pod: Pod
    ephemeral: tuple[Container, ...]
    spec: dict[str, Any] = field(repr=False)

    def line_of(self, path: str) -> int | None:
        """The line of a validation error's path (`spec.containers[0]...`), or the nearest."""
        node: Any = self.spec
        line: int | None = getattr(node, "line", None)
        for part in path.removeprefix("spec.").replace("[", ".").replace("]", "").split("."):
            key: str | int = int(part) if part.isdigit() else part
            found = (isinstance(node, dict) and key in node) or (
                isinstance(node, list) and isinstance(key, int) and key < len(node)
            )
            if not found:
                break
            line = _line_in(node, key) or line
            node = node[key]
        return line


def _synthetic_uid(kind: str, namespace: str, name: str) -> str:
    # stable across runs, so a reloaded manifest keeps its probe keys
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"probetui:{kind}/{namespace}/{name}"))


def pod_from_object(obj: dict[str, Any], source: str) -> Pod:
    """A Pod object from the API (a dict), parsed but not validated: the API server did that."""
    return _pod_from_object(obj, "Pod", source).pod


def _pod_from_object(doc: dict[str, Any], kind: str, base: str) -> _Parsed:
    at = _At(origin=f"{base} ({kind})", line=getattr(doc, "line", None))
    meta_at = at.key(doc, "metadata")
    meta = _mapping(doc.get("metadata"), meta_at)
    name = _string(meta.get("name"), meta_at.key(meta, "name")) or _string(
        meta.get("generateName"), meta_at.key(meta, "generateName")
    )
    if not name:
        meta_at.key(meta, "name").fail("Required value", "give the object a name")
    namespace = _string(meta.get("namespace"), meta_at.key(meta, "namespace")) or "default"
    uid = _string(meta.get("uid"), meta_at.key(meta, "uid")) or _synthetic_uid(
        kind, namespace, name
    )
    at = replace(at, origin=f"{base} ({kind} {name})")
    deletion_at = meta_at.key(meta, "deletionTimestamp")
    deletion = _timestamp(meta.get("deletionTimestamp"), deletion_at)
    deletion_grace = _integer(
        meta.get("deletionGracePeriodSeconds"),
        meta_at.key(meta, "deletionGracePeriodSeconds"),
        _INT64,
    )

    template, template_at = doc, at
    for step in WORKLOAD_TEMPLATE_PATHS[kind]:
        template_at = template_at.key(template, step)
        if template.get(step) is None:
            template_at.fail("Required value", f"a {kind} needs a pod template")
        template = _mapping(template.get(step), template_at)
    template_meta_at = template_at.key(template, "metadata")
    template_meta = _mapping(template.get("metadata"), template_meta_at)
    labels = _labels(template_meta.get("labels"), template_meta_at.key(template_meta, "labels"))

    spec_at = template_at.key(template, "spec")
    spec = _mapping(template.get("spec"), spec_at)
    containers = _containers(spec, "containers", spec_at, ContainerKind.CONTAINER)
    init_containers = _containers(spec, "initContainers", spec_at, ContainerKind.INIT)
    ephemeral = _containers(spec, "ephemeralContainers", spec_at, ContainerKind.EPHEMERAL)
    restart_policy = _string(spec.get("restartPolicy"), spec_at.key(spec, "restartPolicy"))
    tgps = _integer(
        spec.get("terminationGracePeriodSeconds"),
        spec_at.key(spec, "terminationGracePeriodSeconds"),
        _INT64,
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
    at = _At(origin=base, line=getattr(doc, "line", None))
    if isinstance(doc, list):
        items: list[Any] = doc
    else:
        m = _mapping(doc, at)
        kind = _string(m.get("kind"), at.key(m, "kind"))
        if kind is None and "items" not in m:
            at.key(m, "kind").fail("Required value", "say what the object is, e.g. kind: Pod")
        if kind in WORKLOAD_TEMPLATE_PATHS:
            kinds_seen.append(kind)
            return [_pod_from_object(m, kind, base)]
        if "items" not in m or not (kind is None or kind.endswith("List")):
            kinds_seen.append(kind or "?")
            return []  # not something with pods in it (Service, ConfigMap, ...)
        items = _sequence(m.get("items"), at.key(m, "items"))
    parsed: list[_Parsed] = []
    for i, item in enumerate(items, start=1):
        parsed.extend(_from_document(item, f"{base}, item {i}", kinds_seen))
    return parsed


def _parse(text: str, source: str) -> list[_Parsed]:
    kinds_seen: list[str] = []
    parsed: list[_Parsed] = []
    for n, doc in enumerate(_documents(text, source), start=1):
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
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ManifestError(f"cannot read: {e.strerror or e}", origin=str(path)) from None
    except UnicodeDecodeError as e:
        raise ManifestError(f"not UTF-8 text: {e.reason}", origin=str(path)) from None
    return parse_pods(text, str(path), validate=validate)
