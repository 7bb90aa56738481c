"""The HTTP demo services, probed with probetui's own HTTP and TCP handlers, on fast timings."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from probetui.probe import http_lean, tcp
from probetui.probe.base import Attempt, Result
from probetui.probe.url import format_url
from probetui.runtime.demo.web import default_location, flap_phase
from tests.runtime.demo.conftest import poll_until, start_service


def _url(port: int, path: str) -> str:
    return format_url("http", "127.0.0.1", port, path)


@pytest.mark.parametrize(
    ("elapsed", "expected"),
    [(0.0, (True, 20.0)), (19.0, (True, 1.0)), (20.0, (False, 10.0)), (29.0, (False, 1.0))],
)
def test_flap_phase_is_healthy_then_failing(elapsed: float, expected: tuple[bool, float]) -> None:
    assert flap_phase(elapsed, 20.0, 10.0) == expected
    # and the cycle repeats
    assert flap_phase(elapsed + 30.0, 20.0, 10.0) == expected


async def test_flap_ready_goes_503_then_back_to_200_while_healthz_stays_200() -> None:
    async with start_service("flap", "--port", "0", "--healthy", "0.4", "--failing", "0.4") as svc:
        ready = _url(svc.port, "/ready")
        first = await http_lean.probe(ready, timeout=1.0)
        assert first.result is Result.SUCCESS
        assert first.status_code == 200

        failing = await poll_until(
            lambda: http_lean.probe(ready, timeout=1.0), lambda a: a.result is Result.FAILURE
        )
        assert failing.status_code == 503
        assert failing.output == "HTTP probe failed with statuscode: 503"
        assert failing.body == "db connection refused\n"
        healthz = await http_lean.probe(_url(svc.port, "/healthz"), timeout=1.0)
        assert healthz.result is Result.SUCCESS

        await poll_until(
            lambda: http_lean.probe(ready, timeout=1.0), lambda a: a.result is Result.SUCCESS
        )
        # one log line per request, the 503 with its body
        line = await svc.wait_for_line("GET /ready 503")
        assert "db connection refused" in line


async def test_slow_refuses_connections_until_start_after_then_healthz_is_200() -> None:
    async with start_service("slow", "--port", "0", "--start-after", "0.6") as svc:
        started = time.monotonic()
        assert "warming up" in svc.first_line
        healthz = _url(svc.port, "/healthz")
        early = await http_lean.probe(healthz, timeout=1.0)
        assert early.result is Result.FAILURE
        assert "connect: connection refused" in early.output

        late: Attempt = await poll_until(
            lambda: http_lean.probe(healthz, timeout=1.0), lambda a: a.result is Result.SUCCESS
        )
        assert time.monotonic() - started >= 0.4
        assert late.status_code == 200
        await svc.wait_for_line("listening on")


async def test_slow_stops_at_once_on_sigterm_while_warming_up() -> None:
    async with start_service("slow", "--port", "0", "--start-after", "30") as svc:
        assert await svc.terminate(timeout=1.0) == 0
        await svc.wait_for_line("received SIGTERM")


async def test_redirect_to_another_host_is_a_warning_and_never_followed() -> None:
    # a listener at the Location: a handler that followed the redirect would connect here
    decoy = socket.socket()
    decoy.bind(("127.0.0.2", 0))
    decoy.listen(8)
    decoy.setblocking(False)
    location = f"http://127.0.0.2:{decoy.getsockname()[1]}/healthz"
    try:
        async with start_service("redirect", "--port", "0", "--location", location) as svc:
            attempt = await http_lean.probe(_url(svc.port, "/healthz"), timeout=1.0)
            assert attempt.result is Result.WARNING
            assert attempt.status_code == 302
            assert attempt.output == f"Probe terminated redirects, Response body: Found: {location}"
            await svc.wait_for_line("GET /healthz 302")
        with pytest.raises(BlockingIOError):
            decoy.accept()
    finally:
        decoy.close()


def test_default_redirect_location_is_another_host_on_loopback() -> None:
    assert default_location(8080) == "http://127.0.0.2:8080/healthz"


async def test_timeout_answers_after_the_delay_so_a_shorter_probe_times_out() -> None:
    async with start_service("timeout", "--port", "0", "--delay", "0.5") as svc:
        url = _url(svc.port, "/healthz")
        short = await http_lean.probe(url, timeout=0.2)
        assert short.result is Result.FAILURE
        assert short.timed_out
        assert short.output == (
            f'Get "{url}": context deadline exceeded '
            "(Client.Timeout exceeded while awaiting headers)"
        )
        patient = await http_lean.probe(url, timeout=1.5)
        assert patient.result is Result.SUCCESS
        assert patient.latency >= 0.45


async def test_http_services_exit_0_on_sigterm_with_a_request_in_flight() -> None:
    async with start_service("timeout", "--port", "0", "--delay", "5") as svc:
        pending = asyncio.ensure_future(http_lean.probe(_url(svc.port, "/healthz"), timeout=2.0))
        await asyncio.sleep(0.1)
        assert await svc.terminate(timeout=1.0) == 0
        attempt = await pending
        assert attempt.result is Result.FAILURE


async def test_unknown_path_is_404() -> None:
    async with start_service("flap", "--port", "0") as svc:
        attempt = await http_lean.probe(_url(svc.port, "/nope"), timeout=1.0)
        assert attempt.status_code == 404
        assert (await tcp.probe("127.0.0.1", svc.port, 1.0)).result is Result.SUCCESS
