"""`probetui check` from the command line: exit codes, JSON, event texts, manifests, bad input.

Each case runs the real CLI in a subprocess against a real server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.probe.conftest import NOT_SERVING, SERVING, StartGRPC, closed_port, grpc_server

__all__ = ["closed_port", "grpc_server"]  # fixtures of tests/probe, used by name


async def probetui(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "probetui.cli",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
async def web_app() -> AsyncIterator[int]:
    """/ok 200, /fail 503 with a body, /away 302 to another host, /slow answers after 1 s."""
    app = web.Application()

    async def ok(_r: web.Request) -> web.Response:
        return web.Response(text="fine")

    async def fail(_r: web.Request) -> web.Response:
        return web.Response(status=503, text="db connection refused")

    async def away(r: web.Request) -> web.Response:
        port = r.url.port
        raise web.HTTPFound(f"http://localhost:{port}/ok")

    async def slow(_r: web.Request) -> web.Response:
        await asyncio.sleep(1.0)
        return web.Response(text="late")

    for path, fn in (("/ok", ok), ("/fail", fail), ("/away", away), ("/slow", slow)):
        app.router.add_get(path, fn)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


async def test_http_success_json(web_app: int) -> None:
    """docs/kubelet-behaviour.md §13.8: 2xx is success, no event (the kubelet records none for
    successes)."""
    code, out, _ = await probetui("check", "--http-get", f"http://127.0.0.1:{web_app}/ok", "--json")
    doc = json.loads(out)
    assert code == 0
    assert doc["result"] == "success" and doc["handler"] == "http" and doc["event"] is None
    assert doc["target"] == f"http://127.0.0.1:{web_app}/ok"
    assert doc["output"] == "fine" and doc["latency_ms"] >= 0


async def test_http_failure_event_leaves_body_out(web_app: int) -> None:
    """§13.8 / kubernetes#99425: the event says the status code only, not the body."""
    code, out, _ = await probetui(
        "check", "--http-get", f"http://127.0.0.1:{web_app}/fail", "--probe", "readiness", "--json"
    )
    doc = json.loads(out)
    assert code == 1
    assert doc["event"] == {
        "type": "Warning",
        "reason": "Unhealthy",
        "message": "Readiness probe failed: HTTP probe failed with statuscode: 503",
    }
    code, text, _ = await probetui("check", "--http-get", f"http://127.0.0.1:{web_app}/fail")
    assert code == 1 and text.startswith("failure")


async def test_http_other_host_redirect_is_warning(web_app: int) -> None:
    """§13.7: a redirect to another hostname is not followed: Warning, exit 0."""
    code, out, _ = await probetui(
        "check", "--http-get", f"http://127.0.0.1:{web_app}/away", "--json"
    )
    doc = json.loads(out)
    assert code == 0 and doc["result"] == "warning"
    assert doc["event"]["reason"] == "ProbeWarning"
    assert doc["event"]["message"].startswith("Liveness probe warning: Probe terminated redirects")


async def test_http_timeout_is_failure(web_app: int) -> None:
    """§13.6: the client timeout covers the request; a slow answer fails."""
    code, out, _ = await probetui(
        "check", "--http-get", f"http://127.0.0.1:{web_app}/slow", "--timeout", "0.2", "--json"
    )
    doc = json.loads(out)
    assert code == 1 and doc["timed_out"] is True
    assert "Client.Timeout exceeded" in doc["output"]


async def test_tcp_success_and_refused(closed_port: int, web_app: int) -> None:
    """§14.3: connect is success; a refused dial is failure with Go's error text."""
    assert (await probetui("check", "--tcp", f"127.0.0.1:{web_app}"))[0] == 0
    code, out, _ = await probetui("check", "--tcp", f"127.0.0.1:{closed_port}", "--json")
    assert code == 1
    assert (
        json.loads(out)["output"]
        == f"dial tcp 127.0.0.1:{closed_port}: connect: connection refused"
    )


async def test_grpc_serving_and_not_serving(grpc_server: StartGRPC) -> None:
    """§15.2: SERVING is success; NOT_SERVING fails with upstream's text."""
    server = await grpc_server(statuses={"": SERVING, "db": NOT_SERVING})
    code, out, _ = await probetui("check", "--grpc", f"127.0.0.1:{server.port}", "--json")
    assert code == 0 and json.loads(out)["output"] == "service healthy"
    code, out, _ = await probetui(
        "check", "--grpc", f"127.0.0.1:{server.port}", "--service", "db", "--json"
    )
    assert code == 1
    assert json.loads(out)["output"] == 'service unhealthy (responded with "NOT_SERVING")'


async def test_exec_exit_codes_and_timeout() -> None:
    """§15.4: exit 0 success, non-zero failure with the output, timeout failure."""
    assert (await probetui("check", "--exec", "--", "true"))[0] == 0
    code, out, _ = await probetui(
        "check", "--json", "--exec", "--", "sh", "-c", "echo nope; exit 3"
    )
    assert code == 1 and json.loads(out)["event"]["message"] == "Liveness probe failed: nope\n"
    code, out, _ = await probetui(
        "check", "--timeout", "0.2", "--json", "--exec", "--", "sleep", "5"
    )
    assert code == 1 and json.loads(out)["output"] == (
        'command timed out: "sleep 5" timed out after 200ms'
    )


