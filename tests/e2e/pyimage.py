"""The agent image, built by hand for the test cluster: the image the top-level Dockerfile
describes, made without a Docker engine (tests/test_dockerfile.py keeps the two in step).

Three layers, each with a cache key of its own:

- `base`: Debian 12's python3.11 and the C libraries its stdlib needs (ssl, sqlite3, ctypes,
  lzma, ...), the .debs fetched with `apt-get download` and unpacked with `dpkg-deb -x`, the
  stdlib compiled by the image's own interpreter; a passwd naming the non-root user;
- `deps`: the dependencies pyproject.toml lists, as binary wheels for CPython 3.11 on this glibc,
  `pip install --target` the directory Debian's python3.11 reads site packages from;
- `app`: the project's wheel, built from the worktree's tracked files at every `up` (like
  tests/test_install.py), unpacked beside a `probetui` console script.

Entrypoint `probetui`, user 65532, workdir its home.
"""

from __future__ import annotations

import compileall
import configparser
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

from tests.e2e import oci
from tests.e2e.build import CACHE, Unavailable, _digest, _log, _publish

ROOT = Path(__file__).resolve().parents[2]

SUITE = "bookworm"
PYTHON = "3.11"
INTERPRETER = f"/usr/bin/python{PYTHON}"
# python3.11's Depends, closed over, less what only a package manager needs (dpkg, tar, perl
# through mime-support: media-types serves /etc/mime.types alone); libstdc++6 for the C++
# extensions among the wheels (grpcio)
PYTHON_DEBS = (
    "python3.11",
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "media-types",
    "libc6",
    "libgcc-s1",
    "gcc-12-base",
    "libstdc++6",
    "libssl3",
    "zlib1g",
    "libexpat1",
    "libffi8",
    "libsqlite3-0",
    "libbz2-1.0",
    "liblzma5",
    "libncursesw6",
    "libtinfo6",
    "libreadline8",
    "readline-common",
    "libuuid1",
    "libdb5.3",
    "libgdbm6",
    "libnsl2",
    "libtirpc3",
    "libtirpc-common",
    "libgssapi-krb5-2",
    "libkrb5-3",
    "libk5crypto3",
    "libcom-err2",
    "libkrb5support0",
    "libkeyutils1",
    "libcrypt1",
)
USER = 65532
HOME = "/home/nonroot"
DEPS_SITE = "/usr/lib/python3/dist-packages"
APP_SITE = f"/usr/local/lib/python{PYTHON}/dist-packages"
SCRIPT = "/usr/local/bin/probetui"
ENTRYPOINT = ["probetui"]
PATH = "/usr/local/bin:/usr/bin:/bin"
CONFIG = {
    "Entrypoint": ENTRYPOINT,
    "Env": [f"PATH={PATH}", f"HOME={HOME}"],
    "User": f"{USER}:{USER}",
    "WorkingDir": HOME,
}
# wheels a CPython 3.11 on Debian 12 (glibc 2.36) takes: pip expands no manylinux_2_X tag to the
# older ones, so each is named
PLATFORMS = (
    *(f"manylinux_2_{minor}_x86_64" for minor in range(36, 16, -1)),
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
)
# the recipe of the cached layers: bump it when how they are made changes
_FORMAT = "1"
_IMPORTS = "import ssl, sqlite3, ctypes, lzma, bz2, zlib, uuid, json, asyncio, decimal, readline"


def image_name() -> str:
    """`docker.io/probetui/agent:VERSION`, VERSION the worktree's probetui.__version__."""
    text = (ROOT / "probetui" / "__init__.py").read_text()
    for line in text.splitlines():
        if line.startswith("__version__"):
            return f"docker.io/probetui/agent:{line.split('=', 1)[1].strip().strip(chr(34))}"
    raise Unavailable("probetui/__init__.py has no __version__")


