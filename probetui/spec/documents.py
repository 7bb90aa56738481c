"""Split manifest text into documents: a YAML or JSON stream, with the line of every key and item.

Mappings and lists come back as `dict` and `list` subclasses that carry `line` (their own) and
`lines` (each key's or item's), which `line_in` reads, so that an error further up can name the
line in the file. YAML is read as go-yaml reads it where PyYAML would differ: a key set twice in
one mapping is an error. A JSON stream is accepted as kubectl accepts it, and read a second time
as YAML for the line numbers whenever that gives the same data.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable
from typing import Any

import yaml

from probetui.spec import yaml_safe
from probetui.spec.errors import LimitExceeded, ManifestError

__all__ = ["documents", "line_in"]


# no __init__ of their own, since a Python __init__ is dear on the read of every manifest;
# whoever makes one sets both slots


class _LineDict(dict):  # type: ignore[type-arg]
    """Remembers the line of each key of a mapping (1-based)."""

    __slots__ = ("line", "lines")
    line: int | None
    lines: dict[Any, int]


class _LineList(list):  # type: ignore[type-arg]
    """Remembers the line of each item of a sequence (1-based)."""

    __slots__ = ("line", "lines")
    line: int | None
    lines: list[int]


_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
# the scalar tags the fast path builds itself (each a pure function of the text, so memoised);
# any other tag, like a merge key, an alias or a duplicate key, sends the document down
# PyYAML's own constructors, which also give any error its usual words
_PLAIN_SCALARS = frozenset(
    (
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:timestamp",
    )
)


_MAX_DEPTH = yaml_safe.MAX_DEPTH


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    # libyaml asks the resolver for the tag of every scalar; a manifest repeats its plain
    # values ("TCP", "10", "true") thousands of times, and the answer depends on the text alone
    # (this loader has no path resolvers)
    bounds: yaml_safe.Bounds  # what the stream's aliases have repeated, set by the reader

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._tags: dict[str, str] = {}
        self._scalars: dict[tuple[str, str], Any] = {}

    def resolve(self, kind: type, value: str | None, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            tag = self._tags.get(value)  # type: ignore[arg-type]
            if tag is None:
                tag = self._tags[value] = super().resolve(kind, value, implicit)  # type: ignore[index]
            return tag
        return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterable[_LineDict]:
    data = _LineDict()
    data.line = node.start_mark.line + 1
    data.lines = {}
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
        if key_node.tag == _STR_TAG:
            # a string key is its text, not constructed again: it is the commonest node
            data.lines[key_node.value] = key_node.start_mark.line + 1
            continue
        # an unhashable key was already refused by construct_mapping
        with contextlib.suppress(TypeError):
            data.lines[loader.construct_object(key_node)] = key_node.start_mark.line + 1


def _construct_seq(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Iterable[_LineList]:
    data = _LineList()
    data.line = node.start_mark.line + 1
    data.lines = []
    yield data
    data.extend(loader.construct_sequence(node))
    data.lines = [item.start_mark.line + 1 for item in node.value]


_Loader.add_constructor(_MAP_TAG, _construct_map)
_Loader.add_constructor(_SEQ_TAG, _construct_seq)


class _Slow(Exception):
    """Signals that the document needs PyYAML's own constructors (above)."""


def _fast(loader: _Loader, node: yaml.Node, built: dict[int, Any], depth: int) -> Any:
    """Return a node as the constructors above make it, for the documents manifests are: plain
    scalars, string keys set once. A straight walk, without the constructor's bookkeeping per
    node (most of a manifest's read); anything else raises _Slow. `built` holds
    each collection by node, so that an alias is the same object, as PyYAML makes it; what
    aliases repeat is counted in the loader's `bounds`, and `depth` is the node's nesting."""
    cls = node.__class__
    if cls is yaml.ScalarNode:
        tag = node.tag
        if tag == _STR_TAG:
            return node.value
        if tag not in _PLAIN_SCALARS:
            raise _Slow
        key = (tag, node.value)
        try:
            return loader._scalars[key]
        except KeyError:
            value = loader._scalars[key] = loader.yaml_constructors[tag](loader, node)
            return value
    done = built.get(id(node), _Slow)
    if done is None:
        raise _Slow  # a collection that contains itself
    if done is not _Slow:
        loader.bounds.repeat(node, depth)
        return done  # an alias of one already built
    if depth > _MAX_DEPTH:
        raise yaml_safe.LimitError(yaml_safe.TOO_DEEP, node.start_mark)
    built[id(node)] = None
    if cls is yaml.MappingNode and node.tag == _MAP_TAG:
        data = _LineDict()
        data.line = node.start_mark.line + 1
        data.lines = lines = {}
        for key_node, value_node in node.value:
            if key_node.__class__ is not yaml.ScalarNode or key_node.tag != _STR_TAG:
                raise _Slow
            key = key_node.value
            if key in data:
                raise _Slow  # set twice: refused, in the constructor's words
            if value_node.__class__ is yaml.ScalarNode and value_node.tag == _STR_TAG:
                data[key] = value_node.value  # most values: no call for them
            else:
                data[key] = _fast(loader, value_node, built, depth + 1)
            lines[key] = key_node.start_mark.line + 1
        built[id(node)] = data
        return data
    if cls is yaml.SequenceNode and node.tag == _SEQ_TAG:
        items = _LineList()
        items.line = node.start_mark.line + 1
        items.extend([_fast(loader, item, built, depth + 1) for item in node.value])
        items.lines = [item.start_mark.line + 1 for item in node.value]
        built[id(node)] = items
        return items
    raise _Slow


