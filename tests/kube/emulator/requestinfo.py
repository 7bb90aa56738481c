"""What a request is, in the apiserver's terms (k8s.io/apiserver/pkg/endpoints/request
RequestInfoFactory), and the record the emulator keeps of each one.

The verb comes from the method (GET -> get, or list/watch on a collection; POST -> create;
PUT -> update; PATCH -> patch; DELETE -> delete/deletecollection), as RBAC sees it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})
READ_VERBS = frozenset({"get", "list", "watch"})
_METHOD_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
# namespace subresources that stay on the namespace rather than naming a resource
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def parse_bool(value: str | None) -> bool | None:
    """Go's strconv.ParseBool, which the apiserver uses for boolean query parameters."""
    if value is None:
        return None
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise ValueError(f'strconv.ParseBool: parsing "{value}": invalid syntax')


@dataclass(frozen=True, slots=True)
class RequestInfo:
    path: str
    verb: str
    resource_request: bool = False
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""  # as RBAC sees it (a list pinned by metadata.name= carries the name)
    path_name: str = ""  # the name segment of the URL, if any
    parts: tuple[str, ...] = ()  # resource, name, subresource, then the rest (proxy paths)


def request_info(method: str, path: str, query: Mapping[str, str]) -> RequestInfo:
    verb = _METHOD_VERBS.get(method.upper(), method.lower())
    segments = [s for s in path.split("/") if s]
    if not segments or segments[0] not in ("api", "apis"):
        return RequestInfo(path, verb)
    if segments[0] == "api":
        group, rest = "", segments[1:]
    else:
        if len(segments) < 3:
            return RequestInfo(path, verb)
        group, rest = segments[1], segments[2:]
    if len(rest) < 2:
        return RequestInfo(path, verb)  # discovery documents
    version, rest = rest[0], rest[1:]
    watch_prefix = rest[0] == "watch"
    if watch_prefix:
        rest = rest[1:]
        verb = "watch"
        if not rest:
            return RequestInfo(path, verb)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    path_name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    name = path_name
    if not path_name and verb == "get":
        verb = "watch" if parse_bool_lenient(query.get("watch")) else "list"
    if not path_name and verb in ("list", "watch"):
        pinned = _pinned_name(query.get("fieldSelector", ""))
        if pinned:
            name = pinned
    if not path_name and verb == "delete":
        verb = "deletecollection"
    return RequestInfo(
        path,
        verb,
        True,
        group,
        version,
        resource,
        subresource,
        namespace,
        name,
        path_name,
        tuple(rest),
    )


def parse_bool_lenient(value: str | None) -> bool:
    try:
        return bool(parse_bool(value))
    except ValueError:
        return False


def _pinned_name(selector: str) -> str:
    for term in selector.split(","):
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and not key.endswith("!"):
                return value
    return ""


@dataclass(slots=True)
class RequestRecord:
    """One request as the emulator saw it; `status` is the HTTP status it answered with."""

    method: str
    path: str
    query: dict[str, list[str]]
    verb: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user: str
    websocket: bool
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def read_only(self) -> bool:
        """GET of get/list/watch, no exec/attach/portforward/proxy: what --read-only allows."""
        return (
            self.method in ("GET", "HEAD")
            and (self.verb in READ_VERBS or not self.resource)
            and self.subresource not in CONNECT_SUBRESOURCES
        )

    def params(self, key: str) -> Sequence[str]:
        return self.query.get(key, [])
