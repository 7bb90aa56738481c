"""The cluster view in shards (`probetui -n NS --via direct --shards N`): the list/watch runs
once in the parent, each shard probes its pods, and the divergence check in the parent reads
the shards' verdicts. Against the API emulator on loopback, with real shard processes.

Real time, a few seconds per test: probes run at period 1 s, and a shard's workers start with
the kubelet's jitter (up to a period), which the parent cannot turn off in another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from probetui.keys import ProbeKey
from probetui.probe.base import DEFAULT_KUBE_VERSION
from probetui.probe.util import ReachError
from probetui.shards.cluster import ShardReach, reach_settings
from probetui.shards.live import make_engine, shards_problem
from probetui.shards.pool import ShardPool
from probetui.spec.model import ProbeType
from probetui.spec.parse import pod_from_object
from tests.cli.test_cluster import _env, run_probetui
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import HttpTarget, api, http_target
from tests.runtime.kubernetes.test_runtime import Recorder, make_runtime, until, web_pod

__all__ = ["api", "http_target"]  # fixtures, used by name

pytestmark = [pytest.mark.slow, pytest.mark.timeout(90)]

_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in (*_PROXY_VARS, "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "POD_NAMESPACE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))


def _pods(api: ApiEmulator, port: int, count: int = 4, *, exec_liveness: bool = False) -> None:
    for i in range(count):
        liveness: dict[str, Any] = (
            {"exec": {"command": ["true"]}, "periodSeconds": 1}
            if exec_liveness
            else http_get_probe("/live", port, period=1)
        )
        api.add_pod(
            make_pod(
                f"web{i}",
                containers=[
                    container(
                        "app",
                        ports=(port,),
                        readiness=http_get_probe("/ready", port, period=1),
                        liveness=liveness,
                    )
                ],
            )
        )


def _kinds(lines: list[dict[str, Any]]) -> dict[str, set[tuple[str, str, str]]]:
    out: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for line in lines:
        out[line["pod"]].add((line["type"], line.get("probe") or "", line["source"]))
    return dict(out)


@contextlib.asynccontextmanager
async def sharded(api: ApiEmulator, tmp_path: Path, shards: int = 2) -> AsyncIterator[Any]:
    runtime = make_runtime(api, tmp_path, via="direct")
    rec = Recorder()
    pool = make_engine(
        runtime,
        [rec],
        shards=shards,
        kube_version=DEFAULT_KUBE_VERSION,
        say=lambda _: None,
        headless=True,
    )
    task = asyncio.create_task(pool.run())
    try:
        await until(lambda: runtime.pods_reflector is not None, timeout=30)
        assert runtime.pods_reflector is not None
        await asyncio.wait_for(runtime.pods_reflector.synced.wait(), 10)
        await api.wait_for_watch("pods", timeout=10)
        await api.wait_for_watch("events", timeout=10)
        yield runtime, pool, rec
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_every_via_runs_sharded(api: ApiEmulator, tmp_path: Path) -> None:
    for via in ("direct", "port-forward", "proxy"):
        assert shards_problem(make_runtime(api, tmp_path, via=via), 2) is None


async def test_sharded_divergence_is_marked_and_cleared(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """As `test_divergence_is_marked_and_cleared` in one process: the kubelet says not ready,
    the shard's shadow sees 200; the parent's check reads the shard's verdict."""
    api.add_pod(web_pod(http_target.port, ready=False))
    async with sharded(api, tmp_path) as (_runtime, pool, rec):
        assert isinstance(pool, ShardPool) and pool.mode == "fed"
        await until(lambda: bool(rec.of("Divergence")), timeout=10)
        began = time.monotonic()
        api.edit_pod("web", lambda p: p["status"]["containerStatuses"][0].update(ready=True))
        await until(lambda: bool(rec.of("DivergenceCleared")), timeout=3)
        assert time.monotonic() - began < 1.0
        assert pool.pids()  # the shards probed; the parent has no workers at all
    (div,) = rec.of("Divergence")
    assert (div.fields["kubelet"], div.fields["shadow"]) == ("not ready", "ready")
    assert div.probe == "readiness" and div.container == "app" and div.fields["via"] == "direct"
    assert div.t - div.fields["since"] > 1.0
    first = rec.of("ProbeAttempt")[0]
    assert first.fields["via"] == "direct" and div.fields["since"] >= first.t
    # one list and one watch stream per resource: the parent's; the shards have no API client
    assert api.count_requests(verb="list", resource="pods") == 1
    assert api.count_requests(verb="list", resource="events") == 1


