"""`probetui local MANIFEST` runs the manifest's pods as local processes, with probetui as kubelet.

Each pod gets a `PodKubelet` on the engine's clock and a `ProcessBackend`: its containers'
`command` + `args` run as process groups with the literal `env` and `workingDir`, init containers
and sidecars in the kubelet's order, and the prober's published results decide kills and
readiness exactly as in `probetui simulate`. The pod IP is 127.0.0.1.

Choices:
- Probes go to 127.0.0.1, or to the probe's `host:` when that is a loopback address. Any other
  host is refused, never dialled: the attempt errors (Unknown, discarded like a port that does
  not resolve) and says why.
- Exec probes run as local processes with the container's environment and working directory,
  started by the running container's supervisor (`execs.py`), so that what an attempt leaves
  running ends with the container, and with probetui however it ends, as the container does.
  An attempt on a container that is not running errors as containerd's ExecSync does.
- `-c NAME` (repeatable) runs only the named containers; the others are left out of the pod and
  listed in `notes`. A pod left with no container is dropped.
- What the manifest asks for and the local runtime cannot do is listed in `notes`, one line
  each, for the caller to show: env vars set with valueFrom (not set), an executable that is not
  on PATH (the container will fail to start, exit 128 StartError, and crash-loop as a real one
  would), or a workingDir that does not exist (the same). A container without `command` cannot
  run at all: `RuntimeFailure`, one line.
- Read-only (`--read-only`): no process is started, signalled or exec'd. The pods are published
  as written, every container Waiting with reason "ReadOnly", and no probe runs, so the UI can
  show the manifest's probes and nothing else happens.
- When every pod has ended for good (its phase is Succeeded or Failed, nothing runs), `run`
  returns. On cancellation every container is stopped: SIGTERM, SIGKILL once its grace period
  or `stop_cap` (2 s) has passed, whichever is first; everything is reaped before `run` returns.
- The kubelet's probe events (`Unhealthy`, `ProbeWarning`) come from each pod's `PodKubelet`,
  like its starts, kills and back-offs (`observes_kubelet` is False: probetui is the kubelet).
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from probetui.kubelet import backoff as bo
from probetui.kubelet.pod import PodKubelet
from probetui.probe.exec import ExecOutput, ExecRunner
from probetui.probe.util import ReachError
from probetui.prober.status import ContainerStatus, PodStatus, Waiting
from probetui.redact import Redactor
from probetui.runtime.base import Runtime, RuntimeEvent, RuntimeFailure, RuntimeHost
from probetui.runtime.local.backend import ProcessBackend
from probetui.runtime.local.execs import NOT_RUNNING
from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.procspec import LocalRuntimeError, ProcessSpec, process_spec
from probetui.spec.model import Container, Pod, ProbeType

POD_IP = "127.0.0.1"
# the longest probetui waits for its containers to stop when it ends
STOP_CAP = 2.0
READ_ONLY_REASON = "ReadOnly"
READ_ONLY_NOTE = "read-only: the local runtime starts no process"


class NotLoopback(ReachError):
    """Signals that a probe names a host the local runtime will not dial; the attempt errors
    (Unknown)."""


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def select_containers(pods: Sequence[Pod], only: Sequence[str]) -> tuple[list[Pod], list[str]]:
    """Return the pods with only the containers named by `-c`, and one note per pod left short."""
    if not only:
        return list(pods), []
    wanted = set(only)
    known = {c.name for p in pods for c in (*p.init_containers, *p.containers)}
    unknown = [name for name in only if name not in known]
    if unknown:
        raise RuntimeFailure(
            f"-c {unknown[0]}: no container of that name in the manifest "
            f"(it has: {', '.join(sorted(known))})"
        )
    kept: list[Pod] = []
    notes: list[str] = []
    for pod in pods:
        skipped = [c.name for c in (*pod.init_containers, *pod.containers) if c.name not in wanted]
        inits = tuple(c for c in pod.init_containers if c.name in wanted)
        regular = tuple(c for c in pod.containers if c.name in wanted)
        if not inits and not regular:
            notes.append(f"pod {pod.name}: not run (none of its containers is selected with -c)")
            continue
        if skipped:
            notes.append(f"pod {pod.name}: not running {', '.join(skipped)} (not selected with -c)")
        kept.append(replace(pod, init_containers=inits, containers=regular))
    return kept, notes


class LocalRuntime(Runtime):
    via = "loopback"
    observes_kubelet = False

    def __init__(
        self,
        pods: Sequence[Pod],
        *,
        source: str = "local",
        only: Sequence[str] = (),
        read_only: bool = False,
        backoff_factory: Callable[[], bo.Backoff] = bo.crash_loop_backoff,
        registry: ProcessGroupRegistry | None = None,
        stop_cap: float = STOP_CAP,
        base_env: Mapping[str, str] | None = None,
    ) -> None:
        self.source = source
        self.read_only = read_only
        self.backoff_factory = backoff_factory
        self.registry = registry
        self.stop_cap = stop_cap
        self.pods, self.notes = select_containers(pods, only)
        if not self.pods:
            raise RuntimeFailure("no container left to run; check the names given with -c")
        seen: dict[str, Pod] = {}
        for pod in self.pods:
            if pod.uid in seen:
                raise RuntimeFailure(
                    f"{pod.source or pod.name}: two pods named {pod.name} in namespace "
                    f"{pod.namespace}; rename one"
                )
            seen[pod.uid] = pod
        self.specs: dict[str, dict[str, ProcessSpec]] = {
            pod.uid: self._specs(pod, base_env) for pod in self.pods
        }
        self._by_uid = seen
        self._kubelets: dict[str, PodKubelet] = {}
        self._backends: dict[str, ProcessBackend] = {}
        self._runners: dict[tuple[str, str], ExecRunner] = {}
        self._all_done: asyncio.Event | None = None
        self._redactor: Redactor | None = None

    def _specs(self, pod: Pod, base_env: Mapping[str, str] | None) -> dict[str, ProcessSpec]:
        specs: dict[str, ProcessSpec] = {}
        for container in (*pod.init_containers, *pod.containers):
            try:
                spec = process_spec(container, base_env)
            except LocalRuntimeError as e:
                raise RuntimeFailure(f"pod {pod.name}: {e}") from None
            self.notes.extend(f"pod {pod.name}: {w}" for w in spec.warnings)
            problem = _cannot_start(spec)
            if problem:
                self.notes.append(
                    f'pod {pod.name}: container "{container.name}": {problem}; it will fail to '
                    "start (exit 128 StartError) and be restarted with back-off"
                )
            specs[container.name] = spec
        return specs

    # -- what the handlers ask --------------------------------------------------------------

    async def reach(self, pod: Pod, container: Container, host: str, port: int) -> tuple[str, int]:
        if not host or host == POD_IP:
            return POD_IP, port
        if is_loopback(host):
            return host, port
        raise NotLoopback(
            f'host "{host}" is not a loopback address: the local runtime probes only '
            "127.0.0.1 and does not dial it (drop host: or set it to 127.0.0.1)"
        )

    def exec_runner(self, pod: Pod, container: Container) -> ExecRunner | None:
        key = (pod.uid, container.name)
        runner = self._runners.get(key)
        if runner is None:
            if container.name not in self.specs.get(pod.uid, {}):
                return None

            async def runner(argv: Sequence[str], timeout: float) -> ExecOutput:
                backend = self._backends.get(pod.uid)
                proc = backend.latest.get(container.name) if backend is not None else None
                if proc is None:
                    return ExecOutput(b"", None, error=NOT_RUNNING)
                return await proc.exec(argv, timeout)

            self._runners[key] = runner
        return runner

    def not_probed(self, pod: Pod, container: Container, probe_type: ProbeType) -> str | None:
        return f"not run: {READ_ONLY_NOTE}" if self.read_only else None

    def output_tail(self, pod_uid: str, container: str) -> list[str]:
        backend = self._backends.get(pod_uid)
        if backend is None:
            return []
        # a container's output may print its own env (a password it was given): masked here,
        # where it leaves the process, as the engine masks what the probes bring back
        if self._redactor is None or self._redactor.policy is not self.redaction:
            self._redactor = Redactor(self.redaction)
        pod = self._by_uid.get(pod_uid)
        shown = self._redactor.pod(pod) if pod is not None else None
        return self._redactor.lines(shown, [line.text for line in backend.output_tail(container)])

    # -- running ------------------------------------------------------------------------------

    async def run(self, host: RuntimeHost) -> None:
        if self.read_only:
            await self._show_only(host)
            return
        clock = host.clock
        manager = host.manager
        self._all_done = asyncio.Event()
        try:
            for pod in self.pods:
                backend = ProcessBackend(self.specs[pod.uid], registry=self.registry)
                kubelet = PodKubelet(
                    pod,
                    clock,
                    manager,
                    backend,
                    partial(self._emit, host, pod),
                    pod_ip=POD_IP,
                    backoff=self.backoff_factory(),
                    on_status=partial(host.pod_snapshot, pod),
                    on_finished=self._check_all_done,
                    lifecycle_events=True,
                )
                self._backends[pod.uid] = backend
                self._kubelets[pod.uid] = kubelet
                kubelet.start()
            await self._all_done.wait()
        finally:
            await self._close()

    def _check_all_done(self) -> None:
        if self._all_done is not None and all(k.finished for k in self._kubelets.values()):
            self._all_done.set()

    def _emit(
        self,
        host: RuntimeHost,
        pod: Pod,
        type_: str,
        container: str,
        t: float,
        fields: dict[str, Any],
    ) -> None:
        host.report(RuntimeEvent.played(pod, type_, container, t, fields))

    async def _close(self) -> None:
        """Stop every container, SIGKILL whatever is left after `stop_cap`, reap them all."""
        backends = list(self._backends.values())
        for backend in backends:
            backend.begin_close(self.stop_cap)
        try:
            for kubelet in self._kubelets.values():
                kubelet.terminate()
            tasks = {t for b in backends for t in b.tasks}
            if tasks:
                await asyncio.wait(tasks, timeout=self.stop_cap + 0.5)
        finally:
            for backend in backends:
                backend.kill_now()
            tasks = {t for b in backends for t in b.tasks}
            if tasks:
                await asyncio.wait(tasks, timeout=1.0)

    async def _show_only(self, host: RuntimeHost) -> None:
        waiting = Waiting(READ_ONLY_REASON, READ_ONLY_NOTE)

        def statuses(containers: tuple[Container, ...]) -> tuple[ContainerStatus, ...]:
            return tuple(ContainerStatus(name=c.name, state=waiting) for c in containers)

        for pod in self.pods:
            host.pod_snapshot(
                pod,
                PodStatus(
                    phase="Pending",
                    pod_ip="",
                    container_statuses=statuses(pod.containers),
                    init_container_statuses=statuses(pod.init_containers),
                ),
            )
        await asyncio.Event().wait()


def _cannot_start(spec: ProcessSpec) -> str | None:
    """Say why the process will fail to start, when that can be seen before trying."""
    if spec.cwd is not None and not os.path.isdir(spec.cwd):
        return f'workingDir "{spec.cwd}" is not a directory'
    if not spec.argv:
        return None
    argv0 = spec.argv[0]
    if "/" in argv0:
        path = argv0 if os.path.isabs(argv0) or spec.cwd is None else os.path.join(spec.cwd, argv0)
        return None if os.path.exists(path) else f'executable "{argv0}" does not exist'
    if shutil.which(argv0, path=spec.env.get("PATH")) is None:
        return f'executable "{argv0}" is not on PATH'
    return None


__all__ = ["POD_IP", "STOP_CAP", "LocalRuntime", "NotLoopback", "is_loopback", "select_containers"]
