"""Label and field selectors with the grammar and matching rules of k8s.io/apimachinery.

Labels (`labels.Parse`): `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`,
`k<1`, joined by commas. `!=` and `notin` also match objects that lack the label, as upstream.
Fields (`fields.ParseSelector`): `key=value`, `key==value`, `key!=value`, joined by commas, with
backslash escapes; the keys a resource supports are checked by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class SelectorError(ValueError):
    """A selector the apiserver would refuse with 400 BadRequest; the text is its message."""


_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SPECIAL = ("!=", "==", "=", "!", ">", "<", "(", ")", ",")
_ID_CHARS = re.compile(r"[^\s!=><(),]+")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # in, notin, =, !=, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        match self.op:
            case "in" | "=":
                return present and value in self.values
            case "notin" | "!=":
                return not present or value not in self.values
            case "exists":
                return present
            case "!":
                return not present
            case "gt" | "lt":
                if not present:
                    return False
                try:
                    have = int(value)
                except ValueError:
                    return False
                want = int(self.values[0])
                return have > want if self.op == "gt" else have < want
        return False


@dataclass(frozen=True, slots=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements


def _lex(text: str) -> list[str]:
    tokens: list[str] = []
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        for special in _SPECIAL:
            if text.startswith(special, i):
                tokens.append(special)
                i += len(special)
                break
        else:
            m = _ID_CHARS.match(text, i)
            assert m is not None
            tokens.append(m.group())
            i = m.end()
    return tokens


def _check_key(key: str) -> None:
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _PREFIX.match(prefix))) or (
        len(name) > 63 or not _NAME.match(name)
    ):
        raise SelectorError(
            f'unable to parse requirement: key: Invalid value: "{key}": name part must consist '
            "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character"
        )


def _check_value(key: str, value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(
            f'unable to parse requirement: values[0][{key}]: Invalid value: "{value}": a valid '
            "label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character"
        )


def parse_labels(text: str | None) -> LabelSelector:
    """`labels.Parse`: raises SelectorError with the apiserver's message on bad input."""
    if not text or not text.strip():
        return LabelSelector()
    tokens = _lex(text)
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str | None:
        nonlocal pos
        tok = peek()
        pos += 1
        return tok

    def is_id(tok: str | None) -> bool:
        return tok is not None and tok not in _SPECIAL

    reqs: list[Requirement] = []
    while True:
        tok = take()
        if tok == "!":
            key = take()
            if not is_id(key):
                raise SelectorError(f"found '{key}', expected: identifier after '!'")
            assert key is not None
            _check_key(key)
            reqs.append(Requirement(key, "!"))
        elif is_id(tok):
            assert tok is not None
            key = tok
            _check_key(key)
            op = peek()
            if op in (None, ","):
                reqs.append(Requirement(key, "exists"))
            elif op in ("in", "notin"):
                take()
                if take() != "(":
                    raise SelectorError(f"found '{peek()}', expected: '('")
                values: list[str] = []
                while True:
                    v = take()
                    if v == ")":
                        values = values or [""]
                        break
                    if not is_id(v):
                        raise SelectorError(f"found '{v}', expected: ',', ')' or identifier")
                    assert v is not None
                    _check_value(key, v)
                    values.append(v)
                    sep = take()
                    if sep == ")":
                        break
                    if sep != ",":
                        raise SelectorError(f"found '{sep}', expected: ',' or ')'")
                reqs.append(Requirement(key, op, tuple(values)))
            elif op in ("=", "==", "!=", ">", "<"):
                take()
                value = peek()
                if is_id(value):
                    take()
                else:
                    value = ""
                assert value is not None
                if op in (">", "<"):
                    if not value.isdigit():
                        raise SelectorError(
                            f"unable to parse requirement: for 'Gt', 'Lt' operators, the value "
                            f"must be an integer: {value!r}"
                        )
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                else:
                    _check_value(key, value)
                    reqs.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
            else:
                raise SelectorError(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")
        else:
            raise SelectorError(f"found '{tok}', expected: !, identifier, or 'end of string'")
        nxt = take()
        if nxt is None:
            break
        if nxt != ",":
            raise SelectorError(f"found '{nxt}', expected: ',' or 'end of string'")
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class FieldTerm:
    field: str
    value: str
    negate: bool


@dataclass(frozen=True, slots=True)
class FieldSelector:
    terms: tuple[FieldTerm, ...] = ()

    def matches(self, fields: Mapping[str, str]) -> bool:
        return all((fields.get(t.field, "") == t.value) != t.negate for t in self.terms)

    def check(self, supported: Callable[[str], bool]) -> None:
        for term in self.terms:
            if not supported(term.field):
                raise SelectorError(f"field label not supported: {term.field}")

    def value_of(self, field: str) -> str | None:
        """The value an equality term pins `field` to (`metadata.name=x`), if any."""
        for term in self.terms:
            if term.field == field and not term.negate:
                return term.value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in text:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if escaped:
        current.append("\\")
    parts.append("".join(current))
    return parts


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in "\\,=!":
            out.append(text[i + 1])
            i += 2
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _find_unescaped(text: str, op: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(op, i):
            return i
        i += 1
    return -1


def parse_fields(text: str | None) -> FieldSelector:
    """`fields.ParseSelector`: raises SelectorError on a term without an operator."""
    if not text:
        return FieldSelector()
    terms: list[FieldTerm] = []
    for part in _split_unescaped(text, ","):
        if part == "":
            continue
        for op, negate in (("!=", True), ("==", False), ("=", False)):
            at = _find_unescaped(part, op)
            if at >= 0:
                terms.append(
                    FieldTerm(
                        _unescape(part[:at]).strip(),
                        _unescape(part[at + len(op) :]),
                        negate,
                    )
                )
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
    return FieldSelector(tuple(terms))