async def test_no_divergence_before_the_shard_has_probed(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """Agreeing kubelet and shadow: the verdicts arrive, and nothing diverges."""
    api.add_pod(web_pod(http_target.port, ready=True))
    async with sharded(api, tmp_path) as (_runtime, pool, rec):
        await until(lambda: len(rec.of("ProbeAttempt")) >= 3, timeout=10)
        await asyncio.sleep(0.3)
        assert pool.verdicts.workers  # what the check read came from the shard
    assert not rec.of("Divergence")


async def test_sharded_run_prints_the_same_event_kinds_per_pod(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    _pods(api, http_target.port)
    config = api.kubeconfig(tmp_path / "kubeconfig")
    args = ("-n", "default", "--via", "direct", "--no-ui", "--output", "jsonl")
    args += ("--kubeconfig", str(config), "--duration", "4")
    code, alone, err = await run_probetui(*args, timeout=40)
    assert code == 0, err
    lists = api.count_requests(verb="list")
    watches = api.count_requests(verb="watch")
    code, split, err = await run_probetui(*args, "--shards", "2", timeout=40)
    assert code == 0, err
    assert "2 shard process(es) fed by one watch" in err
    assert _kinds(split) == _kinds(alone)
    assert {line["pod"] for line in split} == {f"web{i}" for i in range(4)}
    # the shards never list nor watch: the sharded run made as many as the one-process run
    assert api.count_requests(verb="list") - lists == lists
    assert api.count_requests(verb="watch") - watches == watches


async def test_sharded_exec_probes_run_in_the_shard_through_pods_exec(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """Each shard opens its own API clients for pods/exec, from the same kubeconfig; the
    parent's list and watch stay the only ones (the shards neither list nor watch)."""
    _pods(api, http_target.port, count=2, exec_liveness=True)
    config = api.kubeconfig(tmp_path / "kubeconfig")
    args = ("-n", "default", "--via", "direct", "--no-ui", "--output", "jsonl", "--shards", "2")
    code, lines, err = await run_probetui(*args, "--kubeconfig", str(config), "--duration", "4")
    assert code == 0, err
    assert not [x for x in lines if x["type"] == "ProbeNotRun"]
    live = [x for x in lines if x["type"] == "ProbeAttempt" and x["probe"] == "liveness"]
    assert {x["pod"] for x in live} == {"web0", "web1"}
    assert {x["outcome"] for x in live} == {"success"}
    assert {x["via"] for x in live} == {"pods/exec"}
    assert api.count_requests(subresource="exec") >= len(live)
    assert api.count_requests(verb="list", resource="pods") == 1
    assert api.count_requests(verb="watch", resource="pods") == 1


@pytest.mark.parametrize("via", ["port-forward", "proxy"])
async def test_port_forward_and_proxy_run_sharded_and_answer_as_direct(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget, via: str
) -> None:
    _pods(api, http_target.port, count=2)
    for i in range(2):
        api.map_port(f"web{i}", http_target.port, http_target.port)
    config = api.kubeconfig(tmp_path / "kubeconfig")
    args = ("-n", "default", "--via", via, "--no-ui", "--output", "jsonl", "--shards", "2")
    code, lines, err = await run_probetui(*args, "--kubeconfig", str(config), "--duration", "4")
    assert code == 0, err
    attempts = [x for x in lines if x["type"] == "ProbeAttempt"]
    assert {(x["pod"], x["probe"]) for x in attempts} == {
        (f"web{i}", p) for i in range(2) for p in ("readiness", "liveness")
    }
    assert {(x["outcome"], x.get("statusCode")) for x in attempts} == {("success", 200)}
    assert {x["via"] for x in attempts} == {via}
    sub = "portforward" if via == "port-forward" else "proxy"
    assert api.count_requests(subresource=sub) >= len(attempts)


def test_a_shard_that_cannot_resolve_the_cluster_says_why_on_its_attempts(
    tmp_path: Path,
) -> None:
    """The kubeconfig gone since the start: the shard's exec and port-forward attempts are
    errors naming it (errors, not failures: a path that fails never kills a container)."""

    settings = {
        "via": "port-forward",
        "read_only": False,
        "in_cluster": False,
        "files": [str(tmp_path / "gone")],
        "context": "c",
        "namespace": "default",
        "server": "https://127.0.0.1:1",
    }
    reach = ShardReach(settings)
    p = pod_from_object(make_pod("web0", containers=[container("app", ports=(80,))]), "test")
    c = p.containers[0]

    async def attempts() -> tuple[Any, BaseException | None]:
        out = await reach.exec_runner(p, c)(["true"], 1.0)
        try:
            await reach.reach(p, c, "10.0.0.1", 80)
        except ReachError as e:
            return out, e
        return out, None

    out, err = asyncio.run(attempts())
    assert out.exit_code is None and out.error is not None
    assert out.error.startswith("the shard cannot reach the API server: ")
    assert "kubeconfig" in out.error
    assert err is not None and str(err) == out.error
    assert not reach.connected


async def test_attempts_that_meet_an_unconnected_shard_together_share_its_connect(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """Found on the real cluster: the second of two attempts at a shard's start went on before
    the first had handed the clients to the reacher."""
    _pods(api, http_target.port, count=1)
    api.map_port("web0", http_target.port, http_target.port)
    runtime = make_runtime(api, tmp_path, via="port-forward")
    reach = ShardReach(reach_settings(runtime))
    p = pod_from_object(api.store.get("pods", "default", "web0"), "test")
    c = p.containers[0]
    try:
        first = asyncio.ensure_future(reach.reach(p, c, "10.0.0.1", http_target.port))
        # the moment of the bug: one client made, the other not yet
        async with asyncio.timeout(10):
            while len(reach._clients) != 1:  # noqa: ASYNC110 - every turn of the loop
                await asyncio.sleep(0)
        # awaited here, not in a task: it asks at once, while the connect is half done
        second = await reach.reach(p, c, "10.0.0.1", http_target.port)
        got = [await first, second, await reach.exec_runner(p, c)(["true"], 2.0)]
    finally:
        await reach.close()
    assert [host for host, _ in got[:2]] == ["127.0.0.1", "127.0.0.1"]
    assert got[2].exit_code == 0
    assert api.count_requests(subresource="portforward") == 2


async def test_read_only_sharded_run_sends_only_gets(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    api.role = "view"
    _pods(api, http_target.port, count=2, exec_liveness=True)
    config = api.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    args = ("--read-only", "--via", "direct", "--no-ui", "--output", "jsonl", "--shards", "2")
    code, lines, err = await run_probetui(*args, "--kubeconfig", str(config), "--duration", "3")
    assert code == 0, err
    assert api.non_read_requests() == []
    assert {r.method for r in api.requests} == {"GET"}
    for sub in ("exec", "portforward", "proxy"):
        assert api.count_requests(subresource=sub) == 0
    # direct probes run read-only (the pod IPs are said to be reachable); exec never
    assert [x for x in lines if x["type"] == "ProbeAttempt" and x["probe"] == "readiness"]
    not_run = {x["pod"]: x["reason"] for x in lines if x["type"] == "ProbeNotRun"}
    assert set(not_run) == {"web0", "web1"} and all("read-only" in r for r in not_run.values())


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def test_no_shard_outlives_probetui_on_sigterm(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    _pods(api, http_target.port, count=2)
    config = api.kubeconfig(tmp_path / "kubeconfig")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "probetui.cli",
        *("-n", "default", "--via", "direct", "--no-ui", "--output", "jsonl", "--shards", "2"),
        *("--kubeconfig", str(config)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(30):
            while True:  # the shards run once their attempts come
                line = await proc.stdout.readline()
                assert line, "probetui ended before any attempt"
                if json.loads(line)["type"] == "ProbeAttempt":
                    break
        shards = _children(proc.pid)
        assert len(shards) == 2 and all(_alive(pid) for pid in shards)
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.communicate(), 15)
        assert proc.returncode == 128 + signal.SIGTERM  # the headless run's exit by signal
        await until(lambda: not any(_alive(pid) for pid in shards), timeout=5)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_killed_shard_is_restarted_and_its_pods_probed_again(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """kill -9 of a shard: the pool starts another from the parent's copy of its pods (no
    second list: the watch goes on); a reported divergence is not cleared by the restart."""
    api.add_pod(web_pod(http_target.port, ready=False))
    async with sharded(api, tmp_path) as (_runtime, pool, rec):
        await until(lambda: bool(rec.of("Divergence")), timeout=10)
        (owner,) = [s for s in pool.shards if s.snapshots]
        old = owner.pid
        assert old is not None
        os.kill(old, signal.SIGKILL)
        await until(lambda: owner.started == 2 and owner.alive, timeout=10)
        assert any("restarting it" in n for n in pool.notices)
        killed = time.time()
        await until(lambda: any(e.t > killed for e in rec.of("ProbeAttempt")), timeout=10)
        await until(lambda: bool(pool.verdicts.workers), timeout=5)
        assert owner.pid != old
        await asyncio.sleep(1.5)  # a check or two more with the new process's verdicts
    # the restart is no agreement: the last verdict stood until the new worker had its own
    assert not rec.of("DivergenceCleared")
    assert len(rec.of("Divergence")) == 1
    assert api.count_requests(verb="list", resource="pods") == 1


async def test_read_only_sharded_offers_t_for_the_probes_it_runs(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """Read-only with --via direct: `t` runs a direct probe in its shard, as in one process;
    an exec probe is not offered (nothing reaches the API server for it)."""
    api.role = "view"
    _pods(api, http_target.port, count=1, exec_liveness=True)
    runtime = make_runtime(api, tmp_path, via="direct", read_only=True)
    rec = Recorder()
    pool = make_engine(
        runtime,
        [rec],
        shards=2,
        kube_version=DEFAULT_KUBE_VERSION,
        say=lambda _: None,
        headless=True,
    )
    task = asyncio.create_task(pool.run())
    try:
        await until(lambda: bool(rec.of("ProbeAttempt")), timeout=15)
        uid = rec.of("ProbeAttempt")[0].pod_uid
        assert not pool.probe_now(ProbeKey(uid, "app", ProbeType.LIVENESS))
        assert pool.probe_container(uid, "app") == 1
        asked = time.time()
        assert pool.probe_now(ProbeKey(uid, "app", ProbeType.READINESS))
        await until(
            lambda: any(e.t >= asked and e.fields.get("manual") for e in rec.of("ProbeAttempt")),
            timeout=5,
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert api.non_read_requests() == []


async def test_sharded_probes_carry_the_kubelet_version_of_the_pods_node(
    api: ApiEmulator, tmp_path: Path, http_target: HttpTarget
) -> None:
    """The parent reads the nodes; each shard is told its pods' kubelet versions, so its
    probes say kube-probe/X.Y as that node's kubelet does (as in one process)."""
    web = http_target.port
    api.add_node("node-old", kubelet_version="v1.33.4")
    api.add_node("node-new", kubelet_version="v1.35.1-eks-3f2e1a")
    for name, node in (("old", "node-old"), ("new", "node-new")):
        api.add_pod(
            make_pod(
                name,
                node=node,
                containers=[
                    container(
                        "app", ports=(web,), readiness=http_get_probe(f"/{name}", web, period=1)
                    )
                ],
            )
        )
    expected = {"/old": "kube-probe/1.33", "/new": "kube-probe/1.35"}

    def latest() -> dict[str, str]:
        return {path: headers["User-Agent"] for _, path, headers in http_target.seen}

    # the versions reach a shard once the parent has read the nodes (looked at every second):
    # on a loaded machine a pod's first attempts may go before that, with the default
    async with sharded(api, tmp_path):
        await until(lambda: latest() == expected, timeout=15)
    assert latest() == expected
    assert api.count_requests(resource="nodes") == 1  # the parent's one list; none by a shard
