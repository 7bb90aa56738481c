"""`--summary DURATION`: the cluster view headless against the API emulator
writes a `WorkloadSummary` line per workload every DURATION beside the event lines; read-only,
it still sends only get/list/watch; bad values are one line and exit 2 before anything runs."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from probetui.cli import main
from tests.cli.test_check import web_app
from tests.cli.test_cluster import _clean_env, _one_error_line, api, api_config, run_probetui
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod

# fixtures, used by name; web_app answers /ok 200 and /fail 503
__all__ = ["_clean_env", "api", "api_config", "web_app"]

HASH = "7d9f8b6c4"


def replica(suffix: str, port: int, path: str) -> dict[str, Any]:
    pod = make_pod(
        f"payments-{HASH}-{suffix}",
        labels={"app": "payments", "pod-template-hash": HASH},
        containers=[
            container(
                "app", ports=(port,), readiness=http_get_probe(path, port, period=1, failure=1)
            )
        ],
    )
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": f"payments-{HASH}",
            "uid": "rs-uid",
            "controller": True,
        }
    ]
    return pod


def payments(api: ApiEmulator, port: int) -> None:
    for suffix, path in (("a1b2c", "/ok"), ("d3e4f", "/fail"), ("g5h6i", "/ok")):
        api.add_pod(replica(suffix, port, path))
        api.map_port(f"payments-{HASH}-{suffix}", port, port)


def summaries(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [x for x in lines if x["type"] == "WorkloadSummary"]


@pytest.mark.slow
async def test_a_workload_summary_line_every_interval(
    api: ApiEmulator, tmp_path: Path, web_app: int
) -> None:
    payments(api, web_app)
    config = api.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    args = ("--no-ui", "--output", "jsonl", "--summary", "1s", "--duration", "4.5")
    code, lines, err = await run_probetui(*args, "--kubeconfig", str(config), timeout=40)
    assert code == 0, err
    seen = summaries(lines)
    # one line a workload each second: the three replicas are one Deployment
    assert len(seen) >= 3 and {x["name"] for x in seen} == {"payments"}
    last = seen[-1]
    assert (last["namespace"], last["kind"], last["replicas"]) == ("default", "Deployment", 3)
    assert {"ts", "pod", "container", "probe", "source"} <= set(last)
    (ready,) = last["probes"]
    assert (ready["probe"], ready["pass"], ready["fail"], ready["timeoutSeconds"]) == (
        "readiness",
        2,
        1,
        1.0,
    )
    assert ready["latency_ms"]["p99"] is not None and ready["latency_ms"]["attempts"] >= 3
    assert [d["pod"] for d in ready["differ"]] == [f"payments-{HASH}-d3e4f"]
    assert last["shadowNotReady"] == 1 and last["worstProbe"] == "readiness"
    assert last["worstReplica"] == f"payments-{HASH}-d3e4f"
    # the event lines go on beside them
    assert any(x["type"] == "ProbeAttempt" for x in lines)


@pytest.mark.slow
async def test_read_only_summary_still_sends_only_get_list_watch(
    api: ApiEmulator, tmp_path: Path, web_app: int
) -> None:
    api.role = "view"
    payments(api, web_app)
    config = api.kubeconfig(tmp_path / "kubeconfig", namespace="default")
    args = ("--read-only", "--no-ui", "--output", "jsonl", "--summary", "1s", "--duration", "2.5")
    code, lines, err = await run_probetui(*args, "--kubeconfig", str(config), timeout=40)
    assert code == 0, err
    assert api.non_read_requests() == []
    assert {r.method for r in api.requests} == {"GET"}
    seen = summaries(lines)
    assert seen and seen[-1]["replicas"] == 3
    # nothing probed through the API server read-only: the shadow knows nothing of them yet
    assert seen[-1]["probes"][0]["unknown"] == 3 and seen[-1]["ready"] == 3


@pytest.mark.parametrize(
    ("value", "words"),
    [("abc", "not a duration"), ("0.5s", "at least 1s"), ("0", "more than 0 seconds")],
)
def test_bad_summary_values_are_one_line_and_exit_2(
    value: str, words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: c, command: [sleep, '60']}\n"
    )
    assert main(["local", str(manifest), "--no-ui", "--summary", value]) == 2
    err = _one_error_line(capsys)
    assert err.startswith(f"probetui: error: --summary {value!r}: ") and words in err


def test_summary_on_the_screen_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: c, command: [sleep, '60']}\n"
    )
    assert main(["local", str(manifest), "--summary", "30s"]) == 2
    assert "only headless" in _one_error_line(capsys)


def test_the_cluster_view_checks_summary_before_it_connects(
    api_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # api_config's emulator has stopped: a connection would fail, the value fails first
    assert main(["--kubeconfig", str(api_config), "--no-ui", "--summary", "soon"]) == 2
    assert "--summary 'soon': not a duration" in _one_error_line(capsys)


async def test_a_summary_tick_lets_the_event_loop_run_between_its_slices(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tick of many workloads is written a slice at a time: what the loop has to do meanwhile
    (events, keys) runs before the tick is done, not after (0.89 s at 15,000 pods in one go);
    the lines are those of one whole tick, and the next tick comes `every` later."""
    import io

    from probetui.cli.summary import SummarySink
    from probetui.triage import report
    from tests.triage.test_triage import fleet_of

    loop = asyncio.get_running_loop()
    every = 0.1  # short, on the loop's real clock: the test takes two of them
    seen: list[int] = []  # lines written when the loop ran a callback queued at a tick's first
    second_tick = loop.create_future()

    class Reader(io.StringIO):
        """The sink's out: when each line came, on the loop's clock; a pipe closed after the
        first line of the second tick."""

        def __init__(self) -> None:
            super().__init__()
            self.at: list[float] = []
            self.gone = False

        def write(self, s: str) -> int:
            if self.gone:
                raise BrokenPipeError
            if s.endswith("\n"):
                self.at.append(loop.time())
                if len(self.at) == 1:  # the first tick begins: the loop has something to do
                    loop.call_soon(lambda: seen.append(len(self.at)))
                elif len(self.at) == 9:  # the reader goes away: the sink stops at its next write
                    self.gone = True
                    second_tick.set_result(None)
            return super().write(s)

    monkeypatch.setattr(report, "SLICE_SECONDS", 0.0)  # one workload a slice
    out = Reader()
    sink = SummarySink(every, out)
    started = loop.time()
    fleet_of(sink, 8, 2)  # as the engine calls it: the first call starts the sink's clock
    await asyncio.wait_for(second_tick, 5.0)
    for _ in range(100):  # turns of the loop
        if sink.broken:
            break
        await asyncio.sleep(0)
    assert sink.broken
    assert seen and 0 < seen[0] < 8  # the loop ran while the tick was being written
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [x["name"] for x in lines] == [f"svc-{w}" for w in range(8)] + ["svc-0"]
    assert sink.lines == 9
    # a timer may run up to the clock's resolution before its time
    early = time.get_clock_info("monotonic").resolution
    assert out.at[0] >= started + every - early
    assert out.at[8] >= started + 2 * every - early  # the next tick `every` later, not at once
