"""Match label selectors as kubectl's `-l` takes them (`labels.Parse` in k8s.io/apimachinery).

They serve `replay -l`, matched against the labels of the recorded specs.

`k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`, `k<1`, joined by commas;
`!=` and `notin` also match pods without the label, as upstream. (The cluster view hands `-l`
to the API server, so probetui had no matcher of its own; the API emulator's, under tests/, is
the model for this one.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

_TOKEN = re.compile(r"\s*(!=|==|=|!|>|<|\(|\)|,|[^\s!=><(),]+)")


class SelectorError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present:
            return False
        try:
            have = int(value)
        except ValueError:
            return False
        want = int(self.values[0])
        return have > want if self.op == "gt" else have < want


@dataclass(frozen=True, slots=True)
class Selector:
    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        have = labels or {}
        return all(r.matches(have) for r in self.requirements)


def parse_selector(text: str | None) -> Selector:
    if not text or not text.strip():
        return Selector()
    tokens = _lex(text)
    reqs: list[Requirement] = []
    i = 0

    def take() -> str | None:
        nonlocal i
        tok = tokens[i] if i < len(tokens) else None
        i += 1
        return tok

    def peek() -> str | None:
        return tokens[i] if i < len(tokens) else None

    while True:
        tok = take()
        if tok == "!":
            key = take()
            if not _is_id(key):
                raise SelectorError(f"{text!r}: expected a label key after '!'")
            reqs.append(Requirement(str(key), "!"))
        elif _is_id(tok):
            key = str(tok)
            op = peek()
            if op in (None, ","):
                reqs.append(Requirement(key, "exists"))
            elif op in ("in", "notin"):
                take()
                if take() != "(":
                    raise SelectorError(f"{text!r}: expected '(' after {op}")
                values: list[str] = []
                while True:
                    v = take()
                    if v == ")" and not values:
                        break
                    if not _is_id(v):
                        raise SelectorError(f"{text!r}: expected a value in {op} (...)")
                    values.append(str(v))
                    sep = take()
                    if sep == ")":
                        break
                    if sep != ",":
                        raise SelectorError(f"{text!r}: expected ',' or ')' in {op} (...)")
                reqs.append(Requirement(key, op, tuple(values)))
            elif op in ("=", "==", "!=", ">", "<"):
                take()
                v = peek()
                value = "" if v in (None, ",") else str(take())
                if not (value == "" or _is_id(value)):
                    raise SelectorError(f"{text!r}: expected a value after {op}")
                if op in (">", "<"):
                    if not value.lstrip("-").isdigit():
                        raise SelectorError(f"{text!r}: {op} takes an integer")
                    reqs.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                else:
                    reqs.append(Requirement(key, "notin" if op == "!=" else "in", (value,)))
            else:
                raise SelectorError(f"{text!r}: unexpected {op!r} after {key!r}")
        else:
            raise SelectorError(f"{text!r}: expected a label key, found {tok!r}")
        sep = take()
        if sep is None:
            return Selector(tuple(reqs))
        if sep != ",":
            raise SelectorError(f"{text!r}: expected ',' between requirements, found {sep!r}")


def _lex(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if m is None:
            raise SelectorError(f"{text!r}: cannot read it as a label selector")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


def _is_id(tok: str | None) -> bool:
    return tok is not None and tok not in ("!=", "==", "=", "!", ">", "<", "(", ")", ",")


__all__ = ["Selector", "SelectorError", "parse_selector"]
