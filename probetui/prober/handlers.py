"""Run a probe's handler against a container, as `prober.runProbe` does.

See docs/kubelet-behaviour.md §9.3, §13.1, §14.1, §15.

Builds the target from the probe as written and the pod status (the pod IP), asks the runtime
how to reach it, then runs exactly one handler attempt. Handler modules are imported on first
use so that `probetui check` loads only the one it needs.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import TYPE_CHECKING

from probetui.kubelet.profile import DEFAULT_PROFILE, KubeletProfile
from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt, Result
from probetui.probe.gotext import (
    TIMEOUT_AWAITING_HEADERS,
    TIMEOUT_READING_BODY,
    go_quote,
    join_host_port,
    url_error,
)
from probetui.probe.request import SpecHeaders
from probetui.probe.url import format_url
from probetui.probe.util import PortResolutionError, ReachError, resolve_container_port
from probetui.prober.prober import ProbeOutcome, missing_handler, retry_on_error
from probetui.prober.status import PodStatus
from probetui.spec.model import (
    Container,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)

if TYPE_CHECKING:
    from probetui.prober.worker import Worker

_HANDLERS: dict[str, ModuleType] = {}


def _handler(name: str) -> ModuleType:
    """The handler module `probetui.probe.<name>`, imported on first use (so `probetui check`
    loads only the one it runs) and bound once: an import statement in the per-attempt path
    costs microseconds on every attempt."""
    module = _HANDLERS.get(name)
    if module is None:
        module = _HANDLERS[name] = importlib.import_module(f"probetui.probe.{name}")
    return module


# How the runtime turns (pod, container, host, port) into an address to dial: the pod IP as
# is, a port-forward listener, or loopback for the local runtime.
Reach = Callable[[Pod, Container, str, int], Awaitable[tuple[str, int]]]


@dataclass(slots=True)
class HandlerRunner:
    reach: Reach | None = None
    # after an attempt through a path `reach` opened: why the path refused it, or None
    reach_refused: Callable[[str], str | None] | None = None
    # how long a path `reach` opened may hold back the end of a connection the container
    # closed (containerd's port-forward lingers a second), and, after an attempt, how long it
    # held back such ends in all
    close_linger: float = 0.0
    reach_lingered: Callable[[str], float] | None = None
    # the runtime's way to run a command "in the container"; None runs it as a local process
    exec_for: Callable[[Pod, Container], object] | None = None
    kube_version: str = DEFAULT_KUBE_VERSION
    # the kubelet version of the pod's node where the runtime knows it (kube-probe/X.Y)
    kube_version_for: Callable[[Pod], str | None] | None = None
    # the loop the handlers run on, when the owner has it (saves a lookup per attempt)
    loop: asyncio.AbstractEventLoop | None = None

    async def _address(
        self,
        pod: Pod,
        container: Container,
        host: str,
        port: int,
        swaps: list[tuple[str, str]],
    ) -> tuple[str, int]:
        """The address `reach` gives for host:port, noting a stand-in in `swaps`. Callers skip
        it when there is no `reach`: a coroutine per attempt for nothing."""
        assert self.reach is not None
        dialled = await self.reach(pod, container, host, port)
        if dialled != (host, port):
            swaps.append((join_host_port(*dialled), join_host_port(host, port)))
        return dialled

    async def __call__(
        self,
        probe_type: ProbeType,
        probe: Probe,
        pod: Pod,
        container: Container,
        status: PodStatus,
        profile: KubeletProfile = DEFAULT_PROFILE,
    ) -> Attempt:
        swaps: list[tuple[str, str]] = []
        attempt = exec_timeout_as_played(
            await self._run(probe, pod, container, status, swaps, profile), profile
        )
        if not swaps:
            return attempt
        if self.reach_refused is not None:
            for dialled, _ in swaps:
                why = self.reach_refused(dialled)
                if why is not None:
                    # the container was never asked: (Unknown, err) as for a ReachError
                    return Attempt(
                        attempt.handler,
                        "",
                        Result.UNKNOWN,
                        error=why,
                        latency=attempt.latency,
                        started_at=attempt.started_at,
                    )
        return _as_the_kubelet_names_it(attempt, swaps)

    def _kube_version(self, pod: Pod) -> str:
        """The kubelet version a network probe of `pod` is played as."""
        if self.kube_version_for is not None:
            return self.kube_version_for(pod) or self.kube_version
        return self.kube_version

    def _http(
        self,
        handler: HTTPGetAction,
        url: str,
        headers: SpecHeaders,
        timeout: float,
        kube_version: str,
        profile: KubeletProfile,
    ) -> Awaitable[Attempt]:
        """The HTTP handler's attempt on `url`."""
        # prober.go runProbe: ProbeH2C, HTTP/2 with prior knowledge
        module = "http_h2c" if handler.protocol == "HTTP2" and profile.h2c else "http_lean"
        return _handler(module).probe(
            url, headers, timeout, kube_version=kube_version, loop=self.loop
        )

    def _grpc(
        self,
        handler: GRPCAction,
        host: str,
        port: int,
        timeout: float,
        kube_version: str,
        profile: KubeletProfile,
    ) -> Awaitable[Attempt]:
        """The gRPC handler's attempt on host:port."""
        # prober.go: TLS only with GRPCContainerProbeTLS on and mode TLS
        tls = profile.grpc_tls and handler.mode == "TLS"
        return _handler("grpc_lean").probe(
            host,
            port,
            handler.service or "",
            timeout,
            kube_version=kube_version,
            loop=self.loop,
            tls=tls,
        )

    def _direct(
        self,
        probe: Probe,
        pod: Pod,
        container: Container,
        status: PodStatus,
        profile: KubeletProfile,
    ) -> Awaitable[Attempt] | None:
        """The handler's own attempt for a network probe dialled at the address it names (no
        `reach`), which needs nothing of `__call__` after it; None for anything else. Raises
        `ReachError`.

        The worker's task then awaits the handler itself: every coroutine between the task and
        the socket runs again on each of an attempt's waits (benchmarks.agents guards it)."""
        if self.reach is not None:
            return None
        handler = probe.handler
        timeout = float(probe.timeout_seconds)
        if isinstance(handler, HTTPGetAction):
            host, port = dial_address(handler, container, status.pod_ip, profile)
            url = format_url(handler.scheme.lower(), host, port, handler.path)
            # the spec's headers as they are: the handler reads HTTPHeader pairs itself
            return self._http(
                handler, url, handler.http_headers, timeout, self._kube_version(pod), profile
            )
        if isinstance(handler, TCPSocketAction):
            host, port = dial_address(handler, container, status.pod_ip, profile)
            return _handler("tcp").probe(host, port, timeout, loop=self.loop)
        if isinstance(handler, GRPCAction):
            host, port = dial_address(handler, container, status.pod_ip)
            return self._grpc(handler, host, port, timeout, self._kube_version(pod), profile)
        return None

    async def _run(
        self,
        probe: Probe,
        pod: Pod,
        container: Container,
        status: PodStatus,
        swaps: list[tuple[str, str]],
        profile: KubeletProfile = DEFAULT_PROFILE,
    ) -> Attempt:
        handler = probe.handler
        timeout = float(probe.timeout_seconds)
        try:
            direct = self._direct(probe, pod, container, status, profile)
            if direct is not None:
                return await direct
            if isinstance(handler, ExecAction):
                argv = exec_argv(handler, container)
                runner = self.exec_for(pod, container) if self.exec_for else None
                return await _handler("exec").probe(argv, timeout, runner)  # type: ignore[arg-type]
            if self.reach is None:
                # `_direct` made every network probe's attempt dialled as named
                return missing_handler(pod, container)
            kube_version = self._kube_version(pod)
            if isinstance(handler, HTTPGetAction):
                named = dial_address(handler, container, status.pod_ip, profile)
                host, port = await self._address(pod, container, *named, swaps)
                url = format_url(handler.scheme.lower(), host, port, handler.path)
                headers = [(h.name, h.value) for h in handler.http_headers]
                linger = 0.0
                if swaps:
                    # the pod sees the Host the kubelet sends (its URL's), not the stand-in's
                    if not any(name.lower() == "host" for name, _ in headers):
                        headers.append(("Host", join_host_port(*named)))
                    linger = self.close_linger
                attempt = await self._http(
                    handler, url, headers, timeout + linger, kube_version, profile
                )
                if linger and self.reach_lingered is not None:
                    held = self.reach_lingered(swaps[-1][0])
                    attempt = without_linger(attempt, timeout, held)
                return attempt
            if isinstance(handler, TCPSocketAction):
                host, port = dial_address(handler, container, status.pod_ip, profile)
                host, port = await self._address(pod, container, host, port, swaps)
                return await _handler("tcp").probe(host, port, timeout, loop=self.loop)
            if isinstance(handler, GRPCAction):
                host, port = dial_address(handler, container, status.pod_ip)
                host, port = await self._address(pod, container, host, port, swaps)
                return await self._grpc(handler, host, port, timeout, kube_version, profile)
        except ReachError as e:
            # (Unknown, err): retried, then discarded by the worker (§16.4)
            return Attempt(probe.handler_name or "none", "", Result.UNKNOWN, error=str(e))
        return missing_handler(pod, container)

    def run_probe(self, worker: Worker, status: PodStatus) -> Awaitable[ProbeOutcome]:
        """The manager's RunProbe: `prober.probe` for one worker, whose probe is never nil.

        `retry_on_error`'s own coroutine, not one awaiting it, and each try the handler's own
        attempt where `_direct` gives it: every coroutine between the task and the socket runs
        again on each of an attempt's waits (benchmarks.blackbox guards it)."""
        probe_type, spec, pod = worker.probe_type, worker.spec, worker.pod
        container, profile = worker.container, worker.profile

        def once() -> Awaitable[Attempt]:
            try:
                direct = self._direct(spec, pod, container, status, profile)
            except ReachError:
                direct = None  # `__call__` makes the attempt of it
            if direct is not None:
                return direct
            return self(probe_type, spec, pod, container, status, profile)

        return retry_on_error(probe_type, once)


