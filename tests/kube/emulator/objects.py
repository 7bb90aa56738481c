"""Builders for the objects a test puts into the emulator, shaped as the apiserver returns them.

Defaults keep traffic on this machine: the pod IP and host IP are 127.0.0.1, so a client that
dials a pod directly reaches loopback and never a cluster network address.
"""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from typing import Any

from .kubelet_events import object_reference, rfc3339

Obj = dict[str, Any]


def container(
    name: str = "app",
    *,
    image: str = "registry.example/app:1",
    ports: tuple[int, ...] = (8080,),
    readiness: Obj | None = None,
    liveness: Obj | None = None,
    startup: Obj | None = None,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Obj:
    c: Obj = {
        "name": name,
        "image": image,
        "ports": [{"containerPort": p, "protocol": "TCP"} for p in ports],
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    if command is not None:
        c["command"] = command
    if env:
        c["env"] = [{"name": k, "value": v} for k, v in env.items()]
    for key, probe in (
        ("readinessProbe", readiness),
        ("livenessProbe", liveness),
        ("startupProbe", startup),
    ):
        if probe is not None:
            c[key] = probe
    return c


def http_get_probe(
    path: str = "/healthz",
    port: int | str = 8080,
    *,
    period: int = 10,
    timeout: int = 1,
    success: int = 1,
    failure: int = 3,
    initial_delay: int = 0,
) -> Obj:
    """A probe with the defaults the apiserver fills in (scheme, thresholds, period)."""
    return {
        "httpGet": {"path": path, "port": port, "scheme": "HTTP"},
        "initialDelaySeconds": initial_delay,
        "timeoutSeconds": timeout,
        "periodSeconds": period,
        "successThreshold": success,
        "failureThreshold": failure,
    }


def container_id(pod_name: str, name: str, restart_count: int) -> str:
    digest = hashlib.sha256(f"{pod_name}/{name}/{restart_count}".encode()).hexdigest()
    return f"containerd://{digest}"


def running_status(
    name: str = "app",
    *,
    pod_name: str = "pod",
    ready: bool = True,
    started: bool = True,
    restart_count: int = 0,
    started_at: str | None = None,
    image: str = "registry.example/app:1",
    last_state: Obj | None = None,
) -> Obj:
    return {
        "name": name,
        "state": {"running": {"startedAt": started_at or rfc3339(time.time())}},
        "lastState": last_state or {},
        "ready": ready,
        "restartCount": restart_count,
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{'0' * 64}",
        "containerID": container_id(pod_name, name, restart_count),
        "started": started,
    }


def make_pod(
    name: str,
    *,
    namespace: str = "default",
    containers: list[Obj] | None = None,
    labels: dict[str, str] | None = None,
    node: str = "node-1",
    phase: str = "Running",
    pod_ip: str = "127.0.0.1",
    ready: bool = True,
    restart_count: int = 0,
    container_statuses: list[Obj] | None = None,
) -> Obj:
    """A scheduled pod with running containers, as `kubectl get pod -o json` shows one."""
    specs = containers if containers is not None else [container()]
    now = rfc3339(time.time())
    statuses = (
        container_statuses
        if container_statuses is not None
        else [
            running_status(
                c["name"],
                pod_name=name,
                ready=ready,
                restart_count=restart_count,
                started_at=now,
                image=c.get("image", "registry.example/app:1"),
            )
            for c in specs
        ]
        if phase == "Running"
        else []
    )
    flag = "True" if ready and phase == "Running" else "False"
    conditions = [
        {"type": "PodReadyToStartContainers", "status": "True"},
        {"type": "Initialized", "status": "True"},
        {"type": "Ready", "status": flag},
        {"type": "ContainersReady", "status": flag},
        {"type": "PodScheduled", "status": "True"},
    ]
    for cond in conditions:
        cond.update(lastProbeTime=None, lastTransitionTime=now)
    pod: Obj = {
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": {
            "containers": specs,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": node,
            "schedulerName": "default-scheduler",
        },
        "status": {
            "phase": phase,
            "conditions": conditions,
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}] if pod_ip else [],
            "startTime": now,
            "containerStatuses": statuses,
            "qosClass": "BestEffort",
        },
    }
    return pod


def make_event(
    pod: Obj,
    reason: str,
    message: str,
    *,
    type: str = "Warning",
    container: str | None = "app",
    count: int = 1,
    series_count: int | None = None,
    node: str = "node-1",
    name: str | None = None,
) -> Obj:
    """A core/v1 Event about `pod` as the kubelet writes it; `series_count` adds a `series`
    (events created through events.k8s.io/v1 carry one instead of a growing `count`)."""
    now = time.time()
    ref = object_reference(pod, f"spec.containers{{{container}}}" if container else None)
    event: Obj = {
        "metadata": {
            "name": name or f"{ref['name']}.{int(now * 1e9):x}",
            "namespace": ref["namespace"],
        },
        "involvedObject": ref,
        "reason": reason,
        "message": message,
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": rfc3339(now),
        "lastTimestamp": rfc3339(now),
        "count": count,
        "type": type,
        "eventTime": None,
        "reportingComponent": "kubelet",
        "reportingInstance": node,
    }
    if series_count is not None:
        event["series"] = {
            "count": series_count,
            "lastObservedTime": datetime_micro(now),
        }
    return event


def datetime_micro(ts: float) -> str:
    """metav1.MicroTime's encoding."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
