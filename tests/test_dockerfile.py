"""The top-level Dockerfile and the agent image the e2e cluster builds by hand
(tests/e2e/pyimage.py) are one image: same Debian release and Python, the dependencies from
pyproject.toml in the same site directory, the wheel in the same other one, the same console
script, user, workdir, environment and entrypoint.

No Docker engine runs here, so nothing builds the Dockerfile: these tests compare what the two
declare. The hand-built image is what the e2e tier runs (tests/e2e/test_nodes.py).
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet

from tests.e2e import pyimage

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = pending + line
        pending = ""
        op, _, args = full.strip().partition(" ")
        out.append((op.upper(), args.strip()))
    return out


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for op, args in _instructions(DOCKERFILE.read_text()):
        if op == "FROM":
            stages.append([])
        stages[-1].append((op, args))
    return stages


def _one(stage: list[tuple[str, str]], op: str) -> str:
    (args,) = [a for o, a in stage if o == op]
    return args


def _runs(stage: list[tuple[str, str]]) -> str:
    return "\n".join(a for o, a in stage if o == "RUN")


def _pyproject() -> dict:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def test_every_stage_is_the_debian_release_the_image_python_comes_from() -> None:
    bases = [_one(s, "FROM").split()[0] for s in _stages()]
    assert bases == [f"debian:{pyimage.SUITE}-slim"] * 2
    assert pyimage.SUITE == "bookworm"  # Debian 12


def test_the_final_stage_installs_the_same_python() -> None:
    final = _runs(_stages()[-1])
    (install,) = re.findall(r"apt-get install -y --no-install-recommends ([^&]+)", final)
    assert install.split() == [f"python{pyimage.PYTHON}"]
    assert pyimage.PYTHON_DEBS[0] == f"python{pyimage.PYTHON}"
    assert f"/usr/bin/python{pyimage.PYTHON}" == pyimage.INTERPRETER
    assert SpecifierSet(_pyproject()["project"]["requires-python"]).contains(f"{pyimage.PYTHON}.0")


def test_the_dependencies_come_from_pyproject_into_the_same_site() -> None:
    build = _runs(_stages()[0])
    assert "tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']" in build
    assert f"--only-binary=:all: --target /out{pyimage.DEPS_SITE} -r" in build
    assert pyimage.project_dependencies() == _pyproject()["project"]["dependencies"]


def test_the_wheel_goes_to_the_same_site() -> None:
    build = _runs(_stages()[0])
    assert f"--no-deps --target /out{pyimage.APP_SITE} /dist/probetui-" in build
    assert _one(_stages()[-1], "COPY") == "--from=build /out/ /"


def test_the_console_script_is_the_one_pyproject_names() -> None:
    final = _runs(_stages()[-1])
    (text, path) = re.findall(r"printf '([^']*)' > (\S+)", final)[0]
    assert path == pyimage.SCRIPT
    script = pyimage.console_script(_pyproject()["project"]["scripts"]["probetui"])
    assert text.replace("\\n", "\n") == script


def test_user_workdir_environment_and_entrypoint_are_the_images() -> None:
    final = _stages()[-1]
    config = pyimage.CONFIG
    assert _one(final, "USER") == config["User"] == f"{pyimage.USER}:{pyimage.USER}"
    assert _one(final, "WORKDIR") == config["WorkingDir"] == pyimage.HOME
    assert shlex.split(_one(final, "ENV")) == config["Env"]
    assert json.loads(_one(final, "ENTRYPOINT")) == config["Entrypoint"] == ["probetui"]
    useradd = re.search(r"useradd --uid (\d+) --gid (\d+) --home-dir (\S+)", _runs(final))
    assert useradd is not None
    assert useradd.groups() == (str(pyimage.USER), str(pyimage.USER), pyimage.HOME)