def exec_timeout_as_played(attempt: Attempt, profile: KubeletProfile) -> Attempt:
    """An exec attempt that timed out, as the kubelet's exec prober reports it: a Failure with
    the timeout text, or with ExecProbeTimeout off (settable before 1.35) `(Unknown, err)`,
    which the prober retries and the worker discards (`pkg/probe/exec/exec.go`)."""
    if attempt.handler != "exec" or not attempt.timed_out or profile.exec_probe_timeout:
        return attempt
    return replace(attempt, result=Result.UNKNOWN, output="", error=attempt.output)


def without_linger(attempt: Attempt, timeout: float, lingered: float) -> Attempt:
    """An HTTP attempt given `linger` more seconds through a path that holds a closed
    connection open, judged as the kubelet, dialling the pod itself, would have judged it.

    A body framed by the connection's close ends, for the kubelet, when the container closes:
    right after its last byte. Through containerd's port-forward the end of file comes up to a
    second later (`portForward` waits that long for the other direction), on each connection
    the container closes (a followed redirect is a second one), so the attempt had the extra
    time to see them. Its latency is taken less what the path held back; an answer still
    coming when the probe's own timeout ran out is the kubelet's timeout.
    """
    if lingered > 0 and not attempt.timed_out:
        attempt = replace(attempt, latency=max(0.0, attempt.latency - lingered))
    if attempt.timed_out:
        # out of time even with the linger: so was the kubelet, at its own timeout
        return replace(attempt, latency=min(attempt.latency, timeout))
    if attempt.latency <= timeout:
        return attempt
    if attempt.status_code is None:
        # no head in time: the kubelet's client gave up awaiting headers (a Failure)
        text = url_error(attempt.target, TIMEOUT_AWAITING_HEADERS)
        return replace(attempt, result=Result.FAILURE, output=text, latency=timeout, timed_out=True)
    # the head came, the body had not ended: ReadAtMost's error (the prober retries it)
    return replace(
        attempt,
        result=Result.FAILURE,
        output="",
        error=TIMEOUT_READING_BODY,
        latency=timeout,
        timed_out=True,
    )


