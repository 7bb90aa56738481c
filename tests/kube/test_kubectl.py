"""kubectl, an independent client, against the emulator: discovery, list, selectors, watch.

client-go sends a bearer token only over TLS, so these run the emulator with TLS on.
Skipped where kubectl is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.kube.emulator import ApiEmulator, make_pod

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")


@pytest.fixture
async def tls_api() -> AsyncIterator[ApiEmulator]:
    async with ApiEmulator(tls=True) as api:
        yield api
        assert not api.errors, api.errors[0]


def _kubectl_args(api: ApiEmulator, tmp_path: Path, *args: str) -> list[str]:
    config = api.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    assert KUBECTL is not None
    return [KUBECTL, "--kubeconfig", str(config), "--cache-dir", str(tmp_path / "cache"), *args]


def _env(tmp_path: Path) -> dict[str, str]:
    # a private HOME: kubectl must not read or write the user's ~/.kube
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    env["HOME"] = str(tmp_path)
    return env


async def kubectl(api: ApiEmulator, tmp_path: Path, *args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        *_kubectl_args(api, tmp_path, *args),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(tmp_path),
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 20)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_kubectl_get_pods_json(tls_api: ApiEmulator, tmp_path: Path) -> None:
    tls_api.add_pod(make_pod("web", labels={"app": "web"}))
    tls_api.add_pod(make_pod("db", labels={"app": "db"}))
    tls_api.add_pod(make_pod("other", namespace="team", labels={"app": "web"}))

    listed = json.loads(await kubectl(tls_api, tmp_path, "get", "pods", "-o", "json"))
    assert [p["metadata"]["name"] for p in listed["items"]] == ["db", "web"]
    assert listed["items"][0]["status"]["containerStatuses"][0]["ready"] is True

    names = await kubectl(
        tls_api, tmp_path, "get", "pods", "-A", "-l", "app in (web)", "-o", "name"
    )
    assert names.split() == ["pod/web", "pod/other"]

    lists = [r for r in tls_api.requests if r.verb == "list"]
    assert [(r.path, r.query.get("labelSelector")) for r in lists] == [
        ("/api/v1/namespaces/default/pods", None),
        ("/api/v1/pods", ["app in (web)"]),
    ]
    assert tls_api.non_read_requests() == []


async def test_kubectl_watch_sees_a_modification(tls_api: ApiEmulator, tmp_path: Path) -> None:
    tls_api.add_pod(make_pod("web"))
    proc = await asyncio.create_subprocess_exec(
        *_kubectl_args(
            tls_api, tmp_path, "get", "pods", "-w", "-o", "json", "--output-watch-events"
        ),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=_env(tmp_path),
    )
    try:
        await tls_api.wait_for_watch(timeout=10)
        tls_api.patch_pod("web", {"metadata": {"labels": {"rollout": "2"}}})
        events = await asyncio.wait_for(_read_events(proc.stdout, until="MODIFIED"), 10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        await proc.wait()
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED"]
    assert events[1]["object"]["metadata"]["labels"] == {"rollout": "2"}
    watch = next(r for r in tls_api.requests if r.verb == "watch")
    list_rv = str(tls_api.resource_version - 1)
    assert watch.query["resourceVersion"] == [list_rv] and watch.query["watch"] == ["true"]


async def _read_events(stream: Any, *, until: str) -> list[dict[str, Any]]:
    """Concatenated pretty-printed JSON documents, decoded as they arrive."""
    decoder = json.JSONDecoder()
    buffer = ""
    events: list[dict[str, Any]] = []
    while not events or events[-1]["type"] != until:
        chunk = await stream.read(65536)
        assert chunk, "kubectl ended early"
        buffer += chunk.decode()
        while buffer.strip():
            try:
                doc, end = decoder.raw_decode(buffer.lstrip())
            except json.JSONDecodeError:
                break
            events.append(doc)
            buffer = buffer.lstrip()[end:]
    return events
