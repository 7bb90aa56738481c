"""What the test cluster runs, made once per machine and cached outside the repository.

- from `gomod137/go.mod` (k8s.io/kubernetes v1.37.2, the newest release the module proxy serves,
  every staging module at the matching v0 release): kube-apiserver, kube-controller-manager,
  kube-scheduler, kube-proxy, kubectl, etcd at what that release requires, and the second node's
  kubelet (`kubelet-1.37`);
- from `gomod/go.mod` (k8s.io/kubernetes v1.35.4): the first node's kubelet (`kubelet-1.35`) and
  `grpchealth`, a grpc.health.v1 server of our own (`gomod/cmd/grpchealth`);
- a static `pause` program (`pause.c`);
- OCI image tars for containerd: busybox (Debian's busybox-static), pause, grpchealth;
- the agent image's cached layers, Debian 12's python3.11 and the project's dependencies
  (`pyimage.py`; its per-run layer, the project's wheel, is made at `up`).

Every artefact has a cache key of its own, a hash of only what it is made of (a Go binary: its
module's go.mod and go.sum, the Go release, its package and flags; an image: the binary it
holds), so a change to one rebuilds that one and nothing stale is used: a change to one go.mod
rebuilds that module's binaries only. The cache is `$PROBETUI_E2E_CACHE`, else
`~/.cache/probetui-e2e`: `go/NAME-KEY/`, `pause/`, `images/`, `layers/`, and per set of keys a
directory of links (`bin/`, `images/`) that the cluster runs from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.e2e import oci

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("PROBETUI_E2E_CACHE", Path.home() / ".cache" / "probetui-e2e"))


@dataclass(frozen=True)
class GoBinary:
    """One Go binary: the module directory (under tests/e2e) it is built in, its package, and
    how upstream's own build makes it (cgo, build tags, the version it stamps)."""

    module: str
    package: str
    cgo: bool = True
    tags: tuple[str, ...] = ()
    stamp: str = "kubernetes"  # whose version variables -ldflags sets: kubernetes, containerd


# the release the control plane runs: the skew policy lets a kubelet be older than the API
# server, never newer
CONTROL_PLANE = "gomod137"
CONTAINERD = "gomod-containerd"
GO_BINARIES = {
    "kube-apiserver": GoBinary(CONTROL_PLANE, "k8s.io/kubernetes/cmd/kube-apiserver"),
    "kubectl": GoBinary(CONTROL_PLANE, "k8s.io/kubernetes/cmd/kubectl"),
    "kube-scheduler": GoBinary(CONTROL_PLANE, "k8s.io/kubernetes/cmd/kube-scheduler"),
    "kube-controller-manager": GoBinary(
        CONTROL_PLANE, "k8s.io/kubernetes/cmd/kube-controller-manager"
    ),
    "kube-proxy": GoBinary(CONTROL_PLANE, "k8s.io/kubernetes/cmd/kube-proxy"),
    "etcd": GoBinary(CONTROL_PLANE, "go.etcd.io/etcd/server/v3"),
    "kubelet-1.37": GoBinary(CONTROL_PLANE, "k8s.io/kubernetes/cmd/kubelet"),
    "kubelet-1.35": GoBinary("gomod", "k8s.io/kubernetes/cmd/kubelet"),
    # the one binary that runs inside a container, where there is no libc to link against
    "grpchealth": GoBinary("gomod", "./cmd/grpchealth", cgo=False, stamp=""),
    # the second node's runtime, as containerd's Makefile builds it (no btrfs: the snapshotter
    # is disabled in our config, and its cgo needs headers Debian's base has not)
    "containerd": GoBinary(
        CONTAINERD,
        "github.com/containerd/containerd/v2/cmd/containerd",
        tags=("urfave_cli_no_docs", "no_btrfs"),
        stamp="containerd",
    ),
    "containerd-shim-runc-v2": GoBinary(
        CONTAINERD,
        "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
        cgo=False,
        tags=("urfave_cli_no_docs", "no_grpc"),
        stamp="containerd",
    ),
}
# each name with its package, as before the binaries came from more than one module
GO_PACKAGES = {name: b.package for name, b in GO_BINARIES.items()}
BUSYBOX = Path("/bin/busybox")
IMAGES = {
    "busybox": "docker.io/probetui/busybox:1",
    "pause": "docker.io/probetui/pause:1",
    "grpchealth": "docker.io/probetui/grpchealth:1",
}
# Debian packages the cluster needs, by the file each one provides
DEBIAN = {
    "containerd": "/usr/bin/containerd",
    "runc": "/usr/sbin/runc",
    "containernetworking-plugins": "/usr/lib/cni/bridge",
    "busybox-static": str(BUSYBOX),
    "iproute2": "/usr/sbin/ip",
    "iptables": "/usr/sbin/iptables",
    "conntrack": "/usr/sbin/conntrack",
    "curl": "/usr/bin/curl",
}


class Unavailable(Exception):
    """The machine lacks something the test cluster needs; the message says what."""


def _log(msg: str) -> None:
    print(f"[e2e build] {msg}", file=sys.stderr, flush=True)


