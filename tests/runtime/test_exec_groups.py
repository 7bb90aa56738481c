"""The local runtime's exec probes are held in the process-group registry while they run, so an
ending of probetui that kills the registry's groups (SIGHUP, a crash) kills them too.

Real processes; each case well under a second.
"""

from __future__ import annotations

import asyncio

from probetui.probe.exec import run_local
from probetui.runtime.local.groups import ProcessGroupRegistry


async def _registered(registry: ProcessGroupRegistry) -> int:
    async with asyncio.timeout(2):
        while not registry.groups():  # noqa: ASYNC110 - a real process starting
            await asyncio.sleep(0.01)
    return next(iter(registry.groups()))


async def test_an_exec_group_is_held_while_it_runs_and_released_after() -> None:
    registry = ProcessGroupRegistry()
    run = asyncio.ensure_future(run_local(["sh", "-c", "sleep 0.2"], 5.0, groups=registry))
    await _registered(registry)
    out = await run
    assert out.exit_code == 0
    assert registry.groups() == frozenset()


async def test_killing_the_registry_ends_a_running_exec_probe() -> None:
    """What probetui's SIGHUP handler does: the command dies at once, not at its timeout."""
    registry = ProcessGroupRegistry()
    run = asyncio.ensure_future(run_local(["sleep", "30"], 20.0, groups=registry))
    await _registered(registry)
    assert registry.kill_all() == 1
    out = await asyncio.wait_for(run, 2)
    assert out.exit_code == 137


async def test_a_timed_out_exec_group_is_released() -> None:
    registry = ProcessGroupRegistry()
    out = await run_local(["sleep", "30"], 0.2, groups=registry)
    assert out.timed_out
    assert registry.groups() == frozenset()
