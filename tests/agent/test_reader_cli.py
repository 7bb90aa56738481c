"""`probetui -o jsonl` (headless, read-only) reading a node agent: the JSONL and stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.conftest import NODE, READ_TOKEN
from tests.agent.reader_bench import StartAgent, add_web, viewer
from tests.cli.test_cluster import _clean_env, run_probetui
from tests.kube.emulator import ApiEmulator
from tests.kube.emulator.fixtures import HttpTarget

__all__ = ["_clean_env"]  # an autouse fixture, used by name

pytestmark = pytest.mark.slow


def _viewer_config(api: ApiEmulator, tmp_path: Path, port: int) -> Path:
    """Add the pod `web` probed on `port`; return the kubeconfig of a viewer of namespace
    default who holds the probetui-reader Role."""
    add_web(api, port)
    token = viewer(api)
    return api.kubeconfig(tmp_path / "viewer-kubeconfig", namespace="default", token=token)


async def test_headless_read_only_jsonl_carries_the_agents_attempts(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    config = _viewer_config(api, tmp_path, http_target.port)
    async with start_agent():
        code, lines, err = await run_probetui(
            "--kubeconfig", str(config), "--read-only", "-o", "jsonl", "--duration", "5"
        )
    assert code == 0, err
    tried = [line for line in lines if line["type"] == "ProbeAttempt"]
    assert tried and all(line["via"] == "agent" and line["node"] == NODE for line in tried)
    assert not [line for line in lines if line["type"] in ("ProbeNotRun", "Divergence")]
    assert "node agents on 1 node(s) probe their pods from the node" in err
    assert READ_TOKEN not in err + str(lines)
    mine = [r for r in api.requests if r.user == "alice"]
    assert {r.method for r in mine} == {"GET"}
    assert {(r.verb, r.subresource) for r in mine if r.subresource} == {("get", "proxy")}


async def test_a_recorded_agent_session_replays_with_each_attempts_node(
    api: ApiEmulator,
    tmp_path: Path,
    http_target: HttpTarget,
    start_agent: StartAgent,
) -> None:
    """`--record` of a view fed by an agent keeps each attempt's vantage: `probetui replay -o
    jsonl` prints the `via` and `node` keys the live JSONL printed."""
    config = _viewer_config(api, tmp_path, http_target.port)
    recording = tmp_path / "agent.probetui"
    async with start_agent():
        code, live, err = await run_probetui(
            "--kubeconfig", str(config), "--read-only", "-o", "jsonl", "--duration", "5",
            "--record", str(recording),
        )  # fmt: skip
    assert code == 0, err
    code, replayed, err = await run_probetui("replay", str(recording), "--no-ui", "-o", "jsonl")
    assert code == 0, err
    live_tried = [line for line in live if line["type"] == "ProbeAttempt"]
    tried = [line for line in replayed if line["type"] == "ProbeAttempt"]
    assert live_tried and len(tried) == len(live_tried)
    assert all(line["via"] == "agent" and line["node"] == NODE for line in tried)
    # the same keys, in the same order, as the live lines
    assert [list(line) for line in tried] == [list(line) for line in live_tried]
