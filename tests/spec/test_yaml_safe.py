"""Every YAML reader within bounds (spec/yaml_safe.py): an alias bomb, nesting past the limit
(deep enough to crash libyaml's composer), a file over the size limit, bytes that are not UTF-8
and a recursive alias are each one line naming the limit, from the manifest readers (lint,
local, check -f), the scenario, the config file and the kubeconfig alike; inputs within the
bounds read as before."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from probetui.config.errors import ConfigError
from probetui.config.files import read as read_config
from probetui.lint.load import Loaded, load, load_text
from probetui.runtime.kubernetes.kubeconfig import KubeconfigError, merge
from probetui.simulate.scenario import ScenarioError, load_scenario
from probetui.spec import yaml_safe
from probetui.spec.documents import documents
from probetui.spec.errors import LimitExceeded, ManifestError
from probetui.spec.parse import load_pods

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
    - name: app
      image: x
      readinessProbe: {httpGet: {path: /, port: 8080}}
"""


def bomb(levels: int = 9, width: int = 10, indent: str = "") -> str:
    """A "billion laughs": `levels` anchors, each a list of `width` aliases of the one before."""
    lines = [f'{indent}a0: &a0 "xxxxxxxxxx"']
    for i in range(1, levels + 1):
        lines.append(f"{indent}a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def alias_chain(links: int = 40, levels: int = 90, indent: str = "") -> str:
    """Anchors each `levels` deep around an alias of the one before: within the nesting bound
    as written, thousands of levels deep to whatever walks the result."""
    lines = []
    for i in range(links):
        inner = f"*x{i - 1}" if i else "1"
        lines.append(f"{indent}x{i}: &x{i} " + "[" * levels + inner + "]" * levels)
    return "\n".join(lines) + "\n"


def pod_with_annotations(annotations: str) -> str:
    return POD.replace("  name: web\n", "  name: web\n  annotations:\n" + annotations)


def nested_flow(depth: int) -> str:
    """A mapping holding `depth - 1` nested lists: `depth` levels."""
    return "a: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n"


def nested_block(depth: int) -> str:
    """A mapping, then `depth - 1` block sequences each one column further in."""
    steps = "".join(" " * i + "-\n" for i in range(1, depth - 1))
    return "a:\n" + steps + " " * (depth - 1) + "- x\n"


# what each reader raises (or, for lint, reports) on a bad input: the one line it says
def _lint(path: Path) -> str:
    loaded = load([str(path)])
    assert not loaded.objects and len(loaded.problems) == 1
    return str(loaded.problems[0])


def _local(path: Path) -> str:
    # `local` and `check -f` read their manifest with load_pods
    with pytest.raises(ManifestError) as err:
        load_pods(path)
    return str(err.value)


def _scenario(path: Path) -> str:
    with pytest.raises(ScenarioError) as err:
        load_scenario(path)
    return str(err.value)


def _scenario_pod(path: Path) -> str:
    scenario = path.with_name("scenario.yaml")
    scenario.write_text(f"pod: {path.name}\nduration: 60\n")
    with pytest.raises(ScenarioError) as err:
        load_scenario(scenario)
    return str(err.value)


def _config(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        read_config("user", str(path), "--config")
    return str(err.value)


def _kubeconfig(path: Path) -> str:
    with pytest.raises(KubeconfigError) as err:
        merge([str(path)])
    return str(err.value)


READERS: dict[str, Callable[[Path], str]] = {
    "lint": _lint,
    "local": _local,
    "scenario": _scenario,
    "scenario-pod": _scenario_pod,
    "config": _config,
    "kubeconfig": _kubeconfig,
}

BAD: dict[str, tuple[bytes, str]] = {
    "alias bomb": (pod_with_annotations(bomb(indent="    ")).encode(), "aliases expand to more"),
    "deep flow": (nested_flow(100_000).encode(), "nested deeper than 100 levels"),
    "deep by aliases": (
        pod_with_annotations(alias_chain(indent="    ")).encode(),
        "nested deeper than 100 levels",
    ),
    "deep block": (nested_block(3_000).encode(), "nested deeper than 100 levels"),
    "too large": (b"a: '" + b"x" * yaml_safe.MAX_BYTES + b"'\n", "larger than 8 MiB"),
    "not UTF-8": (b"kind: Pod\nmetadata: {name: \xff}\n", "not UTF-8 text"),
    "recursive": (b"a: &r [1, *r]\n", "an alias inside the node it names"),
    # values PyYAML's constructors raise ValueError on rather than a YAMLError
    "month 13": (b"a: 2001-13-45\n", "cannot read a value: month must be in 1..12"),
    "long number": (b"a: " + b"1" * 5000 + b"\n", "a number of more than 4300 digits"),
    # a control character in a text only the exact nesting count reads
    "control character": (
        b"a: [" + b", ".join([b"[1]"] * 3000) + b"]\nb: \x1d\n",
        "unacceptable character #x001d",
    ),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("case", sorted(BAD))
def test_every_reader_refuses_in_one_line(tmp_path: Path, reader: str, case: str) -> None:
    """Before the bounds: MemoryError (bomb), SIGSEGV or RecursionError (deep), a
    UnicodeDecodeError traceback (simulate), the bomb read and walked, or a ValueError
    traceback from a constructor."""
    body, said = BAD[case]
    path = tmp_path / "input.yaml"
    path.write_bytes(body)
    message = READERS[reader](path)
    assert said in message
    assert "\n" not in message


def test_the_limits_are_named() -> None:
    assert "100000 nodes" in yaml_safe.TOO_MANY_ALIASES
    assert "100 levels" in yaml_safe.TOO_DEEP
    assert "8 MiB" in yaml_safe.TOO_LARGE


@pytest.mark.parametrize("make", [nested_flow, nested_block])
def test_nesting_up_to_the_limit_is_read(make: Callable[[int], str]) -> None:
    (doc,) = documents(make(yaml_safe.MAX_DEPTH), "m")
    assert isinstance(doc["a"], list)
    assert yaml_safe.load(make(yaml_safe.MAX_DEPTH))["a"]
    with pytest.raises(LimitExceeded, match="deeper than 100"):
        documents(make(yaml_safe.MAX_DEPTH + 1), "m")
    with pytest.raises(yaml_safe.LimitError, match="deeper than 100"):
        yaml_safe.load(make(yaml_safe.MAX_DEPTH + 1))


def test_nesting_is_counted_exactly_past_the_quick_test() -> None:
    """Text that the quick test cannot prove shallow is parsed to count: many flow
    collections side by side are fine, one deep run of them is not."""
    wide = "a: [" + ", ".join(["[1]"] * 3000) + "]\n"
    (doc,) = documents(wide, "m")
    assert len(doc["a"]) == 3000
    deep_json = "[" * 5000 + "]" * 5000
    with pytest.raises(LimitExceeded, match="deeper than 100"):
        documents(deep_json, "m.json")
    with pytest.raises(LimitExceeded, match="deeper than 100"):
        documents('{"a": ' + "[" * 150 + "]" * 150 + "}", "m.json")


def test_aliases_within_the_bound_read_as_before() -> None:
    text = (
        "base: &b {port: 8080, path: /healthz}\n"
        "live: *b\n"
        "ready: {<<: *b, path: /ready}\n"
        "list: &l [1, 2, 3]\n"
        "again: [*l, *l]\n"
    )
    (doc,) = documents(text, "m")
    assert doc["live"] is doc["base"]
    assert doc["ready"] == {"port": 8080, "path": "/ready"}
    assert doc["again"] == [[1, 2, 3], [1, 2, 3]]
    assert yaml_safe.load(text) == yaml.safe_load(text)
    # a bomb small enough: 10^4 nodes repeated
    assert documents(bomb(levels=4), "m")[0]["a4"][0][0][0][0] == "xxxxxxxxxx"


def test_an_alias_counts_as_deep_as_what_it_stands_for() -> None:
    (doc,) = documents(alias_chain(links=2, levels=49), "m")  # 1 + 49 + 49 levels
    assert doc["x1"] is not None
    assert yaml_safe.load(alias_chain(links=2, levels=49))["x1"]
    with pytest.raises(LimitExceeded, match="deeper than 100"):
        documents(alias_chain(links=2, levels=50), "m")
    with pytest.raises(yaml_safe.LimitError, match="deeper than 100"):
        yaml_safe.load(alias_chain(links=2, levels=50))


def test_the_alias_budget_is_one_per_stream() -> None:
    """Each document alone is within the bound; the stream is not."""
    one = bomb(levels=4, width=10)  # about 12,000 nodes repeated
    documents(one, "m")
    with pytest.raises(LimitExceeded, match="aliases expand"):
        documents("---\n".join([one] * 12), "m")


def test_lint_reading_a_stream_in_parts_spends_one_budget() -> None:
    """A broken document makes lint read the stream a document at a time; the bombs in the
    others still share one budget."""
    one = bomb(levels=4, width=10)
    text = "---\n".join(["a: [\n", *([one] * 12)])
    out = Loaded()
    load_text(text, "in.yaml", out)
    assert any("aliases expand" in str(p) for p in out.problems)


def test_lint_stdin_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stdin(io.TextIOWrapper):
        pass

    big = io.BytesIO(b"a: '" + b"x" * yaml_safe.MAX_BYTES + b"'\n")
    monkeypatch.setattr("sys.stdin", Stdin(big, encoding="utf-8"))
    loaded = load(["-"])
    assert [str(p) for p in loaded.problems] == [f"<stdin>: {yaml_safe.TOO_LARGE}"]
    monkeypatch.setattr("sys.stdin", Stdin(io.BytesIO(b"\xff\xfe"), encoding="utf-8"))
    loaded = load(["-"])
    assert "not UTF-8 text" in str(loaded.problems[0])


def test_read_text_stops_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(b"x" * (yaml_safe.MAX_BYTES + 1))
    with pytest.raises(yaml_safe.TextError, match="larger than 8 MiB"):
        yaml_safe.read_text(path)
    path.write_bytes(b"x" * yaml_safe.MAX_BYTES)
    assert len(yaml_safe.read_text(path)) == yaml_safe.MAX_BYTES
