"""The local runtime with real processes and real servers on 127.0.0.1, driven by the real engine.

Containers are small Python one-liners. Every wait is bounded and polls for the event it needs;
the probe period floor (1 s) and the manager's start-up jitter (up to one period) set the pace,
so the few tests that need several probe periods are marked slow.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from probetui.engine import Engine
from probetui.kubelet import backoff as bo
from probetui.prober.status import PodStatus
from probetui.runtime.base import RuntimeFailure
from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.runtime import (
    LocalRuntime,
    NotLoopback,
    is_loopback,
    select_containers,
)
from probetui.spec.model import Pod, ProbeType
from probetui.spec.parse import parse_pods
from probetui.timeline.events import Event
from tests.processes import alive, free_port, wait_gone

PY = sys.executable

# an HTTP server that answers 200 for `healthy_for` seconds after it starts, then 500
HTTP_SERVER = """
import http.server, sys, time
start = time.monotonic()
healthy_for = float(sys.argv[2])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if time.monotonic() - start < healthy_for else 500)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def manifest(*containers: dict[str, Any], policy: str = "Always", **spec: Any) -> list[Pod]:
    inits = [c for c in containers if c.pop("init", False)]
    regular = [c for c in containers if c not in inits]
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"restartPolicy": policy, "containers": regular, **spec},
    }
    if inits:
        doc["spec"]["initContainers"] = inits
    return parse_pods(json.dumps(doc), source="test")


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.pods: list[tuple[Pod, PodStatus | None]] = []

    def event(self, event: Event) -> None:
        self.events.append(event)

    def pod(self, pod: Pod, status: PodStatus | None) -> None:
        self.pods.append((pod, status))

    def of(self, type_: str, **match: Any) -> list[Event]:
        return [
            e
            for e in self.events
            if e.type == type_
            and all(getattr(e, k, e.fields.get(k)) == v for k, v in match.items())
        ]

    @property
    def status(self) -> PodStatus | None:
        return self.pods[-1][1] if self.pods else None


class Live:
    """An engine over a LocalRuntime, run as a task; `until` polls for what a test waits on."""

    def __init__(self, runtime: LocalRuntime) -> None:
        self.runtime = runtime
        self.rec = Recorder()
        self.engine = Engine(runtime, [self.rec])
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> Live:
        self.task = asyncio.create_task(self.engine.run())
        return self

    async def until(self, cond: Callable[[Recorder], bool], timeout: float = 3.0) -> None:
        deadline = time.monotonic() + timeout
        while not cond(self.rec):
            assert self.task is not None
            if self.task.done():
                self.task.result()
                raise AssertionError("the runtime ended before the condition held")
            if time.monotonic() > deadline:
                types = [(e.type, e.container, e.fields.get("outcome")) for e in self.rec.events]
                raise AssertionError(f"timed out; events: {types}")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@pytest.fixture
def registry() -> ProcessGroupRegistry:
    reg = ProcessGroupRegistry()
    try:
        yield reg
    finally:
        reg.kill_all()


@pytest.fixture
async def live(registry: ProcessGroupRegistry) -> AsyncIterator[Callable[..., Any]]:
    started: list[Live] = []

    async def make(pods: list[Pod], **kw: Any) -> Live:
        kw.setdefault("registry", registry)
        run = await Live(LocalRuntime(pods, **kw)).start()
        started.append(run)
        return run

    try:
        yield make
    finally:
        for run in started:
            await run.stop()


def short_backoff() -> bo.Backoff:
    return bo.Backoff(0.3, 1.0, expire_after=600.0)


# -- addresses, specs, selection (no processes) -------------------------------------------------


async def test_reach_dials_loopback_and_refuses_other_hosts() -> None:
    """Probes go to 127.0.0.1 or a loopback `host:`; anything else is refused, not dialled."""
    rt = LocalRuntime(manifest({"name": "a", "command": ["true"]}))
    pod, c = rt.pods[0], rt.pods[0].containers[0]
    assert await rt.reach(pod, c, "127.0.0.1", 80) == ("127.0.0.1", 80)
    assert await rt.reach(pod, c, "", 80) == ("127.0.0.1", 80)
    assert await rt.reach(pod, c, "localhost", 81) == ("localhost", 81)
    assert await rt.reach(pod, c, "::1", 82) == ("::1", 82)
    with pytest.raises(NotLoopback, match=r'host "10\.1\.2\.3" is not a loopback address'):
        await rt.reach(pod, c, "10.1.2.3", 80)
    assert is_loopback("127.0.0.2") and not is_loopback("0.0.0.0")
    assert not is_loopback("example.com")


