"""Replay benchmark, counted: the work of the replay screen's seek to its repaint, not its time.

    python -m benchmarks.seek_work [--probes 15000 --minutes 20 | --recording FILE]
        [--seeks 5] [--fleet always|never] [--callgrind] [--json [PATH]]

`benchmarks.replay_keys` times a seek to its repaint, and this machine's speed drifts by more
than a change in the code moves it. This counts the same path instead: the real replay screen
(headless, 160x45) on `benchmarks.replay`'s steady recording, `--seeks` seeks to the targets a
seeded generator picks, each from `Player.seek` to the first frame written after the screen
hears of it. Counted two ways, each the same from run to run but for the loop's own turns while
the frame is waited for (a few hundred calls):

- Python function calls (cProfile), the seek and the repaint apart;
- with `--callgrind`, the instructions of each (valgrind's callgrind, this process run again
  under it, counting only from the first seek on).

The parts of the screen paced by wall time are fixed so that they do the same work every run:
the player's clock stands still (it plays nothing on its own), the deferred histories are filled
between seeks as its idle task would fill them, not inside the window, the collector's pacer is
off and the collector frozen after each fill, the list's timed re-sort waits, and the top bar's
fleet count runs in every repaint (`--fleet always`, the seek a user waits longest for) or never
after the first screen (`--fleet never`). Every run takes the same string hash seed. Compare
trees side by side on one recording already written (a run that writes it counts a few calls
more): run this file from each (`PYTHONPATH=TREE`); the figures are totals over the seeks.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import random
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import (
    BenchError,
    Parser,
    add_output_args,
    callgrind_control,
    callgrind_total,
    format_table,
    positive,
    report,
    run_under_callgrind,
)
from benchmarks.replay import steady_recording
from benchmarks.replay_keys import _frame_after, replay_app
from benchmarks.ui import _terminal_env

# where the seeks start from: as far into the recording as replay_keys starts playing
AT = 60.0
PARTS = ("seek", "repaint")


def _enable(profile: cProfile.Profile | None) -> None:
    if profile is not None:
        profile.enable()


def _disable(profile: cProfile.Profile | None) -> int:
    """Stop `profile`; return the calls it counted, and forget them (0: no profile)."""
    if profile is None:
        return 0
    profile.disable()
    profile.create_stats()
    calls = sum(stat[1] for stat in profile.stats.values())  # type: ignore[attr-defined]
    profile.clear()
    return calls


async def _count(path: Path, seeks: int, fleet: str, callgrind: bool) -> dict[str, Any]:
    from probetui.record.reader import open_recording
    from probetui.replay.player import Player
    from probetui.ui.screens import main as main_screen
    from probetui.ui.screens.replay import ReplayScreen
    from probetui.ui.widgets.header import TopBar

    main_screen.RESORT_EVERY = 1e9
    if fleet == "always":
        TopBar.FLEET_FREE = 1e9
    else:
        TopBar.FLEET_FREE, TopBar.FLEET_SHARE = 0.0, 1e9
    rng = random.Random(1)
    calls = {part: 0 for part in PARTS}
    with open_recording(path) as recording:
        span = recording.span()
        if span is None:
            raise BenchError(f"{path}: an empty recording")
        player = Player(recording, start=span[0] + AT, clock=lambda: 1000.0)
        app, rec = replay_app(player, path)
        app.gc_pacer = None

        def fill() -> None:
            while player.fill_some():
                pass
            gc.freeze()

        async with app.run_test(headless=False, size=(160, 45), message_hook=rec.on_message):
            await _frame_after(rec, 0, timeout=600)
            await asyncio.sleep(1.0)
            screen = app.screen
            assert isinstance(screen, ReplayScreen)
            fill()
            await asyncio.sleep(0.5)
            for i in range(seeks):
                target = rng.uniform(player.first + AT, player.last)
                n = len(rec.frames)
                if callgrind:
                    # instrumentation stays on from the first seek: a dump marks each boundary
                    callgrind_control(os.getpid(), "--instr=on" if i == 0 else "--dump=between")
                # under callgrind, no profiler: its own instructions would be counted
                seek, repaint = (
                    (None, None) if callgrind else (cProfile.Profile(), cProfile.Profile())
                )
                _enable(seek)
                player.seek(target)
                calls["seek"] += _disable(seek)
                if callgrind:
                    callgrind_control(os.getpid(), "--dump=seek")
                _enable(repaint)
                screen.poll()  # as the screen does once its player moved
                await _frame_after(rec, n, timeout=600)
                calls["repaint"] += _disable(repaint)
                if callgrind:
                    callgrind_control(os.getpid(), "--dump=repaint")
                await asyncio.sleep(0.3)
                fill()
                await asyncio.sleep(0.3)
        app.ctx.archive.close()
    return {"seeks": seeks, "fleet": fleet, "calls": None if callgrind else calls}


def _instructions(out: Path) -> dict[str, int]:
    """Sum each part's dumps (`desc: Trigger: Client Request: NAME`)."""
    totals = {part: 0 for part in PARTS}
    for dump in out.parent.glob(out.name + ".*"):
        text = dump.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: .*?(\w+)\s*$", text, re.M)
        total = callgrind_total(text)
        if trigger and total is not None and trigger.group(1) in totals:
            totals[trigger.group(1)] += total
    return totals


