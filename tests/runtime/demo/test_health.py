"""The gRPC demo service, probed with probetui's own gRPC handler, on a fast schedule."""

from __future__ import annotations

from probetui.probe import grpc_lean as grpc
from probetui.probe.base import Attempt, Result
from tests.runtime.demo.conftest import poll_until, start_service


async def test_named_service_flips_to_not_serving_and_back_while_server_stays_serving() -> None:
    args = ("grpc", "--port", "0", "--service", "demo.Orders", "--serving", "0.4")
    async with start_service(*args, "--not-serving", "0.4") as svc:

        async def orders() -> Attempt:
            return await grpc.probe("127.0.0.1", svc.port, "demo.Orders", 1.0)

        first = await orders()
        assert first.result is Result.SUCCESS
        assert first.output == "service healthy"

        down = await poll_until(orders, lambda a: a.result is Result.FAILURE)
        assert down.output == 'service unhealthy (responded with "NOT_SERVING")'
        overall = await grpc.probe("127.0.0.1", svc.port, "", 1.0)
        assert overall.result is Result.SUCCESS

        await poll_until(orders, lambda a: a.result is Result.SUCCESS)
        await svc.wait_for_line('Check service="demo.Orders" -> NOT_SERVING')
        await svc.wait_for_line('"demo.Orders" -> SERVING')


async def test_unknown_service_is_not_found_and_sigterm_exits_0() -> None:
    async with start_service("grpc", "--port", "0", "--not-serving", "0") as svc:
        attempt = await grpc.probe("127.0.0.1", svc.port, "demo.Nope", 1.0)
        assert attempt.result is Result.FAILURE
        assert "code = NotFound" in attempt.output
        assert await svc.terminate() == 0