def test_container_without_command_is_one_line() -> None:
    with pytest.raises(RuntimeFailure) as err:
        LocalRuntime(manifest({"name": "web", "image": "nginx"}))
    assert str(err.value) == (
        'pod p: container "web" has no command: the local runtime runs commands, not images; '
        "add command: [...]"
    )


def test_value_from_and_missing_executables_are_noted() -> None:
    rt = LocalRuntime(
        manifest(
            {
                "name": "web",
                "command": ["no-such-program-here"],
                "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
            }
        )
    )
    assert len(rt.notes) == 2
    assert "env T comes from secretKeyRef" in rt.notes[0]
    assert 'executable "no-such-program-here" is not on PATH' in rt.notes[1]


def test_dash_c_keeps_only_the_named_containers() -> None:
    pods = manifest(
        {"name": "setup", "command": ["true"], "init": True},
        {"name": "web", "command": ["true"]},
        {"name": "side", "command": ["true"]},
    )
    kept, notes = select_containers(pods, ["web"])
    assert [c.name for c in kept[0].containers] == ["web"] and kept[0].init_containers == ()
    assert notes == ["pod p: not running setup, side (not selected with -c)"]
    with pytest.raises(RuntimeFailure, match=r"-c nope: no container of that name"):
        select_containers(pods, ["nope"])


# -- real processes -------------------------------------------------------------------------


async def test_init_containers_run_in_order_before_the_app(
    live: Callable[..., Any], tmp_path: Path
) -> None:
    """Plain init containers run one at a time to completion, a sidecar starts before the app
    (computeInitContainerActions), all as real processes in the kubelet's order."""
    log = tmp_path / "order"
    append = "import sys; open(sys.argv[1], 'a').write(sys.argv[2] + chr(10))"
    hold = append + "; import time; time.sleep(60)"
    run = await live(
        manifest(
            {"name": "first", "command": [PY, "-c", append, str(log), "first"], "init": True},
            {
                "name": "proxy",
                "restartPolicy": "Always",
                "command": [PY, "-c", hold, str(log), "proxy"],
                "init": True,
            },
            {"name": "second", "command": [PY, "-c", append, str(log), "second"], "init": True},
            {"name": "app", "command": [PY, "-c", hold, str(log), "app"]},
        )
    )
    await run.until(lambda r: bool(r.of("ContainerStarted", container="app")))
    await run.until(lambda r: log.exists() and log.read_text().count("\n") == 4)
    order = log.read_text().split()
    # plain init containers ran to completion in turn; the sidecar (no startup probe) gates on
    # running only, so its own first write may come after the next one's
    assert [x for x in order if x != "proxy"] == ["first", "second", "app"]
    assert order.index("proxy") > order.index("first")
    started = [e.container for e in run.rec.of("ContainerStarted")]
    assert started == ["first", "proxy", "second", "app"]
    status = run.rec.status
    assert status is not None and status.phase == "Running"
    assert [s.name for s in status.init_container_statuses] == ["first", "proxy", "second"]


async def test_restart_policy_never_ends_the_pod(live: Callable[..., Any]) -> None:
    """restartPolicy Never: an exit is final, the phase is Failed, and the runtime returns."""
    run = await live(
        manifest({"name": "job", "command": [PY, "-c", "raise SystemExit(3)"]}, policy="Never")
    )
    assert run.task is not None
    await asyncio.wait_for(asyncio.shield(run.task), 3)
    assert [e.fields["exitCode"] for e in run.rec.of("ContainerExited")] == [3]
    assert len(run.rec.of("ContainerStarted")) == 1
    assert run.rec.status is not None and run.rec.status.phase == "Failed"


