"""What the test cluster runs, made once per machine and cached outside the repository.

- kube-apiserver, kubelet, kubectl and etcd, built from upstream Go modules (`gomod/go.mod`
  pins k8s.io/kubernetes and every staging module at the matching v0 release);
- `grpchealth`, a grpc.health.v1 server of our own (`gomod/cmd/grpchealth`);
- a static `pause` program (`pause.c`);
- OCI image tars for containerd: busybox (Debian's busybox-static), pause, grpchealth.

The cache key is a hash of the inputs (go.mod, go.sum, sources, the Go version and the
busybox binary), so a change to any of them rebuilds and nothing stale is used. The cache is
`$PROBETUI_E2E_CACHE`, else `~/.cache/probetui-e2e`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOMOD = HERE / "gomod"
CACHE = Path(os.environ.get("PROBETUI_E2E_CACHE", Path.home() / ".cache" / "probetui-e2e"))

GO_PACKAGES = {
    "kube-apiserver": "k8s.io/kubernetes/cmd/kube-apiserver",
    "kubelet": "k8s.io/kubernetes/cmd/kubelet",
    "kubectl": "k8s.io/kubernetes/cmd/kubectl",
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


def _key() -> str:
    h = hashlib.sha256()
    for f in sorted(GOMOD.rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(GOMOD)).encode())
            h.update(f.read_bytes())
    h.update((HERE / "pause.c").read_bytes())
    h.update(Path(__file__).read_bytes())
    go = shutil.which("go")
    if go:
        h.update(subprocess.run([go, "version"], capture_output=True, check=True).stdout)
    if BUSYBOX.exists():
        h.update(BUSYBOX.read_bytes())
    return h.hexdigest()[:16]


def bin_dir() -> Path:
    return CACHE / _key() / "bin"


def image_dir() -> Path:
    return CACHE / _key() / "images"


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


def ensure_built() -> Path:
    """Build what is missing; return the directory of the cached build."""
    top = CACHE / _key()
    done = top / "done"
    if done.exists():
        return top
    if shutil.which("go") is None:
        raise Unavailable(
            "Go is not installed (the e2e test bed builds its cluster from Go modules)"
        )
    if shutil.which("gcc") is None:
        raise Unavailable("gcc is not installed (the sandbox image's pause program is C)")
    install_packages()
    bins = top / "bin"
    bins.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    _log(f"building {', '.join(GO_PACKAGES)} into {bins} (cold: many minutes)")
    env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
    cluster = [pkg for name, pkg in GO_PACKAGES.items() if name != "grpchealth"]
    subprocess.run(
        ["go", "build", "-ldflags", _version_ldflags(), "-o", str(bins) + "/", *cluster],
        cwd=GOMOD,
        env=env,
        check=True,
    )
    # the one binary that runs inside a container, where there is no libc to link against
    subprocess.run(
        ["go", "build", "-o", str(bins / "grpchealth"), GO_PACKAGES["grpchealth"]],
        cwd=GOMOD,
        env={**env, "CGO_ENABLED": "0"},
        check=True,
    )
    # `go build -o DIR/` names etcd's binary after its module's last element, "server"
    (bins / "server").rename(bins / "etcd")
    subprocess.run(
        ["gcc", "-static", "-O2", "-o", str(bins / "pause"), str(HERE / "pause.c")], check=True
    )
    _log(f"built in {time.monotonic() - t0:.0f} s")
    make_images(bins, top / "images")
    (top / "build-seconds").write_text(f"{time.monotonic() - t0:.1f}\n")
    done.write_text("ok\n")
    return top


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _tar_bytes(entries: list[tuple[str, bytes | None, int, str | None]]) -> bytes:
    """(path, data, mode, symlink target) -> an uncompressed, reproducible tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data, mode, link in entries:
            info = tarfile.TarInfo(path)
            info.mtime = 0
            info.mode = mode
            if link is not None:
                info.type = tarfile.SYMTYPE
                info.linkname = link
                tar.addfile(info)
            elif data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _oci_layout(name: str, layer: bytes, entrypoint: list[str]) -> bytes:
    """An OCI image layout, as one tar that `ctr images import` takes."""
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin:/usr/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [_sha(layer)]},
        }
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": _sha(config),
                "size": len(config),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": _sha(layer),
                    "size": len(layer),
                }
            ],
        }
    ).encode()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": _sha(manifest),
                    "size": len(manifest),
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1],
                    },
                }
            ],
        }
    ).encode()
    blobs = [("blobs", None, 0o755, None), ("blobs/sha256", None, 0o755, None)]
    for blob in (layer, config, manifest):
        blobs.append((f"blobs/sha256/{_sha(blob)[7:]}", blob, 0o644, None))
    return _tar_bytes(
        [
            ("oci-layout", b'{"imageLayoutVersion":"1.0.0"}', 0o644, None),
            ("index.json", index, 0o644, None),
            *blobs,
        ]
    )


def _base_dirs() -> list[tuple[str, bytes | None, int, str | None]]:
    return [(d, None, 0o755, None) for d in ("bin", "etc", "tmp", "proc", "sys", "dev", "www")]


def make_images(bins: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    applets = subprocess.run(
        [str(BUSYBOX), "--list"], capture_output=True, text=True, check=True
    ).stdout.split()
    busybox = [*_base_dirs(), ("bin/busybox", BUSYBOX.read_bytes(), 493, None)]
    busybox += [(f"bin/{a}", None, 0o777, "busybox") for a in applets if a != "busybox"]
    busybox.append(("etc/passwd", b"root:x:0:0:root:/:/bin/sh\n", 0o644, None))
    busybox.append(("etc/group", b"root:x:0:\n", 0o644, None))
    layers = {
        "busybox": (busybox, ["/bin/sh"]),
        "pause": (
            [*_base_dirs(), ("pause", (bins / "pause").read_bytes(), 493, None)],
            ["/pause"],
        ),
        "grpchealth": (
            [*_base_dirs(), ("grpchealth", (bins / "grpchealth").read_bytes(), 493, None)],
            ["/grpchealth"],
        ),
    }
    for key, (entries, entrypoint) in layers.items():
        (out / f"{key}.tar").write_bytes(_oci_layout(IMAGES[key], _tar_bytes(entries), entrypoint))


if __name__ == "__main__":
    try:
        print(ensure_built())
    except Unavailable as e:
        sys.exit(f"e2e build: {e}")
