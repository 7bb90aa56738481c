"""Dispatch one probe to its handler, retry on error, map the result, write the event.

Mirrors `pkg/kubelet/prober/prober.go` (docs/kubelet-behaviour.md §9): up to three tries while the
handler returns an error, first match of exec / httpGet / tcpSocket / grpc, the handler result
mapped to a published result, and the kubelet's `Unhealthy` / `ProbeWarning` event texts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from probetui.probe.base import DEFAULT_KUBE_VERSION, Attempt, Result
from probetui.prober.results import ResultValue
from probetui.prober.status import PodStatus
from probetui.spec.model import Container, Pod, Probe, ProbeType

MAX_PROBE_RETRIES = 3  # prober.go maxProbeRetries

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ProbeEvent:
    """Describes an event the kubelet records on the container reference (§9.5)."""

    type: str  # "Warning"
    reason: str  # "Unhealthy" or "ProbeWarning"
    message: str


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """Holds what `prober.probe` hands the worker: the mapped result, or an error to discard."""

    result: ResultValue
    error: str | None
    attempts: tuple[Attempt, ...]
    event: ProbeEvent | None

    @property
    def attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None


def field_path(container: Container) -> str:
    """`kubecontainer.GenerateContainerRef`'s FieldPath for the event's involved object."""
    group = "initContainers" if container.kind.value == "initContainer" else "containers"
    return f"spec.{group}{{{container.name}}}"


def map_attempts(probe_type: ProbeType, attempts: Sequence[Attempt]) -> ProbeOutcome:
    """Map the last try to the worker's result and event (§9.4, §9.5)."""
    last = attempts[-1]
    name = probe_type.value
    if last.error is not None:
        msg = f"{name} probe errored and resulted in {last.result.value} state: {last.error}"
        return ProbeOutcome(
            ResultValue.FAILURE,
            last.error,
            tuple(attempts),
            ProbeEvent("Warning", "Unhealthy", msg),
        )
    if last.result is Result.SUCCESS:
        return ProbeOutcome(ResultValue.SUCCESS, None, tuple(attempts), None)
    if last.result is Result.WARNING:
        event = ProbeEvent("Warning", "ProbeWarning", f"{name} probe warning: {last.output}")
        return ProbeOutcome(ResultValue.SUCCESS, None, tuple(attempts), event)
    if last.result is Result.FAILURE:
        event = ProbeEvent("Warning", "Unhealthy", f"{name} probe failed: {last.output}")
        return ProbeOutcome(ResultValue.FAILURE, None, tuple(attempts), event)
    # unknown without an error, or anything else: Failure, logged only, no event
    return ProbeOutcome(ResultValue.FAILURE, None, tuple(attempts), None)


RunHandler = Callable[[ProbeType, Probe, Pod, Container, PodStatus], Awaitable[Attempt]]


async def retry_on_error(
    probe_type: ProbeType,
    once: Callable[[], Awaitable[Attempt]],
    retries: int = MAX_PROBE_RETRIES,
) -> ProbeOutcome:
    """`runProbeWithRetries`: retry only attempts that carry an error (§9.2), then map the last.

    The one retry loop of probetui: the live prober, `simulate` and `check` all go through it,
    so the three cannot drift apart in how often they retry or which attempt they report.
    `once` needs no event loop when it never suspends, which is how virtual time drives it.
    """
    attempts: list[Attempt] = []
    for _ in range(retries):
        attempt = await once()
        attempts.append(attempt)
        if attempt.error is None:
            break
    return map_attempts(probe_type, attempts)


async def run_probe_with_retries(
    run: RunHandler,
    probe_type: ProbeType,
    probe: Probe | None,
    pod: Pod,
    container: Container,
    status: PodStatus,
    retries: int = MAX_PROBE_RETRIES,
) -> ProbeOutcome:
    """`prober.probe`: a probe's handler through `retry_on_error`."""
    if probe is None:
        # prober.go: a nil spec is a success, with only a log line (§9.1)
        return ProbeOutcome(ResultValue.SUCCESS, None, (), None)
    return await retry_on_error(
        probe_type, lambda: run(probe_type, probe, pod, container, status), retries
    )


def run_to_completion(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends, without an event loop.

    Virtual time answers every attempt at once (`simulate`), so its retries run through the
    same `retry_on_error` as live ones and still finish synchronously on the timer heap.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return cast("T", done.value)
    coro.close()
    raise RuntimeError("run_to_completion: the coroutine waited for something")


def missing_handler(pod: Pod, container: Container) -> Attempt:
    return Attempt(
        handler="none",
        target="",
        result=Result.UNKNOWN,
        error=f"missing probe handler for {pod.name}:{container.name}",
    )


__all__ = [
    "DEFAULT_KUBE_VERSION",
    "MAX_PROBE_RETRIES",
    "ProbeEvent",
    "ProbeOutcome",
    "RunHandler",
    "field_path",
    "map_attempts",
    "missing_handler",
    "retry_on_error",
    "run_probe_with_retries",
    "run_to_completion",
]