def project_dependencies(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The requirements of pyproject.toml's [project] dependencies, as written."""
    with pyproject.open("rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def console_script(target: str) -> str:
    """The `probetui` script for an entry point `module:function`, run by the image's python."""
    module, func = target.split(":")
    return f"#!{INTERPRETER}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n"


class BuildError(Exception):
    """A step of the image's build failed; the message names it and ends with its output."""


def _check(what: str, cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise BuildError(f"{what} ({' '.join(cmd[:4])} ...): {(r.stderr or r.stdout)[-800:]}")
    return r


def _layer_dir(kind: str, key: str) -> Path:
    return CACHE / "layers" / f"{kind}-{key}"


def base_key() -> str:
    return _digest("base", _FORMAT, SUITE, *PYTHON_DEBS)


def deps_key() -> str:
    return _digest("deps", _FORMAT, PYTHON, *PLATFORMS, *project_dependencies())


def _codename() -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("VERSION_CODENAME="):
            return line.split("=", 1)[1].strip('"')
    return ""


def _apt_download(debs: Path) -> None:
    cmd = ["apt-get", "download", "-q", *PYTHON_DEBS]
    r = subprocess.run(cmd, cwd=debs, capture_output=True, text=True)
    if r.returncode != 0:
        # a fresh machine has no package lists yet
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
        r = subprocess.run(cmd, cwd=debs, capture_output=True, text=True)
    if r.returncode != 0:
        raise Unavailable(f"apt-get download of python{PYTHON}'s packages: {r.stderr.strip()}")


def _passwd(rootfs: Path) -> None:
    etc = rootfs / "etc"
    etc.mkdir(exist_ok=True)
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"nonroot:x:{USER}:{USER}:nonroot:{HOME}:/usr/sbin/nologin\n"
    )
    (etc / "group").write_text(f"root:x:0:\nnonroot:x:{USER}:\n")
    home = rootfs / HOME.lstrip("/")
    home.mkdir(parents=True, exist_ok=True)
    (rootfs / "tmp").mkdir(exist_ok=True)
    (rootfs / "tmp").chmod(0o1777)


def base_layer() -> Path:
    """The cached layer with Debian 12's python3.11; built when its key has no entry."""
    final = _layer_dir("python", base_key())
    if (final / "layer.tar").exists():
        return final / "layer.tar"
    if _codename() != SUITE:
        raise Unavailable(
            f"the agent image's base is Debian {SUITE}'s python{PYTHON}: this machine's apt "
            f"serves {_codename() or 'another system'}"
        )
    for tool in ("apt-get", "dpkg-deb", "chroot"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not installed (it makes the agent image's base)")
    _log(f"agent image base: python{PYTHON} from Debian {SUITE}")
    CACHE.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=CACHE))
    try:
        debs = stage / "debs"
        rootfs = stage / "rootfs"
        debs.mkdir()
        rootfs.mkdir()
        _apt_download(debs)
        versions = []
        for deb in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(deb), str(rootfs)], check=True)
            fields = subprocess.run(
                ["dpkg-deb", "-f", str(deb), "Package", "Version"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            versions.append(f"{fields[1]} {fields[3]}")
        for doc in ("usr/share/man", "usr/share/info", "usr/share/lintian"):
            shutil.rmtree(rootfs / doc, ignore_errors=True)
        _passwd(rootfs)
        # the image's interpreter proves itself (its libraries all found) and compiles its
        # stdlib: Debian leaves that to a postinst that dpkg-deb -x does not run
        chroot = ["chroot", str(rootfs), INTERPRETER]
        _check("the image's python", [*chroot, "-c", _IMPORTS])
        _check(
            "compiling the image's stdlib",
            [
                *chroot,
                "-m",
                "compileall",
                "-q",
                "--invalidation-mode",
                "unchecked-hash",
                f"/usr/lib/python{PYTHON}",
            ],
        )
        oci.tar_tree(rootfs, stage / "layer.tar", owners={HOME.lstrip("/"): USER})
        (stage / "versions.txt").write_text("\n".join(versions) + "\n")
        shutil.rmtree(debs)
        shutil.rmtree(rootfs)
        _publish(stage, final)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return final / "layer.tar"


def _compile(tree: Path, site: str) -> None:
    # pycs made by a 3.11 are the image's (one magic number per minor release); unchecked, so
    # the layers' zeroed mtimes do not make them stale
    if sys.version_info[:2] != tuple(int(x) for x in PYTHON.split(".")):
        return
    compileall.compile_dir(
        str(tree),
        ddir=site,
        quiet=1,
        workers=0,
        invalidation_mode=compileall.py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )


def deps_layer() -> Path:
    """The cached layer with the project's dependencies; built when its key has no entry."""
    final = _layer_dir("deps", deps_key())
    if (final / "layer.tar").exists():
        return final / "layer.tar"
    deps = project_dependencies()
    _log(f"agent image dependencies: {', '.join(deps)}")
    CACHE.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=CACHE))
    try:
        tree = stage / "tree"
        site = tree / DEPS_SITE.lstrip("/")
        platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
        r = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--no-compile",
                "--target",
                str(site),
                "--only-binary=:all:",
                "--implementation",
                "cp",
                "--python-version",
                PYTHON,
                "--abi",
                f"cp{PYTHON.replace('.', '')}",
                *platforms,
                *deps,
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise Unavailable(f"pip install of the agent image's dependencies: {r.stderr[-800:]}")
        # scripts of the dependencies name the host's interpreter
        shutil.rmtree(site / "bin", ignore_errors=True)
        _compile(site, DEPS_SITE)
        (stage / "requirements.txt").write_text(
            "\n".join(sorted(d.name[: -len(".dist-info")] for d in site.glob("*.dist-info"))) + "\n"
        )
        oci.tar_tree(tree, stage / "layer.tar")
        shutil.rmtree(tree)
        _publish(stage, final)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return final / "layer.tar"


