"""The handler gates of `prober.go` runProbe, release by release: GRPCContainerProbeTLS
(`grpc.mode`), H2CContainerProbe (`httpGet.protocol`; its attempts are in
tests/probe/test_http_h2c.py), both alpha in 1.37, and ExecProbeTimeout
(`pkg/probe/exec/exec.go`, settable before 1.35). Real gRPC servers on 127.0.0.1."""

from __future__ import annotations

from probetui.kubelet.profile import profile_for
from probetui.probe.base import Attempt, Result
from probetui.prober.handlers import HandlerRunner, exec_timeout_as_played
from probetui.prober.results import ResultsManager, ResultValue
from probetui.prober.status import PodStatus
from probetui.prober.worker import Worker
from probetui.simulate import parse_scenario, simulate
from probetui.spec.model import (
    Container,
    GRPCAction,
    HTTPGetAction,
    Pod,
    Probe,
    ProbeType,
)
from tests.probe.conftest import (  # noqa: F401 (pytest fixtures)
    ServerCert,
    StartGRPC,
    grpc_server,
    server_cert,
)

STATUS = PodStatus(pod_ip="127.0.0.1")


def _worker(probe: Probe, version: str, gates: dict[str, bool] | None = None) -> Worker:
    c = Container("app", readiness_probe=probe)
    pod = Pod("p", uid="u", containers=(c,))
    profile = profile_for(version, gates or {})
    return Worker(pod, c, ProbeType.READINESS, ResultsManager(), profile=profile)


async def test_grpc_mode_tls_only_with_the_gate_prober_go_runProbe(
    grpc_server: StartGRPC,  # noqa: F811
    server_cert: ServerCert,  # noqa: F811
) -> None:
    """prober.go runProbe (1.37): `useTLS := Enabled(GRPCContainerProbeTLS) && Mode == TLS`.
    With the gate on the probe of a TLS server succeeds; with it off (the default) `mode` is
    not read and the plaintext dial of a TLS server fails."""
    server = await grpc_server(cert=server_cert)
    probe = Probe(grpc=GRPCAction(port=server.port, mode="TLS"), timeout_seconds=1)
    runner = HandlerRunner()
    on = await runner.run_probe(_worker(probe, "1.37", {"GRPCContainerProbeTLS": True}), STATUS)
    assert on.result is ResultValue.SUCCESS and on.error is None
    off = await runner.run_probe(_worker(probe, "1.37"), STATUS)
    assert off.result is ResultValue.FAILURE and off.error is None
    assert off.attempt is not None and off.attempt.output.startswith("timeout: failed to connect")


def test_exec_timeout_before_ExecProbeTimeout_exec_go() -> None:
    """pkg/probe/exec/exec.go before 1.35 with ExecProbeTimeout off: a timed-out command is
    `(Unknown, "", err)`, the error the timeout text; on (and locked on from 1.35) a Failure
    with that text as output."""
    text = 'command timed out: "sh -c sleep 10" timed out after 1s'
    timed_out = Attempt("exec", "sh -c sleep 10", Result.FAILURE, text, latency=1.0, timed_out=True)
    assert exec_timeout_as_played(timed_out, profile_for("1.35")) is timed_out
    off = exec_timeout_as_played(timed_out, profile_for("1.34", {"ExecProbeTimeout": False}))
    assert (off.result, off.output, off.error) == (Result.UNKNOWN, "", text)
    failed = Attempt("exec", "x", Result.FAILURE, "exit 1")
    assert (
        exec_timeout_as_played(failed, profile_for("1.34", {"ExecProbeTimeout": False})) is failed
    )


def test_a_hung_exec_liveness_never_kills_without_ExecProbeTimeout() -> None:
    """The same in simulate: a liveness exec probe that always times out kills the container
    with the gate on; with it off every attempt errors three times and is discarded, so
    liveness never fails (the flaw the gate fixed)."""
    doc = {
        "pod": {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "hang"},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "x",
                        "livenessProbe": {
                            "exec": {"command": ["check"]},
                            "periodSeconds": 10,
                            "timeoutSeconds": 1,
                        },
                    }
                ]
            },
        },
        "container": "app",
        "duration": 120,
        "app": {"probes": {"liveness": {"latency_ms": 5000}}},
    }
    scenario = parse_scenario(doc)
    on = simulate(scenario, profile_for("1.34"))
    off = simulate(scenario, profile_for("1.34", {"ExecProbeTimeout": False}))
    assert on["summary"]["kills"]["liveness"] > 0
    assert off["summary"]["kills"]["liveness"] == 0
    errored = [e for e in off["events"] if e["type"] == "Unhealthy"]
    assert errored[0]["message"] == (
        "Liveness probe errored and resulted in unknown state: "
        'command timed out: "check" timed out after 1s'
    )


