"""`--shards N` for the live modes: the in-process engine (N = 0) or a pool of N shards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from probetui.runtime.base import Runtime

MAX_SHARDS = 64
# until benchmarks/shards.py shows a pool paying off on the machine at hand, the in-process
# engine is the default: on 2 shared cores it is as fast for the demo's and a manifest's pods
DEFAULT_SHARDS = 0


def shards_problem(runtime: Runtime, shards: int) -> str | None:
    """Why `--shards N` cannot be used with this runtime, or None."""
    if shards < 0 or shards > MAX_SHARDS:
        return f"--shards {shards}: from 0 (the engine in this process) to {MAX_SHARDS}"
    from probetui.runtime.local.runtime import LocalRuntime

    if not shards or isinstance(runtime, LocalRuntime):
        return None
    if _is_cluster(runtime):
        from probetui.shards.cluster import via_problem

        return via_problem(runtime, shards)
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
) -> Any:
    """The engine the live runner drives: `Engine` in this process, or a `ShardPool`; either
    has `sinks`, `run(duration)` and the UI's `Controls`."""
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
    say(f"the prober runs in {shards} shard process(es), {used} with pods (--shards {shards})")
    runtime.source = f"{runtime.source} · {shards} shards"
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
    from probetui.shards.cluster import EXEC_NOT_RUN, is_exec, reach_settings
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
    # the parent says once per probe what the shards will not run (its ProbeNotRun line)
    runtime.unrunnable = lambda pod, container, probe_type: (
        EXEC_NOT_RUN if is_exec(container, probe_type) else None
    )
    say(
        f"the prober runs in {shards} shard process(es) fed by one watch (--shards {shards}); "
        "exec probes are not run sharded"
    )
    pool.runtime.label = f" · {shards} shards"
    return pool


__all__ = ["DEFAULT_SHARDS", "MAX_SHARDS", "make_engine", "shards_problem"]