async def test_restart_policy_on_failure_restarts_until_success(
    live: Callable[..., Any], tmp_path: Path
) -> None:
    """restartPolicy OnFailure: a failed run starts again, a successful one ends the pod."""
    marker = tmp_path / "ran"
    script = (
        "import os, sys; m = sys.argv[1]\n"
        "if os.path.exists(m): sys.exit(0)\n"
        "open(m, 'w').close(); sys.exit(1)"
    )
    run = await live(
        manifest({"name": "job", "command": [PY, "-c", script, str(marker)]}, policy="OnFailure")
    )
    assert run.task is not None
    await asyncio.wait_for(asyncio.shield(run.task), 3)
    assert [e.fields["exitCode"] for e in run.rec.of("ContainerExited")] == [1, 0]
    assert [e.fields["restartCount"] for e in run.rec.of("ContainerStarted")] == [0, 1]
    assert run.rec.status is not None and run.rec.status.phase == "Succeeded"


async def test_crash_loop_back_off_waits_and_says_so(live: Callable[..., Any]) -> None:
    """restartPolicy Always: the first crash restarts at once, the second meets the back-off
    window (doBackOff): a BackOff event and the container Waiting in CrashLoopBackOff."""
    run = await live(manifest({"name": "crash", "command": [PY, "-c", "raise SystemExit(2)"]}))
    await run.until(lambda r: bool(r.of("BackOff")))
    backoff = run.rec.of("BackOff")[0]
    assert backoff.fields["delay"] == 10.0
    assert backoff.fields["message"].startswith(
        "Back-off restarting failed container crash in pod p_default("
    )
    await run.until(
        lambda r: r.status is not None and r.status.container_statuses[0].running is None
    )
    cs = run.rec.status.container_statuses[0]  # type: ignore[union-attr]
    assert cs.state.reason == "CrashLoopBackOff"  # type: ignore[union-attr]
    assert cs.state.message.startswith("back-off 10s restarting failed container=crash")  # type: ignore[union-attr]
    assert cs.last_state is not None and cs.last_state.exit_code == 2
    assert len(run.rec.of("ContainerStarted")) == 2


async def test_start_error_exit_128_and_failed_event(live: Callable[..., Any]) -> None:
    """A command that cannot start: exit 128 StartError (containerd) and a Failed event."""
    run = await live(
        manifest({"name": "bad", "command": ["/nonexistent/prog"]}), backoff_factory=short_backoff
    )
    await run.until(lambda r: len(r.of("ContainerExited")) >= 2)
    exited = run.rec.of("ContainerExited")[0]
    assert (exited.fields["exitCode"], exited.fields["reason"]) == (128, "StartError")
    failed = run.rec.of("Failed")[0].fields["message"]
    assert (
        failed
        == 'Error: exec: "/nonexistent/prog": stat /nonexistent/prog: no such file or directory'
    )
    assert not run.rec.of("ContainerStarted")


@pytest.mark.slow
async def test_liveness_kill_restart_and_back_off(live: Callable[..., Any]) -> None:
    """A real HTTP server failing liveness: Killing with the kubelet's text, SIGTERM -> 143,
    restarted at once; the third kill meets the back-off window (computePodActions, doBackOff;
    the window is shortened here so the restart after it is seen too)."""
    port = free_port()
    probe = {"httpGet": {"path": "/", "port": port}, "periodSeconds": 1, "failureThreshold": 1}
    run = await live(
        manifest(
            {
                "name": "web",
                "command": [PY, "-c", HTTP_SERVER, str(port), "0"],
                "livenessProbe": probe,
            }
        ),
        backoff_factory=lambda: bo.Backoff(1.5, 3.0, expire_after=600.0),
    )
    await run.until(lambda r: bool(r.of("BackOff")), timeout=8)
    kills = run.rec.of("Killing")
    assert kills[0].fields["message"] == "Container web failed liveness probe, will be restarted"
    assert kills[0].probe == "liveness"
    # a probe may meet the process before its server listens (the first tick is at the start,
    # and a loaded machine starts Python slowly): refused then, 500 once it answers
    said = [e.fields["message"] for e in run.rec.of("Unhealthy")]
    answered = [m for m in said if "connection refused" not in m]
    assert (
        answered and answered[0] == "Liveness probe failed: HTTP probe failed with statuscode: 500"
    )
    assert all(m.startswith("Liveness probe failed: Get ") for m in said if m not in answered)
    assert {e.fields["exitCode"] for e in run.rec.of("ContainerExited")} == {143}
    assert [e.fields["restartCount"] for e in run.rec.of("ContainerStarted")][:3] == [0, 1, 2]
    await run.until(lambda r: len(r.of("ContainerStarted")) >= 4, timeout=5)


