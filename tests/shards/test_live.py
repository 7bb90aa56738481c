"""`--shards N|auto` (probetui/shards/live.py): the automatic choice and how it is said."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from probetui.cli import main
from probetui.runtime.base import Runtime
from probetui.runtime.local.runtime import LocalRuntime
from probetui.shards.live import (
    AUTO,
    AUTO_MIN_RATE,
    attempt_rate,
    choose,
    make_engine,
    parse_shards,
)
from probetui.spec.model import Container, ExecAction, Pod, Probe, TCPSocketAction


def pods(count: int, containers: int = 1, period: int = 1) -> list[Pod]:
    probe = Probe(tcp_socket=TCPSocketAction(port=1), period_seconds=period)
    exec_probe = Probe(exec=ExecAction(("true",)), period_seconds=period)
    return [
        Pod(
            f"p{i}",
            uid=f"uid-{i}",
            containers=tuple(
                Container(
                    f"c{j}", command=("true",), readiness_probe=probe, liveness_probe=exec_probe
                )
                for j in range(containers)
            ),
        )
        for i in range(count)
    ]


def local(count: int, containers: int = 1, period: int = 1) -> LocalRuntime:
    return LocalRuntime(pods(count, containers, period))


def test_the_rate_counts_every_probe_at_its_period() -> None:
    assert attempt_rate(pods(3, containers=2, period=10)) == (12, pytest.approx(1.2))
    assert attempt_rate(pods(1, period=1)) == (2, 2.0)


def test_few_attempts_a_second_keep_the_engine_in_this_process() -> None:
    """The demo's and a manifest's handful of pods: no shard, and the reason says the rate."""
    choice = choose(local(9, period=10), AUTO, cores=8)
    assert (choice.shards, choice.auto) == (0, True)
    assert "about 2 attempts/s" in choice.reason and "one process is cheaper" in choice.reason


def test_many_attempts_go_to_one_shard_per_2000_a_second_up_to_the_cores() -> None:
    # 1,000 containers x 2 probes at 1 s: 2,000/s, one shard's worth
    assert choose(local(1000), AUTO, cores=8).shards == 1
    # 2,200/s: past one shard's worth, two (measured to pay off even on 2 cores)
    assert choose(local(1100), AUTO, cores=2).shards == 2
    # 6,000/s: three shards' worth, as many as the cores allow
    assert choose(local(1000, containers=3), AUTO, cores=2).shards == 2
    assert choose(local(1000, containers=3), AUTO, cores=8).shards == 3
    # one core: still one shard, off the UI's loop
    assert choose(local(1000, containers=3), AUTO, cores=1).shards == 1
    # a pod's probes stay in one shard: no more shards than pods
    assert choose(local(2, containers=2000), AUTO, cores=16).shards == 2


def test_the_threshold_is_the_rate_not_the_pod_count() -> None:
    below = int(AUTO_MIN_RATE // 2) - 1  # two probes a pod at 1 s
    assert choose(local(below), AUTO, cores=4).shards == 0
    assert choose(local(below + 1), AUTO, cores=4).shards == 1
    # the same pods at period 10: a tenth of the attempts
    assert choose(local((below + 1) * 5, period=10), AUTO, cores=4).shards == 0


def test_a_number_given_is_taken_as_it_is() -> None:
    choice = choose(local(1), 3, cores=2)
    assert (choice.shards, choice.auto) == (3, False)
    assert choose(local(5000), 0, cores=8).shards == 0


def test_a_source_whose_pods_come_later_stays_in_this_process() -> None:
    class Later(Runtime):
        source = "later"

        async def run(self, host: object) -> None:
            return None

    choice = choose(Later(), AUTO, cores=8)
    assert choice.shards == 0 and choice.auto
    said: list[str] = []
    make_engine(
        Later(), [], shards=0, kube_version="v1.33.0", say=said.append, headless=True,
        choice=choice,
    )  # fmt: skip
    assert said == []  # as before auto: nothing said on every start of the cluster view


@pytest.mark.parametrize("text", ["auto", "AUTO", " auto "])
def test_auto_is_read_in_any_case(text: str) -> None:
    assert parse_shards(text) == AUTO


@pytest.mark.parametrize(
    ("text", "needle"),
    [("two", "a number of shard processes"), ("-1", "from 0"), ("65", "to 64")],
)
def test_a_bad_shards_value_names_what_is_accepted(text: str, needle: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=needle):
        parse_shards(text)


def test_the_automatic_choice_is_said_with_its_reason() -> None:
    said: list[str] = []
    runtime = local(1000)
    choice = choose(runtime, AUTO, cores=2)
    make_engine(
        runtime, [], shards=choice.shards, kube_version="v1.33.0", say=said.append,
        headless=True, choice=choice,
    )  # fmt: skip
    assert said == [f"the prober runs in 1 shard process(es): {choice.reason}"]
    assert runtime.source.endswith("· 1 shard (auto)")  # the header's source names it
    said.clear()
    small = local(2)
    choice = choose(small, AUTO, cores=2)
    make_engine(
        small, [], shards=0, kube_version="v1.33.0", say=said.append, headless=True,
        choice=choice,
    )  # fmt: skip
    assert said == [f"the prober runs in this process: {choice.reason}"]


def test_the_cli_refuses_a_bad_shards_value_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "app", "command": ["true"]}]},
            }
        )
    )
    assert main(["local", str(manifest), "--no-ui", "--shards", "two"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--shards" in err and "or auto" in err