def dial_address(
    handler: HTTPGetAction | TCPSocketAction | GRPCAction,
    container: Container,
    pod_ip: str,
    profile: KubeletProfile = DEFAULT_PROFILE,
) -> tuple[str, int]:
    """The host and port a network probe names (§13.1, §14.1, §15.1): its `host` or the pod
    IP, and the port resolved by name. Raises `PortResolutionError` (a `ReachError`)."""
    if isinstance(handler, GRPCAction):
        return pod_ip, handler.port  # gRPC has no host field, and its port is a number
    port = handler.port
    if isinstance(port, str) and profile.port_names_only and container.port_by_name(port) is None:
        # ResolveContainerPort since 1.37: a name that matches no port is not parsed as a number
        raise PortResolutionError(f"port {go_quote(port)} not found")
    return handler.host or pod_ip, resolve_container_port(port, container)


def exec_argv(handler: ExecAction, container: Container) -> list[str]:
    """The command as the kubelet runs it: `$(VAR)` expanded from every declared env var,
    valueFrom ones as "" (`EnvVarsToMap`, §9.6)."""
    from probetui.probe.exec import expand_command, static_env

    return expand_command(handler.command, static_env(container.env))


def _as_the_kubelet_names_it(attempt: Attempt, swaps: list[tuple[str, str]]) -> Attempt:
    """Name the pod's address where a runtime dialled a stand-in (a port-forward listener).

    The kubelet's texts carry the address it dialled (`Get "http://10.1.2.3:8080/"...`); with a
    port-forward the handler dialled 127.0.0.1:<ephemeral> instead. Showing the pod's address
    keeps targets stable across attempts and the texts as the kubelet would write them; the
    path taken is labelled separately (`via`).
    """

    def fix(text: str) -> str:
        for dialled, named in swaps:
            text = text.replace(dialled, named)
        return text

    return replace(
        attempt,
        target=fix(attempt.target),
        output=fix(attempt.output),
        error=fix(attempt.error) if attempt.error is not None else None,
    )