@pytest.mark.slow
async def test_startup_probe_saves_a_slow_starter(live: Callable[..., Any], tmp_path: Path) -> None:
    """Startup gating (docs/kubelet-behaviour.md §5.10): liveness waits until startup succeeds, so
    an app that is not ready for its first 1.2 s is not killed by a liveness probe with
    failureThreshold 1."""
    ready = tmp_path / "ready"
    slow = f"import time; time.sleep(1.2); open({str(ready)!r}, 'w').close(); time.sleep(60)"
    check = {"exec": {"command": ["test", "-f", str(ready)]}, "periodSeconds": 1}
    run = await live(
        manifest(
            {
                "name": "slow",
                "command": [PY, "-c", slow],
                "startupProbe": {**check, "failureThreshold": 10},
                "livenessProbe": {**check, "failureThreshold": 1},
            }
        )
    )
    await run.until(lambda r: bool(r.of("StartedChanged", started=True)), timeout=4)
    await run.until(lambda r: bool(r.of("ProbeAttempt", probe="liveness")), timeout=3)
    startup = run.rec.of("ProbeAttempt", probe="startup")
    assert startup[0].fields["outcome"] == "failure"  # it was slow when first probed
    assert startup[-1].fields["outcome"] == "success"
    assert all(
        e.fields["outcome"] == "success" for e in run.rec.of("ProbeAttempt", probe="liveness")
    )
    assert not run.rec.of("Killing")


@pytest.mark.slow
async def test_exec_probe_timeout_and_container_env(
    live: Callable[..., Any], tmp_path: Path
) -> None:
    """Exec probes run locally with the container's literal env and workingDir; one that
    outlives timeoutSeconds fails with the kubelet's text and its process group is killed."""
    check = 'test "$GREETING" = hi && test "$(pwd)" = "$WANT"'
    run = await live(
        manifest(
            {
                "name": "app",
                "command": [PY, "-c", "import time; time.sleep(60)"],
                "workingDir": str(tmp_path),
                "env": [
                    {"name": "GREETING", "value": "hi"},
                    {"name": "WANT", "value": str(tmp_path)},
                ],
                "readinessProbe": {"exec": {"command": ["sh", "-c", check]}, "periodSeconds": 1},
                "livenessProbe": {
                    "exec": {"command": ["sleep", "5"]},
                    "periodSeconds": 1,
                    "timeoutSeconds": 1,
                    "failureThreshold": 100,
                },
            }
        )
    )
    await run.until(lambda r: bool(r.of("ProbeAttempt", probe="liveness")), timeout=4)
    await run.until(lambda r: bool(r.of("ProbeAttempt", probe="readiness")), timeout=2)
    timeout = run.rec.of("ProbeAttempt", probe="liveness")[0].fields
    assert timeout["outcome"] == "failure" and timeout["timedOut"] is True
    assert timeout["output"] == 'command timed out: "sleep 5" timed out after 1s'
    assert 1000 <= timeout["latency_ms"] < 1500
    assert run.rec.of("ProbeAttempt", probe="readiness")[0].fields["outcome"] == "success"


async def test_non_loopback_probe_host_errors_without_dialling(live: Callable[..., Any]) -> None:
    """A probe `host:` off this machine gives an error attempt (Unknown, discarded), not a dial."""
    run = await live(
        manifest(
            {
                "name": "app",
                "command": [PY, "-c", "import time; time.sleep(60)"],
                "readinessProbe": {
                    "tcpSocket": {"host": "192.0.2.7", "port": 80},
                    "periodSeconds": 1,
                },
            }
        )
    )
    await run.until(lambda r: bool(r.of("ProbeAttempt", probe="readiness")), timeout=3)
    attempt = run.rec.of("ProbeAttempt", probe="readiness")[0].fields
    assert attempt["outcome"] == "error"
    assert "not a loopback address" in attempt["error"]
    assert attempt["tries"] == 3  # errors are retried, as upstream retries them


