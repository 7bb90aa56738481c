"""A small cluster's history at fixed times, and a stand-in engine that runs nothing.

The store is filled by `tests.timeline.synth.Synth` (the worker's arithmetic, no handler, no
clock), the app's clock is pinned to `T_END` and its time zone to UTC, so every screen drawn
from it is the same on every run: the basis of the snapshot tests.
"""

from __future__ import annotations

import asyncio
from datetime import UTC
from typing import Any

from probetui.keys import ProbeKey
from probetui.probe.base import Result
from probetui.prober.worker import Skip
from probetui.redact import MASK, redact_pod
from probetui.runtime.base import Runtime, RuntimeHost
from probetui.spec.model import (
    Container,
    ContainerKind,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)
from probetui.timeline.store import Store
from probetui.ui.app import ProbeApp
from tests.timeline.synth import T0, Synth

R, L, S = ProbeType.READINESS, ProbeType.LIVENESS, ProbeType.STARTUP
T_END = T0 + 300.0
TOKEN = "Bearer s3cr3t-t0ken-value"


class FakeRuntime(Runtime):
    def __init__(self, *, read_only: bool = False, observes_kubelet: bool = False) -> None:
        self.source = "demo"
        self.read_only = read_only
        self.observes_kubelet = observes_kubelet

    async def run(self, host: RuntimeHost) -> None:
        await asyncio.Event().wait()

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        probe = container.probe(probe_type)
        if self.read_only and probe is not None and probe.exec is not None:
            return "not run: read-only"
        return None

    def output_tail(self, pod_uid: str, container: str) -> list[str]:
        # as a runtime gives it: masked (tests/test_redaction.py drives the local runtime's)
        return [
            f"{container}: listening on 127.0.0.1:8080",
            f"{container}: GET /ready -> 503 (db connection refused)",
            f"{container}: Authorization was {MASK}",
        ]


