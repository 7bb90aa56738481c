"""Read YAML within bounds: the size of an input, how deep it nests, what its aliases repeat.

Every YAML reader of probetui (manifests, scenarios, config files, kubeconfigs) reads through
here, so that no input can take the memory or the stack:

- a file or stdin is read up to `MAX_BYTES`, and refused past it;
- nesting is refused past `MAX_DEPTH` levels (an alias counting as deep as what it stands
  for), before libyaml's composer sees the text: it recurses on the C stack and ends the
  process (SIGSEGV) when that runs out, and PyYAML's own composer raises RecursionError;
- aliases may repeat at most `MAX_ALIAS_NODES` nodes in one stream: a "billion laughs" is a
  few hundred bytes whose aliases expand to 10^9 nodes in whatever walks the result;
- a value PyYAML's constructors raise ValueError on (a 13th month, a number of more digits
  than Python converts) is a ConstructorError like its other refusals (`construct`);
- an alias inside the node it names (a recursive structure) is refused, since no manifest or
  setting is one and every walker of the result would recurse for ever.

The errors are `yaml.MarkedYAMLError`s (`LimitError`), so a reader's `except yaml.YAMLError`
already says them in one line; reading a file's bytes raises `TextError`. This module imports
nothing of probetui, so config/, spec/ and runtime/ can all use it.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import yaml

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_BYTES",
    "MAX_DEPTH",
    "Bounds",
    "LimitError",
    "TextError",
    "check_text",
    "construct",
    "load",
    "read_stream",
    "read_text",
    "value_problem",
]

MAX_BYTES = 8 * 1024 * 1024
MAX_DEPTH = 100
MAX_ALIAS_NODES = 100_000

TOO_LARGE = (
    f"larger than {MAX_BYTES // (1024 * 1024)} MiB, the limit for a YAML or JSON input "
    "(split it into smaller files)"
)
TOO_DEEP = (
    f"nested deeper than {MAX_DEPTH} levels, the limit for a YAML or JSON input "
    "(flatten the structure)"
)
TOO_MANY_ALIASES = (
    f"aliases expand to more than {MAX_ALIAS_NODES} nodes, the limit for a YAML input "
    "(write the repeated parts out instead of aliasing them)"
)
RECURSIVE = "an alias inside the node it names (a recursive structure): write it out without it"

# libyaml's composer recurses in C for each level: a cheap test proves most texts shallow enough
# for it (a flow level needs a "[" or "{", two block levels one more column of indentation or
# "- "/"? " before the content), and only the others are parsed once more to count exactly;
# the bound is far below where the C stack runs out, and MAX_DEPTH is then checked exactly
_FLOW_SAFE = 2000
_PREFIX_SAFE = 1000
_PREFIX = rf"[ \t?:-]{{{_PREFIX_SAFE}}}"
# YAML breaks lines at \r, \x85, \u2028 and \u2029 too; a search for "\n" alone is the quicker
_LONG_PREFIX_LF = re.compile(rf"\n{_PREFIX}")
_LONG_PREFIX_ANY = re.compile(f"[\r\n\x85\u2028\u2029]{_PREFIX}")
_FIRST_PREFIX = re.compile(_PREFIX)
_OTHER_BREAKS = ("\r", "\x85", "\u2028", "\u2029")
_Parser: Callable[[str], Any] = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


class LimitError(yaml.MarkedYAMLError):
    """Signals an input past one of the bounds; `problem` is one line saying which, and the
    limit."""

    def __init__(self, problem: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class TextError(ValueError):
    """Signals a file or stream that cannot be YAML text: too large, or not UTF-8. One line."""


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """Return a file's text, at most MAX_BYTES of it; OSError as `open` raises it, else
    TextError."""
    with open(path, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    return _decode(data, encoding)


def read_stream(stream: IO[str]) -> str:
    """Return a text stream (stdin) read as `read_text` reads a file: bytes where it has them."""
    raw = getattr(stream, "buffer", None)
    if raw is not None:
        return _decode(raw.read(MAX_BYTES + 1), "utf-8-sig")
    text = stream.read(MAX_BYTES + 1)
    if len(text) > MAX_BYTES:
        raise TextError(TOO_LARGE)
    return text


def _decode(data: bytes, encoding: str) -> str:
    if len(data) > MAX_BYTES:
        raise TextError(TOO_LARGE)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        raise TextError(f"not UTF-8 text: {e.reason} at byte {e.start}") from None


def check_text(text: str) -> None:
    """Refuse text over MAX_BYTES characters, or nested deeper than MAX_DEPTH (LimitError)."""
    if len(text) > MAX_BYTES:
        raise LimitError(TOO_LARGE)
    if text.count("[") + text.count("{") <= _FLOW_SAFE and not _long_prefix(text):
        return
    depth = 0
    parser = None
    try:
        parser = _Parser(text)
        while (event := parser.get_event()) is not None:
            if isinstance(event, _OPEN):
                depth += 1
                if depth > MAX_DEPTH:
                    raise LimitError(TOO_DEEP, event.start_mark)
            elif isinstance(event, _CLOSE):
                depth -= 1
            elif isinstance(event, yaml.StreamEndEvent):
                break
    except LimitError:
        raise
    except yaml.YAMLError:
        # a syntax error: the reader meets it at the same place, after the same nesting, and
        # says it in its own words
        return
    finally:
        if parser is not None:
            parser.dispose()


def _long_prefix(text: str) -> bool:
    """Tell whether a line starts with _PREFIX_SAFE or more spaces, tabs and block indicators."""
    if _FIRST_PREFIX.match(text):
        return True
    if any(b in text for b in _OTHER_BREAKS):
        return _LONG_PREFIX_ANY.search(text) is not None
    return _LONG_PREFIX_LF.search(text) is not None


def _children(node: yaml.Node) -> Iterable[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return itertools.chain.from_iterable(node.value)
    return node.value  # type: ignore[no-any-return]


def _collection(node: object) -> bool:
    return isinstance(node, yaml.MappingNode | yaml.SequenceNode)


class Bounds:
    """Tracks what one stream's documents have repeated through aliases, checked against the bounds.

    `repeat(node, depth)` counts a collection met again (an alias of it) at `depth`;
    `check(node)` walks one document's node graph for all the bounds. An alias counts against
    the nesting too, as what it stands for: a chain of aliases each adding a hundred levels is
    thousands of levels deep to whatever walks the result. The nodes' sizes are kept for one
    document (`begin` forgets them): a node's id is reused once its document is gone.
    """

    __slots__ = ("_sizes", "repeated")

    def __init__(self) -> None:
        self.repeated = 0
        self._sizes: dict[int, tuple[int, int]] = {}

    def begin(self) -> None:
        """Forget the node sizes of the document before."""
        self._sizes = {}

    def repeat(self, node: yaml.Node, depth: int) -> None:
        """An alias of `node`, a collection with no alias to itself inside, at `depth`."""
        size, height = self._size(node)
        if depth - 1 + height > MAX_DEPTH:
            raise LimitError(TOO_DEEP, node.start_mark)
        self.repeated += size
        if self.repeated > MAX_ALIAS_NODES:
            raise LimitError(TOO_MANY_ALIASES)

    def _size(self, node: yaml.Node) -> tuple[int, int]:
        """Return the number of nodes in `node` and the levels of collections, with every alias in
        it written out."""
        sizes = self._sizes
        known = sizes.get(id(node))
        if known is not None:
            return known
        stack = [(node, iter(_children(node)))]
        totals = [[1, 1]]  # per collection on the stack: nodes, levels
        while stack:
            parent, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                size, height = totals.pop()
                sizes[id(parent)] = (size, height)
                if totals:
                    totals[-1][0] += size
                    totals[-1][1] = max(totals[-1][1], height + 1)
            elif not _collection(child):
                totals[-1][0] += 1
            elif (known := sizes.get(id(child))) is not None:
                totals[-1][0] += known[0]
                totals[-1][1] = max(totals[-1][1], known[1] + 1)
            else:
                stack.append((child, iter(_children(child))))
                totals.append([1, 1])
        return sizes[id(node)]

    def check(self, root: yaml.Node) -> None:
        """Refuse `root` nested past MAX_DEPTH, holding an alias to a node it is inside, or
        repeating (with what came before it) more than MAX_ALIAS_NODES nodes by aliases."""
        self.begin()
        if not _collection(root):
            return
        done: set[int] = set()
        path = {id(root)}
        stack = [(root, iter(_children(root)))]
        while stack:
            parent, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.discard(id(parent))
                done.add(id(parent))
                continue
            if not _collection(child):
                continue
            key = id(child)
            if key in path:
                raise LimitError(RECURSIVE, child.start_mark)
            if key in done:
                self.repeat(child, len(stack) + 1)
                continue
            if len(stack) >= MAX_DEPTH:
                raise LimitError(TOO_DEEP, child.start_mark)
            path.add(key)
            stack.append((child, iter(_children(child))))


def construct(loader: yaml.BaseLoader, node: yaml.Node) -> Any:
    """`loader.construct_document(node)`, a value its constructors cannot make (a date with a
    month 13, `!!int x`, a number of more digits than Python converts) a ConstructorError in
    one line, as PyYAML says its own refusals, rather than the ValueError they raise."""
    try:
        return loader.construct_document(node)
    except (ValueError, OverflowError) as e:
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot read a value: {value_problem(e)}", node.start_mark
        ) from None


def value_problem(error: Exception) -> str:
    """Return a ValueError's text on one line, Python's limit on a number's digits in our words."""
    text = " ".join(str(error).split())
    if "integer string conversion" in text:
        return f"a number of more than {sys.get_int_max_str_digits()} digits"
    return text


def load(
    text: str,
    loader: type[yaml.SafeLoader] = yaml.SafeLoader,
    inspect: Callable[[yaml.Node], None] | None = None,
) -> Any:
    """`yaml.safe_load` within the bounds: one document (None for none), `inspect` called on
    its node graph before it is built. A bound is a LimitError, any other refusal PyYAML's."""
    check_text(text)
    reader = loader(text)
    try:
        try:
            node = reader.get_single_node()
        except RecursionError:
            # PyYAML's own composer recurses in Python, some levels per level of nesting
            raise LimitError(TOO_DEEP) from None
        if node is None:
            return None
        Bounds().check(node)
        if inspect is not None:
            inspect(node)
        return construct(reader, node)
    finally:
        reader.dispose()
