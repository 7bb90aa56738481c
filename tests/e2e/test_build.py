"""Each artefact of the test cluster has a cache key of its own (tests/e2e/build.py, pyimage.py):
a change to one input rebuilds what it goes into and nothing else. Keys only: nothing is built.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e import build, pyimage


@pytest.fixture(autouse=True)
def inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the build's inputs (gomod/, pause.c) the test may change; a fixed Go release."""
    here = tmp_path / "e2e"
    shutil.copytree(build.GOMOD, here / "gomod")
    shutil.copy(build.HERE / "pause.c", here / "pause.c")
    monkeypatch.setattr(build, "HERE", here)
    monkeypatch.setattr(build, "GOMOD", here / "gomod")
    monkeypatch.setattr(build, "_go_version", lambda: "go version go1.99 linux/amd64")
    monkeypatch.setattr(build, "_gcc_version", lambda: "gcc 99")
    return here


def _keys() -> dict[str, str]:
    return {
        **{f"go/{n}": build.go_key(n) for n in build.GO_PACKAGES},
        "pause": build.pause_key(),
        **{f"image/{n}": build.image_key(n) for n in build.IMAGES},
        "layer/python": pyimage.base_key(),
        "layer/deps": pyimage.deps_key(),
    }


def _changed(before: dict[str, str]) -> set[str]:
    after = _keys()
    return {k for k in before if before[k] != after[k]}


def test_every_artefact_has_a_key_of_its_own() -> None:
    keys = _keys()
    assert len(set(keys.values())) == len(keys)
    assert {"go/kube-scheduler", "go/kube-controller-manager", "go/kube-proxy"} <= set(keys)


def test_grpchealths_source_rebuilds_it_and_its_image_only(inputs: Path) -> None:
    before = _keys()
    main = inputs / "gomod" / "cmd" / "grpchealth" / "main.go"
    main.write_text(main.read_text() + "\n// changed\n")
    assert _changed(before) == {"go/grpchealth", "image/grpchealth"}


def test_pause_c_rebuilds_pause_and_its_image_only(inputs: Path) -> None:
    before = _keys()
    (inputs / "pause.c").write_text((inputs / "pause.c").read_text() + "\n/* changed */\n")
    assert _changed(before) == {"pause", "image/pause"}


def test_the_module_graph_rebuilds_the_go_binaries_not_the_python_layers(inputs: Path) -> None:
    before = _keys()
    gosum = inputs / "gomod" / "go.sum"
    gosum.write_text(gosum.read_text() + "example.invalid/m v1.0.0 h1:AAAA=\n")
    changed = _changed(before)
    assert {f"go/{n}" for n in build.GO_PACKAGES} <= changed
    assert not {"layer/python", "layer/deps", "image/busybox"} & changed


def test_the_dependency_layer_follows_pyprojects_dependencies_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _keys()
    deps = [*pyimage.project_dependencies(), "rich>=13"]
    monkeypatch.setattr(pyimage, "project_dependencies", lambda: deps)
    assert _changed(before) == {"layer/deps"}
