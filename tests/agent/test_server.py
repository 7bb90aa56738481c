"""The agent's HTTP server alone: who gets what, and its bounds.

Readers come through the API server's pods/proxy, which presents no client certificate and
drops their Authorization: the read token in X-Probetui-Token is all that tells a reader from
any process on the node's network.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from probetui.agent import server as server_module
from probetui.agent.hub import Hub
from probetui.agent.ring import Ring
from probetui.agent.server import AgentServer, TokenError, TokenFile
from probetui.stream.protocol import hello, loads
from tests.agent.conftest import READ_TOKEN


@contextlib.asynccontextmanager
async def _serving(read_token: Path, **kwargs: object) -> AsyncIterator[tuple[str, Hub]]:
    hub = Hub(Ring(3600, 10_000), node="node-1")
    server = AgentServer(
        hub,
        TokenFile(read_token),
        hello=lambda q: hello("agent", node="node-1"),
        metrics=lambda: "probetui_agent_pods 0\n",
        replay_window=lambda: None,
        **kwargs,  # type: ignore[arg-type]
    )
    host, port = await server.start("127.0.0.1", 0)
    try:
        yield f"http://{host}:{port}", hub
    finally:
        await server.close("stopping")


async def _get(url: str, token: str | None = None, method: str = "GET") -> tuple[int, str, str]:
    headers = {"X-Probetui-Token": token} if token is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, headers=headers) as resp,
    ):
        body = await resp.text() if method != "HEAD" else ""
        return resp.status, resp.headers.get("Content-Type", ""), body


async def test_healthz_answers_anyone_and_says_nothing_else(read_token: Path) -> None:
    async with _serving(read_token) as (url, _):
        assert await _get(url + "/healthz") == (200, "text/plain; charset=utf-8", "ok\n")
        assert (await _get(url + "/healthz", method="HEAD"))[0] == 200


@pytest.mark.parametrize("path", ["/v1/stream", "/metrics"])
@pytest.mark.parametrize("token", [None, "", "wrong", READ_TOKEN[:-1], READ_TOKEN + "x"])
async def test_no_data_without_the_read_token(
    read_token: Path, path: str, token: str | None
) -> None:
    async with _serving(read_token) as (url, hub):
        status, _, body = await _get(url + path, token)
        assert status == 401
        assert "X-Probetui-Token" in body and "probetui_agent" not in body and "hello" not in body
        assert hub.clients == set()


async def test_with_the_token(read_token: Path) -> None:
    async with _serving(read_token) as (url, _):
        status, kind, body = await _get(url + "/metrics", READ_TOKEN)
        assert (status, kind, body) == (
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            "probetui_agent_pods 0\n",
        )
        async with (
            aiohttp.ClientSession() as session,
            session.get(url + "/v1/stream", headers={"X-Probetui-Token": READ_TOKEN}) as resp,
        ):
            assert resp.status == 200 and resp.headers["Content-Type"] == "application/x-ndjson"
            assert resp.headers["Transfer-Encoding"] == "chunked"
            first = loads(await resp.content.readline())
            assert first["k"] == "hello" and first["role"] == "agent"
            live = loads(await resp.content.readline())
            assert live == {"k": "live", "at": None}  # nothing kept: nothing replayed


async def test_other_paths_methods_and_bad_queries(read_token: Path) -> None:
    async with _serving(read_token) as (url, _):
        assert (await _get(url + "/", READ_TOKEN))[0] == 404
        assert (await _get(url + "/v1/stream", READ_TOKEN, method="POST"))[0] == 405
        for query in ("since=abc", "since=inf", "summary=2", "rows=maybe", "podframes=no!"):
            status, _, body = await _get(f"{url}/v1/stream?{query}", READ_TOKEN)
            assert status == 400 and body.startswith("bad query: ")
        many = ",".join(str(i) for i in range(server_module.MAX_PODS + 1))
        assert (await _get(f"{url}/v1/stream?pods={many}", READ_TOKEN))[0] == 400


async def _kinds_until_note(url: str, query: str) -> list[str]:
    """The kinds of frame a reader with `query` gets, up to the first `note`."""
    kinds: list[str] = []
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/v1/stream?{query}", headers={"X-Probetui-Token": READ_TOKEN}) as r,
    ):
        while not kinds or kinds[-1] != "note":
            kinds.append(loads(await r.content.readline())["k"])
    return kinds


async def test_a_reader_that_watches_the_pods_itself_gets_no_pod_frames(
    read_token: Path,
) -> None:
    from probetui.runtime.kubernetes.observed import pod_status
    from probetui.spec.parse import pod_from_object
    from tests.kube.emulator import container, http_get_probe, make_pod

    obj = make_pod("web", containers=[container("app", readiness=http_get_probe("/", 80))])
    pod = pod_from_object(obj, "t")
    async with _serving(read_token) as (url, hub):
        hub.pod(pod, pod_status(obj))

        async def change() -> None:
            for _ in range(500):  # both readers past their replay
                if len(hub.clients) == 2 and all(c.live for c in hub.clients):
                    break
                await asyncio.sleep(0.01)
            hub.pod(pod, pod_status(obj))  # a pod changes: a pod frame to whoever takes them
            hub.note("topic", "after the pod")

        every, watching, _ = await asyncio.wait_for(
            asyncio.gather(
                _kinds_until_note(url, "rows=1"),
                _kinds_until_note(url, "rows=1&podframes=0"),
                change(),
            ),
            10,
        )
    assert every == ["hello", "pod", "live", "pod", "note"]
    assert watching == ["hello", "live", "note"]


async def test_a_reader_past_the_limit_is_refused(read_token: Path) -> None:
    async with (
        _serving(read_token, max_clients=1) as (url, hub),
        aiohttp.ClientSession() as session,
        session.get(url + "/v1/stream", headers={"X-Probetui-Token": READ_TOKEN}) as resp,
    ):
        await resp.content.readline()
        status, _, body = await _get(url + "/v1/stream", READ_TOKEN)
        assert status == 503 and "too many clients" in body
        assert len(hub.clients) == 1


async def test_the_stream_ends_with_a_frame_when_the_agent_stops(read_token: Path) -> None:
    hub = Hub(Ring(3600, 10_000), node="node-1")
    server = AgentServer(
        hub,
        TokenFile(read_token),
        hello=lambda q: hello("agent"),
        metrics=lambda: "",
        replay_window=lambda: None,
    )
    host, port = await server.start("127.0.0.1", 0)
    async with (
        aiohttp.ClientSession() as session,
        session.get(
            f"http://{host}:{port}/v1/stream", headers={"X-Probetui-Token": READ_TOKEN}
        ) as resp,
    ):
        await resp.content.readline()
        for _ in range(100):
            if hub.clients:
                break
            await asyncio.sleep(0.01)
        await server.close("the agent on node node-1 is stopping")
        rest = [loads(line) for line in (await resp.content.read()).splitlines()]
    assert rest[-1] == {"k": "fail", "message": "the agent on node node-1 is stopping"}


async def test_a_connection_that_sends_no_request_is_closed(
    read_token: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "HEAD_TIMEOUT", 0.2)
    async with _serving(read_token) as (url, _):
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
        assert await asyncio.wait_for(reader.read(), 5.0) == b""
        writer.close()
        # and a header past the limit is refused
        status, _, _ = await _get(url + "/healthz", "x" * (server_module.MAX_FIELD + 10))
        assert status in (400, 431)


def test_the_token_file_is_read_again_and_must_be_long(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(READ_TOKEN)
    now = [0.0]
    token = TokenFile(path, clock=lambda: now[0])
    assert token.check(READ_TOKEN) and not token.check(None)
    path.write_text("rotated-token-0123456789\n")
    assert token.check(READ_TOKEN)  # within the minute: the one read before
    now[0] = server_module.TOKEN_PERIOD
    assert token.check("rotated-token-0123456789") and not token.check(READ_TOKEN)
    path.write_text("short")
    now[0] *= 3
    assert token.check("rotated-token-0123456789")  # a bad re-read keeps the token in force
    with pytest.raises(TokenError, match="at least 16"):
        TokenFile(path)
    with pytest.raises(TokenError, match=r"cannot read the read token .*print-manifest"):
        TokenFile(tmp_path / "missing")


async def test_probe_now_is_a_post_with_the_token_and_a_json_body(read_token: Path) -> None:
    asked: list[tuple[str, str, str]] = []

    def probe(uid: str, container: str, probe: str) -> tuple[int, str]:
        asked.append((uid, container, probe))
        return (200, "readiness of app: attempt queued") if uid == "u1" else (404, "no such probe")

    async def post(url: str, token: str | None, body: bytes) -> tuple[int, str]:
        headers = {"X-Probetui-Token": token} if token is not None else {}
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, headers=headers, data=body) as resp,
        ):
            return resp.status, await resp.text()

    good = b'{"uid": "u1", "container": "app", "probe": "readiness"}'
    async with _serving(read_token, probe=probe) as (url, _):
        assert (await post(url + "/v1/probe", None, good))[0] == 401
        assert (await post(url + "/v1/probe", "wrong", good))[0] == 401
        assert (await _get(url + "/v1/probe", READ_TOKEN))[0] == 405
        assert asked == []
        assert (await post(url + "/v1/probe", READ_TOKEN, b"{}"))[0] == 400
        assert (await post(url + "/v1/probe", READ_TOKEN, b"x" * 5000))[0] == 413
        assert await post(url + "/v1/probe", READ_TOKEN, good) == (
            200,
            "readiness of app: attempt queued\n",
        )
        other = b'{"uid": "u2", "container": "app", "probe": "readiness"}'
        assert (await post(url + "/v1/probe", READ_TOKEN, other))[0] == 404
        # POST nowhere else
        assert (await post(url + "/v1/stream", READ_TOKEN, good))[0] == 405
    assert asked == [("u1", "app", "readiness"), ("u2", "app", "readiness")]
