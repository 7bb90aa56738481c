"""Keep the product's comments and docstrings free of the tracker, dates, hashes and history.

CONTRIBUTING.md's style: a comment states the rule it protects and may name the benchmark that
guards it; figures, dates and commit hashes go to benchmarks/, docs/performance.md,
CHANGELOG.md and commit bodies, and a citation names a docs heading or an upstream function,
never an item of this project's tracker. Upstream citations keep their repository's name
(`kubernetes#99425`, `textual#6666`, `golang.org/issue/22233`), so they are told apart.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "probetui"

# quoted text is an example of an output or an input format, not a statement
QUOTED = re.compile(r'"[^"\n]*"|`[^`\n]*`')
FORBIDDEN = {
    # "issue 15", "item 3", "issues 12 and 14"; an upstream one is cited by its repository
    "a tracker item": re.compile(r"\b(issue|item|ticket)s?\s+#?\d+", re.IGNORECASE),
    # "#123" with no repository before it
    "a bare tracker number": re.compile(r"(?<![\w/.#-])#\d{2,}\b"),
    "a date": re.compile(
        r"\b(19|20)\d\d-[01]\d-[0-3]\d\b|\b(January|February|March|April|May|June|July|August"
        r"|September|October|November|December),? (19|20)\d\d\b"
    ),
    # seven or more hex digits with a digit and a letter in them
    "a commit hash": re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
    "a load average": re.compile(r"\bload (average|avg)\b|\bload \d", re.IGNORECASE),
    "a figure's history": re.compile(
        r"\b(went|was|were)\s+(from\s+)?(about\s+|some\s+|~)?[\d.,]+"
        r"(\s?(-|->|→|to)\s?[\d.,]+)?\s?(ms|s|µs|us|MB|MiB|KiB|GB|%)(\W|$)"
    ),
    "a module's length defended": re.compile(r"\bover [\d,]+ lines\b", re.IGNORECASE),
}

# plurals that once opened a class docstring as a noun phrase ("Pods and containers; ...")
NOT_VERBS = frozenset({"errors", "lanes", "pods", "strings", "subclasses", "windows"})


def _texts(path: Path) -> list[tuple[int, str]]:
    """Return the comments and docstrings of one module with their line numbers."""
    source = path.read_text(encoding="utf-8")
    texts = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = ast.get_docstring(node, clean=False)
        if doc is not None:
            first = node.body[0].lineno
            texts.extend((first + i, line) for i, line in enumerate(doc.splitlines()))
    return texts


def test_comments_and_docstrings_cite_no_tracker_date_hash_or_history() -> None:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for line, text in _texts(path):
            bare = QUOTED.sub("", text)
            for what, pattern in FORBIDDEN.items():
                match = pattern.search(bare)
                if match:
                    where = path.relative_to(ROOT.parent)
                    found.append(f"{where}:{line}: {what}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_tests_and_benchmarks_cite_no_tracker_item() -> None:
    found = []
    tracker = ("a tracker item", "a bare tracker number")
    for root in (ROOT.parent / "tests", ROOT.parent / "benchmarks"):
        for path in sorted(root.rglob("*.py")):
            if path.name == Path(__file__).name:
                continue
            for line, text in _texts(path):
                bare = QUOTED.sub("", text)
                for what in tracker:
                    match = FORBIDDEN[what].search(bare)
                    if match:
                        where = path.relative_to(ROOT.parent)
                        found.append(f"{where}:{line}: {what}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_scan_sees_what_it_must_refuse() -> None:
    refused = [
        "# the fix of issue 15, item 3",
        "# see #1234",
        "# measured 2026-12-02",
        "# since 76f03e1",
        "# on a load average of 5",
        "# peak RSS went 194 -> 269 MB",
        "# the list was 0.24-0.39 s of a seek",
        "Why one module of over 500 lines: it is one thing.",
    ]
    allowed = [
        "# upstream keeps it until kubernetes#99425 is resolved",
        "# a watcher leaked per key (textual#6666)",
        "# Go keeps a custom Host (golang.org/issue/22233)",
        '# "3", or "3, item 2" inside a List',
        "# an ISO-8601 time, `2026-03-01T03:10:00Z`",
        "# the kubelet caps bodies at 10 KiB",
        "# a 1 s period",
    ]
    for text in refused:
        bare = QUOTED.sub("", text)
        assert any(p.search(bare) for p in FORBIDDEN.values()), text
    for text in allowed:
        bare = QUOTED.sub("", text)
        assert not any(p.search(bare) for p in FORBIDDEN.values()), text


def _opens_with_a_verb(doc: str) -> bool:
    """Tell whether a docstring's first word is a verb in the third person ("Holds ...")."""
    words = doc.split(maxsplit=1)
    word = words[0].rstrip(",:;").lower() if words else ""
    return (
        word.isalpha()
        and word.endswith("s")
        and not word.endswith(("ss", "us", "is"))
        and word not in NOT_VERBS
    )


def test_class_docstrings_open_with_a_verb() -> None:
    # CONTRIBUTING.md: a docstring's first line is a sentence with a verb; a class's says
    # what the class does or holds ("Names the three probe types", not "The three ...")
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            doc = ast.get_docstring(node)
            if doc is not None and not _opens_with_a_verb(doc):
                where = path.relative_to(ROOT.parent)
                found.append(f"{where}:{node.lineno}: {node.name}: {doc.splitlines()[0]!r}")
    assert not found, "\n".join(found)


def test_the_verb_check_tells_a_sentence_from_a_noun_phrase() -> None:
    allowed = (
        "Names the three probe types.",
        "Holds one scrape.",
        "Keeps, as an engine sink, a bounded history.",
    )
    for text in allowed:
        assert _opens_with_a_verb(text), text
    refused = (
        "The three probe types.",
        "One scrape: per probe the kubelet's counters.",
        "A bad scenario; one line.",
        "What one doProbe did.",
        "Pods and containers; the cursor selects a container.",
        "`results.Result` (its values).",
        "Loopback listener whose connections are relayed.",
    )
    for text in refused:
        assert not _opens_with_a_verb(text), text
