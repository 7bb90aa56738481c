"""The Threshold state pane's words for settings and result runs."""

from __future__ import annotations

from probetui.prober.results import ResultValue
from probetui.spec.model import (
    Container,
    ExecAction,
    GRPCAction,
    HTTPGetAction,
    HTTPHeader,
    Pod,
    Probe,
    ProbeType,
    TCPSocketAction,
)
from probetui.ui.describe import (
    detect_seconds,
    duration,
    handler_text,
    run_words,
    settings_text,
    startup_budget,
)

F, S = ResultValue.FAILURE, ResultValue.SUCCESS
L, R, ST = ProbeType.LIVENESS, ProbeType.READINESS, ProbeType.STARTUP
PROBE = Probe(http_get=HTTPGetAction(port=8080, path="/healthz"), period_seconds=5)
POD = Pod(name="p", containers=(Container(name="app", liveness_probe=PROBE),))
NEVER = Pod(name="p", restart_policy="Never", containers=POD.containers)


def words(pt, published, last, run, on_hold=False, pod=POD, probe=PROBE) -> str:  # type: ignore[no-untyped-def]
    return run_words(
        pt,
        probe,
        pod,
        pod.containers[0],
        published=published,
        last_result=last,
        result_run=run,
        on_hold=on_hold,
    )


def test_the_next_failure_and_what_it_does() -> None:
    assert words(L, S, F, 2) == "2 of 3 failures: the next failure restarts the container"
    assert words(R, S, F, 2) == "2 of 3 failures: the next failure takes it out of service"
    assert words(L, S, F, 1) == "1 of 3 failures: 2 more failures restart the container"
    assert words(L, S, F, 2, pod=NEVER).startswith(
        "2 of 3 failures: the next failure kills the container (restartPolicy Never"
    )


def test_passing_failing_and_on_hold() -> None:
    assert words(L, S, S, 14) == "passing, run of 14: 3 failures in a row restart the container"
    assert words(R, F, F, 4) == "failing, run of 4: 1 success puts it in service"
    assert words(L, F, F, 0, on_hold=True).startswith(
        "on hold: Failure published, the kubelet restarts the container"
    )
    assert words(ST, S, S, 0, on_hold=True) == (
        "started: the startup probe is done for this container"
    )
    two = Probe(http_get=PROBE.http_get, success_threshold=2)
    assert words(R, F, S, 1, probe=two) == "1 of 2 successes: the next success puts it in service"
    assert words(R, F, None, 0) == "no attempt counted yet: 1 success puts it in service"
    assert words(R, None, None, 0) == "no result yet: the container has not been created"


def test_derived_seconds() -> None:
    p = Probe(exec=ExecAction(("true",)), initial_delay_seconds=10, period_seconds=5)
    assert detect_seconds(p) == 15 and startup_budget(p) == 25
    assert settings_text(p) == "every 5s  timeout 1s  success 1  failure 3  delay 10s"
    assert [duration(x) for x in (0.25, 4.2, 15, 150, 3900)] == [
        "250ms",
        "4.2s",
        "15s",
        "2m30s",
        "1h05m",
    ]


def test_handlers_as_the_redacted_copy_has_them() -> None:
    http = HTTPGetAction(
        port=8080,
        path="/ready",
        http_headers=(HTTPHeader("Authorization", "••••••"), HTTPHeader("Accept", "text/plain")),
    )
    assert handler_text(Probe(http_get=http)) == (
        "GET http://<pod IP>:8080/ready  [Authorization: ••••••]  [Accept: text/plain]"
    )
    assert handler_text(Probe(tcp_socket=TCPSocketAction(port=5432))) == "TCP <pod IP>:5432"
    assert handler_text(Probe(grpc=GRPCAction(port=9000, service="db"))) == (
        "gRPC <pod IP>:9000 service 'db'"
    )
    assert handler_text(Probe(exec=ExecAction(("sh", "-c", "check --password=••••••")))) == (
        "exec sh -c 'check --password=••••••'"
    )