def _tracked_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [p for p in out.split("\0") if p]


def build_wheel(out: Path) -> Path:
    """The project's wheel, from a copy of the worktree's tracked files (the build leaves
    nothing in the worktree)."""
    src = out / "src"
    shutil.rmtree(src, ignore_errors=True)
    for rel in _tracked_files():
        if (ROOT / rel).is_file():
            dest = src / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest)
    dist = out / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)]
    # the build backend installed here serves, without fetching one per run; else pip's own
    r = subprocess.run([*wheel, "--no-build-isolation"], capture_output=True, text=True)
    if r.returncode != 0:
        r = subprocess.run(wheel, capture_output=True, text=True)
    if r.returncode != 0:
        raise Unavailable(f"pip wheel of the project: {r.stderr[-800:]}")
    shutil.rmtree(src)
    (whl,) = dist.glob("probetui-*.whl")
    return whl


def app_layer(out: Path) -> Path:
    """The per-run layer: the wheel unpacked into the image's site directory, and the console
    script its entry points name."""
    whl = build_wheel(out)
    tree = out / "app-tree"
    shutil.rmtree(tree, ignore_errors=True)
    site = tree / APP_SITE.lstrip("/")
    with zipfile.ZipFile(whl) as z:
        z.extractall(site)
        (info,) = {n.split("/")[0] for n in z.namelist() if ".dist-info/" in n}
    entry_points = configparser.ConfigParser()
    entry_points.read(site / info / "entry_points.txt")
    script = tree / SCRIPT.lstrip("/")
    script.parent.mkdir(parents=True)
    script.write_text(console_script(entry_points["console_scripts"]["probetui"]))
    script.chmod(0o755)
    _compile(site, APP_SITE)
    layer = out / "app-layer.tar"
    oci.tar_tree(tree, layer)
    shutil.rmtree(tree)
    return layer


def agent_image(out: Path) -> tuple[str, Path]:
    """The agent image as an OCI layout tar under `out`: the two cached layers and this run's
    wheel; return its name and the tar."""
    out.mkdir(parents=True, exist_ok=True)
    name = image_name()
    layers = [base_layer(), deps_layer(), app_layer(out)]
    tar = out / "agent.tar"
    oci.write_image(tar, name, layers, CONFIG)
    return name, tar
