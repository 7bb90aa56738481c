"""What the test cluster runs, made once per machine and cached outside the repository.

- kube-apiserver, kubelet, kubectl, kube-scheduler, kube-controller-manager, kube-proxy and
  etcd, built from upstream Go modules (`gomod/go.mod` pins k8s.io/kubernetes and every staging
  module at the matching v0 release);
- `grpchealth`, a grpc.health.v1 server of our own (`gomod/cmd/grpchealth`);
- a static `pause` program (`pause.c`);
- OCI image tars for containerd: busybox (Debian's busybox-static), pause, grpchealth;
- the agent image's cached layers, Debian 12's python3.11 and the project's dependencies
  (`pyimage.py`; its per-run layer, the project's wheel, is made at `up`).

Every artefact has a cache key of its own, a hash of only what it is made of (a Go binary: go.mod,
go.sum, the Go release, its package and flags; an image: the binary it holds), so a change to
one rebuilds that one and nothing stale is used. The cache is `$PROBETUI_E2E_CACHE`, else
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
from pathlib import Path

from tests.e2e import oci

HERE = Path(__file__).resolve().parent
GOMOD = HERE / "gomod"
CACHE = Path(os.environ.get("PROBETUI_E2E_CACHE", Path.home() / ".cache" / "probetui-e2e"))

GO_PACKAGES = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
    "kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler",
    "kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
    "kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
    "etcd": "go.etcd.io/etcd/server/v3",
    "grpchealth": "./cmd/grpchealth",
}
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
    # the one binary that runs inside a container, where there is no libc to link against
    return name != "grpchealth"


def _ldflags(name: str) -> str:
    return _version_ldflags() if _cgo(name) else ""


def go_key(name: str) -> str:
    """What one Go binary is made of: the module graph, the Go release, its package and flags
    (and, for a package of ours, its sources); nothing another binary is made of."""
    pkg = GO_PACKAGES[name]
    parts: list[str | bytes] = [
        "go",
        (GOMOD / "go.mod").read_bytes(),
        (GOMOD / "go.sum").read_bytes(),
        _go_version(),
        pkg,
        _ldflags(name),
        str(_cgo(name)),
    ]
    if pkg.startswith("./"):
        for f in sorted((GOMOD / pkg).rglob("*")):
            if f.is_file():
                parts += [str(f.relative_to(GOMOD)), f.read_bytes()]
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


def kubernetes_version() -> str:
    """The k8s.io/kubernetes release gomod/go.mod requires, e.g. "v1.35.4"."""
    for line in (GOMOD / "go.mod").read_text().splitlines():
        words = line.split()
        if "k8s.io/kubernetes" in words and "=>" not in words:
            return words[words.index("k8s.io/kubernetes") + 1]
    raise Unavailable("gomod/go.mod does not require k8s.io/kubernetes")


def _version_ldflags() -> str:
    # what upstream's hack/lib/version.sh stamps: without it the kubelet calls itself
    # v0.0.0-master and its probes' User-Agent says kube-probe/0.0
    v = kubernetes_version()
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


def _publish(tmp: Path, final: Path) -> None:
    """Move a finished artefact's directory into place in one rename, so a killed build leaves
    no half-written entry under a key."""
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        shutil.rmtree(tmp, ignore_errors=True)
        return
    tmp.rename(final)


def _build_go(names: list[str]) -> None:
    """`go build` the binaries named, those with the same flags in one run (go builds their
    packages in parallel and each shared package once)."""
    if shutil.which("go") is None:
        raise Unavailable(
            "Go is not installed (the e2e test bed builds its cluster from Go modules)"
        )
    env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
    groups: dict[tuple[str, bool], list[str]] = {}
    for name in names:
        groups.setdefault((_ldflags(name), _cgo(name)), []).append(name)
    for (ldflags, cgo), group in groups.items():
        t0 = time.monotonic()
        _log(f"go build {', '.join(group)} (cold: minutes each)")
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            out = Path(tmp)
            cmd = ["go", "build", "-o", str(out) + "/", *(GO_PACKAGES[n] for n in group)]
            if ldflags:
                cmd[2:2] = ["-ldflags", ldflags]
            subprocess.run(
                cmd, cwd=GOMOD, env={**env, "CGO_ENABLED": "1" if cgo else "0"}, check=True
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
