"""Manifests of several small pods for the shard tests: real processes, exec and TCP probes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.processes import free_port

PY = sys.executable

# listens on argv[1] (TCP), writes "<pid>" to argv[2], then sleeps
SERVER = (
    "import os, socket, sys, time\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(64)\n"
    "open(sys.argv[2], 'a').write(f'{os.getpid()}' + chr(10))\n"
    "while True:\n"
    "    c, _ = s.accept(); c.close()\n"
)


def pods_manifest(tmp_path: Path, count: int = 4) -> tuple[Path, Path]:
    """`count` pods, each one container that listens on its own port, with a TCP readiness
    probe and an exec liveness probe at period 1 s; the containers' PIDs go to the pids file."""
    pids = tmp_path / "pids"
    docs = []
    for i in range(count):
        port = free_port()
        container = {
            "name": "app",
            "command": [PY, "-c", SERVER, str(port), str(pids)],
            "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 1},
            "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1},
        }
        docs.append(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"p{i}"},
                    "spec": {"containers": [container]},
                }
            )
        )
    path = tmp_path / "pods.yaml"
    path.write_text("\n---\n".join(docs))
    return path, pids
