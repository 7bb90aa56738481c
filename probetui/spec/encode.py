"""Write the Pod model back as a manifest: a dict shaped as the API's Pod that `parse_pods` reads.

A recording keeps each pod's spec as first seen and on every change, so that a replay knows
the probe settings of the moment. `encode(pod)` writes every field the model holds and nothing
else, already defaulted (so the parser's defaulting is a no-op on it); `decode(manifest,
source)` parses it back without validation (it was valid when recorded) and restores `source`,
which names where the pod came from and is not part of the manifest.

`decode(encode(pod)) == pod` for every pod the parser makes (tests/record/test_encode.py), and
the labels, which `Pod.__eq__` leaves out, are equal too. `header_value` lets the
recorder replace the values of credential-looking probe headers (a recording never holds them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from probetui.spec.model import Container, ContainerKind, EnvVar, Pod, Probe
from probetui.spec.parse import pod_from_object


def encode(pod: Pod, header_value: Callable[[str, str], str] | None = None) -> dict[str, Any]:
    """`pod` as a Pod manifest. `header_value(name, value)` may rewrite probe header values."""
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid}
    if pod.deletion_timestamp is not None:
        meta["deletionTimestamp"] = datetime.fromtimestamp(pod.deletion_timestamp, UTC).isoformat()
    if pod.deletion_grace_period_seconds is not None:
        meta["deletionGracePeriodSeconds"] = pod.deletion_grace_period_seconds
    if pod.owner_kind:
        # the workload as resolved (a Deployment, not its ReplicaSet): what the list groups by
        meta["ownerReferences"] = [{"kind": pod.owner_kind, "name": pod.owner_name}]
    spec: dict[str, Any] = {
        "containers": [_container(c, header_value) for c in pod.containers],
        "restartPolicy": pod.restart_policy,
    }
    if pod.init_containers:
        spec["initContainers"] = [_container(c, header_value) for c in pod.init_containers]
    if pod.termination_grace_period_seconds is not None:
        spec["terminationGracePeriodSeconds"] = pod.termination_grace_period_seconds
    # labels sit on the template's metadata, where the parser reads them for every kind
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {**meta, "labels": dict(pod.labels)},
        "spec": spec,
    }


def decode(manifest: dict[str, Any], source: str = "") -> Pod:
    """Return the Pod `encode` wrote, with `source` as it was."""
    pod = pod_from_object(manifest, source or "<recording>")
    return replace(pod, source=source, **owner_of(manifest["metadata"]))


def owner_of(meta: dict[str, Any]) -> dict[str, str]:
    """Return the workload `encode` wrote in metadata.ownerReferences, as Pod's owner fields."""
    refs = meta.get("ownerReferences") or ()
    if not refs:
        return {}
    return {"owner_kind": str(refs[0].get("kind", "")), "owner_name": str(refs[0].get("name", ""))}


def _container(c: Container, header_value: Callable[[str, str], str] | None) -> dict[str, Any]:
    if c.kind is ContainerKind.EPHEMERAL:
        raise ValueError(f"container {c.name!r}: ephemeral containers are not part of a Pod's spec")
    out: dict[str, Any] = {"name": c.name}
    if c.image is not None:
        out["image"] = c.image
    if c.command:
        out["command"] = list(c.command)
    if c.args:
        out["args"] = list(c.args)
    if c.working_dir:
        out["workingDir"] = c.working_dir
    if c.env:
        out["env"] = [_env(e) for e in c.env]
    if c.ports:
        out["ports"] = [
            {"containerPort": p.container_port, "protocol": p.protocol}
            | ({"name": p.name} if p.name else {})
            for p in c.ports
        ]
    for key, probe in (
        ("livenessProbe", c.liveness_probe),
        ("readinessProbe", c.readiness_probe),
        ("startupProbe", c.startup_probe),
    ):
        if probe is not None:
            out[key] = _probe(probe, header_value)
    if c.restart_policy is not None:
        out["restartPolicy"] = c.restart_policy
    if c.restart_policy_rules:
        out["restartPolicyRules"] = [
            {"action": r.action, "exitCodes": {"operator": r.operator, "values": list(r.values)}}
            for r in c.restart_policy_rules
        ]
    if c.has_pre_stop:
        out["lifecycle"] = {"preStop": {}}
    return out


def _env(e: EnvVar) -> dict[str, Any]:
    out: dict[str, Any] = {"name": e.name}
    if e.value is not None:
        out["value"] = e.value
    if e.value_from is not None:
        out["valueFrom"] = e.value_from
    return out


def _probe(p: Probe, header_value: Callable[[str, str], str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "initialDelaySeconds": p.initial_delay_seconds,
        "timeoutSeconds": p.timeout_seconds,
        "periodSeconds": p.period_seconds,
        "successThreshold": p.success_threshold,
        "failureThreshold": p.failure_threshold,
    }
    if p.termination_grace_period_seconds is not None:
        out["terminationGracePeriodSeconds"] = p.termination_grace_period_seconds
    if p.exec is not None:
        out["exec"] = {"command": list(p.exec.command)}
    if p.http_get is not None:
        h = p.http_get
        out["httpGet"] = {
            "port": h.port,
            "path": h.path,
            "host": h.host,
            "scheme": h.scheme,
            "httpHeaders": [
                {
                    "name": x.name,
                    "value": header_value(x.name, x.value) if header_value else x.value,
                }
                for x in h.http_headers
            ],
        } | ({"protocol": h.protocol} if h.protocol is not None else {})
    if p.tcp_socket is not None:
        out["tcpSocket"] = {"port": p.tcp_socket.port, "host": p.tcp_socket.host}
    if p.grpc is not None:
        out["grpc"] = (
            {"port": p.grpc.port}
            | ({"service": p.grpc.service} if p.grpc.service is not None else {})
            | ({"mode": p.grpc.mode} if p.grpc.mode is not None else {})
        )
    return out


__all__ = ["decode", "encode"]
