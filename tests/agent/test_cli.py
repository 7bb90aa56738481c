"""`probetui agent` on the command line: its imports, its bad input, a real agent process."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from probetui.cli import main
from probetui.stream.protocol import loads
from tests.agent.conftest import NODE, READ_TOKEN, FakeKubelet
from tests.kube.emulator import ApiEmulator, container, http_get_probe, make_pod
from tests.kube.emulator.fixtures import HttpTarget

ROOT = Path(__file__).resolve().parents[2]
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
NOT_IMPORTED = ("textual",)


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _PROXY_VARS and k not in ("KUBECONFIG", "NODE_NAME", "NODE_IP")
    }
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


async def _python(snippet: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", snippet, stdout=asyncio.subprocess.PIPE, env=_env()
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    return out.decode().strip().splitlines()[-1]


@pytest.mark.parametrize(
    "what",
    [
        "from probetui.cli import main\ntry:\n    main(['agent', '--help'])\nexcept SystemExit:\n    pass",
        "import probetui.agent.run, probetui.agent.server, probetui.agent.manifest, "
        "probetui.agent.metrics, probetui.cli.agent",
    ],
)
async def test_the_agent_imports_no_textual(what: str) -> None:
    snippet = (
        "import sys, io, contextlib\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        + "\n".join("    " + line for line in what.splitlines())
        + f"\nprint([m for m in sys.modules if m.split('.')[0] in {NOT_IMPORTED!r}])"
    )
    assert await _python(snippet) == "[]"


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("probetui: error: ")
    return err


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        ([], {}, "no node: pass --node NAME or set NODE_NAME"),
        (["--node", "n1"], {}, "no node IP: pass --node-ip IP or set NODE_IP"),
        ([], {"NODE_NAME": "n1", "NODE_IP": "10.0.0.300"}, "--node-ip '10.0.0.300': not an IP"),
        (["--node", "n1", "--node-ip", "10.0.0.1", "--bind", "x"], {}, "--bind 'x': not an IP"),
        (["--node", "n1", "--node-ip", "10.0.0.1", "--scrape-every", "500ms"], {}, "at least 1s"),
        (["--node", "n1", "--node-ip", "10.0.0.1", "--retain", "10s"], {}, "at least 1m"),
        (["--node", "n1", "--node-ip", "10.0.0.1", "--tick-align", "2s"], {}, "from 0s to 1s"),
        (["--namespace", "x"], {}, "--namespace: only with --print-manifest"),
        (["--port", "70000"], {}, "a port is 0 to 65535"),
        (["--scrape-every", "soon"], {}, "not a duration"),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    args: list[str],
    env: dict[str, str],
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for name in ("NODE_NAME", "NODE_IP"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["agent", *args]) == 2
    assert says in _one_error_line(capsys)


@pytest.mark.parametrize("content", [None, "short"])
def test_a_missing_or_short_read_token_is_refused_before_anything_connects(
    content: str | None,
    api_config: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    token = tmp_path / "token"
    if content is not None:
        token.write_text(content)
    args = ["--node", "n1", "--node-ip", "127.0.0.1", "--kubeconfig", str(api_config)]
    assert main(["agent", *args, "--token-file", str(token)]) == 2
    err = _one_error_line(capsys)
    assert str(token) in err and "print-manifest" in err


@pytest.fixture
def api_config(tmp_path: Path) -> Path:
    """A kubeconfig for a server nobody listens on: nothing may connect before the check."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return path


@pytest.mark.slow
async def test_a_real_agent_process_serves_and_stops_on_sigterm(
    api: ApiEmulator,
    tmp_path: Path,
    sa_dir: Path,
    read_token: Path,
    kubelet: FakeKubelet,
    http_target: HttpTarget,
) -> None:
    api.add_pod(
        make_pod(
            "web",
            node=NODE,
            containers=[
                container("app", readiness=http_get_probe("/ready", http_target.port, period=1))
            ],
        )
    )
    config = api.kubeconfig(tmp_path / "kubeconfig")
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-X",
        "importtime",
        "-m",
        "probetui.cli",
        "agent",
        "--kubeconfig",
        str(config),
        "--port",
        "0",
        "--token-file",
        str(read_token),
        "--service-account-dir",
        str(sa_dir),
        "--kubelet-port",
        str(kubelet.port),
        "--scrape-every",
        "1s",
        stderr=asyncio.subprocess.PIPE,
        env=_env(NODE_NAME=NODE, NODE_IP="127.0.0.1"),
    )
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        url = None
        while url is None:
            line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
            assert line, "".join(lines[-20:])
            lines.append(line)
            found = re.search(r"on (http://127\.0\.0\.1:\d+);", line)
            url = found.group(1) if found else None
        headers = {"X-Probetui-Token": READ_TOKEN}
        frames: list[dict[str, Any]] = []
        async with aiohttp.ClientSession() as session:
            async with session.get(url + "/healthz") as resp:
                assert (resp.status, await resp.text()) == (200, "ok\n")
            for _ in range(50):
                async with session.get(url + "/readyz") as resp:
                    if resp.status == 200:
                        break
                await asyncio.sleep(0.1)
            assert resp.status == 200
            async with session.get(url + "/v1/stream?rows=1", headers=headers) as resp:
                while not any(f["k"] == "rows" for f in frames):
                    frames.append(loads(await asyncio.wait_for(resp.content.readline(), 10)))
                proc.send_signal(signal.SIGTERM)
                rest = await asyncio.wait_for(resp.content.read(), 10)
        frames.extend(loads(line) for line in rest.splitlines())
        assert await asyncio.wait_for(proc.wait(), 10) == 128 + signal.SIGTERM
        err = "".join(lines) + (await proc.stderr.read()).decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert frames[0]["k"] == "hello" and frames[0]["node"] == NODE
    assert frames[-1] == {"k": "fail", "message": f"the agent on node {NODE} is stopping"}
    imported = re.findall(r"\|\s+(\S+)$", err, re.MULTILINE)
    assert imported and not [m for m in imported if m.split(".")[0] in NOT_IMPORTED]
    # neither kubernetes_asyncio's models nor grpcio: the agent uses neither (lazy_kube.py)
    assert not [m for m in imported if m.startswith("kubernetes_asyncio.client.models.")]
    assert not [m for m in imported if m.split(".")[0] == "grpc"]
    assert "Traceback" not in err
