"""`--shards N|auto` picks the in-process engine (N = 0) or a pool of N shards for the live modes.

`auto` (the default) chooses by the attempts a second the pods' probes ask for, which a local
runtime knows before it starts (`choose`): few, and the engine stays in this process (cheaper in
all: no second interpreter to start, no stream; the prober takes little of the UI's core); many,
and the prober goes to shard processes, one per SHARD_RATE attempts a second, no more than the
cores. The rule is guarded by `benchmarks/shards.py`. The choice and its
reason are said at the start, and the header names the shards.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from probetui.runtime.base import Runtime

MAX_SHARDS = 64
AUTO = "auto"
DEFAULT_SHARDS = AUTO
# Below this many attempts a second the engine stays in this process, because so few attempts
# cost the UI's core less than a shard's second interpreter and stream would
# (guarded by benchmarks/shards.py).
AUTO_MIN_RATE = 400.0
# The attempts a second one shard holds within the p99 tick lateness goal of
# docs/performance.md, so past it a second shard pays off even on 2 cores
# (guarded by benchmarks/shards.py).
SHARD_RATE = 2000.0


@dataclass(frozen=True)
class ShardChoice:
    shards: int
    auto: bool  # chosen by `choose`, not given as --shards N
    reason: str  # why, in words, for the line said at the start ("": nothing to say)


def parse_shards(text: str) -> int | str:
    """`--shards`'s value: `auto` or a whole number from 0 to MAX_SHARDS (argparse's type)."""
    import argparse

    if text.strip().lower() == AUTO:
        return AUTO
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a number of shard processes (0: the engine in this process) or auto"
        ) from None
    if not 0 <= n <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(
            f"{n}: from 0 (the engine in this process) to {MAX_SHARDS}, or auto"
        )
    return n


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as a container's CPU set limits it)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def attempt_rate(pods: Any) -> tuple[int, float]:
    """(probes, attempts a second they ask for at their periods) of these pods."""
    from probetui.spec.model import ProbeType

    probes, rate = 0, 0.0
    for pod in pods:
        for container in (*pod.init_containers, *pod.containers):
            for probe_type in ProbeType:
                probe = container.probe(probe_type)
                if probe is not None:
                    probes += 1
                    rate += 1.0 / max(1, probe.period_seconds)
    return probes, rate


def choose(runtime: Runtime, requested: int | str, cores: int | None = None) -> ShardChoice:
    """How many shards to run: `requested` when it is a number, else the `auto` rule."""
    if requested != AUTO:
        return ShardChoice(int(requested), False, f"--shards {requested}")
    from probetui.runtime.local.runtime import LocalRuntime

    if not isinstance(runtime, LocalRuntime):
        # its pods come with its first list, after the engine is made: in this process, as
        # before auto, and not said on every start (--help says it; an error stays one line)
        return ShardChoice(0, True, "")
    cores = usable_cores() if cores is None else cores
    pods = list(runtime.pods)
    probes, rate = attempt_rate(pods)
    asked = f"{probes} probe{'s' if probes != 1 else ''} asking about {rate:,.0f} attempts/s"
    if rate < AUTO_MIN_RATE:
        return ShardChoice(
            0, True, f"{asked}, under {AUTO_MIN_RATE:,.0f}/s, where one process is cheaper (auto)"
        )
    n = max(1, min(cores, math.ceil(rate / SHARD_RATE), len(pods)))
    return ShardChoice(
        n,
        True,
        f"{asked} on {cores} core{'s' if cores != 1 else ''}: {n} shard(s), one per "
        f"{SHARD_RATE:,.0f}/s up to the cores (auto)",
    )


def shards_problem(runtime: Runtime, shards: int | str) -> str | None:
    """Why `--shards N` cannot be used with this runtime, or None (`auto` always can). N is
    in range already: `parse_shards` took it."""
    if shards == AUTO:
        return None
    shards = int(shards)
    from probetui.runtime.local.runtime import LocalRuntime

    if not shards or isinstance(runtime, LocalRuntime):
        return None
    if _is_cluster(runtime):
        return None
    return f"--shards {shards}: this source does not run sharded; drop --shards"


def _is_cluster(runtime: Runtime) -> bool:
    from probetui.runtime.kubernetes.runtime import KubernetesRuntime

    return isinstance(runtime, KubernetesRuntime)


def make_engine(
    runtime: Runtime,
    sinks: list[Any],
    *,
    shards: int,
    kube_version: str,
    say: Callable[[str], None],
    headless: bool,
    choice: ShardChoice | None = None,
) -> Any:
    """The engine the live runner drives: `Engine` in this process, or a `ShardPool`; either
    has `sinks`, `run(duration)` and the UI's `Controls`. `choice`: how `shards` was chosen
    (`choose`); an automatic choice is said, with its reason."""
    if choice is not None and choice.auto and choice.reason:
        where = "in this process" if not shards else f"in {shards} shard process(es)"
        say(f"the prober runs {where}: {choice.reason}")
    if not shards:
        from probetui.engine import Engine

        return Engine(runtime, sinks, kube_version=kube_version)
    from probetui.shards.pool import ShardPool

    if _is_cluster(runtime):
        return _cluster_pool(runtime, sinks, shards, kube_version, say, headless)
    pool = ShardPool(
        runtime, sinks, shards=shards, kube_version=kube_version, echo_stderr=headless, say=say
    )
    used = sum(1 for s in pool.shards if s.pods)
    # the choice, visible: on stderr at the start, and in the header's source
    auto = choice is not None and choice.auto
    if not auto:
        say(f"the prober runs in {shards} shard process(es), {used} with pods (--shards {shards})")
    runtime.source = f"{runtime.source} · {shards} shard{'s' if shards > 1 else ''}" + (
        " (auto)" if auto else ""
    )
    return pool


def _cluster_pool(
    runtime: Any,
    sinks: list[Any],
    shards: int,
    kube_version: str,
    say: Callable[[str], None],
    headless: bool,
) -> Any:
    """The cluster view in fed mode: the watch runs here once, the shards probe (cluster.py)."""
    from probetui.shards.cluster import reach_settings
    from probetui.shards.pool import ShardPool

    pool = ShardPool(
        runtime,
        sinks,
        shards=shards,
        mode="fed",
        kube_version=kube_version,
        echo_stderr=headless,
        say=say,
        reach=reach_settings(runtime),
    )
    say(f"the prober runs in {shards} shard process(es) fed by one watch (--shards {shards})")
    pool.runtime.label = f" · {shards} shards"
    return pool


__all__ = [
    "AUTO",
    "DEFAULT_SHARDS",
    "MAX_SHARDS",
    "ShardChoice",
    "attempt_rate",
    "choose",
    "make_engine",
    "parse_shards",
    "shards_problem",
]
