"""Running an agent in the test's own loop, and reading its stream as a client would."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from probetui.agent.run import Agent, AgentOptions
from probetui.agent.runtime import node_selector
from probetui.runtime.kubernetes.config import ConnectOptions, resolve
from probetui.runtime.kubernetes.reflector import ReflectorBackoff
from probetui.stream.protocol import check_hello, loads
from probetui.stream.rows import ROWS, WORKER, RowReader
from tests.agent.conftest import NODE, READ_TOKEN
from tests.kube.emulator import ApiEmulator

KUBELET_RESULTS = ("successful", "failed", "unknown")
# the reflectors' back-off, short for tests
FAST = {"backoff": ReflectorBackoff(initial=0.05, cap=0.2, jitter=0.0)}


@dataclass
class Running:
    agent: Agent
    url: str
    task: asyncio.Task[None]
    said: list[str]


@contextlib.asynccontextmanager
async def running_agent(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet_port: int,
    **options: Any,
) -> AsyncIterator[Running]:
    """An agent for NODE on 127.0.0.1 (a port the OS picks), its kubelet the fake one."""
    config = api.kubeconfig(tmp_path / "kubeconfig")
    target = resolve(
        ConnectOptions(
            kubeconfig=str(config),
            all_namespaces=True,
            read_only=True,
            field_selector=node_selector(NODE),
        ),
        environ={},
        service_account_dir=sa_dir,
    )
    settings = {
        "node": NODE,
        "node_ip": "127.0.0.1",
        "bind": "127.0.0.1",
        "port": 0,
        "token_file": read_token,
        "scrape_every": 1.0,
        "kubelet_port": kubelet_port,
        **options,
    }
    said: list[str] = []
    agent = Agent(AgentOptions(**settings), target, say=said.append, reflector_options=FAST)
    task = asyncio.create_task(agent.run())
    try:
        for _ in range(200):
            if agent.address is not None or task.done():
                break
            await asyncio.sleep(0.01)
        if task.done():
            task.result()
        assert agent.address is not None
        yield Running(agent, f"http://127.0.0.1:{agent.address[1]}", task, said)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass
class Reader:
    """One `/v1/stream` reader: every frame in order, rows decoded back into events."""

    frames: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[float | None, Any]] = field(default_factory=list)  # (at, Event)
    rows: RowReader = field(default_factory=RowReader)
    ended: bool = False
    # per (pod, probe): the shadow's attempts seen so far, counted as prober_probe_total counts
    # (docs/kubelet-behaviour.md §12.1: a prober error counts nowhere)
    tally: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    # each counts frame with the tally of its probe when it came
    counts_seen: list[tuple[dict[str, Any], dict[str, int]]] = field(default_factory=list)

    def _attempt(self, event: Any) -> None:
        if event.type != "ProbeAttempt" or "error" in event.fields:
            return
        word = {"Success": "successful", "Failure": "failed"}.get(event.fields["result"], "unknown")
        t = self.tally.setdefault((event.pod, event.probe), dict.fromkeys(KUBELET_RESULTS, 0))
        t[word] += 1

    def take(self, frame: dict[str, Any]) -> None:
        from probetui.stream.codec import event_from_frame

        self.frames.append(frame)
        kind = frame["k"]
        if kind == WORKER:
            self.rows.declare(frame)
        elif kind == ROWS:
            events = self.rows.events(frame)
            for i, event in enumerate(events):
                # a rows frame's `at` is its last row's stamp
                self.events.append((frame.get("at") if i == len(events) - 1 else None, event))
                self._attempt(event)
        elif kind == "event":
            event = event_from_frame(frame)
            self.events.append((frame.get("at"), event))
            self._attempt(event)
        elif kind == "counts":
            key = (frame["pod"], frame["probe"])
            self.counts_seen.append(
                (frame, dict(self.tally.get(key, dict.fromkeys(KUBELET_RESULTS, 0))))
            )

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f["k"] == kind]

    def ats(self) -> list[float]:
        """The `at` of every event and rows frame, in order."""
        return [f["at"] for f in self.frames if f["k"] in ("event", ROWS) and "at" in f]


async def read_stream(
    url: str,
    reader: Reader,
    *,
    query: str = "",
    token: str | None = READ_TOKEN,
    until: Any = None,
    timeout: float = 10.0,
) -> int:
    """Read `url/v1/stream?query` into `reader` until `until(reader)` is true (or the stream
    ends, or `timeout`); the HTTP status."""
    headers = {"X-Probetui-Token": token} if token is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{url}/v1/stream?{query}", headers=headers) as resp,
    ):
        if resp.status != 200:
            return resp.status
        first = True
        rest = b""

        async def pump() -> None:
            nonlocal first, rest
            async for chunk in resp.content.iter_any():
                lines = (rest + chunk).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    frame = loads(line)
                    if first:
                        check_hello(frame)
                        first = False
                    reader.take(frame)
                    if until is not None and until(reader):
                        return
            reader.ended = True

        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(pump(), timeout)
        return resp.status


def attempts(reader: Reader, probe: str | None = None) -> list[Any]:
    return [
        e
        for _, e in reader.events
        if e.type == "ProbeAttempt" and (probe is None or e.probe == probe)
    ]


def dump(reader: Reader) -> str:
    return "\n".join(json.dumps(f)[:200] for f in reader.frames[-20:])
