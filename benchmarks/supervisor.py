"""Measure what the per-container supervisor costs: start latency, CPU, memory.

    python -m benchmarks.supervisor [--starts 40] [--resident 9] [--attempts 200]
                                    [--json [PATH]] [--out PATH]

(a) Start: `--starts` containers of `/bin/true`, one after another, through `ContainerProcess`
(the supervisor) and through a direct spawn of the same command the way `ContainerProcess` did
before it (`subprocess_exec`, a session of its own), the two alternating: the time until start()
returns (the container counts as started), until its exit is reaped, and the CPU of the
children (supervisor + container) per start.

(b) Memory: `--resident` containers of `sleep` kept running, and each supervisor's RSS, PSS
and private (unshared) memory from /proc/PID/smaps_rollup: PSS is the fair share of what it
costs the machine, private is what one more container adds.

(c) Exec probe attempts: `--attempts` runs of `/bin/true` through a running container's
supervisor (`ContainerProcess.exec`) and as probetui's own child (`run_local`), the two
alternating in blocks of 10: the time per attempt, probetui's own CPU per attempt, and the CPU
of the rest (the supervisor's and the command's, read from /proc in clock ticks; the command's
alone for `run_local`).

(d) The end: one container that leaves `--resident` processes running outside its group (each
a daemon: two forks and setsid), stopped: the time from the stop to the exit being reaped, with
the supervisor finding and killing them all, against a container of one process.

A shared 2-core machine: the figures are noisy; the load while measuring is in the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    Parser,
    add_output_args,
    environment,
    fmt_ms,
    format_table,
    positive,
    report,
    summary_ms,
)
from probetui.probe.exec import run_local
from probetui.runtime.local.groups import ProcessGroupRegistry
from probetui.runtime.local.process import ContainerProcess
from probetui.runtime.local.procspec import ProcessSpec

ARGV = ("/bin/true",)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _supervised(registry: ProcessGroupRegistry) -> tuple[float, float]:
    proc = ContainerProcess(ProcessSpec(ARGV, dict(os.environ)), registry=registry)
    t0 = time.perf_counter()
    await proc.start()
    started = time.perf_counter() - t0
    await proc.wait()
    return started, time.perf_counter() - t0


class _Exited(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.exited = asyncio.get_running_loop().create_future()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


async def _direct() -> tuple[float, float]:
    loop = asyncio.get_running_loop()
    t0 = time.perf_counter()
    transport, protocol = await loop.subprocess_exec(
        _Exited,
        *ARGV,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=dict(os.environ),
    )
    started = time.perf_counter() - t0
    await protocol.exited
    transport.close()
    return started, time.perf_counter() - t0


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _tree_cpu(pid: int) -> float:
    """A process's CPU and that of the children it has reaped, from /proc (clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime, stime, cutime, cstime: fields 14-17 of stat, 12-15 after the command
    return sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")


async def _attempts(attempts: int) -> dict[str, Any]:
    registry = ProcessGroupRegistry()
    env = dict(os.environ)
    figures: dict[str, dict[str, list[float]]] = {
        mode: {"wall": [], "self": [], "children": []} for mode in ("supervised", "direct")
    }
    proc = ContainerProcess(ProcessSpec(("sleep", "600"), env), registry=registry)
    await proc.start()
    assert proc.supervisor_pid is not None
    try:
        for block in range(max(attempts // 10, 1) * 2):
            mode = "supervised" if block % 2 == 0 else "direct"
            own = _self_cpu()
            cpu = _tree_cpu(proc.supervisor_pid) if mode == "supervised" else _children_cpu()
            for _ in range(10):
                t0 = time.perf_counter()
                if mode == "supervised":
                    out = await proc.exec(ARGV, 5.0)
                else:
                    out = await run_local(ARGV, 5.0, env=env)
                figures[mode]["wall"].append(time.perf_counter() - t0)
                assert out.exit_code == 0, out
            figures[mode]["self"].append(_self_cpu() - own)
            after = _tree_cpu(proc.supervisor_pid) if mode == "supervised" else _children_cpu()
            figures[mode]["children"].append(after - cpu)
    finally:
        await proc.stop(1.0)
    result: dict[str, Any] = {}
    for mode, got in figures.items():
        count = len(got["wall"])
        result[mode] = {
            "attempt": summary_ms(got["wall"]),
            "probetui_cpu_ms_per_attempt": round(sum(got["self"]) / count * 1000, 3),
            "other_cpu_ms_per_attempt": round(sum(got["children"]) / count * 1000, 3),
        }
    return result


# leaves argv[1] daemons (each: a fork, setsid(), a fork again, the grandchild sleeps), says
# "up", sleeps
_DAEMONS = """\
import os, sys, time
for _ in range(int(sys.argv[1])):
    child = os.fork()
    if child == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(60)
        os._exit(0)
    os.waitpid(child, 0)
print("up", flush=True)
time.sleep(60)
"""


async def _end(count: int, rounds: int) -> dict[str, Any]:
    """Stop a container that left `count` daemons, and one that left none: stop to reaped."""
    registry = ProcessGroupRegistry()
    runs: dict[str, list[float]] = {"daemons": [], "alone": []}
    for _ in range(rounds):
        for mode in runs:
            argv = (sys.executable, "-c", _DAEMONS, str(count if mode == "daemons" else 0))
            proc = ContainerProcess(ProcessSpec(argv, dict(os.environ)), registry=registry)
            await proc.start()
            async with asyncio.timeout(10):
                while not proc.output_tail("stdout"):  # noqa: ASYNC110 - a real process
                    await asyncio.sleep(0.01)
            t0 = time.perf_counter()
            await proc.stop(1.0)
            runs[mode].append(time.perf_counter() - t0)
    return {mode: summary_ms(values) for mode, values in runs.items()}


def _smaps(pid: int) -> dict[str, float]:
    fields: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0]) / 1024  # kB -> MiB
    return {
        "rss_mb": round(fields["Rss"], 2),
        "pss_mb": round(fields["Pss"], 2),
        "private_mb": round(fields["Private_Clean"] + fields["Private_Dirty"], 2),
    }


