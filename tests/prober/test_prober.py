"""Prober result mapping, retries and event texts: docs/test-vectors.md C1-C28 (`prober_test.go`,
docs/kubelet-behaviour.md §9)."""

from __future__ import annotations

import pytest

from probetui.probe.base import Attempt, Result
from probetui.prober.handlers import HandlerRunner
from probetui.prober.prober import (
    map_attempts,
    retry_on_error,
    run_probe_with_retries,
    run_to_completion,
)
from probetui.prober.results import ResultValue
from probetui.prober.status import PodStatus
from probetui.spec.model import (
    Container,
    EnvVar,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)

S, F = ResultValue.SUCCESS, ResultValue.FAILURE
POD = Pod("p", uid="u")
C = Container("c")


class FakeHandler:
    """Answers with a fixed handler result; counts calls (runProbeWithRetries)."""

    def __init__(self, result: Result | str, error: str | None = None, output: str = "out") -> None:
        self.result, self.error, self.output, self.calls = result, error, output, 0

    async def __call__(self, *_args: object) -> Attempt:
        self.calls += 1
        return Attempt("exec", "x", self.result, self.output, error=self.error)  # type: ignore[arg-type]


HANDLERS = [
    Probe(exec=ExecAction(("true",))),
    Probe(http_get=HTTPGetAction(port=80, path="/healthz")),
    Probe(tcp_socket=TCPSocketAction(port=80)),
    Probe(grpc=GRPCAction(port=80)),
]


@pytest.mark.parametrize("probe_type", list(ProbeType))
@pytest.mark.parametrize("probe", HANDLERS, ids=["exec", "http", "tcp", "grpc"])
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Result.FAILURE, F),
        (Result.SUCCESS, S),
        (Result.WARNING, S),
        (Result.UNKNOWN, F),
        ("CustomUnsupportedResult", F),
    ],
)
async def test_c_result_mapping(
    probe_type: ProbeType, probe: Probe, answer: Result, expected: ResultValue
) -> None:
    """TestProbe rows 3-6, 11-15, 17-20, 22-25: handler result -> worker result, no error."""
    fake = FakeHandler(answer)
    outcome = await run_probe_with_retries(fake, probe_type, probe, POD, C, PodStatus())
    assert (outcome.result, outcome.error, fake.calls) == (expected, None, 1)


async def test_c1_nil_probe_is_success() -> None:
    """TestProbe row 1: a nil spec is Success (with only a log line)."""
    outcome = await run_probe_with_retries(
        FakeHandler(Result.FAILURE), ProbeType.LIVENESS, None, POD, C, PodStatus()
    )
    assert (outcome.result, outcome.error) == (S, None)


async def test_c2_missing_handler_is_an_error_retried() -> None:
    """TestProbe row 2: no handler -> (Failure, "missing probe handler ..." error), 3 tries."""
    outcome = await run_probe_with_retries(
        HandlerRunner(), ProbeType.LIVENESS, Probe(), POD, C, PodStatus()
    )
    assert outcome.result is F and outcome.error == "missing probe handler for p:c"
    assert len(outcome.attempts) == 3


async def test_c7_unknown_with_error_retried_three_times() -> None:
    """TestProbe row 7 / §9.2: an error is retried up to 3 times, then returned."""
    fake = FakeHandler(Result.UNKNOWN, error="boom")
    outcome = await run_probe_with_retries(
        fake, ProbeType.READINESS, HANDLERS[0], POD, C, PodStatus()
    )
    assert (outcome.result, outcome.error, fake.calls) == (F, "boom", 3)


def test_retries_run_without_an_event_loop_when_nothing_waits() -> None:
    """simulate's path: the same loop, driven synchronously, still stops at the first try
    without an error and reports that one."""
    error = Attempt("exec", "x", Result.UNKNOWN, "", error="boom")
    answers = iter([error, error, Attempt("exec", "x", Result.FAILURE, "down")])
    tries: list[int] = []

    async def once() -> Attempt:
        tries.append(1)
        return next(answers)

    outcome = run_to_completion(retry_on_error(ProbeType.LIVENESS, once))
    assert (outcome.result, outcome.error, len(tries)) == (F, None, 3)
    assert outcome.event is not None and outcome.event.message == "Liveness probe failed: down"


def test_run_to_completion_refuses_a_coroutine_that_waits() -> None:
    async def waits() -> None:
        import asyncio

        await asyncio.sleep(0)

    with pytest.raises(RuntimeError, match="waited"):
        run_to_completion(waits())


@pytest.mark.parametrize("port", ["abc"])
@pytest.mark.parametrize("probe", ["http", "tcp"])
async def test_c16_c21_unresolvable_port_is_an_error(port: str, probe: str) -> None:
    """TestProbe rows 16 and 21: port "abc" (no such named port) -> Failure with an error."""
    spec = (
        Probe(http_get=HTTPGetAction(port=port))
        if probe == "http"
        else Probe(tcp_socket=TCPSocketAction(port=port))
    )
    outcome = await run_probe_with_retries(
        HandlerRunner(), ProbeType.LIVENESS, spec, POD, C, PodStatus()
    )
    assert outcome.result is F
    assert outcome.error == 'strconv.Atoi: parsing "abc": invalid syntax'


@pytest.mark.parametrize(
    ("command", "env", "expected"),
    [
        (("/bin/echo", "some script"), (), "some script\n"),
        (("/bin/echo", "some $(A) $(B)"), (EnvVar("A", "script"),), "some script $(B)\n"),
    ],
)
async def test_c9_c10_exec_command_expansion(
    command: tuple[str, ...], env: tuple[EnvVar, ...], expected: str
) -> None:
    """TestProbe rows 9-10 / §9.6: only $(VAR) of the container's env is expanded."""
    container = Container("c", env=env)
    probe = Probe(exec=ExecAction(command))
    outcome = await run_probe_with_retries(
        HandlerRunner(), ProbeType.LIVENESS, probe, POD, container, PodStatus()
    )
    assert outcome.result is S
    assert outcome.attempt is not None and outcome.attempt.output == expected


@pytest.mark.parametrize("probe_type", list(ProbeType))
def test_c27_c28_event_texts(probe_type: ProbeType) -> None:
    """§9.5: Unhealthy for failures and errors, ProbeWarning for warnings, none for success."""
    name = probe_type.value
    fail = map_attempts(probe_type, [Attempt("exec", "x", Result.FAILURE, "boom")]).event
    assert fail is not None and (fail.type, fail.reason, fail.message) == (
        "Warning",
        "Unhealthy",
        f"{name} probe failed: boom",
    )
    warn = map_attempts(
        probe_type,
        [Attempt("http", "x", Result.WARNING, "Probe terminated redirects, Response body: x")],
    ).event
    assert warn is not None and warn.reason == "ProbeWarning"
    assert warn.message == f"{name} probe warning: Probe terminated redirects, Response body: x"
    assert map_attempts(probe_type, [Attempt("exec", "x", Result.SUCCESS, "ok")]).event is None
    assert map_attempts(probe_type, [Attempt("exec", "x", Result.UNKNOWN, "")]).event is None