async def test_manifest_probe_with_named_port(tmp_path: Path, web_app: int) -> None:
    """§16.2: a named port resolves through the container's ports; the probe as written."""
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(
        f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  template:
    spec:
      containers:
      - name: web
        image: x
        ports: [{{name: http, containerPort: {web_app}}}]
        readinessProbe:
          httpGet: {{path: /fail, port: http}}
        livenessProbe:
          httpGet: {{path: /ok, port: http}}
"""
    )
    code, out, _ = await probetui("check", "-f", str(manifest), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["probe"] == "liveness"
    code, out, _ = await probetui("check", "-f", str(manifest), "--probe", "readiness", "--json")
    assert code == 1 and json.loads(out)["target"] == f"http://127.0.0.1:{web_app}/fail"


async def test_manifest_misnamed_port_is_unknown(tmp_path: Path) -> None:
    """§16.4: an unresolvable port is a prober error: retried 3x, exit 3 (unknown)."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n"
        "    livenessProbe: {tcpSocket: {port: nope}}\n"
    )
    code, out, _ = await probetui("check", "-f", str(manifest), "--json")
    doc = json.loads(out)
    assert code == 3 and doc["result"] == "unknown" and doc["tries"] == 3
    assert doc["event"]["message"].startswith(
        "Liveness probe errored and resulted in unknown state"
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["check", "--bogus"], "unrecognized arguments: --bogus"),
        (["check"], "check needs one of"),
        (["check", "--tcp", "nohost"], "expected HOST:PORT"),
        (["check", "--exec"], "--exec needs a command"),
        (
            ["check", "--tcp", "127.0.0.1:1", "--http-get", "http://127.0.0.1:1/"],
            "not allowed with",
        ),
        (["frobnicate"], "invalid choice"),
    ],
)
async def test_bad_usage_is_one_line_exit_2(args: list[str], needle: str) -> None:
    code, out, err = await probetui(*args)
    assert code == 2 and out == ""
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


async def test_malformed_manifest_is_one_line_exit_2(tmp_path: Path) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n"
        '    livenessProbe: {exec: {command: ["true"]}, httpGet: {port: 80}}\n'
    )
    code, _, err = await probetui("check", "-f", str(manifest))
    assert code == 2 and err.count("\n") == 1
    assert "bad.yaml" in err and "may not specify more than 1 handler type" in err
    code, _, err = await probetui("check", "-f", str(tmp_path / "missing.yaml"))
    assert code == 2 and "missing.yaml" in err and err.count("\n") == 1


async def test_check_imports_no_ui_or_cluster_client(closed_port: int) -> None:
    """`check` must start fast: neither Textual nor the Kubernetes client is imported."""
    snippet = (
        "import sys; from probetui.cli import main; "
        f"main(['check', '--tcp', '127.0.0.1:{closed_port}']); "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'kubernetes_asyncio', 'grpc', 'httpx')]; "
        "print(bad)"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", snippet, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert out.decode().strip().splitlines()[-1] == "[]"


async def test_check_h2c_under_the_gate_only(tmp_path: Path) -> None:
    """`check --protocol HTTP2` plays prober.go's runProbe: h2c with prior knowledge where the
    release has H2CContainerProbe on (1.37 with the gate), HTTP/1.1 with a note elsewhere, a
    refused gate or an https URL one line and exit 2; a manifest's `protocol` the same."""
    from tests.probe.h2c_servers import serve_h2c

    gate = ["--kubelet-version", "1.37", "--feature-gates", "H2CContainerProbe=true"]
    async with serve_h2c(lambda s, f: (200, [], b"h2c ok")) as server:
        url = server.url("/healthz")
        code, out, err = await probetui("check", "--http-get", url, "--protocol", "h2c", *gate)
        assert code == 0 and "h2c ok" in out and err == ""
        code, out, err = await probetui(
            "check", "--http-get", url, "--protocol", "HTTP2", "--kubelet-version", "1.37"
        )
        assert code == 1 and "h2c ok" not in out
        assert err.startswith("note: protocol HTTP2 is read only with H2CContainerProbe on")
        manifest = tmp_path / "pod.yaml"
        manifest.write_text(
            "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: x\n"
            f"    livenessProbe: {{httpGet: {{port: {server.port}, protocol: HTTP2}}}}\n"
        )
        code, out, _ = await probetui("check", "-f", str(manifest), "--json", *gate)
        assert code == 0 and json.loads(out)["output"] == "h2c ok"
        assert len(server.requests) == 2
    code, _, err = await probetui(
        "check", "--http-get", url, "--protocol", "HTTP2", "--kubelet-version", "1.36",
        "--feature-gates", "H2CContainerProbe=true",
    )  # fmt: skip
    assert code == 2 and "unrecognized feature gate in kubelet 1.36" in err
    code, _, err = await probetui(
        "check", "--http-get", "https://127.0.0.1:1/", "--protocol", "HTTP2", *gate
    )
    assert code == 2 and "h2c is HTTP/2 without TLS" in err and err.count("\n") == 1