def missing_packages() -> list[str]:
    return [pkg for pkg, path in DEBIAN.items() if not Path(path).exists()]


def install_packages() -> None:
    """apt-get the Debian packages that are missing (root only; CI's fresh machine has none)."""
    missing = missing_packages()
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise Unavailable(f"missing Debian packages {' '.join(missing)} and no root apt-get")
    _log(f"apt-get install {' '.join(missing)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", *missing],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def _digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()[:16]


def _go_version() -> str:
    go = shutil.which("go")
    if go is None:
        return "no go"
    return subprocess.run([go, "version"], capture_output=True, text=True, check=True).stdout


def _cgo(name: str) -> bool:
    return GO_BINARIES[name].cgo


def _ldflags(name: str) -> str:
    b = GO_BINARIES[name]
    if b.stamp == "kubernetes":
        return _version_ldflags(b.module)
    if b.stamp == "containerd":
        return _containerd_ldflags(b.module)
    return ""


def module_dir(module: str) -> Path:
    return HERE / module


def go_key(name: str) -> str:
    """What one Go binary is made of: its module graph, the Go release, its package and flags
    (and, for a package of ours, its sources); nothing another binary is made of."""
    pkg = GO_PACKAGES[name]
    mod = module_dir(GO_BINARIES[name].module)
    parts: list[str | bytes] = [
        "go",
        (mod / "go.mod").read_bytes(),
        (mod / "go.sum").read_bytes(),
        _go_version(),
        pkg,
        _ldflags(name),
        str(_cgo(name)),
    ]
    if GO_BINARIES[name].tags:
        parts.append(",".join(GO_BINARIES[name].tags))
    if pkg.startswith("./"):
        for f in sorted((mod / pkg).rglob("*")):
            if f.is_file():
                parts += [str(f.relative_to(mod)), f.read_bytes()]
    return _digest(*parts)


def _gcc_version() -> str:
    gcc = shutil.which("gcc")
    if gcc is None:
        return "no gcc"
    return subprocess.run([gcc, "--version"], capture_output=True, text=True, check=True).stdout


def pause_key() -> str:
    return _digest("pause", (HERE / "pause.c").read_bytes(), _gcc_version(), *_PAUSE_FLAGS)


_PAUSE_FLAGS = ("-static", "-O2")
# the layout of the small images' tars (oci.py, _image_entries): bump it when they change
_IMAGE_FORMAT = "1"


def image_key(name: str) -> str:
    inputs = {
        "busybox": lambda: BUSYBOX.read_bytes() if BUSYBOX.exists() else b"",
        "pause": pause_key,
        "grpchealth": lambda: go_key("grpchealth"),
    }[name]()
    return _digest("image", _IMAGE_FORMAT, IMAGES[name], inputs)


def go_binary(name: str) -> Path:
    return CACHE / "go" / f"{name}-{go_key(name)}" / name


def pause_binary() -> Path:
    return CACHE / "pause" / f"pause-{pause_key()}" / "pause"


def image_tar(name: str) -> Path:
    return CACHE / "images" / f"{name}-{image_key(name)}.tar"


def _set_key() -> str:
    """The set of artefacts the cluster runs, each by its own key."""
    return _digest(*(go_key(n) for n in GO_PACKAGES), pause_key(), *(image_key(n) for n in IMAGES))


def _top() -> Path:
    return CACHE / _set_key()


def bin_dir() -> Path:
    return _top() / "bin"


def image_dir() -> Path:
    return _top() / "images"


def kubernetes_version(module: str = CONTROL_PLANE) -> str:
    """The k8s.io/kubernetes release a module directory's go.mod requires, e.g. "v1.37.2"."""
    return required_version(module, "k8s.io/kubernetes")


def binary_version(name: str) -> str:
    """The k8s.io/kubernetes release a binary is built from, e.g. "v1.35.4" for kubelet-1.35."""
    return kubernetes_version(GO_BINARIES[name].module)


def _version_ldflags(module: str) -> str:
    # what upstream's hack/lib/version.sh stamps: without it the kubelet calls itself
    # v0.0.0-master and its probes' User-Agent says kube-probe/0.0
    v = kubernetes_version(module)
    major, minor = v[1:].split(".")[:2]
    pkg = "k8s.io/component-base/version"
    stamp = {
        "gitVersion": v,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
    }
    return " ".join(f"-X {pkg}.{k}={val}" for k, val in stamp.items())


def required_version(module: str, path: str) -> str:
    """The version of module `path` a module directory's go.mod requires, e.g. "v2.4.2"."""
    for line in (module_dir(module) / "go.mod").read_text().splitlines():
        words = line.split()
        if path in words and "=>" not in words:
            return words[words.index(path) + 1]
    raise Unavailable(f"{module}/go.mod does not require {path}")


def _containerd_ldflags(module: str) -> str:
    # what containerd's Makefile stamps: `containerd --version` and the CRI's RuntimeName
    # and version say which release runs
    pkg = "github.com/containerd/containerd/v2"
    v = required_version(module, pkg)
    return f"-X {pkg}/version.Version={v} -X {pkg}/version.Package=github.com/containerd/containerd"


