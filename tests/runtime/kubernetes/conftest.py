"""A small recording API server on 127.0.0.1 for the cluster source's building blocks.

It answers what the guard lets through (list, get and watch of pods and events) and also
accepts everything the guard must stop (writes, exec/attach/port-forward websockets, proxy), so
a request that slipped through would succeed and be seen in `requests`. The full API emulator
lives in tests/kube/; this one only needs to record.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

DATA = Path(__file__).parent / "data"

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # the API client trusts the environment's proxies; keep every byte on loopback
    for name in _PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    yield


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@dataclass(slots=True)
class Seen:
    method: str
    path: str
    query: str
    upgrade: bool
    authorization: str


@dataclass
class Recorder:
    url: str
    requests: list[Seen] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.requests]


def _pod() -> dict[str, Any]:
    return load("pod_web.json")


def _event() -> dict[str, Any]:
    return load("events.json")["items"][0]


async def _watch(request: web.Request, kind: str, obj: dict[str, Any]) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    modified = copy.deepcopy(obj)
    modified["metadata"]["resourceVersion"] = "90001"
    for type_, o in (("ADDED", obj), ("MODIFIED", modified)):
        line = json.dumps({"type": type_, "object": {"kind": kind, "apiVersion": "v1", **o}})
        await resp.write(line.encode() + b"\n")
    await resp.write_eof()
    return resp


async def _list(request: web.Request, kind: str, obj: dict[str, Any]) -> web.StreamResponse:
    if request.query.get("watch", "").lower() in ("true", "1"):
        return await _watch(request, kind, obj)
    body = {
        "kind": f"{kind}List",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "90000"},
        "items": [obj],
    }
    return web.json_response(body)


async def _websocket(request: web.Request) -> web.StreamResponse:
    ws = web.WebSocketResponse(protocols=("v4.channel.k8s.io",))
    await ws.prepare(request)
    await ws.send_bytes(b"\x01hello\n")
    await ws.send_bytes(b"\x03" + json.dumps({"status": "Success"}).encode())
    await ws.close()
    return ws


def _app(recorder: Recorder) -> web.Application:
    @web.middleware
    async def record(request: web.Request, handler: Any) -> web.StreamResponse:
        recorder.requests.append(
            Seen(
                method=request.method,
                path=request.path,
                query=request.query_string,
                upgrade="upgrade" in request.headers.get("Connection", "").lower(),
                authorization=request.headers.get("Authorization", ""),
            )
        )
        return await handler(request)

    async def pods(request: web.Request) -> web.StreamResponse:
        return await _list(request, "Pod", _pod())

    async def pod(request: web.Request) -> web.StreamResponse:
        if request.method == "GET":
            return web.json_response({"kind": "Pod", "apiVersion": "v1", **_pod()})
        await request.read()
        return web.json_response({"kind": "Pod", "apiVersion": "v1", **_pod()})

    async def create(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.json_response({"kind": "Pod", "apiVersion": "v1", **_pod()}, status=201)

    async def events(request: web.Request) -> web.StreamResponse:
        return await _list(request, "Event", _event())

    async def streaming(request: web.Request) -> web.StreamResponse:
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await _websocket(request)
        return web.json_response({"kind": "Status", "status": "Failure", "code": 400}, status=400)

    async def proxy(request: web.Request) -> web.StreamResponse:
        await request.read()
        return web.Response(text="proxied")

    app = web.Application(middlewares=[record])
    base = "/api/v1/namespaces/{ns}/pods"
    app.router.add_get(base, pods)
    app.router.add_post(base, create)
    app.router.add_route("*", base + "/{name}", pod)
    for sub in ("exec", "attach", "portforward"):
        app.router.add_route("*", f"{base}/{{name}}/{sub}", streaming)
    app.router.add_route("*", base + "/{name}/proxy", proxy)
    app.router.add_route("*", base + "/{name}/proxy/{rest:.*}", proxy)
    app.router.add_route("*", "/api/v1/namespaces/{ns}/services/{name}/proxy", proxy)
    app.router.add_route("*", "/api/v1/nodes/{name}/proxy", proxy)
    app.router.add_get("/api/v1/namespaces/{ns}/events", events)
    app.router.add_get("/api/v1/events", events)
    return app


@pytest.fixture
async def api_server() -> AsyncIterator[Recorder]:
    recorder = Recorder(url="")
    runner = web.AppRunner(_app(recorder))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    recorder.url = f"http://127.0.0.1:{port}"
    try:
        yield recorder
    finally:
        await runner.cleanup()


__all__ = ["DATA", "Recorder", "Seen", "load"]


# the API emulator (tests/kube/emulator) for the reflector, streams and runtime tests
from tests.kube.emulator.fixtures import api, core_v1, echo_server, http_target  # noqa: E402

__all__ += ["api", "core_v1", "echo_server", "http_target"]
