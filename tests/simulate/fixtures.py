"""Scenarios for the simulate tests: a one-container pod, an HTTP probe, a run, its events."""

from __future__ import annotations

from typing import Any

from probetui.simulate import parse_scenario, simulate


def pod(container: dict[str, Any], restart_policy: str = "Always") -> dict[str, Any]:
    base = {"name": "app", "image": "x", "ports": [{"name": "http", "containerPort": 8080}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "demo"},
        "spec": {"restartPolicy": restart_policy, "containers": [{**base, **container}]},
    }


HTTP = {"httpGet": {"path": "/healthz", "port": "http"}}


def run(
    container: dict[str, Any], app: dict[str, Any], duration: float = 300, **kw: Any
) -> dict[str, Any]:
    scenario = parse_scenario({"pod": pod(container, **kw), "duration": duration, "app": app})
    return simulate(scenario)


def of(result: dict[str, Any], type_: str, **match: Any) -> list[dict[str, Any]]:
    return [
        e
        for e in result["events"]
        if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())
    ]