# -- the fields, as the API server reads and checks them (1.37) --------------------------------


def _manifest(http: dict | None = None, grpc: dict | None = None) -> dict:
    probe = {"httpGet": http} if http is not None else {"grpc": grpc}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "x", "readinessProbe": probe}]},
    }


def test_protocol_and_mode_are_read_and_written_back() -> None:
    """The two 1.37 fields survive the parser and the recording's encode/decode."""
    from probetui.spec.encode import decode, encode
    from probetui.spec.parse import pod_from_object

    for doc in (
        _manifest(http={"port": 8080, "protocol": "HTTP2"}),
        _manifest(grpc={"port": 9090, "mode": "TLS"}),
        _manifest(http={"port": 8080}),
    ):
        pod = pod_from_object(doc, "test")
        assert decode(encode(pod), pod.source) == pod
    h2 = pod_from_object(_manifest(http={"port": 8080, "protocol": "HTTP2"}), "t")
    assert h2.containers[0].readiness_probe.http_get.protocol == "HTTP2"  # type: ignore[union-attr]
    tls = pod_from_object(_manifest(grpc={"port": 9090, "mode": "TLS"}), "t")
    assert tls.containers[0].readiness_probe.grpc.mode == "TLS"  # type: ignore[union-attr]


def test_protocol_and_mode_validation_validateHTTPGetAction_validateGRPCAction() -> None:
    """validation.go (1.37): an unknown protocol or mode is NotSupported; HTTP2 needs scheme
    HTTP ("is only supported with HTTP (H2C)") and no host."""
    from probetui.spec.validate import validate_pod

    def errors(http: dict | None = None, grpc: dict | None = None) -> list[str]:
        pod = Pod(
            "p",
            containers=(
                Container(
                    "app",
                    readiness_probe=Probe(
                        http_get=HTTPGetAction(**http) if http else None,
                        grpc=GRPCAction(**grpc) if grpc else None,
                    ),
                ),
            ),
        )
        return [str(e) for e in validate_pod(pod)]

    assert errors(http={"port": 80, "protocol": "HTTP1"}) == []
    assert errors(http={"port": 80, "protocol": "HTTP2"}) == []
    assert errors(grpc={"port": 80, "mode": "Plaintext"}) == []
    (bad,) = errors(http={"port": 80, "protocol": "h2c"})
    assert 'Unsupported value: "h2c": supported values: "HTTP1", "HTTP2"' in bad
    (tls,) = errors(http={"port": 80, "protocol": "HTTP2", "scheme": "HTTPS"})
    assert "is only supported with HTTP (H2C)" in tls
    (host,) = errors(http={"port": 80, "protocol": "HTTP2", "host": "example.com"})
    assert 'must be empty when `protocol` is "HTTP2"' in host
    (mode,) = errors(grpc={"port": 80, "mode": "mTLS"})
    assert 'Unsupported value: "mTLS": supported values: "Plaintext", "TLS"' in mode


def test_unknown_port_name_text_ResolveContainerPort() -> None:
    """pkg/probe/util.go ResolveContainerPort: since 1.37 a port name no container port has is
    `port "NAME" not found` (findPortByName); before, the name was tried as a number and the
    error was strconv.Atoi's. Either way the prober's error: retried, discarded (§16.4)."""
    from probetui.probe.util import PortResolutionError
    from probetui.prober.handlers import dial_address

    http = HTTPGetAction(port="metrics")
    c = Container("app")
    texts = {}
    for version in ("1.36", "1.37"):
        try:
            dial_address(http, c, "10.0.0.1", profile_for(version))
        except PortResolutionError as e:
            texts[version] = str(e)
    assert texts == {
        "1.36": 'strconv.Atoi: parsing "metrics": invalid syntax',
        "1.37": 'port "metrics" not found',
    }
