"""Replay benchmark, the screen's side: key press to repaint while playing a large recording.

    python -m benchmarks.replay_keys --probes 15000 --minutes 20 --duration 30 [--speed 100]
        [--recording FILE] [--json [PATH]]

The recording is `benchmarks.replay`'s: `--probes` steady HTTP readiness probes (one pod each)
at `--period` for `--minutes`, written through the real `Recorder` (or `--recording FILE`, one
written before, kept: writing 15,000 probes x 20 min takes about a minute). The real replay
screen (`ProbeApp` with `ReplayScreen` over a `Player`, as `probetui replay` builds it) runs on
`benchmarks.ui`'s null terminal (every frame encoded as for a real terminal, then dropped),
plays at `--speed` (0: stands paused, for comparison) from `--at` seconds after the recording's start, and `j` / `k` are pressed
with a pause of 0.2-0.6 s between a repaint and the next press (someone moving through the
list while it plays). Key press to repaint is measured as `benchmarks.ui` does: from handing
the key to the app as a terminal driver does until the end of the first frame written in which
the timeline was drawn for the newly selected container.

Before the keys: the first screen (from opening the file to the first frame written, the
cursor at `--at`) and `SEEKS` seeks to random moments made as the go-to prompt makes them, each
to the next frame written. Also reported: the speed playing reached (recorded seconds per wall
second), the slices the player fed while the keys were pressed (each is what a key can wait
for), and the frames.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
from datetime import UTC
from pathlib import Path
from typing import Any

from benchmarks.common import Parser, add_output_args, format_table, positive, report, summary_ms
from benchmarks.replay import steady_recording
from benchmarks.ui import (
    _expect,
    _key_event,
    _null_terminal,
    _Press,
    _Recorder,
    _terminal_env,
    press_row,
)

GOAL_P99_MS = 100.0
KEYS = ("j", "k")
SEEKS = 5  # seeks to random moments before playing, each to its repaint
PAUSE = (0.2, 0.6)


def replay_app(player: Any, path: Path) -> tuple[Any, _Recorder]:
    """The real replay screen on `player`, for a headless terminal, with the frames it writes
    timed (`_Recorder`)."""
    from probetui.record.archive import HistoryArchive
    from probetui.ui.app import ProbeApp
    from probetui.ui.screens.replay import ReplayScreen

    app = ProbeApp(
        player,
        player.store,
        now=player.now,
        tz=UTC,
        make_screen=lambda ctx: ReplayScreen(ctx, player),
        archive=HistoryArchive(path),
    )
    app.driver_class = _null_terminal()
    rec = _Recorder()
    rec.install(app)
    return app, rec


async def _measure(path: Path, duration: float, speed: float, at: float) -> dict[str, Any]:
    from probetui.record.reader import open_recording
    from probetui.replay import player as player_module
    from probetui.replay.player import Player

    slices: list[tuple[float, float]] = []  # (when, seconds) of each slice the player fed
    seek = Player.seek

    def timed_seek(self: Player, t: float) -> None:
        start = time.perf_counter()
        seek(self, t)
        slices.append((start, time.perf_counter() - start))

    rng = random.Random(1)
    with open_recording(path) as recording:
        span = recording.span()
        assert span is not None, "an empty recording"
        t0 = time.perf_counter()
        player = Player(recording, start=span[0] + at)
        opened = time.perf_counter() - t0
        app, rec = replay_app(player, path)
        presses: list[_Press] = []
        player_module.Player.seek = timed_seek  # type: ignore[method-assign]
        try:
            async with app.run_test(headless=False, size=(160, 45), message_hook=rec.on_message):
                first_screen = await _frame_after(rec, 0) - t0
                await asyncio.sleep(1.0)
                screen = app.screen
                # a seek as the go-to prompt makes one, to the next frame written after it
                seeks = []
                for _ in range(SEEKS):
                    target = rng.uniform(player.first + at, player.last)
                    n = len(rec.frames)
                    start = time.perf_counter()
                    player.seek(target)
                    screen._moved()
                    seeks.append(await _frame_after(rec, n) - start)
                    await asyncio.sleep(0.5)
                player.seek(player.first + at)  # playing begins where it was asked to
                screen._moved()
                if speed:
                    player.set_speed(speed)
                    player.toggle()
                    await asyncio.sleep(1.0)  # playing settles: the stream reads on
                n_frames = len(rec.frames)
                slices.clear()
                cursor0, wall0 = player.cursor, time.perf_counter()
                end = wall0 + duration
                i = 0
                while time.perf_counter() < end and (player.playing or not speed):
                    key = KEYS[i % len(KEYS)]
                    i += 1
                    start = time.perf_counter()
                    widget, done = _expect(key, screen, rec, start)
                    press = _Press(key, start, done, widget, message=_key_event(key))
                    rec.press = press
                    app._driver.send_message(press.message)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(press.event.wait(), 2.0)
                    rec.press = None
                    presses.append(press)
                    await asyncio.sleep(rng.uniform(*PAUSE))
                wall1, cursor1 = time.perf_counter(), player.cursor
                still_playing = player.playing
                player.playing = False
            app.ctx.archive.close()  # type: ignore[union-attr]
        finally:
            player_module.Player.seek = seek  # type: ignore[method-assign]
            rec.uninstall()
    window = wall1 - wall0
    latencies = [p.t_done - p.t0 for p in presses if p.t_done is not None]
    keys = summary_ms(latencies)
    fed = [d for t, d in slices if t <= wall1]
    return {
        "open_s": round(opened, 3),
        # from opening the file to the first frame written (the list, the panes, the top bar)
        "first_screen_s": round(first_screen, 3),
        "seek_to_repaint": summary_ms(seeks),
        "window_s": round(window, 2),
        "speed": speed,
        "speed_reached": round((cursor1 - cursor0) / window, 1),
        "played_to_the_end": bool(speed) and not still_playing,
        "key_to_repaint": keys,
        "keys_without_repaint": [p.key for p in presses if p.t_done is None],
        "goal_p99_ms": GOAL_P99_MS,
        "goal_met": bool(keys["n"])
        and all(p.t_done is not None for p in presses)
        and keys["p99_ms"] < GOAL_P99_MS,
        "slices": summary_ms(fed),
        "slice_seconds": player.slice,
        "frames_per_s": round(len([t for t in rec.frames[n_frames:] if t <= wall1]) / window, 1),
        "presses": [press_row(p, wall0) for p in presses],
    }


async def _frame_after(rec: _Recorder, n: int, timeout: float = 30.0) -> float:
    """When frame number `n` (from 0) was written, waiting for it up to `timeout`."""
    for _ in range(int(timeout / 0.001)):
        if len(rec.frames) > n:
            return rec.frames[n]
        await asyncio.sleep(0.001)
    raise TimeoutError(f"no frame written in {timeout:g} s")


def compute(args: argparse.Namespace) -> dict[str, Any]:
    with (
        steady_recording(
            args.recording, args.probes, args.minutes, args.period, "probetui-replay-keys-"
        ) as (path, written),
        _terminal_env(),
    ):
        result = asyncio.run(_measure(path, args.duration, args.speed, args.at))
    return {"recording": {"path": str(path), **written}, **result}


def table(result: dict[str, Any]) -> str:
    k, s, sk = result["key_to_repaint"], result["slices"], result["seek_to_repaint"]
    rows = [
        ("recording", result["recording"]["path"]),
        (
            "key press to repaint",
            f"p50 {k['p50_ms']} ms, p90 {k['p90_ms']} ms, p99 {k['p99_ms']} ms, max "
            f"{k['max_ms']} ms (n={k['n']}; goal p99 < {GOAL_P99_MS:g} ms: "
            f"{'met' if result['goal_met'] else 'NOT met'})",
        ),
        ("keys without repaint", ", ".join(result["keys_without_repaint"]) or "none"),
        (
            "first screen",
            f"{result['first_screen_s']:.2f} s from opening the file to the first frame",
        ),
        (
            "seek to repaint",
            f"p50 {sk['p50_ms']} ms, max {sk['max_ms']} ms (n={sk['n']}; a seek back or on, "
            "as the go-to prompt makes it, to the next frame)",
        ),
        (
            "playing",
            f"at {result['speed']:g}x reached {result['speed_reached']:g}x over "
            f"{result['window_s']:g} s" + (" (hit the end)" if result["played_to_the_end"] else ""),
        ),
        (
            "slices fed",
            f"p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, max {s['max_ms']} ms (n={s['n']}; "
            f"{result['slice_seconds']:g} recorded s each at most)",
        ),
        ("frames", f"{result['frames_per_s']:g}/s"),
    ]
    return format_table("probetui replay: keys while playing", rows)


def main(argv: list[str] | None = None) -> int:
    p = Parser(prog="python -m benchmarks.replay_keys", description=__doc__.split("\n\n")[0])
    p.add_argument("--probes", type=positive(int, "--probes"), default=15000)
    p.add_argument("--minutes", type=positive(float, "--minutes"), default=20.0)
    p.add_argument("--period", type=positive(int, "--period"), default=10)
    p.add_argument("--duration", type=positive(float, "--duration"), default=30.0)
    p.add_argument(
        "--speed", type=float, default=100.0, help="1, 10 or 100 (x); 0: paused, for comparison"
    )
    p.add_argument("--at", type=float, default=60.0, help="where playing begins (s from start)")
    p.add_argument(
        "--recording", metavar="FILE", help="a steady recording to use (written there if absent)"
    )
    add_output_args(p)
    args = p.parse_args(argv)
    return report("replay_keys", args, lambda: compute(args), table)


if __name__ == "__main__":
    raise SystemExit(main())
