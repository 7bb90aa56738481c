"""Shard processes (`probetui.shards`): the same events as in one process, commands to the
owning shard, a killed shard restarted, and no child left behind.

Real processes throughout: `probetui local` subprocesses or a `ShardPool` in the test's loop,
shard processes, and containers that listen on loopback ports. Each run lasts a few seconds of
real time: a probe period is 1 s and the shards are real Python interpreters.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from probetui.keys import ProbeKey
from probetui.prober.worker import Trigger
from probetui.runtime.local.runtime import LocalRuntime
from probetui.shards.placement import shard_of
from probetui.shards.pool import ShardPool
from probetui.spec.model import ProbeType
from probetui.spec.parse import load_pods
from probetui.timeline.events import Event
from tests.processes import alive
from tests.shards.conftest import pods_manifest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

ROOT = Path(__file__).resolve().parents[2]


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(c) for c in text.split()]


def wait_for(cond: Callable[[], Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.02)


async def until(cond: Callable[[], Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


@pytest.fixture
def probetui() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "probetui.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        procs.append(proc)
        return proc

    try:
        yield start
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=10)


CHANCE = frozenset({"Unhealthy", "ProbeWarning"})


def kinds_per_pod(out: str) -> dict[str, set[str]]:
    kinds: dict[str, set[str]] = defaultdict(set)
    for line in out.splitlines():
        obj = json.loads(line)
        kinds[obj["pod"]].add(obj["type"])
    return dict(kinds)


def test_a_sharded_run_prints_the_same_event_kinds_per_pod_as_the_engine_in_process(
    probetui: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    manifest, _ = pods_manifest(tmp_path)
    common = ("local", str(manifest), "--no-ui", "--output", "jsonl", "--duration", "3")
    single = probetui(*common)
    out1, err1 = single.communicate(timeout=30)
    sharded = probetui(*common, "--shards", "2")
    out2, err2 = sharded.communicate(timeout=30)
    assert single.returncode == 0 and sharded.returncode == 0, (err1, err2)
    assert "2 shard process(es)" in err2 and "Traceback" not in err2
    one, two = kinds_per_pod(out1), kinds_per_pod(out2)
    assert set(one) == {"p0", "p1", "p2", "p3"} == set(two)
    for pod in one:
        # a probe that fails on a loaded machine (a slow exec, a TCP accept backlog) adds the
        # kubelet's Unhealthy to that run alone: not a difference of the engines
        assert one[pod] ^ two[pod] <= CHANCE, (pod, one[pod] ^ two[pod])
    assert all({"ProbeAttempt", "ResultChanged", "ContainerStarted"} <= k for k in two.values())


def test_bad_shard_counts_are_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "probetui.cli", "demo", "--no-ui", "--shards", "-1"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2
    assert "--shards: -1: from 0" in proc.stderr and "or auto" in proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


class Events:
    def __init__(self) -> None:
        self.seen: list[Event] = []

    def event(self, event: Event) -> None:
        self.seen.append(event)

    def pod(self, pod: Any, status: Any) -> None:
        return None

    def attempts(self, uid: str, after: float = 0.0) -> list[Event]:
        return [
            e for e in self.seen if e.type == "ProbeAttempt" and e.pod_uid == uid and e.t > after
        ]


async def test_probe_now_goes_to_the_owning_shard_and_is_acknowledged(tmp_path: Path) -> None:
    manifest, _ = pods_manifest(tmp_path)
    pods = load_pods(manifest)
    sink = Events()
    pool = ShardPool(LocalRuntime(pods, source="test"), [sink], shards=2)
    run = asyncio.ensure_future(pool.run())
    try:
        await until(lambda: all(sink.attempts(p.uid) for p in pods), 30)
        for pod in pods:
            key = ProbeKey(pod.uid, "app", ProbeType.READINESS)
            ack = await pool.command("probe", key)
            assert ack["ok"] is True and ack["shard"] == shard_of(pod.uid, 2)
            await until(
                lambda uid=pod.uid: any(
                    e.record is not None and e.record.trigger is Trigger.USER
                    for e in sink.attempts(uid)
                ),
                5,
            )
        # a probe no shard has is refused, and says so
        ack = await pool.command("pause", ProbeKey(pods[0].uid, "nope", ProbeType.LIVENESS))
        assert ack["ok"] is False
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
    assert not pool.pids()


async def test_a_killed_shard_is_restarted_and_its_pods_are_probed_again(tmp_path: Path) -> None:
    """SIGKILL of a shard: a notice, a new process with the same pods, their probes run again;
    the dead shard's containers (which it could not stop) are killed by the parent."""
    manifest, pids = pods_manifest(tmp_path)
    pods = load_pods(manifest)
    sink = Events()
    pool = ShardPool(LocalRuntime(pods, source="test"), [sink], shards=2)
    run = asyncio.ensure_future(pool.run())
    try:
        await until(lambda: all(sink.attempts(p.uid) for p in pods), 30)
        victim = pool.shards[shard_of(pods[0].uid, 2)]
        old = victim.pid
        assert old is not None
        mine = [p for p in pods if shard_of(p.uid, 2) == victim.index]
        await until(lambda: len(victim.groups) == len(mine), 5)
        orphans = list(victim.groups)
        os.kill(old, signal.SIGKILL)
        killed_at = time.time()
        await until(lambda: victim.alive and victim.pid != old, 30)
        assert any("died (killed by SIGKILL); restarting" in n for n in pool.notices)
        await until(lambda: not any(alive(g) for g in orphans), 5)
        await until(lambda: all(sink.attempts(p.uid, killed_at) for p in mine), 30)
        assert not run.done()
        # and the new ones are fresh processes, every one of which ends with the pool
        await until(lambda: len(victim.groups) == len(mine), 10)
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
    assert not alive(old)
    assert not any(alive(int(pid)) for pid in pids.read_text().split())


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGHUP, -signal.SIGHUP)]
)
def test_a_signal_to_probetui_ends_every_shard_and_container(
    probetui: Callable[..., subprocess.Popen[str]], tmp_path: Path, sig: int, code: int
) -> None:
    """SIGTERM and SIGINT: an orderly stop (each shard stops its containers); SIGHUP: probetui
    dies of it at once, and its shards follow (PR_SET_PDEATHSIG) and stop theirs."""
    manifest, pids = pods_manifest(tmp_path)
    proc = probetui("local", str(manifest), "--no-ui", "--shards", "2")
    wait_for(lambda: pids.exists() and pids.read_text().count("\n") >= 4, 30)
    shards = children(proc.pid)
    containers = [int(x) for x in pids.read_text().split()]
    assert len(shards) == 2 and all(alive(p) for p in shards + containers)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    wait_for(lambda: not any(alive(p) for p in shards + containers), 10)


