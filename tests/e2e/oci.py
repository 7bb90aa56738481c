"""OCI image layouts for containerd, written by hand: reproducible layer tars and the one tar
`ctr images import` takes (index, manifest, config and the layers as blobs).

Layers are uncompressed tars with every mtime 0, so the same files make the same digest and an
unchanged layer keeps its identity from one build to the next.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path

# (path, data, mode, symlink target): data None and no target is a directory
Entry = tuple[str, bytes | None, int, str | None]


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def tar_bytes(entries: list[Entry], owner: dict[str, int] | None = None) -> bytes:
    """(path, data, mode, symlink target) -> an uncompressed, reproducible tar; `owner` gives
    the uid (and gid) of the paths it names, every other path is root's."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data, mode, link in entries:
            info = tarfile.TarInfo(path)
            info.mtime = 0
            info.mode = mode
            info.uid = info.gid = (owner or {}).get(path, 0)
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


def tar_tree(root: Path, out: Path, owners: dict[str, int] | None = None) -> None:
    """The tree under `root` as a reproducible layer tar: paths relative to it, sorted, every
    mtime 0 and every file root's (the image's user owns nothing it could rewrite) but the
    paths `owners` gives a uid (and gid) for."""

    def _normal(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime = 0
        info.uid = info.gid = (owners or {}).get(info.name, 0)
        info.uname = info.gname = ""
        return info

    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(os.listdir(root)):
            tar.add(root / name, arcname=name, filter=_normal)
    tmp.replace(out)


def write_image(
    out: Path, name: str, layers: list[Path], config: dict, *, history: str = "probetui e2e"
) -> None:
    """An OCI image layout of `layers` (layer tars, bottom first) as one tar at `out`;
    `config` is the image config's `config` object (Entrypoint, Env, User, WorkingDir)."""
    digests = [file_sha256(p) for p in layers]
    config_blob = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": digests},
            "history": [{"created_by": history} for _ in layers],
        },
        sort_keys=True,
    ).encode()
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": sha256(config_blob),
                "size": len(config_blob),
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": d,
                    "size": p.stat().st_size,
                }
                for p, d in zip(layers, digests, strict=True)
            ],
        }
    ).encode()
    index = json.dumps(
        {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": sha256(manifest),
                    "size": len(manifest),
                    "annotations": {
                        "io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[1],
                    },
                }
            ],
        }
    ).encode()

    def _add(tar: tarfile.TarFile, path: str, data: bytes | None = None, mode: int = 0o644):
        info = tarfile.TarInfo(path)
        info.mtime = 0
        info.mode = mode
        if data is None:
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        else:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    tmp = out.with_suffix(".tmp")
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        _add(tar, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        _add(tar, "index.json", index)
        _add(tar, "blobs", mode=0o755)
        _add(tar, "blobs/sha256", mode=0o755)
        seen: set[str] = set()
        for p, d in zip(layers, digests, strict=True):
            if d in seen:
                continue
            seen.add(d)
            info = tar.gettarinfo(str(p), arcname=f"blobs/sha256/{d[7:]}")
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with p.open("rb") as f:
                tar.addfile(info, f)
        for blob in (config_blob, manifest):
            _add(tar, f"blobs/sha256/{sha256(blob)[7:]}", blob)
    tmp.replace(out)
