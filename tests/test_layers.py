"""Hold every import of probetui to the layers of docs/architecture.md ("Layers").

Each module is mapped to a layer by the longest prefix below that names it; an import, at the top
of a module or inside a function, may name its own layer or one below, never one above. An import
under `if TYPE_CHECKING:` names a type for the checker and runs nothing, so it is exempt (the
screen names `Engine` that way).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "probetui"

# bottom first, as docs/architecture.md "Layers" states the order
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "leaves (import nothing of probetui but each other)",
        (
            "probetui",
            "probetui.durations",
            "probetui.goquote",
            "probetui.lifeline",
            "probetui.memory",
            "probetui.record.timespec",
            "probetui.spec.yaml_safe",
        ),
    ),
    ("spec", ("probetui.spec",)),
    ("keys", ("probetui.keys",)),
    ("probe", ("probetui.probe",)),
    # the prober's two uses of kubelet: kuberuntime's restart rules and the release played
    ("prober", ("probetui.prober", "probetui.kubelet.kuberuntime", "probetui.kubelet.profile")),
    ("kubelet", ("probetui.kubelet",)),
    ("redact", ("probetui.redact",)),
    # what simulate reads of timeline and runtime: the one event encoder, the runtime's events
    ("events", ("probetui.timeline.events", "probetui.runtime.base")),
    ("simulate", ("probetui.simulate",)),
    ("timeline", ("probetui.timeline",)),
    ("record", ("probetui.record",)),
    ("stream", ("probetui.stream",)),
    ("triage", ("probetui.triage",)),
    # the agent's contract with its reader: its names, and the kubelet's counts both ends read
    (
        "runtime",
        (
            "probetui.runtime",
            "probetui.agent.manifest",
            "probetui.agent.promtext",
            "probetui.agent.kubelet",
            "probetui.agent.counts",
        ),
    ),
    ("engine", ("probetui.engine",)),
    ("replay", ("probetui.replay",)),
    ("lint", ("probetui.lint",)),
    ("shards", ("probetui.shards",)),
    ("agent", ("probetui.agent",)),
    ("ui", ("probetui.ui",)),
    ("config", ("probetui.config",)),
    ("cli", ("probetui.cli", "probetui.__main__")),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    """Return the index of the layer whose longest prefix names `module`."""
    best, best_len = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            # the package itself names its own `__init__` only, never what lies under it
            below = prefix != "probetui" and module.startswith(prefix + ".")
            if (module == prefix or below) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    return best


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    exempt: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                exempt.update(id(n) for n in ast.walk(inner))
    return exempt


def imports_of(path: Path) -> list[tuple[int, str]]:
    """List (line, module) for every probetui import the module runs, functions' included."""
    tree = ast.parse(path.read_text(), filename=str(path))
    exempt = _type_checking_nodes(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "probetui" or node.module.startswith("probetui."):
                # `from probetui import durations` names a module: judge the module it names
                found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("probetui")]
    return found


def _imported_layer(target: str) -> int:
    # `from probetui.x import Name` names a module or a name in one: drop parts until one maps
    while True:
        path = ROOT.joinpath(*target.split("."))
        if path.with_suffix(".py").is_file() or (path / "__init__.py").is_file():
            return layer_of(target)
        if "." not in target:
            return layer_of(target)
        target = target.rsplit(".", 1)[0]


def test_every_module_has_a_layer() -> None:
    unmapped = [
        module_name(p) for p in sorted(PACKAGE.rglob("*.py")) if layer_of(module_name(p)) == -1
    ]
    assert not unmapped, f"modules in no layer of tests/test_layers.py: {unmapped}"


def test_imports_point_down() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = layer_of(module_name(path))
        for line, target in imports_of(path):
            other = _imported_layer(target)
            if other > own:
                upward.append(
                    f"{path.relative_to(ROOT)}:{line}: {LAYERS[own][0]} imports {target} "
                    f"({LAYERS[other][0]})"
                )
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    # the check itself: spec sits below probe, and a function's import counts, a checker's not
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from probetui.engine import Engine\n"
        "def f():\n"
        "    from probetui.probe.gotext import go_quote\n"
    )
    assert imports_of(module) == [(5, "probetui.probe.gotext.go_quote")]
    assert _imported_layer("probetui.probe.gotext.go_quote") > layer_of("probetui.spec.validate")
    assert layer_of("probetui.kubelet.profile") <= layer_of("probetui.prober.worker")
    assert layer_of("probetui.kubelet.pod") > layer_of("probetui.prober.worker")
    assert layer_of("probetui.not_placed") == -1  # a new module must be given a layer