class FakeControls:
    """The engine's commands, recorded; no workers (the screen falls back to the store)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.calls: list[tuple[str, Any]] = []
        self.paused: set[ProbeKey] = set()
        self.late = 0.0

    async def run(self) -> None:
        await asyncio.Event().wait()

    def probe_now(self, key: ProbeKey) -> bool:
        self.calls.append(("probe_now", key))
        return True

    def probe_container(self, pod_uid: str, container: str) -> int:
        self.calls.append(("probe_container", (pod_uid, container)))
        return 2

    def set_paused(self, key: ProbeKey, paused: bool) -> bool:
        self.calls.append(("set_paused", (key, paused)))
        return True

    def lateness(self) -> float:
        return self.late


def http(port: int, path: str, **kw: Any) -> Probe:
    headers = kw.pop("headers", ())
    return Probe(http_get=HTTPGetAction(port=port, path=path, http_headers=headers), **kw)


def redacted(**kw: Any) -> Pod:
    """A pod as the engine hands it to the store: its redacted copy (`probetui.redact`)."""
    return redact_pod(Pod(**kw))[0]


def build(store: Store, read_only: bool = False) -> Synth:
    """Five pods over five minutes (T0 .. T_END); read-only: the exec probe is never run."""
    s = Synth(store)

    # web: readiness flaps (a 30 s outage at T0+200), liveness steady, a secret header (the
    # store holds the redacted copy the engine hands it)
    web = s.add_pod(
        redacted(
            name="web-flap",
            namespace="demo",
            uid="uid-web",
            containers=(
                Container(
                    name="web",
                    readiness_probe=http(
                        18080,
                        "/ready",
                        period_seconds=2,
                        failure_threshold=3,
                        headers=(HTTPHeader("Authorization", TOKEN),),
                    ),
                    liveness_probe=http(18080, "/healthz", period_seconds=5),
                ),
            ),
        ),
        T0,
    )
    s.start(web, "web", T0 + 1)
    for i in range(150):
        t = T0 + 2 + 2 * i
        if t >= T_END:
            break
        down = T0 + 200 <= t < T0 + 230
        s.attempt(
            web,
            "web",
            R,
            t,
            Result.FAILURE if down else Result.SUCCESS,
            latency=0.0021 + (i % 5) * 0.0004,
            body='{"db": "connection refused"}' if down else '{"status": "ok"}',
        )
    for i in range(60):
        t = T0 + 3 + 5 * i
        if t < T_END:
            s.attempt(web, "web", L, t, latency=0.0015)

    # slow-start: a startup probe that takes 40 s, then liveness and readiness
    slow = s.add_pod(
        Pod(
            name="slow-start",
            namespace="demo",
            uid="uid-slow",
            containers=(
                Container(
                    name="app",
                    startup_probe=http(18081, "/started", period_seconds=3, failure_threshold=20),
                    readiness_probe=Probe(tcp_socket=TCPSocketAction(port=18081), period_seconds=5),
                    liveness_probe=http(
                        18081, "/healthz", period_seconds=10, initial_delay_seconds=5
                    ),
                ),
            ),
        ),
        T0,
    )
    s.start(slow, "app", T0 + 2)
    for i in range(20):
        t = T0 + 3 + 3 * i
        ok = t >= T0 + 42
        s.attempt(slow, "app", S, t, Result.SUCCESS if ok else Result.FAILURE, latency=0.001)
        if ok:
            break
    for i in range(60):
        t = T0 + 5 + 5 * i
        if t >= T_END:
            break
        if t < T0 + 45:
            s.skip(slow, "app", R, t, Skip.NOT_STARTED)
        else:
            s.attempt(slow, "app", R, t, latency=0.0004)

    # crashy: liveness fails, the kubelet kills and restarts it; now in back-off
    crashy = s.add_pod(
        Pod(
            name="crashy",
            namespace="demo",
            uid="uid-crashy",
            containers=(
                Container(
                    name="worker",
                    liveness_probe=http(18082, "/healthz", period_seconds=3, failure_threshold=3),
                ),
            ),
        ),
        T0,
    )
    start = T0 + 1
    for round_ in range(4):
        s.start(crashy, "worker", start)
        t = start + 2
        for _ in range(8):
            s.attempt(crashy, "worker", L, t, latency=0.003)
            t += 3
        for k in range(3):
            timed_out = k == 2
            s.attempt(
                crashy,
                "worker",
                L,
                t,
                Result.FAILURE,
                latency=1.0 if timed_out else 0.2,
                timed_out=timed_out,
                status_code=None if timed_out else 500,
                output='Get "http://127.0.0.1:18082/healthz": context deadline exceeded'
                if timed_out
                else "HTTP probe failed with statuscode: 500",
            )
            t += 3
        t -= 2
        s.kubelet(
            crashy,
            "worker",
            "Killing",
            t,
            probe="liveness",
            message="Container worker failed liveness probe, will be restarted",
        )
        s.skip(crashy, "worker", L, t + 1, Skip.ON_HOLD)
        s.exit(crashy, "worker", t + 2, 137)
        delay = 20.0 * 2**round_
        s.back_off(crashy, "worker", t + 2, delay)
        start = t + 2 + delay
        if start >= T_END:
            break

    # api: a sidecar and a gRPC probe; the kubelet disagrees once
    api = s.add_pod(
        Pod(
            name="api",
            namespace="demo",
            uid="uid-api",
            containers=(
                Container(
                    name="api",
                    readiness_probe=Probe(grpc=GRPCAction(port=18090), period_seconds=10),
                    liveness_probe=Probe(tcp_socket=TCPSocketAction(port=18090), period_seconds=10),
                ),
            ),
            init_containers=(
                Container(
                    name="envoy",
                    kind=ContainerKind.INIT,
                    restart_policy="Always",
                    readiness_probe=http(18091, "/ready", period_seconds=10),
                ),
            ),
        ),
        T0,
    )
    s.start(api, "envoy", T0 + 1)
    s.start(api, "api", T0 + 2)
    for i in range(30):
        t = T0 + 4 + 10 * i
        if t >= T_END:
            break
        s.attempt(api, "envoy", R, t, latency=0.0008)
        warn = 100 <= t - T0 < 130
        s.attempt(
            api,
            "api",
            R,
            t + 1,
            Result.WARNING if warn else Result.SUCCESS,
            latency=0.004,
            output="slow backend" if warn else "",
        )
        s.attempt(api, "api", L, t + 2, latency=0.0003)
    s.kubelet(
        api,
        "api",
        "Divergence",
        T0 + 250,
        source="kubelet",
        message="kubelet Ready=false, shadow readiness Success",
    )

    # batch: an exec probe (not run in read-only mode)
    batch = s.add_pod(
        Pod(
            name="batch",
            namespace="demo",
            uid="uid-batch",
            containers=(
                Container(
                    name="job",
                    liveness_probe=Probe(
                        exec=ExecAction(("cat", "/tmp/healthy")), period_seconds=10
                    ),
                ),
            ),
        ),
        T0,
    )
    s.start(batch, "job", T0 + 3)
    for i in range(30):
        t = T0 + 5 + 10 * i
        if t >= T_END:
            break
        if read_only:
            s.engine_skip(batch, "job", L, t, "not run: read-only")
        else:
            s.attempt(batch, "job", L, t, latency=0.006)
    return s


def build_fleet(s: Synth) -> None:
    """Workloads beside the five bare pods: a Deployment of three replicas, one failing
    readiness (out of service) and diverging, and a StatefulSet of two, both healthy."""
    for i, (kind, owner, suffix) in enumerate(
        [
            ("Deployment", "payments", "7d9f8b6c4-a1b2c"),
            ("Deployment", "payments", "7d9f8b6c4-d3e4f"),
            ("Deployment", "payments", "7d9f8b6c4-g5h6i"),
            ("StatefulSet", "cache", "0"),
            ("StatefulSet", "cache", "1"),
        ]
    ):
        pod = s.add_pod(
            Pod(
                name=f"{owner}-{suffix}",
                namespace="demo",
                uid=f"uid-{owner}-{i}",
                containers=(Container(name="app", readiness_probe=http(18100 + i, "/ready")),),
                owner_kind=kind,
                owner_name=owner,
            ),
            T0,
        )
        s.start(pod, "app", T0 + 1)
        failing = i == 1
        for k in range(20):
            t = T0 + 5 + 10 * k
            late = failing and k >= 10
            s.attempt(pod, "app", R, t, Result.FAILURE if late else Result.SUCCESS, latency=0.002)
        if failing:
            s.kubelet(
                pod,
                "app",
                "Divergence",
                T0 + 250,
                source="kubelet",
                message="kubelet Ready=true, shadow readiness Failure",
            )


def make_app(
    *, read_only: bool = False, observes_kubelet: bool = False, fleet: bool = False, **kw: Any
) -> tuple[ProbeApp, Store, FakeControls]:
    store = Store()
    synth = build(store, read_only)
    if fleet:
        build_fleet(synth)
    controls = FakeControls(FakeRuntime(read_only=read_only, observes_kubelet=observes_kubelet))
    app = ProbeApp(controls, store, now=lambda: T_END, tz=UTC, run_engine=False, **kw)
    return app, store, controls