async def test_output_tail_keeps_recent_lines(live: Callable[..., Any]) -> None:
    script = "import sys, time; print('hello', flush=True); print('oops', file=sys.stderr, flush=True); time.sleep(60)"
    run = await live(manifest({"name": "app", "command": [PY, "-c", script]}))
    pod = run.runtime.pods[0]
    await run.until(lambda r: len(run.runtime.output_tail(pod.uid, "app")) >= 2)
    assert sorted(run.runtime.output_tail(pod.uid, "app")) == ["hello", "oops"]
    assert run.runtime.output_tail(pod.uid, "nope") == []


async def test_cancel_stops_everything_within_the_cap(
    registry: ProcessGroupRegistry, tmp_path: Path
) -> None:
    """On cancel: SIGTERM to every container, SIGKILL at the cap even under a 30 s grace
    period, every process (and its children) reaped before run() returns."""
    pids = tmp_path / "pids"
    stubborn = (
        "import os, signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        "open(sys.argv[1], 'a').write(f'{os.getpid()} {child.pid}' + chr(10))\n"
        "time.sleep(60)"
    )
    pods = manifest(
        {"name": "a", "command": [PY, "-c", stubborn, str(pids)]},
        {"name": "b", "command": [PY, "-c", stubborn, str(pids)]},
    )
    run = await Live(LocalRuntime(pods, registry=registry, stop_cap=0.3)).start()
    try:
        await run.until(lambda r: pids.exists() and pids.read_text().count("\n") == 2)
        numbers = [int(p) for p in pids.read_text().split()]
        assert all(alive(p) for p in numbers)
        began = time.monotonic()
        await run.stop()
        assert time.monotonic() - began < 1.5
        # SIGKILLed, each exits when next scheduled: on a loaded machine that can be a few
        # milliseconds after the supervisor that sent it has been reaped
        assert wait_gone(set(numbers), 2.0) == set()
    finally:
        registry.kill_all()
    assert {e.fields["message"] for e in run.rec.of("Killing")} == {
        "Stopping container a",
        "Stopping container b",
    }
    assert {e.fields["exitCode"] for e in run.rec.of("ContainerExited")} == {137}
    assert registry.groups() == frozenset()


async def test_read_only_starts_nothing(live: Callable[..., Any], tmp_path: Path) -> None:
    """--read-only: no process started or signalled, no probe run; the pods are shown as
    written with every container Waiting (ReadOnly)."""
    marker = tmp_path / "ran"
    run = await live(
        manifest(
            {
                "name": "app",
                "command": ["touch", str(marker)],
                "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1},
            }
        ),
        read_only=True,
    )
    await run.until(lambda r: r.status is not None)
    await asyncio.sleep(0.2)
    assert not marker.exists()
    cs = run.rec.status.container_statuses[0]  # type: ignore[union-attr]
    assert cs.state.reason == "ReadOnly" and not cs.container_id  # type: ignore[union-attr]
    assert not [e for e in run.rec.events if e.type != "ProbeSkipped"]
    pod = run.runtime.pods[0]
    reason = run.runtime.not_probed(pod, pod.containers[0], ProbeType.READINESS)
    assert reason is not None and "read-only" in reason


async def test_several_pods_in_one_manifest(live: Callable[..., Any]) -> None:
    """A manifest may hold several pods: each gets its own kubelet; container IDs never clash."""
    sleep = [PY, "-c", "import time; time.sleep(60)"]
    text = "\n---\n".join(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name},
                "spec": {"containers": [{"name": "app", "command": sleep}]},
            }
        )
        for name in ("one", "two")
    )
    run = await live(parse_pods(text, source="test"))
    await run.until(lambda r: len(r.of("ContainerStarted")) == 2)
    assert {e.pod for e in run.rec.of("ContainerStarted")} == {"one", "two"}
    ids = {
        s.container_statuses[0].container_id for _, s in run.rec.pods if s and s.container_statuses
    }
    assert len(ids) == 2