def _publish(tmp: Path, final: Path) -> None:
    """Move a finished artefact's directory into place in one rename, so a killed build leaves
    no half-written entry under a key."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return
    tmp.rename(final)


def _build_go(names: list[str]) -> None:
    """`go build` the binaries named, those of one module with the same flags in one run (go
    builds their packages in parallel and each shared package once)."""
    if shutil.which("go") is None:
        raise Unavailable(
            "Go is not installed (the e2e test bed builds its cluster from Go modules)"
        )
    env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
    groups: dict[tuple[str, str, bool, tuple[str, ...]], list[str]] = {}
    for name in names:
        key = (GO_BINARIES[name].module, _ldflags(name), _cgo(name), GO_BINARIES[name].tags)
        groups.setdefault(key, []).append(name)
    for (module, ldflags, cgo, tags), group in groups.items():
        t0 = time.monotonic()
        _log(f"go build {', '.join(group)} in {module}/ (cold: minutes each)")
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            out = Path(tmp)
            cmd = ["go", "build", "-o", str(out) + "/", *(GO_PACKAGES[n] for n in group)]
            if ldflags:
                cmd[2:2] = ["-ldflags", ldflags]
            if tags:
                cmd[2:2] = ["-tags", ",".join(tags)]
            subprocess.run(
                cmd,
                cwd=module_dir(module),
                env={**env, "CGO_ENABLED": "1" if cgo else "0"},
                check=True,
            )
            seconds = time.monotonic() - t0
            for name in group:
                # `go build -o DIR/` names a binary after its package's last path element
                built = out / GO_PACKAGES[name].rstrip("/").rsplit("/", 1)[-1]
                if name == "etcd":
                    built = out / "server"
                final = go_binary(name)
                stage = Path(tempfile.mkdtemp(dir=CACHE))
                built.rename(stage / name)
                (stage / "build-seconds").write_text(f"{seconds:.1f}\n")
                _publish(stage, final.parent)
        _log(f"built {', '.join(group)} in {time.monotonic() - t0:.0f} s")


def _build_pause() -> None:
    if shutil.which("gcc") is None:
        raise Unavailable("gcc is not installed (the sandbox image's pause program is C)")
    stage = Path(tempfile.mkdtemp(dir=CACHE))
    subprocess.run(
        ["gcc", *_PAUSE_FLAGS, "-o", str(stage / "pause"), str(HERE / "pause.c")], check=True
    )
    _publish(stage, pause_binary().parent)


def ensure_built() -> Path:
    """Build each artefact whose key has no cache entry yet; return a directory whose `bin/`
    and `images/` name the cluster's binaries and images (links into the cache)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    missing_go = [n for n in GO_PACKAGES if not go_binary(n).exists()]
    if missing_go or not pause_binary().exists():
        install_packages()
    if missing_go:
        _build_go(missing_go)
    if not pause_binary().exists():
        _build_pause()
    for name in IMAGES:
        tar = image_tar(name)
        if not tar.exists():
            tar.parent.mkdir(parents=True, exist_ok=True)
            _write_small_image(name, tar)
    from tests.e2e import pyimage

    pyimage.base_layer()
    pyimage.deps_layer()
    top = _top()
    links = {
        **{top / "bin" / n: go_binary(n) for n in GO_PACKAGES},
        top / "bin" / "pause": pause_binary(),
        **{top / "images" / f"{n}.tar": image_tar(n) for n in IMAGES},
    }
    for link, target in links.items():
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink() or link.readlink() != target:
            tmp = link.with_suffix(".new")
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(target)
            tmp.replace(link)
    return top


def _base_dirs() -> list[oci.Entry]:
    return [(d, None, 0o755, None) for d in ("bin", "etc", "tmp", "proc", "sys", "dev", "www")]


def _write_small_image(name: str, out: Path) -> None:
    if name == "busybox":
        applets = subprocess.run(
            [str(BUSYBOX), "--list"], capture_output=True, text=True, check=True
        ).stdout.split()
        entries = [*_base_dirs(), ("bin/busybox", BUSYBOX.read_bytes(), 493, None)]
        entries += [(f"bin/{a}", None, 0o777, "busybox") for a in applets if a != "busybox"]
        entries.append(("etc/passwd", b"root:x:0:0:root:/:/bin/sh\n", 0o644, None))
        entries.append(("etc/group", b"root:x:0:\n", 0o644, None))
        entrypoint = ["/bin/sh"]
    else:
        binary = pause_binary() if name == "pause" else go_binary(name)
        entries = [*_base_dirs(), (name, binary.read_bytes(), 493, None)]
        entrypoint = [f"/{name}"]
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        layer = Path(tmp) / "layer.tar"
        layer.write_bytes(oci.tar_bytes(entries))
        config = {"Entrypoint": entrypoint, "Env": ["PATH=/bin:/usr/bin"]}
        oci.write_image(Path(tmp) / "image.tar", IMAGES[name], [layer], config)
        (Path(tmp) / "image.tar").replace(out)


if __name__ == "__main__":
    try:
        print(ensure_built())
    except Unavailable as e:
        sys.exit(f"e2e build: {e}")
