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
    """A copy of the build's inputs (every module directory, pause.c) the test may change; a
    fixed Go release."""
    here = tmp_path / "e2e"
    for module in {b.module for b in build.GO_BINARIES.values()}:
        shutil.copytree(build.HERE / module, here / module)
    shutil.copy(build.HERE / "pause.c", here / "pause.c")
    monkeypatch.setattr(build, "HERE", here)
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


@pytest.mark.parametrize("module", ["gomod", build.CONTROL_PLANE, build.CONTAINERD])
def test_a_module_graph_rebuilds_its_own_binaries_only(inputs: Path, module: str) -> None:
    """One go.mod per release: a change to the old kubelet's module leaves the control plane
    and the new kubelet alone, and the other way round."""
    before = _keys()
    gosum = inputs / module / "go.sum"
    gosum.write_text(gosum.read_text() + "example.invalid/m v1.0.0 h1:AAAA=\n")
    ours = {f"go/{n}" for n, b in build.GO_BINARIES.items() if b.module == module}
    images = {"image/grpchealth"} if "go/grpchealth" in ours else set()
    assert ours and _changed(before) == ours | images


def test_each_kubelet_is_built_from_the_release_its_name_says() -> None:
    """kubelet-1.35 from a go.mod requiring v1.35.x, kubelet-1.37 from v1.37.x: a bump of a
    module without a rename fails here."""
    kubelets = [n for n in build.GO_BINARIES if n.startswith("kubelet-")]
    assert len(kubelets) >= 2
    for name in kubelets:
        assert build.binary_version(name).startswith(f"v{name.removeprefix('kubelet-')}."), name


def test_the_control_plane_is_the_newest_release() -> None:
    """The version skew policy: no kubelet newer than the API server."""

    def minor(v: str) -> tuple[int, int]:
        major, minor_ = v.lstrip("v").split(".")[:2]
        return int(major), int(minor_)

    control_plane = minor(build.kubernetes_version())
    for name, b in build.GO_BINARIES.items():
        if b.stamp == "kubernetes":
            assert minor(build.binary_version(name)) <= control_plane, name


def test_the_dependency_layer_follows_pyprojects_dependencies_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = _keys()
    deps = [*pyimage.project_dependencies(), "rich>=13"]
    monkeypatch.setattr(pyimage, "project_dependencies", lambda: deps)
    assert _changed(before) == {"layer/deps"}
