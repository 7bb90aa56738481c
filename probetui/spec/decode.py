"""Read decoded manifest values by type, each failure naming its place.

The API server decodes a manifest strictly: a string where an integer belongs, or an integer
past int32, is refused before any validation runs. These readers refuse the same, and `At`
carries where the value sits (document, container, field path, line) into the ManifestError.
`check_fields` refuses unknown fields where the API type is closed, and near-miss spellings
everywhere.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, NoReturn

from probetui.spec.documents import line_in
from probetui.spec.errors import ManifestError

__all__ = [
    "INT32",
    "INT64",
    "At",
    "check_fields",
    "describe",
    "int_or_string",
    "integer",
    "mapping",
    "sequence",
    "string",
    "strings",
]

# the bounds of Go's int32 and int64 fields
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)


def describe(value: object) -> str:
    """Return a value as an error message names it: `the number 3`, `the string "x"`, `a list`."""
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


_UNKNOWN: Any = object()
_new = object.__new__


class At:
    """Says where a value sits: document, container, field path and line, for error messages.

    A manifest's every field takes one and nearly none is ever read, so `key` and `index`
    only remember their parent: the path and the line are worked out when an error asks, not
    for every field (guarded by benchmarks/lint.py's read)."""

    __slots__ = ("_key", "_line", "_node", "_path", "_up", "container", "container_kind", "origin")

    def __init__(
        self,
        origin: str,
        path: str = "",
        line: int | None = None,
        container: str | None = None,
        container_kind: str = "container",
    ) -> None:
        self.origin = origin
        self.container = container
        self.container_kind = container_kind
        self._up: At | None = None
        self._node: object = None
        self._key: object = None
        # _UNKNOWN until asked; a path of None is an index's, still to be made
        self._path: Any = path
        self._line: Any = line

    # key and index build the object by hand: an __init__ call for each of a manifest's fields
    # was most of what they cost
    def key(self, parent: object, key: str) -> At:
        at = _new(At)
        at.origin = self.origin
        at.container = self.container
        at.container_kind = self.container_kind
        at._up = self
        at._node = parent
        at._key = key
        at._path = _UNKNOWN
        at._line = _UNKNOWN
        return at

    def index(self, parent: object, i: int) -> At:
        at = _new(At)
        at.origin = self.origin
        at.container = self.container
        at.container_kind = self.container_kind
        at._up = self
        at._node = parent
        at._key = i
        at._path = None
        at._line = _UNKNOWN
        return at

    @property
    def path(self) -> str:
        path = self._path
        if path is _UNKNOWN or path is None:
            assert self._up is not None
            up = self._up.path
            if path is None:  # an index
                path = f"{up}[{self._key}]"
            else:
                path = f"{up}.{self._key}" if up else str(self._key)
            self._path = path
        return path

    @property
    def line(self) -> int | None:
        line = self._line
        if line is _UNKNOWN:
            assert self._up is not None
            line = self._line = line_in(self._node, self._key) or self._up.line
        return line

    def replace(
        self,
        *,
        origin: str = _UNKNOWN,
        path: str = _UNKNOWN,
        line: int | None = _UNKNOWN,
        container: str | None = _UNKNOWN,
        container_kind: str = _UNKNOWN,
    ) -> At:
        """This place with some of its parts changed; a path or line given is not worked out
        first (a container's place drops its path)."""
        return At(
            self.origin if origin is _UNKNOWN else origin,
            self.path if path is _UNKNOWN else path,
            self.line if line is _UNKNOWN else line,
            self.container if container is _UNKNOWN else container,
            self.container_kind if container_kind is _UNKNOWN else container_kind,
        )

    def __repr__(self) -> str:
        return (
            f"At(origin={self.origin!r}, path={self.path!r}, line={self.line!r}, "
            f"container={self.container!r}, container_kind={self.container_kind!r})"
        )

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


def mapping(value: object, at: At) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        at.fail(f"must be a mapping (key: value pairs), got {describe(value)}")
    for key in value:
        if not isinstance(key, str):
            at.key(value, key).fail(f"field names must be strings, got {describe(key)}")
    return value


def sequence(value: object, at: At) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        fix = "write it as a list: [ ... ] or lines starting with '- '"
        at.fail(f"must be a list, got {describe(value)}", fix)
    return value


def string(value: object, at: At) -> str | None:
    if value is None or isinstance(value, str):
        return value
    fix = None
    if isinstance(value, bool | int | float):
        fix = "quote it to make it a string"
    at.fail(f"must be a string, got {describe(value)}", fix)


def strings(value: object, at: At) -> tuple[str, ...]:
    items = sequence(value, at)
    return tuple(string(item, at.index(items, i)) or "" for i, item in enumerate(items))


def integer(value: object, at: At, bounds: tuple[int, int] = INT32) -> int | None:
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
        at.fail(f"must be an integer, got {describe(value)}", fix)
    lo, hi = bounds
    if not lo <= value <= hi:
        bits = 32 if bounds == INT32 else 64
        at.fail(f"must fit in a {bits}-bit integer, got {value}")
    return value


def int_or_string(value: object, at: At) -> int | str | None:
    # IntOrString keeps the written type: "8080" in quotes stays a string (a port name)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        at.fail(f"must be a port number or a port name, got {describe(value)}")
    return integer(value, at)


def check_fields(
    m: dict[str, Any], known: tuple[str, ...], at: At, *, strict: bool, what: str
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
        at.replace(line=line_in(m, key) or at.line).fail(f'unknown field "{key}"', fix)
