"""The API emulator, driven by the real kubernetes-asyncio client over HTTP and websockets.

Each test pins one behaviour of the apiserver a cluster client relies on: list and watch with
resourceVersion, bookmarks, 410 Expired, cut streams, events, exec, port-forward, proxy, RBAC
view, and the request log the read-only proofs are built on.
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from kubernetes_asyncio import watch
from kubernetes_asyncio.client import ApiClient, CoreV1Api, EventsV1Api
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.stream import WsApiClient

from tests.kube.emulator import ApiEmulator, container, make_event, make_pod
from tests.kube.emulator.fixtures import EchoServer, HttpTarget

Obj = dict[str, Any]


async def raw(coro: Any) -> Obj:
    """The JSON body of a call made with _preload_content=False."""
    resp = await coro
    try:
        return json.loads(await resp.read())
    finally:
        resp.release()


def names(body: Obj) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


def auth(api: ApiEmulator) -> dict[str, str]:
    return {"Authorization": f"Bearer {api.token}"}


_background: set[asyncio.Task[None]] = set()


def end_when_open(api: ApiEmulator, resource: str = "pods", after: float = 0.0) -> None:
    """End the next watch on `resource` once it is open (and `after` seconds later)."""

    async def run() -> None:
        await api.wait_for_watch(resource)
        await asyncio.sleep(after)
        api.end_watches()

    task = asyncio.create_task(run())
    _background.add(task)
    task.add_done_callback(_background.discard)


async def watch_events(core_v1: CoreV1Api, **kwargs: Any) -> list[tuple[str, Obj]]:
    """Every event of one watch (timeout_seconds makes kubernetes-asyncio stop, not retry)."""
    kwargs.setdefault("timeout_seconds", 5)
    seen: list[tuple[str, Obj]] = []
    async with watch.Watch() as w:
        async for event in w.stream(core_v1.list_namespaced_pod, "default", **kwargs):
            seen.append((event["type"], event["raw_object"]))
    return seen


# ----- list and get -----


async def test_list_is_a_podlist_with_the_global_resource_version(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    api.add_event(make_event(api.get_pod("web") or {}, "Pulled", "pulled", type="Normal"))
    body = await raw(core_v1.list_namespaced_pod("default", _preload_content=False))

    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"] == str(api.resource_version)
    # items of a list carry no TypeMeta, as the apiserver encodes them
    assert "kind" not in body["items"][0] and names(body) == ["web"]
    # the generated models still deserialise what the emulator sends
    typed = await core_v1.list_namespaced_pod("default")
    assert typed.items[0].status.container_statuses[0].ready is True


async def test_list_all_namespaces_is_in_namespace_then_name_order(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    for ns, name in (("b", "x"), ("a", "z"), ("a", "y")):
        api.add_pod(make_pod(name, namespace=ns))
    body = await raw(core_v1.list_pod_for_all_namespaces(_preload_content=False))
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in body["items"]] == [
        ("a", "y"),
        ("a", "z"),
        ("b", "x"),
    ]
    only_a = await raw(core_v1.list_namespaced_pod("a", _preload_content=False))
    assert names(only_a) == ["y", "z"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["web-1", "web-2"]),
        ("app==web,tier=front", ["web-1"]),
        ("app!=web", ["db", "plain"]),
        ("app in (web, db)", ["db", "web-1", "web-2"]),
        ("app notin (web)", ["db", "plain"]),
        ("tier", ["web-1"]),
        ("!app", ["plain"]),
    ],
)
async def test_label_selectors(
    api: ApiEmulator, core_v1: CoreV1Api, selector: str, expected: list[str]
) -> None:
    api.add_pod(make_pod("web-1", labels={"app": "web", "tier": "front"}))
    api.add_pod(make_pod("web-2", labels={"app": "web"}))
    api.add_pod(make_pod("db", labels={"app": "db"}))
    api.add_pod(make_pod("plain"))
    body = await raw(
        core_v1.list_namespaced_pod("default", label_selector=selector, _preload_content=False)
    )
    assert names(body) == expected


async def test_field_selectors_and_an_unsupported_field(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    api.add_pod(make_pod("pending", phase="Pending"))
    by_name = await raw(
        core_v1.list_namespaced_pod(
            "default", field_selector="metadata.name=web", _preload_content=False
        )
    )
    not_running = await raw(
        core_v1.list_namespaced_pod(
            "default", field_selector="status.phase!=Running", _preload_content=False
        )
    )
    assert names(by_name) == ["web"] and names(not_running) == ["pending"]

    with pytest.raises(ApiException) as err:
        await core_v1.list_namespaced_pod("default", field_selector="spec.bogus=1")
    body = json.loads(err.value.body)
    assert err.value.status == 400 and body["reason"] == "BadRequest"
    assert body["message"] == "field label not supported: spec.bogus"


async def test_get_one_pod_and_a_not_found_status(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("web"))
    pod = await raw(core_v1.read_namespaced_pod("web", "default", _preload_content=False))
    assert pod["kind"] == "Pod" and pod["metadata"]["name"] == "web"

    with pytest.raises(ApiException) as err:
        await core_v1.read_namespaced_pod("nope", "default")
    body = json.loads(err.value.body)
    assert err.value.status == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "pods"},
        "code": 404,
    }


async def test_pages_with_limit_and_continue_from_one_snapshot(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    for i in range(5):
        api.add_pod(make_pod(f"p{i}"))
    first = await raw(core_v1.list_namespaced_pod("default", limit=2, _preload_content=False))
    assert names(first) == ["p0", "p1"] and first["metadata"]["remainingItemCount"] == 3
    api.add_pod(make_pod("p00"))  # created after the first page: not in this list
    api.delete_pod("p3")  # deleted after the first page: still in this list
    second = await raw(
        core_v1.list_namespaced_pod(
            "default", limit=10, _continue=first["metadata"]["continue"], _preload_content=False
        )
    )
    assert names(second) == ["p2", "p3", "p4"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]

    api.compact()
    with pytest.raises(ApiException) as err:
        await core_v1.list_namespaced_pod(
            "default", limit=2, _continue=first["metadata"]["continue"]
        )
    assert err.value.status == 410 and json.loads(err.value.body)["reason"] == "Expired"


async def test_list_at_an_exact_resource_version(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("web"))
    rv = str(api.resource_version)
    api.patch_pod("web", {"metadata": {"labels": {"v": "2"}}})
    api.add_pod(make_pod("later"))
    then = await raw(
        core_v1.list_namespaced_pod(
            "default",
            resource_version=rv,
            resource_version_match="Exact",
            _preload_content=False,
        )
    )
    assert names(then) == ["web"] and "v" not in then["items"][0]["metadata"]["labels"]
    with pytest.raises(ApiException) as err:
        await core_v1.list_namespaced_pod(
            "default", resource_version="999999", resource_version_match="Exact"
        )
    assert err.value.status == 504


# ----- watch -----


async def test_watch_from_a_resource_version_replays_every_later_change(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    listed = await raw(core_v1.list_namespaced_pod("default", _preload_content=False))
    rv = listed["metadata"]["resourceVersion"]
    api.add_pod(make_pod("db"))
    api.patch_pod("web", {"status": {"phase": "Failed"}})
    api.delete_pod("db")

    end_when_open(api)
    seen = await asyncio.wait_for(watch_events(core_v1, resource_version=rv), 3)
    assert [(t, o["metadata"]["name"]) for t, o in seen] == [
        ("ADDED", "db"),
        ("MODIFIED", "web"),
        ("DELETED", "db"),
    ]
    rvs = [int(o["metadata"]["resourceVersion"]) for _, o in seen]
    assert rvs == sorted(rvs) and rvs[-1] == api.resource_version
    assert seen[0][1]["kind"] == "Pod"  # watch objects carry TypeMeta


async def test_live_watch_sees_changes_bookmarks_and_selector_exits(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web", labels={"app": "web"}))
    rv = str(api.resource_version)

    async def drive() -> None:
        await api.wait_for_watch()
        api.add_pod(make_pod("web-2", labels={"app": "web"}))
        api.add_pod(make_pod("db", labels={"app": "db"}))  # never matches: not seen
        assert api.send_bookmarks() == 1
        # leaving the selector arrives as DELETED with the change's resourceVersion
        api.patch_pod("web", {"metadata": {"labels": {"app": "moved"}}})
        api.end_watches()

    driver = asyncio.create_task(drive())
    seen = await asyncio.wait_for(
        watch_events(
            core_v1, resource_version=rv, label_selector="app=web", allow_watch_bookmarks=True
        ),
        3,
    )
    await driver
    assert [t for t, _ in seen] == ["ADDED", "BOOKMARK", "DELETED"]
    assert seen[1][1]["metadata"] == {
        "resourceVersion": str(api.resource_version - 1),
        "creationTimestamp": None,
    }
    assert seen[2][1]["metadata"]["name"] == "web"
    assert seen[2][1]["metadata"]["labels"] == {"app": "web"}
    assert seen[2][1]["metadata"]["resourceVersion"] == str(api.resource_version)


async def test_watch_without_resource_version_starts_with_synthetic_added(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("a"))
    api.add_pod(make_pod("b"))
    end_when_open(api)
    seen = await asyncio.wait_for(watch_events(core_v1), 3)
    assert [(t, o["metadata"]["name"]) for t, o in seen] == [("ADDED", "a"), ("ADDED", "b")]


async def test_periodic_bookmarks_carry_the_current_resource_version(
    core_v1: CoreV1Api, api: ApiEmulator
) -> None:
    api.settings.bookmark_interval = 0.05
    api.add_pod(make_pod("web"))
    end_when_open(api, after=0.3)
    seen = await asyncio.wait_for(
        watch_events(
            core_v1, resource_version=str(api.resource_version), allow_watch_bookmarks=True
        ),
        3,
    )
    assert len(seen) >= 2 and {t for t, _ in seen} == {"BOOKMARK"}
    assert seen[0][1]["metadata"]["resourceVersion"] == str(api.resource_version)


async def test_watch_timeout_seconds_ends_the_stream_cleanly(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    # real time: the smallest timeoutSeconds the apiserver accepts is 1
    loop = asyncio.get_running_loop()
    started = loop.time()
    seen = await asyncio.wait_for(
        watch_events(core_v1, resource_version=str(api.resource_version), timeout_seconds=1), 3
    )
    assert seen == [] and 0.9 < loop.time() - started < 2.0


async def test_expired_watch_gets_an_in_stream_410_and_so_does_a_new_one(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    old_rv = str(api.resource_version)
    api.add_pod(make_pod("db"))

    async def expire() -> None:
        await api.wait_for_watch()
        assert api.expire_watches() == 1

    expirer = asyncio.create_task(expire())
    with pytest.raises(ApiException) as open_watch:
        await asyncio.wait_for(watch_events(core_v1, resource_version=str(api.resource_version)), 3)
    await expirer
    assert open_watch.value.status == 410

    with pytest.raises(ApiException) as new_watch:
        await asyncio.wait_for(watch_events(core_v1, resource_version=old_rv), 3)
    assert new_watch.value.status == 410
    assert f"too old resource version: {old_rv} " in str(new_watch.value.reason)
    watch_request = api.requests[-1]
    assert watch_request.verb == "watch" and watch_request.status == 200  # in-stream, as upstream


async def test_expired_watch_as_an_http_410_status(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("web"))
    old_rv = str(api.resource_version - 1)
    api.expire_watches(how="status")
    with pytest.raises(ApiException) as err:
        await asyncio.wait_for(watch_events(core_v1, resource_version=old_rv), 3)
    assert err.value.status == 410 and api.requests[-1].status == 410

    resp = await core_v1.list_namespaced_pod(
        "default", watch=True, resource_version=old_rv, _preload_content=False
    )
    body = json.loads(await resp.read())
    assert resp.status == 410 and body["reason"] == "Expired" and body["code"] == 410


async def test_a_stream_cut_mid_event_fails_the_read_and_a_relist_recovers(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    rv = str(api.resource_version)

    async def cut() -> None:
        await api.wait_for_watch()
        api.cut_streams(on_next_event=True)
        api.patch_pod("web", {"metadata": {"labels": {"v": "2"}}})

    cutter = asyncio.create_task(cut())
    with pytest.raises(aiohttp.ClientPayloadError):
        await asyncio.wait_for(watch_events(core_v1, resource_version=rv), 3)
    await cutter
    # the event lost with the connection is in the next list, and a watch resumes after it
    listed = await raw(core_v1.list_namespaced_pod("default", _preload_content=False))
    assert listed["items"][0]["metadata"]["labels"] == {"v": "2"}
    # and a watch from the last delivered RV replays it
    end_when_open(api)
    seen = await asyncio.wait_for(watch_events(core_v1, resource_version=rv), 3)
    assert [t for t, _ in seen] == ["MODIFIED"]


async def test_cut_now_sends_half_a_line(api: ApiEmulator) -> None:
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.get(
            f"{api.url}/api/v1/pods", params={"watch": "1", "resourceVersion": "0"}
        ) as resp,
    ):
        assert resp.headers["Content-Type"].startswith("application/json")
        assert resp.headers["Transfer-Encoding"] == "chunked"
        await api.wait_for_watch()
        api.cut_streams()
        with pytest.raises(aiohttp.ClientPayloadError):
            await asyncio.wait_for(resp.content.read(), 2)


# ----- faults -----


async def test_fail_next_answers_status_bodies_then_recovers(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    api.fail_next(1, 500, verb="list")
    api.fail_next(1, 429, verb="list")
    with pytest.raises(ApiException) as first:
        await core_v1.list_namespaced_pod("default")
    with pytest.raises(ApiException) as second:
        await core_v1.list_namespaced_pod("default")
    assert first.value.status == 500
    assert json.loads(first.value.body)["reason"] == "InternalError"
    assert second.value.status == 429 and second.value.headers["Retry-After"] == "1"
    assert names(await raw(core_v1.list_namespaced_pod("default", _preload_content=False))) == [
        "web"
    ]


async def test_unauthenticated_requests_get_401(api: ApiEmulator) -> None:
    async with ApiClient(api.configuration(token="wrong")) as client:
        with pytest.raises(ApiException) as err:
            await CoreV1Api(client).list_namespaced_pod("default")
    assert err.value.status == 401 and json.loads(err.value.body)["reason"] == "Unauthorized"


# ----- events -----


async def test_core_events_list_watch_and_involved_object_selector(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    web = api.add_pod(make_pod("web"))
    db = api.add_pod(make_pod("db"))
    api.add_event(make_event(db, "Pulled", "Successfully pulled image", type="Normal"))
    rv = str(api.resource_version)
    api.record_event(
        "web", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 500"
    )
    api.record_event(
        "web", "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 500"
    )

    selector = "involvedObject.kind=Pod,involvedObject.name=web"
    listed = await raw(
        core_v1.list_namespaced_event("default", field_selector=selector, _preload_content=False)
    )
    assert listed["kind"] == "EventList" and len(listed["items"]) == 1
    event = listed["items"][0]
    assert event["count"] == 2 and event["involvedObject"]["uid"] == web["metadata"]["uid"]
    assert event["involvedObject"]["fieldPath"] == "spec.containers{app}"
    assert event["source"] == {"component": "kubelet", "host": "node-1"}

    all_ns = await raw(core_v1.list_event_for_all_namespaces(_preload_content=False))
    assert len(all_ns["items"]) == 2

    seen: list[tuple[str, int]] = []
    end_when_open(api, "events")
    async with watch.Watch() as w:
        stream = w.stream(
            core_v1.list_namespaced_event,
            "default",
            resource_version=rv,
            field_selector=selector,
            timeout_seconds=3,
        )
        async for ev in stream:
            seen.append((ev["type"], ev["raw_object"]["count"]))
    # a repeat is a PATCH of the same event: MODIFIED with count + 1
    assert seen == [("ADDED", 1), ("MODIFIED", 2)]


async def test_kubelet_recorder_combines_similar_events(api: ApiEmulator) -> None:
    api.add_pod(make_pod("web"))
    for i in range(12):
        api.record_event("web", "Unhealthy", f"Liveness probe failed: body {i}")
    combined = [e for e in api.events() if e["message"].startswith("(combined from similar")]
    assert len(api.events()) == 10 and len(combined) == 1
    assert combined[0]["count"] == 3
    assert (
        combined[0]["message"] == "(combined from similar events): Liveness probe failed: body 11"
    )


async def test_events_k8s_io_v1_view(api: ApiEmulator) -> None:
    pod = api.add_pod(make_pod("web"))
    api.add_event(
        make_event(pod, "BackOff", "Back-off restarting failed container", series_count=4)
    )
    async with ApiClient(api.configuration()) as client:
        body = await raw(
            EventsV1Api(client).list_namespaced_event("default", _preload_content=False)
        )
    item = body["items"][0]
    assert body["apiVersion"] == "events.k8s.io/v1"
    assert item["note"] == "Back-off restarting failed container"
    assert item["regarding"]["name"] == "web" and item["series"]["count"] == 4
    assert item["deprecatedCount"] == 1 and item["reportingController"] == "kubelet"


# ----- exec -----


async def test_exec_streams_stdout_and_reports_the_exit_code_on_channel_3(
    api: ApiEmulator,
) -> None:
    api.add_pod(make_pod("web"))
    async with WsApiClient(api.configuration()) as client:
        v1 = CoreV1Api(client)
        text = await v1.connect_get_namespaced_pod_exec(
            "web", "default", command=["sh", "-c", "echo hello"], stdout=True, stderr=True
        )
        assert text == "hello\n"

        async def run(script: str) -> tuple[bytes, bytes, Obj]:
            out, err, status = b"", b"", b""
            ws_ctx = await v1.connect_get_namespaced_pod_exec(
                "web",
                "default",
                command=["sh", "-c", script],
                stdout=True,
                stderr=True,
                _preload_content=False,
            )
            async with ws_ctx as ws:
                async for msg in ws:
                    channel, data = msg.data[0], msg.data[1:]
                    if channel == 1:
                        out += data
                    elif channel == 2:
                        err += data
                    elif channel == 3:
                        status += data
            return out, err, json.loads(status)

        out, err, ok = await run("echo out; echo err >&2")
        assert (out, err, ok) == (b"out\n", b"err\n", {"metadata": {}, "status": "Success"})
        assert WsApiClient.parse_error_data(json.dumps(ok)) == 0

        _, _, failed = await run("exit 3")
        assert failed["reason"] == "NonZeroExitCode"
        assert failed["details"] == {"causes": [{"reason": "ExitCode", "message": "3"}]}
        assert WsApiClient.parse_error_data(json.dumps(failed)) == 3
    request = api.requests[-1]
    assert (request.subresource, request.params("command")) == ("exec", ["sh", "-c", "exit 3"])


async def test_exec_refusals_match_the_apiserver(api: ApiEmulator) -> None:
    api.add_pod(make_pod("two", containers=[container("a"), container("b")]))
    async with WsApiClient(api.configuration()) as client:
        v1 = CoreV1Api(client)
        with pytest.raises(aiohttp.WSServerHandshakeError) as no_container:
            await v1.connect_get_namespaced_pod_exec(
                "two", "default", command=["true"], stdout=True
            )
        assert no_container.value.status == 400
    body = await _exec_error(api, "two", "container=zzz&command=true&stdout=1")
    assert body["message"] == "container zzz is not valid for pod two"
    body = await _exec_error(api, "two", "command=true&stdout=1")
    assert body["message"] == "a container name must be specified for pod two, choose one of: [a b]"


async def _exec_error(api: ApiEmulator, pod: str, query: str) -> Obj:
    async with aiohttp.ClientSession(headers=auth(api)) as session:
        url = f"{api.url}/api/v1/namespaces/default/pods/{pod}/exec?{query}"
        async with session.get(url) as resp:
            assert resp.status == 400
            return await resp.json()


async def test_exec_of_a_missing_binary_is_an_internal_error(api: ApiEmulator) -> None:
    api.add_pod(make_pod("web"))
    async with WsApiClient(api.configuration()) as client:
        ws_ctx = await CoreV1Api(client).connect_get_namespaced_pod_exec(
            "web", "default", command=["no-such-binary-xyz"], stdout=True, _preload_content=False
        )
        async with ws_ctx as ws:
            frames = [msg.data async for msg in ws]
    status = json.loads(frames[-1][1:])
    assert frames[0] == b"\x01"  # the empty "connection established" message on stdout
    assert status["reason"] == "InternalError" and status["code"] == 500
    assert 'exec: "no-such-binary-xyz": executable file not found in $PATH' in status["message"]


async def test_exec_v5_stdin_and_close_signal(api: ApiEmulator) -> None:
    api.add_pod(make_pod("web"))
    url = f"{api.url}/api/v1/namespaces/default/pods/web/exec?command=cat&stdin=1&stdout=1"
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.ws_connect(url, protocols=("v5.channel.k8s.io", "v4.channel.k8s.io")) as ws,
    ):
        assert ws.protocol == "v5.channel.k8s.io"
        await ws.send_bytes(b"\x00ping")
        await ws.send_bytes(b"\xff\x00")  # CLOSE stdin
        frames = [msg.data async for msg in ws]
    assert b"".join(f[1:] for f in frames if f[0] == 1) == b"ping"
    assert json.loads(frames[-1][1:])["status"] == "Success"


# ----- port-forward -----


async def test_portforward_v4_channels_reach_a_real_echo_server(
    api: ApiEmulator, echo_server: EchoServer
) -> None:
    api.add_pod(make_pod("web"))
    api.map_port("web", 8080, echo_server.port)
    url = f"{api.url}/api/v1/namespaces/default/pods/web/portforward?ports=8080"
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.ws_connect(url, protocols=("v4.channel.k8s.io",)) as ws,
    ):
        assert ws.protocol == "v4.channel.k8s.io"
        port_le = struct.pack("<H", 8080)
        # each stream opens with the port, little-endian, on data (0) and error (1)
        assert {await ws.receive_bytes(), await ws.receive_bytes()} == {
            b"\x00" + port_le,
            b"\x01" + port_le,
        }
        await ws.send_bytes(b"\x00hello")
        echoed = b""
        while len(echoed) < 5:
            frame = await asyncio.wait_for(ws.receive_bytes(), 2)
            assert frame[0] == 0
            echoed += frame[1:]
        assert echoed == b"hello"
    await asyncio.wait_for(echo_server.closed.wait(), 2)  # closing the socket closes the target
    assert echo_server.connections == 1


async def test_portforward_to_a_port_nothing_listens_on_reports_on_the_error_channel(
    api: ApiEmulator,
) -> None:
    api.add_pod(make_pod("web"))
    url = f"{api.url}/api/v1/namespaces/default/pods/web/portforward?ports=9090"
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.ws_connect(url, protocols=("v4.channel.k8s.io",)) as ws,
    ):
        frames = [msg.data async for msg in ws]
    errors = b"".join(f[1:] for f in frames if f[0] == 1)
    assert errors.startswith(struct.pack("<H", 9090))
    assert b"error forwarding port 9090 to pod " in errors
    assert b"connect: connection refused" in errors


# ----- proxy -----


async def test_proxy_forwards_http_without_the_bearer_token(
    api: ApiEmulator, http_target: HttpTarget
) -> None:
    api.add_pod(make_pod("web"))
    api.map_port("web", 8080, http_target.port)
    async with ApiClient(api.configuration()) as client:
        v1 = CoreV1Api(client)
        resp = await v1.connect_get_namespaced_pod_proxy_with_path(
            "web:8080", "default", "healthz", _preload_content=False
        )
        assert resp.status == 200 and await resp.text() == "ok /healthz"
        http_target.status = 503
        with pytest.raises(ApiException) as err:
            await v1.connect_get_namespaced_pod_proxy_with_path("web", "default", "ready")
        assert err.value.status == 503 and err.value.body == "ok /ready"
    assert [(m, p) for m, p, _ in http_target.seen] == [("GET", "/healthz"), ("GET", "/ready")]
    assert all("Authorization" not in h for _, _, h in http_target.seen)


async def test_proxy_to_an_unmapped_port_is_503(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("web"))
    with pytest.raises(ApiException) as err:
        await core_v1.connect_get_namespaced_pod_proxy_with_path("web:9999", "default", "x")
    body = json.loads(err.value.body)
    assert err.value.status == 503
    assert body["message"] == (
        "error trying to reach service: dial tcp 127.0.0.1:9999: connect: connection refused"
    )


async def test_proxy_relays_a_chunked_stream_as_it_comes_and_can_cut_it(api: ApiEmulator) -> None:
    """A node agent's stream through pods/proxy: each chunk as it comes, for as long as it
    lasts (the API server flushes every 200 ms), headers and the query passed on."""
    second = asyncio.Event()
    seen: dict[str, str] = {}

    async def stream(request: web.Request) -> web.StreamResponse:
        seen.update(query=request.query_string, token=request.headers.get("X-Token", ""))
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(b'{"k":"hello"}\n')
        await second.wait()
        await resp.write(b'{"k":"late"}\n')
        await asyncio.sleep(30)
        return resp

    app = web.Application()
    app.router.add_get("/v1/stream", stream)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        api.add_pod(make_pod("agent"))
        api.map_port("agent", 9479, runner.addresses[0][1])
        url = f"{api.url}/api/v1/namespaces/default/pods/agent:9479/proxy/v1/stream"
        headers = {"Authorization": f"Bearer {api.token}", "X-Token": "t0k"}
        async with (
            aiohttp.ClientSession() as session,
            session.get(url, params={"rows": "1"}, headers=headers) as resp,
        ):
            assert resp.status == 200
            assert await asyncio.wait_for(resp.content.readline(), 5) == b'{"k":"hello"}\n'
            second.set()
            assert await asyncio.wait_for(resp.content.readline(), 5) == b'{"k":"late"}\n'
            assert api.cut_proxy_streams() == 1
            with pytest.raises(aiohttp.ClientPayloadError):
                await asyncio.wait_for(resp.content.read(), 5)
        assert seen == {"query": "rows=1", "token": "t0k"}
    finally:
        await runner.cleanup()


# ----- RBAC view -----


async def test_view_role_reads_but_cannot_exec_forward_proxy_or_write(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    api.role = "view"
    assert names(await raw(core_v1.list_namespaced_pod("default", _preload_content=False))) == [
        "web"
    ]
    async with aiohttp.ClientSession(headers=auth(api)) as session:
        base = f"{api.url}/api/v1/namespaces/default/pods"
        for method, url in (
            ("GET", f"{base}/web/exec?command=true&stdout=1"),
            ("GET", f"{base}/web/portforward?ports=80"),
            ("GET", f"{base}/web:80/proxy/"),
            ("DELETE", f"{base}/web"),
            ("POST", base),
        ):
            async with session.request(method, url, json={}) as resp:
                body = await resp.json()
                assert resp.status == 403 and body["reason"] == "Forbidden", url
            if "/exec?" in url:
                assert body["message"] == (
                    'pods "web" is forbidden: User "emulator-admin" cannot get resource '
                    '"pods/exec" in API group "" in the namespace "default"'
                )
            if method == "POST":
                assert body["message"] == (
                    'pods is forbidden: User "emulator-admin" cannot create resource "pods" in '
                    'API group "" in the namespace "default"'
                )
    assert [r.status for r in api.requests if r.subresource] == [403, 403, 403]


# ----- request log and discovery -----


async def test_request_log_records_method_path_query_verb_and_subresource(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("web"))
    await raw(core_v1.list_namespaced_pod("default", label_selector="a=b", _preload_content=False))
    await raw(core_v1.read_namespaced_pod("web", "default", _preload_content=False))
    assert [(r.method, r.verb, r.resource, r.namespace, r.name) for r in api.requests] == [
        ("GET", "list", "pods", "default", ""),
        ("GET", "get", "pods", "default", "web"),
    ]
    assert api.requests[0].query == {"labelSelector": ["a=b"]}
    assert api.requests[0].path == "/api/v1/namespaces/default/pods"
    assert api.non_read_requests() == []
    assert api.count_requests(method="GET", resource="pods") == 2

    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.delete(f"{api.url}/api/v1/namespaces/default/pods/web") as resp,
    ):
        assert resp.status == 405  # the emulator's objects change only by the test's hand
    assert [(r.method, r.verb) for r in api.non_read_requests()] == [("DELETE", "delete")]


async def test_discovery_documents(api: ApiEmulator) -> None:
    async with aiohttp.ClientSession(headers=auth(api)) as session:
        async with session.get(f"{api.url}/api/v1") as resp:
            resources = {r["name"]: r for r in (await resp.json())["resources"]}
        async with session.get(f"{api.url}/api") as resp:
            assert (await resp.json())["versions"] == ["v1"]
    assert resources["pods"]["verbs"] == ["get", "list", "watch"]
    assert {"pods/exec", "pods/portforward", "pods/proxy", "events"} <= set(resources)


async def test_watch_list_send_initial_events_ends_with_an_annotated_bookmark(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("a"))
    end_when_open(api)
    seen = await asyncio.wait_for(
        watch_events(
            core_v1,
            allow_watch_bookmarks=True,
            send_initial_events=True,
            resource_version_match="NotOlderThan",
        ),
        3,
    )
    assert [t for t, _ in seen] == ["ADDED", "BOOKMARK"]
    assert seen[1][1]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_portforward_two_ports_use_channel_pairs_0_1_and_2_3(
    api: ApiEmulator, echo_server: EchoServer, http_target: HttpTarget
) -> None:
    api.add_pod(make_pod("web"))
    api.map_port("web", 7000, echo_server.port)
    api.map_port("web", 8080, http_target.port)
    url = f"{api.url}/api/v1/namespaces/default/pods/web/portforward?ports=7000,8080"
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.ws_connect(url, protocols=("v4.channel.k8s.io",)) as ws,
    ):
        opening = {await ws.receive_bytes() for _ in range(4)}
        assert opening == {
            b"\x00" + struct.pack("<H", 7000),
            b"\x01" + struct.pack("<H", 7000),
            b"\x02" + struct.pack("<H", 8080),
            b"\x03" + struct.pack("<H", 8080),
        }
        await ws.send_bytes(b"\x02GET /x HTTP/1.1\r\nHost: pod\r\nConnection: close\r\n\r\n")
        await ws.send_bytes(b"\x00ping")
        got: dict[int, bytes] = {0: b"", 2: b""}
        while b"ok /x" not in got[2] or got[0] != b"ping":
            frame = await asyncio.wait_for(ws.receive_bytes(), 2)
            got[frame[0]] += frame[1:]
    assert got[2].startswith(b"HTTP/1.1 200 OK")


async def test_a_client_leaving_an_exec_kills_the_command(api: ApiEmulator) -> None:
    api.add_pod(make_pod("web"))
    url = (
        f"{api.url}/api/v1/namespaces/default/pods/web/exec"
        "?command=sh&command=-c&command=echo+$$;+exec+sleep+30&stdout=1"
    )
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.ws_connect(url, protocols=("v4.channel.k8s.io",)) as ws,
    ):
        pid_text = b""
        while not pid_text.endswith(b"\n"):
            frame = await asyncio.wait_for(ws.receive_bytes(), 2)
            pid_text += frame[1:]
    pid = int(pid_text)
    await api.wait_for(lambda: not _alive(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_load_kube_config_over_tls(tmp_path: Any) -> None:
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client import Configuration

    async with ApiEmulator(tls=True) as api:
        api.add_pod(make_pod("web", namespace="team"))
        path = api.kubeconfig(tmp_path / "kubeconfig", namespace="team", context="emu")
        cfg = Configuration()
        await config.load_kube_config(
            config_file=str(path), client_configuration=cfg, persist_config=False
        )
        async with ApiClient(cfg) as client:
            body = await raw(CoreV1Api(client).list_namespaced_pod("team", _preload_content=False))
        assert api.url.startswith("https://") and names(body) == ["web"]
        assert api.requests[-1].user == "emulator-admin"
        assert not api.errors


async def test_a_client_leaving_a_watch_closes_it_on_the_server(api: ApiEmulator) -> None:
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.get(f"{api.url}/api/v1/pods", params={"watch": "true"}) as resp,
    ):
        assert resp.status == 200
        await api.wait_for_watch()
    await api.wait_for(lambda: not api.watchers())


async def test_a_user_without_any_role_is_forbidden_at_the_cluster_scope(
    api: ApiEmulator,
) -> None:
    api.add_token("nobody-token", role="none", user="nobody")
    async with ApiClient(api.configuration(token="nobody-token")) as client:
        with pytest.raises(ApiException) as err:
            await CoreV1Api(client).list_pod_for_all_namespaces()
    body = json.loads(err.value.body)
    assert err.value.status == 403 and body["details"] == {"kind": "pods"}
    assert body["message"] == (
        'pods is forbidden: User "nobody" cannot list resource "pods" in API group "" at the '
        "cluster scope"
    )


async def test_exec_base64_protocol_sends_text_frames(api: ApiEmulator) -> None:
    api.add_pod(make_pod("web"))
    url = f"{api.url}/api/v1/namespaces/default/pods/web/exec?command=echo&command=hi&stdout=1"
    async with (
        aiohttp.ClientSession(headers=auth(api)) as session,
        session.ws_connect(url, protocols=("v4.base64.channel.k8s.io",)) as ws,
    ):
        frames = [msg.data async for msg in ws]
    assert frames[0] == "1" and frames[1] == "1aGkK"  # base64("hi\n")
    assert frames[-1].startswith("3")


async def test_in_cluster_service_account_files(tmp_path: Any) -> None:
    from kubernetes_asyncio.client import Configuration
    from kubernetes_asyncio.config.incluster_config import InClusterConfigLoader

    async with ApiEmulator(tls=True) as api:
        api.add_pod(make_pod("web", namespace="team"))
        env = api.in_cluster_files(tmp_path / "sa", namespace="team")
        cfg = Configuration()
        InClusterConfigLoader(
            token_filename=env["TOKEN_FILE"], cert_filename=env["CA_FILE"], environ=env
        ).load_and_set(cfg)
        namespace = await asyncio.to_thread(Path(env["NAMESPACE_FILE"]).read_text)
        async with ApiClient(cfg) as client:
            body = await raw(
                CoreV1Api(client).list_namespaced_pod(namespace, _preload_content=False)
            )
        assert names(body) == ["web"] and not api.errors


async def test_the_emulator_kills_an_exec_that_outlives_its_safety_timeout() -> None:
    async with ApiEmulator(exec_timeout=0.2) as api:
        api.add_pod(make_pod("web"))
        async with WsApiClient(api.configuration()) as client:
            ws_ctx = await CoreV1Api(client).connect_get_namespaced_pod_exec(
                "web", "default", command=["sleep", "5"], stdout=True, _preload_content=False
            )
            async with ws_ctx as ws:
                frames = [msg.data async for msg in ws]
    status = json.loads(frames[-1][1:])
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "137"}]
