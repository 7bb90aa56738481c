"""Place a pod in a shard by a stable hash of its UID, the same in every process and run."""

from __future__ import annotations

import hashlib


def shard_of(pod_uid: str, shards: int) -> int:
    # not hash(): Python salts str hashes per process, and the parent and a restarted shard
    # must agree
    digest = hashlib.blake2b(pod_uid.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


__all__ = ["shard_of"]