def test_kill_9_of_probetui_takes_its_shards_and_their_containers_down(
    probetui: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    manifest, pids = pods_manifest(tmp_path)
    proc = probetui("local", str(manifest), "--no-ui", "--shards", "2")
    wait_for(lambda: pids.exists() and pids.read_text().count("\n") >= 4, 30)
    shards = children(proc.pid)
    containers = [int(x) for x in pids.read_text().split()]
    proc.kill()
    proc.wait(timeout=5)
    wait_for(lambda: not any(alive(p) for p in shards + containers), 10)


def test_a_sharded_run_is_recorded_whole_in_the_parent(
    probetui: Callable[..., subprocess.Popen[str]], tmp_path: Path
) -> None:
    """--record with --shards: the recorder is fed in the parent from the decoded stream, so
    the replay's JSONL is the live run's, line for line."""
    manifest, _ = pods_manifest(tmp_path)
    rec = tmp_path / "rec.db"
    live = probetui(
        "local",
        str(manifest),
        "--no-ui",
        "--duration",
        "2.5",
        "--shards",
        "2",
        "--record",
        str(rec),
    )
    out, err = live.communicate(timeout=30)
    assert live.returncode == 0, err
    replay = probetui("replay", str(rec), "--no-ui", "--output", "jsonl")
    back, err = replay.communicate(timeout=30)
    assert replay.returncode == 0, err
    assert '"ProbeAttempt"' in out
    assert sorted(back.splitlines()) == sorted(out.splitlines())


async def test_a_containers_output_reaches_the_ui_from_its_shard(tmp_path: Path) -> None:
    """The attempt log's output tail: the local runtime keeps it in the shard beside the
    process; the UI reads it from the pool's runtime, fed by the shard's tail frames."""
    manifest = tmp_path / "pod.yaml"
    script = (
        "import time\nfor i in range(1000):\n    print('line', i, flush=True); time.sleep(0.1)\n"
    )
    manifest.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "talker"},
                "spec": {
                    "containers": [{"name": "app", "command": [sys.executable, "-c", script]}]
                },
            }
        )
    )
    pods = load_pods(manifest)
    pool = ShardPool(LocalRuntime(pods, source="test"), [Events()], shards=2)
    run = asyncio.ensure_future(pool.run())
    try:
        uid = pods[0].uid
        await until(lambda: "line 3" in pool.runtime.output_tail(uid, "app"), 20)
        assert pool.runtime.output_tail(uid, "app")[0] == "line 0"
        assert pool.runtime.source == "test" and pool.runtime.output_tail(uid, "nope") == []
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
