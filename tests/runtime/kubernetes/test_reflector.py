"""The reflector against the API emulator, through the real kubernetes-asyncio client.

Each fault test holds the reflector's next request at a gate while the test changes the
cluster, so "what happened while the watch was down" is exact, then checks the delivered
sequence one event at a time and, replayed, against the emulator's final state: nothing lost,
nothing twice. Back-off sleeps are recorded and skipped, so no test waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.client import ApiClient, CoreV1Api

from probetui.runtime.kubernetes.reflector import (
    ADDED,
    DELETED,
    MODIFIED,
    ApiStatusError,
    Lister,
    Reflector,
    ReflectorBackoff,
    api_lister,
)
from tests.kube.emulator import ApiEmulator, make_pod


@dataclass
class Delivered:
    """What the reflector handed over: (type, name, uid, resourceVersion) in order."""

    seen: list[tuple[str, str, str, str]] = field(default_factory=list)
    fail_on: str = ""

    def __call__(self, kind: str, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.seen.append((kind, meta["name"], meta["uid"], meta["resourceVersion"]))
        if meta["name"] == self.fail_on:
            raise RuntimeError("the consumer broke")

    def names(self, start: int = 0) -> list[tuple[str, str]]:
        return [(kind, name) for kind, name, _, _ in self.seen[start:]]

    def replay(self) -> dict[str, tuple[str, str]]:
        """uid -> (name, resourceVersion) after applying every delivered event in order."""
        state: dict[str, tuple[str, str]] = {}
        for kind, name, uid, rv in self.seen:
            if kind == ADDED:
                assert uid not in state, f"ADDED twice: {name}"
                state[uid] = (name, rv)
            elif kind == MODIFIED:
                assert uid in state, f"MODIFIED before ADDED: {name}"
                assert int(rv) > int(state[uid][1]), f"{name} went back or repeated"
                state[uid] = (name, rv)
            else:
                assert kind == DELETED
                assert state.pop(uid, None) is not None, f"DELETED twice or unknown: {name}"
        return state


def emulator_state(api: ApiEmulator, namespace: str = "default") -> dict[str, tuple[str, str]]:
    return {
        p["metadata"]["uid"]: (p["metadata"]["name"], p["metadata"]["resourceVersion"])
        for p in api.pods()
        if p["metadata"]["namespace"] == namespace
    }


class Gate:
    """Wraps a lister; `hold()` makes the next request wait until `release()`."""

    def __init__(self, inner: Lister) -> None:
        self.inner = inner
        self.calls: list[tuple[str | None, bool]] = []
        self._open = asyncio.Event()
        self._open.set()
        self.waiting = asyncio.Event()

    def hold(self) -> None:
        self._open.clear()
        self.waiting.clear()

    def release(self) -> None:
        self._open.set()

    async def __call__(self, rv: str | None, watch: bool) -> Any:
        if not self._open.is_set():
            self.waiting.set()
            await self._open.wait()
        self.calls.append((rv, watch))
        return await self.inner(rv, watch)


@dataclass
class Run:
    reflector: Reflector
    delivered: Delivered
    gate: Gate
    sleeps: list[float]
    states: list[str]


async def until(predicate: Callable[[], bool], timeout: float = 2.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():  # noqa: ASYNC110 - polls what callbacks record
            await asyncio.sleep(0.005)


@contextlib.asynccontextmanager
async def reflecting(
    core: CoreV1Api,
    *,
    watch_timeout: int = 60,
    namespace: str = "default",
    start: bool = True,
) -> AsyncIterator[Run]:
    sleeps: list[float] = []
    states: list[str] = []

    async def fast_sleep(delay: float) -> None:
        sleeps.append(delay)
        await asyncio.sleep(0)

    gate = Gate(api_lister(core.list_namespaced_pod, namespace, watch_timeout=watch_timeout))
    delivered = Delivered()
    reflector = Reflector(
        gate,
        delivered,
        backoff=ReflectorBackoff(rng=random.Random(7)),
        sleep=fast_sleep,
        on_state=states.append,
    )
    task = asyncio.create_task(reflector.run()) if start else None
    try:
        yield Run(reflector, delivered, gate, sleeps, states)
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_list_then_watch_delivers_each_change_once(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("a"))
    api.add_pod(make_pod("b"))
    api.add_pod(make_pod("elsewhere", namespace="other"))
    async with reflecting(core_v1) as run:
        await asyncio.wait_for(run.reflector.synced.wait(), 2)
        await api.wait_for_watch("pods")
        api.patch_pod("a", {"metadata": {"labels": {"v": "2"}}})
        api.delete_pod("b")
        api.add_pod(make_pod("c"))
        await until(lambda: run.delivered.replay() == emulator_state(api))
    assert run.delivered.names() == [
        (ADDED, "a"),
        (ADDED, "b"),
        (MODIFIED, "a"),
        (DELETED, "b"),
        (ADDED, "c"),
    ]
    assert (run.reflector.lists, run.reflector.watches) == (1, 1)
    # the watch starts where the list ended, with bookmarks and a server-side timeout
    watch = next(r for r in api.requests if r.verb == "watch")
    assert watch.query["resourceVersion"] == [run.gate.calls[1][0]]
    assert watch.query["allowWatchBookmarks"][0].lower() == "true"
    assert watch.query["timeoutSeconds"] == ["60"]


async def test_in_stream_410_relists_and_delivers_the_difference(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    for name in ("a", "b", "c"):
        api.add_pod(make_pod(name))
    async with reflecting(core_v1) as run:
        await asyncio.wait_for(run.reflector.synced.wait(), 2)
        await api.wait_for_watch("pods")
        run.gate.hold()
        assert api.expire_watches("event") == 1
        await asyncio.wait_for(run.gate.waiting.wait(), 2)  # the re-list, held
        # while the reflector is blind: one deleted, one changed, one new, one re-created
        api.delete_pod("a")
        api.patch_pod("b", {"metadata": {"labels": {"v": "2"}}})
        api.add_pod(make_pod("d"))
        api.delete_pod("c")
        api.add_pod(make_pod("c"))
        run.gate.release()
        await until(lambda: run.delivered.replay() == emulator_state(api))
        await api.wait_for_watch("pods")
    assert run.delivered.names(3) == [
        (MODIFIED, "b"),
        (ADDED, "c"),  # the new pod named c (a new uid)
        (ADDED, "d"),
        (DELETED, "a"),
        (DELETED, "c"),  # the old one
    ]
    assert run.gate.calls[2] == (None, False)  # a list, not a watch from the expired version
    assert run.reflector.lists == 2
    assert run.sleeps == [], run.states  # 410 is not a fault to back off from


async def test_410_status_on_rewatch_relists(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("a"))
    api.add_pod(make_pod("b"))
    async with reflecting(core_v1) as run:
        await asyncio.wait_for(run.reflector.synced.wait(), 2)
        await api.wait_for_watch("pods")
        api.patch_pod("a", {"metadata": {"labels": {"v": "1"}}})
        await until(lambda: len(run.delivered.seen) == 3)
        run.gate.hold()
        api.end_watches()
        await asyncio.wait_for(run.gate.waiting.wait(), 2)  # the re-watch, held
        api.delete_pod("a")
        api.patch_pod("b", {"metadata": {"labels": {"v": "2"}}})
        api.add_pod(make_pod("c"))
        api.settings.expired_as = "status"
        api.compact()  # the version the reflector resumes from is gone
        run.gate.release()
        await until(lambda: run.delivered.replay() == emulator_state(api))
    assert run.delivered.names(3) == [(MODIFIED, "b"), (ADDED, "c"), (DELETED, "a")]
    gone = [r for r in api.requests if r.verb == "watch" and r.status == 410]
    assert len(gone) == 1
    assert run.reflector.lists == 2


async def test_stream_cut_mid_event_resumes_from_the_last_version(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("a"))
    api.add_pod(make_pod("b"))
    async with reflecting(core_v1) as run:
        await asyncio.wait_for(run.reflector.synced.wait(), 2)
        await api.wait_for_watch("pods")
        run.gate.hold()
        api.cut_streams(on_next_event=True)
        api.patch_pod("b", {"metadata": {"labels": {"v": "2"}}})  # cut in half on the wire
        await asyncio.wait_for(run.gate.waiting.wait(), 2)
        api.delete_pod("a")
        run.gate.release()
        await until(lambda: run.delivered.replay() == emulator_state(api))
    assert run.delivered.names() == [
        (ADDED, "a"),
        (ADDED, "b"),
        (MODIFIED, "b"),
        (DELETED, "a"),
    ]
    assert run.reflector.lists == 1  # history covered the gap: no re-list
    assert len(run.sleeps) == 1 and any("cut" in s for s in run.states)


async def test_clean_end_resumes_without_back_off(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("a"))
    async with reflecting(core_v1) as run:
        await asyncio.wait_for(run.reflector.synced.wait(), 2)
        await api.wait_for_watch("pods")
        api.patch_pod("a", {"metadata": {"labels": {"v": "2"}}})
        await until(lambda: len(run.delivered.seen) == 2)
        run.gate.hold()
        api.end_watches()
        await asyncio.wait_for(run.gate.waiting.wait(), 2)
        api.add_pod(make_pod("b"))
        api.delete_pod("a")
        run.gate.release()
        await until(lambda: run.delivered.replay() == emulator_state(api))
    assert run.delivered.names() == [(ADDED, "a"), (MODIFIED, "a"), (ADDED, "b"), (DELETED, "a")]
    assert (run.reflector.lists, run.reflector.watches) == (1, 2)
    assert run.sleeps == []


async def test_watch_ending_at_once_with_nothing_backs_off(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    async with reflecting(core_v1) as run:
        await api.wait_for_watch("pods")
        api.end_watches()
        await until(lambda: run.reflector.watches == 2)
    assert len(run.sleeps) == 1
    assert "ended at once" in next(s for s in run.states if s)


async def test_server_timeout_ends_the_watch_and_it_resumes(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    # real time, about a second: timeoutSeconds is whole seconds, 1 at least
    api.add_pod(make_pod("a"))
    async with reflecting(core_v1, watch_timeout=1) as run:
        await until(lambda: run.reflector.watches == 2, timeout=3)
        api.patch_pod("a", {"metadata": {"labels": {"v": "2"}}})
        await until(lambda: run.delivered.replay() == emulator_state(api))
    assert run.delivered.names() == [(ADDED, "a"), (MODIFIED, "a")]
    assert run.reflector.lists == 1


async def test_500_and_429_back_off_then_recover(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("a"))
    api.fail_next(1, 429, verb="list")
    api.fail_next(2, 500, verb="watch")
    async with reflecting(core_v1) as run:
        await api.wait_for_watch("pods")
        api.add_pod(make_pod("b"))
        await until(lambda: run.delivered.replay() == emulator_state(api))
    assert run.delivered.names() == [(ADDED, "a"), (ADDED, "b")]
    assert len(run.sleeps) == 3
    # 429 says Retry-After: 1, more than the first step of 0.8 s
    assert run.sleeps[0] == pytest.approx(1.0)
    # the good list reset the back-off: the watch's failures start again from 0.8 s, doubling
    assert 0.8 <= run.sleeps[1] <= 0.88
    assert 1.6 <= run.sleeps[2] <= 1.76
    said = [s for s in run.states if s]
    assert "API server answered 429" in said[0]
    assert "API server answered 500" in said[1] and "retrying in 0.8s" in said[1]
    assert run.states[-1] == ""  # healthy again: nothing for the header


async def test_bookmarks_move_the_resume_point(api: ApiEmulator, core_v1: CoreV1Api) -> None:
    api.add_pod(make_pod("a"))
    async with reflecting(core_v1) as run:
        await asyncio.wait_for(run.reflector.synced.wait(), 2)
        await api.wait_for_watch("pods")
        api.add_pod(make_pod("x", namespace="other"))  # moves the global version, unseen here
        assert api.send_bookmarks() == 1
        await until(lambda: run.reflector.resource_version == str(api.resource_version))
        # the history before the bookmark is compacted: resuming from it needs no re-list
        api.compact()
        api.end_watches()
        await until(lambda: run.reflector.watches == 2)
        api.add_pod(make_pod("b"))
        await until(lambda: run.delivered.replay() == emulator_state(api))
    assert run.delivered.names() == [(ADDED, "a"), (ADDED, "b")]
    assert run.reflector.lists == 1


async def test_a_failing_consumer_does_not_break_the_watch(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    async with reflecting(core_v1) as run:
        run.delivered.fail_on = "bad"
        await api.wait_for_watch("pods")
        api.add_pod(make_pod("bad"))
        api.add_pod(make_pod("good"))
        await until(lambda: len(run.delivered.seen) == 2)
    assert run.delivered.names() == [(ADDED, "bad"), (ADDED, "good")]
    assert (run.reflector.lists, run.reflector.watches) == (1, 1)


async def test_first_list_retries_transient_errors_only(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("a"))
    api.fail_next(2, 503, verb="list")
    async with reflecting(core_v1, start=False) as run:
        await run.reflector.first_list(tries=3)
        assert run.delivered.names() == [(ADDED, "a")]
        assert len(run.sleeps) == 2
    api.fail_next(3, 503, verb="list")
    async with reflecting(core_v1, start=False) as run:
        with pytest.raises(ApiStatusError) as err:
            await run.reflector.first_list(tries=3)
        assert err.value.status == 503 and len(run.sleeps) == 2


async def test_first_list_fails_at_once_when_refused(api: ApiEmulator) -> None:
    async with ApiClient(api.configuration(token="wrong")) as client:
        run = reflecting(CoreV1Api(client), start=False)
        async with run as refused:
            with pytest.raises(ApiStatusError) as err:
                await refused.reflector.first_list()
            assert err.value.status == 401 and refused.sleeps == []
    api.role = "none"
    async with ApiClient(api.configuration()) as client:
        run = reflecting(CoreV1Api(client), start=False)
        async with run as forbidden:
            with pytest.raises(ApiStatusError) as err:
                await forbidden.reflector.first_list()
            assert err.value.status == 403 and "cannot list" in err.value.message


async def test_first_list_fails_at_once_when_nobody_listens() -> None:
    probe = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    from kubernetes_asyncio.client import Configuration

    async with ApiClient(Configuration(host=f"http://127.0.0.1:{port}")) as client:
        run = reflecting(CoreV1Api(client), start=False)
        async with run as nobody:
            with pytest.raises(aiohttp.ClientConnectorError):
                await nobody.reflector.first_list()
            assert nobody.sleeps == []


async def test_410_on_every_watch_backs_off_instead_of_spinning(
    api: ApiEmulator, core_v1: CoreV1Api
) -> None:
    api.add_pod(make_pod("a"))
    api.fail_next(3, 410, verb="watch")
    async with reflecting(core_v1) as run:
        await api.wait_for_watch("pods")
    # the first 410 re-lists at once; the next ones, with nothing in between, back off
    assert run.reflector.lists == 4
    assert len(run.sleeps) == 2
    assert run.delivered.names() == [(ADDED, "a")]


def _pod_at(uid: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"uid": uid, "name": uid, "namespace": "default", "resourceVersion": rv}}


def test_an_object_read_outside_the_watch_is_delivered_only_when_newer() -> None:
    """A get that confirms a divergence (`ClusterPods.confirm`) may return before or after what
    the watch delivers: only a strictly newer integer resourceVersion replaces the one held;
    an opaque version is compared for nothing but equality, so it is dropped."""
    delivered = Delivered()

    async def never(resource_version: str | None, watch: bool) -> Any:
        raise AssertionError("no request in this test")

    reflector = Reflector(never, delivered)
    reflector.items["a"] = _pod_at("a", "100")
    reflector.items["b"] = _pod_at("b", "opaque-1")
    assert not reflector.offer(_pod_at("a", "99"))  # older: the watch is ahead
    assert not reflector.offer(_pod_at("a", "100"))  # the same
    assert not reflector.offer(_pod_at("b", "opaque-2"))
    assert not reflector.offer(_pod_at("c", "5"))  # never listed, or deleted since
    assert reflector.offer(_pod_at("a", "101"))
    assert delivered.seen == [(MODIFIED, "a", "a", "101")]
