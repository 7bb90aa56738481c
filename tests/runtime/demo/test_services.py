"""The command line shared by every demo service, and the tcp and exec-file kinds."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from probetui.probe import exec as exec_probe
from probetui.probe import tcp
from probetui.probe.base import Result
from tests.runtime.demo.conftest import (
    MODULE,
    START_TIMEOUT,
    poll_until,
    run_to_exit,
    service_env,
    start_service,
)


async def test_tcp_accepts_and_closes_and_logs_each_connection() -> None:
    async with start_service("tcp", "--port", "0") as svc:
        attempt = await tcp.probe("127.0.0.1", svc.port, 1.0)
        assert attempt.result is Result.SUCCESS
        await svc.wait_for_line("tcp: connection from 127.0.0.1:")
        assert await svc.terminate() == 0


async def test_exec_file_disappears_and_the_service_keeps_running(tmp_path: Path) -> None:
    health = tmp_path / "run" / "healthy"
    args = ("exec-file", "--path", str(health), "--remove-after", "0.4")
    async with start_service(*args) as svc:
        argv = ["cat", str(health)]
        first = await exec_probe.probe(argv, 1.0)
        assert first.result is Result.SUCCESS
        assert first.output == "ok\n"

        gone = await poll_until(
            lambda: exec_probe.probe(argv, 1.0), lambda a: a.result is Result.FAILURE
        )
        assert "No such file or directory" in gone.output
        await svc.wait_for_line("removed")
        await asyncio.sleep(0.1)
        assert svc.proc.returncode is None
        assert await svc.terminate() == 0
    # the directory it made for the file goes with it
    assert not health.parent.exists()


async def test_exec_file_takes_its_path_from_health_file(tmp_path: Path) -> None:
    health = tmp_path / "healthy"
    async with start_service("exec-file", env={"HEALTH_FILE": str(health)}) as svc:
        assert health.read_text() == "ok\n"
        assert str(health) in svc.first_line
        assert await svc.terminate() == 0
    assert not health.exists()


async def test_exec_file_without_a_path_says_how_to_give_one() -> None:
    code, _, err = await run_to_exit("exec-file")
    assert code == 1
    assert err == "exec-file needs a file to manage: give --path FILE or set HEALTH_FILE\n"


@pytest.mark.parametrize(
    "kind",
    [("flap",), ("slow", "--start-after", "30"), ("grpc",), ("tcp",), ("redirect",)],
    ids=lambda kind: kind[0],
)
async def test_a_taken_port_is_one_line_and_exit_1(taken_port: int, kind: tuple[str, ...]) -> None:
    code, out, err = await run_to_exit(kind[0], "--port", str(taken_port), *kind[1:])
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"port {taken_port} is taken: ")


async def test_bad_option_is_one_line_and_exit_2() -> None:
    code, _, err = await run_to_exit("flap", "--port", "0", "--healthy", "-1")
    assert code == 2
    assert err.count("\n") == 1
    assert "--healthy" in err and "(see --help)" in err


@pytest.mark.parametrize(
    "kind",
    [("tcp",), ("flap",), ("grpc",), ("exec-file", "--path", "{tmp}/healthy")],
    ids=lambda kind: kind[0],
)
def test_sigterm_stops_a_service_whose_output_nobody_reads(
    kind: tuple[str, ...], tmp_path: Path
) -> None:
    """Once probetui is gone its pipes are broken; the stop on SIGTERM must still happen (its
    log line raised BrokenPipeError before the stop, and the service ignored every SIGTERM)."""
    args = [a.replace("{tmp}", str(tmp_path)) for a in kind]
    if kind[0] != "exec-file":
        args += ["--port", "0"]
    with subprocess.Popen(
        [sys.executable, "-m", MODULE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=service_env(),
    ) as proc:
        try:
            assert proc.stdout is not None and proc.stderr is not None
            assert proc.stdout.readline()  # up and logging
            proc.stdout.close()
            proc.stderr.close()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=START_TIMEOUT) == 0
        finally:
            proc.kill()
