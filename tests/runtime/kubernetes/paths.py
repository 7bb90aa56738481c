"""Every path the cluster source takes to the API server, through one target's own clients.

client-go gives list/watch, the exec and port-forward upgrades and pods/proxy one transport; the
tests that pin that (credentials, proxies, TLS) drive all four paths the way the runtime does:
`ApiClient` for list and the pods/proxy relay, `WsApiClient` for exec and port-forward.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from probetui.probe import http_lean
from probetui.probe.exec import ExecOutput
from probetui.probe.url import format_url
from probetui.runtime.kubernetes.config import ClusterTarget, ConnectOptions, resolve
from probetui.runtime.kubernetes.proxy import OneShotProxy
from probetui.runtime.kubernetes.streams import OneShotForward, exec_in_pod
from tests.kube.emulator import ApiEmulator

EXEC_API = "client.authentication.k8s.io/v1"

# an exec credential plugin: answers from a JSON list in argv[1], one per run (the last one
# again and again), and logs each run's KUBERNETES_EXEC_INFO beside it
PLUGIN = """\
import json, os, sys
state = sys.argv[1]
with open(state) as f:
    answers = json.load(f)
answer = answers.pop(0) if len(answers) > 1 else answers[0]
with open(state, "w") as f:
    json.dump(answers, f)
with open(state + ".log", "a") as f:
    f.write(os.environ.get("KUBERNETES_EXEC_INFO", "") + "\\n")
print(json.dumps({"apiVersion": "%s", "kind": "ExecCredential", "status": answer}))
"""


@dataclass
class Plugin:
    state: Path

    @property
    def runs(self) -> list[str]:
        """Each run's KUBERNETES_EXEC_INFO, in order."""
        log = Path(f"{self.state}.log")
        return log.read_text().splitlines() if log.exists() else []


def write_plugin(directory: Path, answers: list[dict[str, Any]]) -> tuple[dict[str, Any], Plugin]:
    """The `exec` entry of a user, and the plugin it runs."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "plugin.py"
    script.write_text(PLUGIN % EXEC_API, encoding="utf-8")
    state = directory / "answers.json"
    state.write_text(json.dumps(answers), encoding="utf-8")
    entry = {
        "apiVersion": EXEC_API,
        "command": sys.executable,
        "args": [str(script), str(state)],
        "interactiveMode": "Never",
    }
    return entry, Plugin(state)


def target_for(
    api: ApiEmulator,
    directory: Path,
    *,
    user: dict[str, Any] | None = None,
    cluster: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
    read_only: bool = False,
) -> ClusterTarget:
    """A target resolved from a kubeconfig for `api`, its user and cluster entries amended."""
    doc = api.kubeconfig_dict()
    if user is not None:
        doc["users"][0]["user"] = user
    for key, value in (cluster or {}).items():
        # None takes the key out of the emulator's own entry
        if value is None:
            doc["clusters"][0]["cluster"].pop(key, None)
        else:
            doc["clusters"][0]["cluster"][key] = value
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "config"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    env = {"HOME": str(directory), **(environ or {})}
    return resolve(
        ConnectOptions(kubeconfig=str(path), read_only=read_only),
        environ=env,
        service_account_dir=directory / "no-service-account",
    )


@dataclass
class Clients:
    api: ApiClient
    ws: ApiClient

    @property
    def core(self) -> CoreV1Api:
        return CoreV1Api(self.api)

    @property
    def ws_core(self) -> CoreV1Api:
        return CoreV1Api(self.ws)

    async def list_status(self, namespace: str = "default") -> int:
        resp = await self.core.list_namespaced_pod(namespace, _preload_content=False)
        resp.release()
        return int(resp.status)

    async def exec(self, argv: list[str], pod: str = "web") -> ExecOutput:
        core = self.ws_core

        async def opener() -> Any:
            return await core.connect_get_namespaced_pod_exec(
                pod,
                "default",
                command=argv,
                container="app",
                stderr=True,
                stdout=True,
                stdin=False,
                tty=False,
                _preload_content=False,
            )

        return await exec_in_pod(opener, 2.0)

    async def forward(self, port: int, data: bytes = b"ping", pod: str = "web") -> bytes:
        """Send `data` through a port-forward to `pod:port`; what came back."""
        core = self.ws_core

        async def opener() -> Any:
            return await core.connect_get_namespaced_pod_portforward(
                pod, "default", ports=str(port), _preload_content=False
            )

        forward = OneShotForward(opener, 2.0)
        host, local = await forward.start()
        reader, writer = await asyncio.open_connection(host, local)
        try:
            writer.write(data)
            await writer.drain()
            return await asyncio.wait_for(reader.readexactly(len(data)), 2.0)
        finally:
            writer.close()
            await asyncio.wait_for(forward.done.wait(), 2.0)

    async def relay(self, port: int, pod: str = "web") -> int | None:
        """An HTTP probe through pods/proxy; the status code it saw."""
        relay = OneShotProxy(self.core, "default", pod, port, 2.0)
        host, local = await relay.start()
        attempt = await http_lean.probe(format_url("http", host, local, "/healthz"), (), 2.0)
        return attempt.status_code


@asynccontextmanager
async def clients_of(target: ClusterTarget) -> AsyncIterator[Clients]:
    """The two clients the runtime makes of a target, closed afterwards."""
    api = await target.api_client()
    try:
        ws = await target.api_client(websocket=True)
        try:
            yield Clients(api, ws)
        finally:
            await ws.close()
    finally:
        await api.close()