def _under_callgrind(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    """This file run again under callgrind, its JSON read back with the dumps' totals."""
    with tempfile.TemporaryDirectory(prefix="probetui-seek-work-") as tmp:
        out, result = Path(tmp) / "cg", Path(tmp) / "result.json"
        flags = [
            "--recording", str(path), "--seeks", str(args.seeks), "--fleet", args.fleet,
            "--instrumented", "--out", str(result),
        ]  # fmt: skip
        done = run_under_callgrind(
            out, "benchmarks.seek_work", flags, capture_output=True, text=True, timeout=3600
        )
        if done.returncode != 0 or not result.exists():
            said = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise BenchError(f"the run under callgrind failed: {said}")
        counted = json.loads(result.read_text())
        counted["instructions"] = _instructions(out)
        # the calls from a run of its own: under callgrind nothing profiles
        with _terminal_env():
            counted["calls"] = asyncio.run(_count(path, args.seeks, args.fleet, False))["calls"]
        return counted


def compute(args: argparse.Namespace) -> dict[str, Any]:
    with steady_recording(args.recording, args.probes, args.minutes, 10, "probetui-seek-work-") as (
        path,
        written,
    ):
        if args.callgrind:
            result = _under_callgrind(args, path)
        else:
            with _terminal_env():
                result = asyncio.run(_count(path, args.seeks, args.fleet, args.instrumented))
    return {"recording": {"path": str(path), **written}, **result}


def table(result: dict[str, Any]) -> str:
    calls, instructions = result["calls"], result.get("instructions")
    rows = [
        ("recording", result["recording"]["path"]),
        ("seeks", f"{result['seeks']}, the fleet counted {result['fleet']}"),
    ]
    if calls:
        rows.append(("calls", ", ".join(f"{part} {calls[part]:,}" for part in PARTS)))
    if instructions:
        rows.append(
            (
                "instructions",
                ", ".join(f"{part} {instructions[part] / 1e6:,.1f} M" for part in PARTS)
                + f"; seek to repaint {sum(instructions.values()) / 1e6:,.1f} M",
            )
        )
    return format_table("probetui replay: the work of a seek to its repaint", rows)


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":
        # a process's own string hash seed reorders the sets and dicts built of names, and the
        # calls counted with them: every run takes the same seed, so that its counts repeat
        args = sys.argv[1:] if argv is None else argv
        os.execve(
            sys.executable,
            [sys.executable, "-m", "benchmarks.seek_work", *args],
            {**os.environ, "PYTHONHASHSEED": "0"},
        )
    p = Parser(prog="python -m benchmarks.seek_work", description=__doc__.split("\n\n")[0])
    p.add_argument("--probes", type=positive(int, "--probes"), default=15000)
    p.add_argument("--minutes", type=positive(float, "--minutes"), default=20.0)
    p.add_argument("--seeks", type=positive(int, "--seeks"), default=5)
    p.add_argument("--fleet", choices=("always", "never"), default="always")
    p.add_argument(
        "--recording", metavar="FILE", help="a steady recording to use (written there if absent)"
    )
    p.add_argument("--callgrind", action="store_true", help="count instructions too (valgrind)")
    # the run under callgrind itself: it drives callgrind_control at each boundary
    p.add_argument("--instrumented", action="store_true", help=argparse.SUPPRESS)
    add_output_args(p)
    args = p.parse_args(argv)
    return report("seek_work", args, lambda: compute(args), table)


if __name__ == "__main__":
    raise SystemExit(main())