async def _measure(starts: int, resident: int, attempts: int) -> dict[str, Any]:
    registry = ProcessGroupRegistry()
    load_before = os.getloadavg()[0]
    runs: dict[str, dict[str, list[float]]] = {
        mode: {"started": [], "exited": [], "cpu": []} for mode in ("supervised", "direct")
    }
    for i in range(starts * 2):
        mode = "supervised" if i % 2 == 0 else "direct"
        cpu = _children_cpu()
        started, exited = await (_supervised(registry) if mode == "supervised" else _direct())
        runs[mode]["started"].append(started)
        runs[mode]["exited"].append(exited)
        runs[mode]["cpu"].append(_children_cpu() - cpu)

    procs = [
        ContainerProcess(ProcessSpec(("sleep", "60"), dict(os.environ)), registry=registry)
        for _ in range(resident)
    ]
    try:
        for proc in procs:
            await proc.start()
        await asyncio.sleep(0.2)
        memory = [_smaps(proc.supervisor_pid) for proc in procs if proc.supervisor_pid]
    finally:
        registry.kill_all()
        for proc in procs:
            if proc.pid is not None:
                await proc.wait()

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 2) if values else 0.0

    result: dict[str, Any] = {
        "starts": starts,
        "resident": resident,
        "environment": environment(load_before=load_before, load_after=os.getloadavg()[0]),
    }
    for mode, figures in runs.items():
        result[mode] = {
            "start": summary_ms(figures["started"]),
            "start_to_exit": summary_ms(figures["exited"]),
            "cpu_ms_per_start": round(sum(figures["cpu"]) / len(figures["cpu"]) * 1000, 2),
        }
    result["supervisor_memory"] = {
        key: mean([m[key] for m in memory]) for key in ("rss_mb", "pss_mb", "private_mb")
    }
    result["exec"] = await _attempts(attempts)
    result["end"] = await _end(resident, rounds=5)
    return result


def _table(result: dict[str, Any]) -> str:
    sup, direct, mem = result["supervised"], result["direct"], result["supervisor_memory"]
    execs, end = result["exec"], result["end"]
    rows = [
        ("start, supervised (ms)", fmt_ms(sup["start"])),
        ("start, direct (ms)", fmt_ms(direct["start"])),
        ("start to exit, supervised (ms)", fmt_ms(sup["start_to_exit"])),
        ("start to exit, direct (ms)", fmt_ms(direct["start_to_exit"])),
        (
            "CPU per start, supervised / direct",
            f"{sup['cpu_ms_per_start']} / {direct['cpu_ms_per_start']} ms",
        ),
        (
            f"supervisor memory (mean of {result['resident']})",
            f"RSS {mem['rss_mb']} MiB, PSS {mem['pss_mb']} MiB, private {mem['private_mb']} MiB",
        ),
        ("exec attempt, supervised (ms)", fmt_ms(execs["supervised"]["attempt"])),
        ("exec attempt, direct (ms)", fmt_ms(execs["direct"]["attempt"])),
        (
            "probetui CPU per attempt, supervised / direct",
            f"{execs['supervised']['probetui_cpu_ms_per_attempt']} / "
            f"{execs['direct']['probetui_cpu_ms_per_attempt']} ms",
        ),
        (
            "other CPU per attempt, supervised / direct",
            f"{execs['supervised']['other_cpu_ms_per_attempt']} / "
            f"{execs['direct']['other_cpu_ms_per_attempt']} ms",
        ),
        (f"stop to reaped, {result['resident']} daemons left (ms)", fmt_ms(end["daemons"])),
        ("stop to reaped, nothing left (ms)", fmt_ms(end["alone"])),
        (
            "load (1 min) before / after",
            f"{result['environment']['load_before']:.2f} / {result['environment']['load_after']:.2f}",
        ),
    ]
    return format_table("per-container supervisor", rows)


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="python -m benchmarks.supervisor", description=__doc__)
    parser.add_argument("--starts", type=positive(int, "--starts"), default=40)
    parser.add_argument("--resident", type=positive(int, "--resident"), default=9)
    parser.add_argument("--attempts", type=positive(int, "--attempts"), default=200)
    add_output_args(parser)
    args: argparse.Namespace = parser.parse_args(argv)
    return report(
        "supervisor",
        args,
        lambda: asyncio.run(_measure(args.starts, args.resident, args.attempts)),
        _table,
    )


if __name__ == "__main__":
    raise SystemExit(main())
