"""What every benchmark prints and writes: a two-column table, one JSON file, one-line errors.

Each benchmark module builds a result dict and a list of table rows, then calls `emit`. The JSON
goes to `--json PATH` when given, else to `benchmarks/results/NAME-YYYYmmdd-HHMMSS.json` (that
directory is git-ignored). `--json` with no path prints the JSON on stdout instead of the table,
as `benchmarks.engine --json` does.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PRINT_JSON = "-"  # the value `--json` takes when given without a path


class BenchError(Exception):
    """Bad input or a missing prerequisite: one line for the user, exit status 2."""


# -- figures ----------------------------------------------------------------------------------


def quantile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank quantile of an already sorted, non-empty sequence."""
    index = min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))
    return ordered[index]


def summary_ms(seconds: Iterable[float]) -> dict[str, float | int | None]:
    """p50 / p90 / p99 / max / mean in milliseconds, and how many samples they rest on."""
    ordered = sorted(seconds)
    if not ordered:
        return {"n": 0, "p50_ms": None, "p90_ms": None, "p99_ms": None, "max_ms": None}
    return {
        "n": len(ordered),
        "p50_ms": round(quantile(ordered, 0.50) * 1000, 2),
        "p90_ms": round(quantile(ordered, 0.90) * 1000, 2),
        "p99_ms": round(quantile(ordered, 0.99) * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
        "mean_ms": round(sum(ordered) / len(ordered) * 1000, 2),
    }


def fmt_ms(summary: dict[str, Any]) -> str:
    if not summary.get("n"):
        return "no samples"
    return (
        f"p50 {summary['p50_ms']:.1f}  p99 {summary['p99_ms']:.1f}  "
        f"max {summary['max_ms']:.1f}  (n={summary['n']})"
    )


def rss_mb() -> float:
    """This process's resident set size now, in MB (10^6 bytes)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def peak_rss_mb() -> float:
    """This process's peak resident set size, in MB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process, from /proc/PID/stat (0.0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime and stime: fields 14 and 15 of stat, 12 and 13 after the command name
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent not idle, from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            parts = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)  # idle + iowait
    return (sum(parts[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def environment(**extra: Any) -> dict[str, Any]:
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "commit": _commit(),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    env.update(extra)
    return env


def reference_ms(rounds: int = 5) -> float:
    """Return the fastest of `rounds` runs of one fixed pure-Python loop, in ms of CPU: how fast
    this machine ran Python at the time, so that a figure that moved between two days can be
    told apart from a change in the code (a VM's speed drifts with its neighbours)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        table: dict[str, int] = {}
        for i in range(20_000):
            key = f"probe-{i % 997}"
            table[key] = table.get(key, 0) + len(key)
        best = min(best, time.process_time() - start)
    return round(best * 1000, 2)


# -- callgrind ----------------------------------------------------------------------------------


def callgrind_command(out: str | Path) -> list[str]:
    """valgrind's callgrind, to put before a command: it instruments nothing until told
    (`callgrind_control --instr=on`), so start-up runs at valgrind's plain speed uncounted."""
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]


def run_under_callgrind(
    out: str | Path, module: str, argv: Sequence[str], **run: Any
) -> subprocess.CompletedProcess[Any]:
    """Run `python -m module argv` under callgrind (`callgrind_command(out)`), `run` passed to
    `subprocess.run`. One string hash seed for every run: it orders sets and dicts, and the
    work done with them, so that the counts repeat."""
    command = [*callgrind_command(out), sys.executable, "-m", module, *argv]
    try:
        return subprocess.run(command, env={**os.environ, "PYTHONHASHSEED": "0"}, **run)
    except FileNotFoundError:
        raise BenchError("valgrind is not installed (apt-get install valgrind)") from None


def callgrind_control(pid: int, *options: str) -> None:
    """Tell the callgrind run `pid` each of `options` in turn (`--instr=on`, `--dump=NAME`)."""
    for option in options:
        try:
            done = subprocess.run(
                ["callgrind_control", option, str(pid)], capture_output=True, timeout=600
            )
        except FileNotFoundError:
            raise BenchError("valgrind is not installed (apt-get install valgrind)") from None
        if done.returncode != 0:
            raise BenchError(f"callgrind_control {option} {pid} failed")


def callgrind_total(dump: str) -> int | None:
    """Return the instructions (Ir) one callgrind dump counted, None for a partial file."""
    found = re.search(r"^(?:totals|summary): (\d+)", dump, re.M)
    return int(found.group(1)) if found else None


async def callgrind_dump(pid: int, out: str | Path, *, hold_loop: bool = False) -> int:
    """Dump the counts of the callgrind run `pid` (writing to `out`) since it was last zeroed;
    return its instructions (Ir), which do not depend on how fast the machine runs, unlike its
    CPU seconds. `hold_loop`: the running loop waits for the dump, so that nothing it runs
    falls between what was counted and the dump (for a run that controls itself)."""
    out = Path(out)
    before = _dumps(out)
    if hold_loop:
        callgrind_control(pid, "--dump")
    else:
        await asyncio.to_thread(callgrind_control, pid, "--dump")
    for _ in range(600):
        # a dump has a file of its own, or rewrites one an earlier run left
        for path, stamp in _dumps(out).items():
            if before.get(path) != stamp:
                total = callgrind_total(path.read_text())
                if total is not None:
                    return total
        await asyncio.sleep(0.1)
    raise BenchError(f"callgrind wrote no dump next to {out}")


def _dumps(out: Path) -> dict[Path, tuple[int, int]]:
    """The dump files next to `out`, each with its modification time and size."""
    found = {}
    for path in out.parent.glob(out.name + ".*"):
        with contextlib.suppress(OSError):
            stat = path.stat()
            found[path] = (stat.st_mtime_ns, stat.st_size)
    return found


def _commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line on stderr (naming the fix) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


# -- output -----------------------------------------------------------------------------------


def format_table(title: str, rows: Sequence[tuple[str, str]]) -> str:
    width = max((len(name) for name, _ in rows), default=0)
    lines = [title, "-" * len(title)]
    lines += [f"{name.ljust(width)}  {value}" for name, value in rows]
    return "\n".join(lines)


def add_output_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        nargs="?",
        const=PRINT_JSON,
        metavar="PATH",
        help="write the JSON result to PATH (default: benchmarks/results/NAME-TIME.json); "
        "with no PATH, print the JSON on stdout instead of the table",
    )
    parser.add_argument("--out", metavar="PATH", help="write the JSON result to PATH")


def emit(name: str, result: dict[str, Any], table: str, args: argparse.Namespace) -> Path:
    """Write the JSON file and print the table (or the JSON); returns where the file went."""
    path_arg = args.out or (args.json if args.json not in (None, PRINT_JSON) else None)
    path = Path(path_arg) if path_arg else default_path(name)
    payload = json.dumps(result, indent=2, default=str)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(payload + "\n")
    if args.json == PRINT_JSON:
        print(payload)
    else:
        print(table)
        print(f"JSON: {path}")
    return path


def default_path(name: str) -> Path:
    return RESULTS_DIR / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"


def run_main(prog: str, body: Callable[[], int]) -> int:
    """Run a benchmark's main: BenchError becomes one line on stderr and exit status 2."""
    try:
        return body()
    except BenchError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def report(
    name: str,
    args: argparse.Namespace,
    compute: Callable[[], dict[str, Any]],
    table: Callable[[dict[str, Any]], str],
) -> int:
    """A benchmark's main after parsing: compute the result, then write and print it (`emit`);
    a BenchError is one line and exit status 2 (`run_main`)."""

    def body() -> int:
        result = compute()
        emit(name, result, table(result), args)
        return 0

    return run_main(f"benchmarks.{name}", body)


def positive(kind: type[int] | type[float], name: str) -> Callable[[str], int | float]:
    """An argparse type: a number above zero, or one line saying which flag is wrong."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
        return value

    return parse


__all__ = [
    "PRINT_JSON",
    "RESULTS_DIR",
    "BenchError",
    "Parser",
    "add_output_args",
    "default_path",
    "emit",
    "environment",
    "fmt_ms",
    "format_table",
    "machine_busy_seconds",
    "peak_rss_mb",
    "process_cpu_seconds",
    "quantile",
    "rss_mb",
    "run_main",
    "summary_ms",
]


def terminal_size(text: str) -> tuple[int, int]:
    """`--size COLSxROWS` for the benchmarks that drive the real app: at least 80x20."""
    cols, sep, rows = text.partition("x")
    if not sep or not cols.isdigit() or not rows.isdigit() or int(cols) < 80 or int(rows) < 20:
        raise BenchError(f"--size {text!r}: expected COLSxROWS, at least 80x20, e.g. 160x45")
    return int(cols), int(rows)
