"""The cluster view in shards: what a fed shard needs to probe a cluster's pods like the parent.

The watch, the kubelet's side and the divergence check stay in the parent (`KubernetesRuntime`
runs there once, through `fed.RouterHost`); a shard only probes. It holds no API client: it
dials pod IPs (`--via direct`), which come with the pod snapshots, so it never talks to the API
server, in `--read-only` mode or not. What it must agree on with the parent is which probes run
(`not_probed`, the same `Reacher` rules), so the parent's hello carries the reach settings.

Not built: a shard's own API client for `--via port-forward`/`proxy` and exec probes. Those
paths are refused up front (`shards_problem`) or, for exec probes met at run time, not run,
with a reason naming the fix (`EXEC_NOT_RUN`).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from probetui.spec.model import Container, ExecAction, Pod, ProbeType

EXEC_NOT_RUN = (
    "not run: exec probes go through the API server (pods/exec), which --shards does not "
    "reach yet (drop --shards to run them)"
)


def via_problem(runtime: Any, shards: int) -> str | None:
    """Why the cluster view cannot run in `shards` shards with this `--via`, or None."""
    via = getattr(runtime, "via", "direct")
    if via != "direct":
        return (
            f"--shards {shards} with --via {via}: shards dial pod IPs only; use --via direct "
            "(where pod IPs are reachable from here) or drop --shards"
        )
    return None


def reach_settings(runtime: Any) -> dict[str, Any]:
    """What the parent's hello tells a shard of how the cluster's pods are reached."""
    target = runtime.target
    return {
        "via": runtime.via,
        "via_explicit": bool(runtime.via_explicit),
        "read_only": bool(runtime.read_only),
        "in_cluster": bool(target.in_cluster),
    }


def is_exec(container: Container, probe_type: ProbeType) -> bool:
    probe = container.probe(probe_type)
    return probe is not None and isinstance(probe.handler, ExecAction)


class ShardReach:
    """A shard's answer to "is this probe run here?": the parent's `Reacher` rules, without an
    API client, and exec probes never (they would need pods/exec)."""

    def __init__(self, settings: dict[str, Any]) -> None:
        from probetui.runtime.kubernetes.reach import Reacher

        target = SimpleNamespace(
            read_only=bool(settings.get("read_only")),
            in_cluster=bool(settings.get("in_cluster")),
        )
        self.reacher = Reacher(target, str(settings.get("via") or "direct"))  # type: ignore[arg-type]
        self.reacher.via_explicit = bool(settings.get("via_explicit"))
        self.via = self.reacher.via
        self.read_only = target.read_only

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        reason = self.reacher.not_probed(pod, container, probe_type)
        if reason is None and is_exec(container, probe_type):
            return EXEC_NOT_RUN
        return reason

    def attempt_via(self, container: Container, probe_type: ProbeType) -> str:
        return self.reacher.attempt_via(container, probe_type)


__all__ = ["EXEC_NOT_RUN", "ShardReach", "is_exec", "reach_settings", "via_problem"]
