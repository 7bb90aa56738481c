"""Write a pod status as JSON and read it back, for the `statuses` table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from probetui.prober.status import ContainerStatus, PodStatus, Running, Terminated, Waiting


def status_json(status: PodStatus, mask: Callable[[str], str] = str) -> dict[str, Any]:
    """`mask` rewrites the free texts (a waiting message may quote a probe's secret)."""
    out: dict[str, Any] = {"phase": status.phase, "podIP": status.pod_ip}
    if status.container_statuses:
        out["containers"] = [_container(c, mask) for c in status.container_statuses]
    if status.init_container_statuses:
        out["initContainers"] = [_container(c, mask) for c in status.init_container_statuses]
    if status.ready_condition is not None:
        out["ready"] = status.ready_condition
    return out


def status_from_json(data: dict[str, Any]) -> PodStatus:
    return PodStatus(
        phase=data["phase"],
        pod_ip=data["podIP"],
        container_statuses=tuple(_container_from(c) for c in data.get("containers", ())),
        init_container_statuses=tuple(_container_from(c) for c in data.get("initContainers", ())),
        ready_condition=data.get("ready"),
    )


def _container(c: ContainerStatus, mask: Callable[[str], str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": c.name,
        "id": c.container_id,
        "state": _state(c.state, mask),
        "started": c.started,
        "ready": c.ready,
        "restarts": c.restart_count,
    }
    if c.last_state is not None:
        out["last"] = _state(c.last_state, mask)
    return out


def _state(s: Running | Waiting | Terminated, mask: Callable[[str], str]) -> dict[str, Any]:
    if isinstance(s, Running):
        return {"running": s.started_at}
    if isinstance(s, Waiting):
        return {"waiting": [mask(s.reason), mask(s.message)]}
    return {"terminated": [s.exit_code, mask(s.reason), s.started_at, s.finished_at]}


def _state_from(d: dict[str, Any]) -> Any:
    if "running" in d:
        return Running(d["running"])
    if "waiting" in d:
        return Waiting(*d["waiting"])
    return Terminated(*d["terminated"])


def _container_from(d: dict[str, Any]) -> ContainerStatus:
    last = d.get("last")
    return ContainerStatus(
        name=d["name"],
        container_id=d["id"],
        state=_state_from(d["state"]),
        last_state=_state_from(last) if last is not None else None,
        started=d["started"],
        ready=d["ready"],
        restart_count=d["restarts"],
    )


__all__ = ["status_from_json", "status_json"]