def _document(loader: _Loader, node: yaml.Node) -> Any:
    bounds = loader.bounds
    bounds.begin()
    before = bounds.repeated
    try:
        return _fast(loader, node, {}, 1)
    except yaml_safe.LimitError:
        raise
    except Exception:
        # _Slow, or a value the fast path cannot build (a bad !!int): PyYAML builds it, or
        # refuses it with its own message, once the whole graph is within the bounds
        bounds.repeated = before
        bounds.check(node)
        return yaml_safe.construct(loader, node)


def _yaml_fix(text: str, line: int | None) -> str | None:
    # libyaml's message does not name the tab, so look at the line itself
    lines = text.splitlines()
    if line is not None and 0 <= line < len(lines):
        indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
        if "\t" in indent:
            return "YAML indentation must use spaces, not tabs"
    return None


def _yaml_documents(
    text: str, source: str, bounds: yaml_safe.Bounds, shallow: bool = False
) -> list[Any]:
    """Return the documents of a YAML stream; `shallow`: the text is known to nest no deeper than
    libyaml's composer can take (it was read as JSON), so it need not be checked first."""
    docs: list[Any] = []
    try:
        if not shallow:
            yaml_safe.check_text(text)
    except yaml_safe.LimitError as e:
        raise _limit(e, source, docs) from None
    loader = _Loader(text)
    loader.bounds = bounds
    try:
        while loader.check_node():
            docs.append(_document(loader, loader.get_node()))
    except yaml_safe.LimitError as e:
        raise _limit(e, source, docs) from None
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


def _limit(e: yaml_safe.LimitError, source: str, docs: list[Any]) -> LimitExceeded:
    mark = e.problem_mark
    return LimitExceeded(
        str(e.problem),
        origin=f"{source}, document {len(docs) + 1}" if mark is not None else source,
        line=mark.line + 1 if mark is not None else None,
    )


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
        except RecursionError:
            raise LimitExceeded(yaml_safe.TOO_DEEP, origin=source) from None
        except json.JSONDecodeError as e:
            raise ManifestError(
                f"invalid JSON: {e.msg}, column {e.colno}",
                origin=f"{source}, document {len(docs) + 1}",
                line=e.lineno,
            ) from None
        except ValueError as e:
            # a number of more digits than Python converts
            raise ManifestError(
                f"invalid JSON: {yaml_safe.value_problem(e)}",
                origin=f"{source}, document {len(docs) + 1}",
            ) from None
        docs.append(doc)


def documents(text: str, source: str, bounds: yaml_safe.Bounds | None = None) -> list[Any]:
    """Return every document of a YAML stream or JSON stream; a syntax error is a ManifestError, and
    an input past the readers' bounds (`yaml_safe`) a LimitExceeded. `bounds` carries what
    aliases have repeated across calls, for a stream read in parts."""
    if bounds is None:
        bounds = yaml_safe.Bounds()
    if len(text) > yaml_safe.MAX_BYTES:
        raise LimitExceeded(yaml_safe.TOO_LARGE, origin=source)
    if text.startswith("\ufeff"):
        text = text[1:]
    if text.lstrip()[:1] not in ("{", "["):
        return _yaml_documents(text, source, bounds)
    try:
        docs = _json_documents(text, source)
    except LimitExceeded:
        raise
    except ManifestError as json_error:
        # "{a: 1}" is a YAML flow mapping, not JSON: report the JSON error only if YAML fails too
        try:
            return _yaml_documents(text, source, bounds)
        except LimitExceeded:
            raise
        except ManifestError:
            raise json_error from None
    # JSON is (nearly) YAML: read it again as YAML for line numbers, when that gives the same
    # data; Python's JSON decoder stops at its recursion limit, far above MAX_DEPTH and far
    # below what libyaml's composer takes, which then refuses past MAX_DEPTH on its own
    try:
        with_lines = _yaml_documents(text, source, bounds, shallow=True)
    except LimitExceeded:
        raise
    except ManifestError:
        _check_depth(docs, source)
        return docs
    return with_lines if with_lines == docs else docs


def _check_depth(docs: list[Any], source: str) -> None:
    """Refuse JSON documents nested past the bound (the YAML reading checks its own)."""
    stack = [(doc, 1) for doc in docs if isinstance(doc, dict | list)]
    while stack:
        node, depth = stack.pop()
        if depth > yaml_safe.MAX_DEPTH:
            raise LimitExceeded(yaml_safe.TOO_DEEP, origin=source)
        items = node.values() if isinstance(node, dict) else node
        stack.extend((item, depth + 1) for item in items if isinstance(item, dict | list))


def line_in(parent: object, key: object) -> int | None:
    """Return the line of a key of a mapping or an item of a list `documents` made; None if
    unknown."""
    lines = getattr(parent, "lines", None)
    if isinstance(lines, dict):
        return lines.get(key)
    if isinstance(lines, list) and isinstance(key, int) and 0 <= key < len(lines):
        return lines[key]
    return None
