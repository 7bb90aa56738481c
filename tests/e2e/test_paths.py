"""Every reach path through the real apiserver and kubelet gives what a direct attempt gives.

Three shadows at once over the same stable targets: `--via direct` (the pod IP, from the client
namespace), `--via port-forward` (pods/portforward: apiserver, kubelet, containerd's forwarder
inside the pod's namespace) and `--via proxy` (pods/proxy: the apiserver dials the pod). Exec
probes go through pods/exec on every path. For each probe the set of (outcome, output, error)
must be the same as direct; proxy carries HTTP only, and says so for the others.

Then the same three again with `--shards 1`: the watch in probetui's process, the attempts in
a shard process, which opens its own API clients for pods/exec, pods/portforward and
pods/proxy from the same kubeconfig; the answers must be the direct ones still.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.cluster import Cluster
from tests.e2e.pods import path_pod_set
from tests.e2e.run import Run, start, stop, wait_listed

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(2400)]

NS = "paths"
VIAS = ("direct", "port-forward", "proxy")
SHARDED = " sharded"
SECONDS = 25


@pytest.fixture(scope="module")
def runs(cluster: Cluster) -> Iterator[dict[str, Run]]:
    cluster.namespace(NS)
    cluster.apply(path_pod_set(NS))
    cluster.wait_running(NS, 60)
    tmp = cluster.workdir("paths")
    done: dict[str, Run] = {}
    # one batch at a time: six shadows and three shards at once would starve the 2 cores
    for suffix, extra in (("", ()), (SHARDED, ("--shards", "1"))):
        started = {
            via + suffix: start(cluster, tmp, "-n", NS, "--via", via, *extra, name=via + suffix)
            for via in VIAS
        }
        try:
            for run in started.values():
                wait_listed(run, 60)
            time.sleep(SECONDS)
        finally:
            for run in started.values():
                stop(run)
        done.update(started)
    yield done


def _answers(run: Run, pod: str) -> set[tuple[Any, ...]]:
    attempts = run.of("ProbeAttempt", pod=pod, probe="readiness")
    # the first attempt of each may meet the app still starting up
    return {
        (a["outcome"], a.get("output"), a.get("error"), a.get("statusCode")) for a in attempts[1:]
    }


PODS = [p["metadata"]["name"] for p in path_pod_set(NS)]


def test_every_path_ran_cleanly(runs: dict[str, Run]) -> None:
    for via, run in runs.items():
        assert run.returncode == 130, (via, run.stderr[-2000:])
        assert "Traceback" not in run.stderr, (via, run.stderr[-3000:])


@pytest.mark.parametrize(
    "via", ["port-forward", "proxy", *(via + SHARDED for via in VIAS)], ids=lambda v: v.strip()
)
@pytest.mark.parametrize("pod", PODS)
def test_a_path_answers_as_a_direct_attempt(runs: dict[str, Run], via: str, pod: str) -> None:
    direct = _answers(runs["direct"], pod)
    assert len(direct) == 1, direct  # stable targets: one answer, every time
    path = via.removesuffix(SHARDED)
    if path == "proxy" and pod in ("tcp-open", "tcp-closed", "grpc"):
        (skip,) = runs[via].of("ProbeNotRun", pod=pod)
        assert "HTTP probes only" in skip["reason"]
        return
    assert _answers(runs[via], pod) == direct
    assert {a["via"] for a in runs[via].of("ProbeAttempt", pod=pod)} == {
        "pods/exec" if pod.startswith("exec") else path
    }


def test_the_sharded_runs_ran_in_a_shard(runs: dict[str, Run]) -> None:
    for via in VIAS:
        assert "the prober runs in 1 shard process(es)" in runs[via + SHARDED].stderr


def test_the_direct_answers_are_the_kubelets(runs: dict[str, Run]) -> None:
    """What each target answers, as the kubelet's own events word it."""
    (ok,) = _answers(runs["direct"], "hop")
    assert ok[:2] == ("success", "ok\n")  # the same-host redirect was followed
    (sick,) = _answers(runs["direct"], "sick")
    assert sick[:2] == ("failure", "HTTP probe failed with statuscode: 500")
    (slow,) = _answers(runs["direct"], "slow")
    assert slow[0] == "failure" and slow[1].endswith(
        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    )
    (closed,) = _answers(runs["direct"], "tcp-closed")
    assert closed[0] == "failure" and closed[1].endswith(":8081: connect: connection refused")
    (fail,) = _answers(runs["direct"], "exec-fail")
    assert fail[:2] == ("failure", "nope\n")
