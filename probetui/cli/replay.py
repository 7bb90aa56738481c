"""`probetui replay FILE` reads a recording (`--record`) back.

Without `--no-ui` it is the live screen on the recording, a time cursor standing for "now"
(`probetui.replay.player`), put at `--at T` (default: the recording's end).

`--no-ui --output jsonl` prints its events in the live headless vocabulary, the same lines
`--no-ui --output jsonl` printed while it was recorded (in time order), filtered by `--since`,
`--until` and `-l` (matched against the labels of the recorded specs). The file is only read,
also while a recorder still writes it. A file that is not a readable recording is one line and
exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
from typing import TYPE_CHECKING

from probetui.cli.errors import EXIT_OK, UsageError
from probetui.cli.live import silence_stdout

if TYPE_CHECKING:
    from probetui.record.reader import Recording
    from probetui.record.selector import Selector


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Read a recording made with --record: the live screen with a time cursor (scrub, "
        "jump to the next kill or flip, play at 1x/10x/100x), or its events as JSON lines."
    )
    allow_relative_times(p)
    p.add_argument("file", metavar="FILE", help="a recording written by --record")
    p.add_argument("--no-ui", action="store_true", help="no screen: print events as JSON lines")
    p.add_argument(
        "-o",
        "--output",
        choices=("jsonl",),
        help="output format (implies --no-ui): one JSON object a line",
    )
    p.add_argument(
        "--since",
        metavar="T",
        help="from T: HH:MM[:SS] (the latest such time in the recording), -6h / -30m / -90s "
        "(back from its end), +10m (on from its start) or an ISO-8601 time",
    )
    p.add_argument("--until", metavar="T", help="up to T (forms as --since)")
    p.add_argument("--at", metavar="T", help="screen: the cursor's first place (forms as --since)")
    p.add_argument(
        "-l", "--selector", metavar="SELECTOR", help="only pods whose labels match (as kubectl)"
    )


def allow_relative_times(p: argparse.ArgumentParser) -> None:
    """`--since -6h`: a value that starts with "-" and reads as a relative time is a value, as
    argparse already treats negative numbers (its matcher has no public setter)."""
    p._negative_number_matcher = re.compile(r"^-(\d+(\.\d+)?[dhms]?)+$")


def run(args: argparse.Namespace) -> int:
    from probetui.record.reader import open_recording
    from probetui.record.schema import RecordingError
    from probetui.record.selector import SelectorError, parse_selector

    if not (args.no_ui or args.output):
        return _screen(args)
    if args.at is not None:
        raise UsageError("--at places the screen's cursor; with --no-ui use --since/--until")
    try:
        selector = parse_selector(args.selector)
    except SelectorError as e:
        raise UsageError(f"-l {e}") from None
    try:
        return _export(open_recording(args.file), args, selector)
    except RecordingError as e:
        raise UsageError(str(e)) from None


def _export(recording: Recording, args: argparse.Namespace, selector: Selector) -> int:
    from probetui.record.schema import RecordingError
    from probetui.record.timespec import TimeSpecError, parse_time
    from probetui.timeline.events import NOT_IN_JSONL

    with recording:
        span = recording.span()
        try:
            since = parse_time(args.since, span) if args.since else None
            until = parse_time(args.until, span) if args.until else None
        except TimeSpecError as e:
            raise UsageError(f"--since/--until {e}") from None
        uids = None
        if args.selector:
            uids = [p.uid for p in recording.pods() if _matches(recording, p.uid, selector)]
        out = sys.stdout
        events = recording.events(since, until, uids)
        try:
            for event in events:
                if event.type not in NOT_IN_JSONL:
                    out.write(event.to_line() + "\n")
            out.flush()
        except BrokenPipeError:
            silence_stdout()
        except RecordingError:
            # what came before the damage is out whole, then the one line saying where
            with contextlib.suppress(BrokenPipeError):
                out.flush()
            raise
        finally:
            # closed here, before the file: nothing of it is left for the collector to finish
            events.close()
    return EXIT_OK


def _matches(recording: Recording, uid: str, selector: Selector) -> bool:
    """Tell whether any recorded spec of the pod carries matching labels."""
    return any(selector.matches(labels) for labels in recording.labels_of(uid))


def _screen(args: argparse.Namespace) -> int:
    from probetui.cli.config import load_config, ui_settings
    from probetui.record.schema import RecordingError
    from probetui.record.timespec import TimeSpecError
    from probetui.ui.app import run_replay

    for flag, value in (("--since", args.since), ("--until", args.until), ("-l", args.selector)):
        if value is not None:
            raise UsageError(f"{flag} filters the --no-ui export; on the screen use --at and /")
    ui = ui_settings(load_config(args), args)
    try:
        return run_replay(args.file, start=args.at, **ui)
    except (RecordingError, TimeSpecError) as e:
        raise UsageError(str(e)) from None
