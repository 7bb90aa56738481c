"""Run `probetui local` and `probetui demo`, and the live runner they share with the cluster view.

`local` and `demo` run the live engine over the local runtime. With `--no-ui` (or `--output
jsonl`) the engine runs headless: one JSON object a line on stdout, flushed line by line. It
ends by itself after `--duration`, or when every pod has ended for good (exit 0), or on SIGINT
(exit 130) or SIGTERM (exit 143): the engine is cancelled, every container is stopped (SIGTERM,
SIGKILL after at most 2 s) and reaped, and what was recorded is already on stdout. A reader
that goes away (`| head`) ends it too, with exit 0.

`--record FILE` (every live mode, screen or not) adds the recorder (`probetui.record`) to the
engine's sinks; the file is checked and locked before anything starts, and closed, its last
batch written, on every way out. `--retain` bounds what it keeps.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from probetui.cli.errors import EXIT_OK, EXIT_SIGNAL_BASE, UsageError
from probetui.cli.summary import add_summary_arguments, summary_sink
from probetui.durations import duration_arg

DURATION_HELP = "stop by itself after DURATION (e.g. 90s, 5m, 1h30m; a bare number is seconds)"

if TYPE_CHECKING:
    from probetui.runtime.base import Runtime


def add_live_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-ui", action="store_true", help="no screen: print events as JSON lines")
    p.add_argument(
        "-o",
        "--output",
        choices=("jsonl",),
        help="headless output format (implies --no-ui): one JSON object per line",
    )
    p.add_argument("--duration", type=duration_arg, metavar="DURATION", help=DURATION_HELP)
    from probetui.shards.live import AUTO, parse_shards

    p.add_argument(
        "--shards",
        type=parse_shards,
        default=AUTO,
        metavar="N|auto",
        help="run the prober in N shard processes split by pod (0: in this process); default "
        "auto: in this process for few attempts a second, else shards by the cores",
    )
    add_summary_arguments(p)
    add_record_arguments(p)


def add_record_arguments(
    p: argparse.ArgumentParser | argparse._ArgumentGroup, prefix: str = ""
) -> None:
    p.add_argument(
        "--record",
        dest=f"{prefix}record",
        metavar="FILE",
        help="also write everything to FILE (SQLite), for 'probetui replay FILE'",
    )
    p.add_argument(
        "--retain",
        dest=f"{prefix}retain",
        metavar="DURATION",
        help="with --record: keep only the last DURATION (e.g. 24h, 30m); default everything",
    )


def add_local_arguments(loc: argparse.ArgumentParser) -> None:
    loc.description = (
        "Run each container's command and args as a local process (no images), "
        "with probetui playing the kubelet: probes on 127.0.0.1, kills, restarts with "
        "CrashLoopBackOff, readiness. Headless exit status: 0 at --duration or when every pod "
        "has ended, 130 on SIGINT, 143 on SIGTERM, 2 for a manifest that cannot run."
    )
    loc.add_argument("manifest", metavar="MANIFEST", help="Pod (or workload) manifest, YAML")
    loc.add_argument(
        "-c",
        "--container",
        action="append",
        default=[],
        metavar="CONTAINER",
        help="run only this container (repeatable); the others are left out",
    )
    add_live_arguments(loc)
    loc.add_argument(
        "--read-only",
        action="store_true",
        help="start, signal and exec nothing: show the manifest's probes only (UI only)",
    )
    loc.add_argument(
        "--write",
        action="store_true",
        help="lift the config file's or the environment's read-only for this run (not a lock)",
    )


def add_demo_arguments(demo: argparse.ArgumentParser) -> None:
    demo.description = (
        "Start the bundled demo services as local processes and probe them as the "
        "kubelet would. Headless exit status as for 'probetui local'."
    )
    demo.add_argument(
        "--print-manifest",
        action="store_true",
        help="print the demo's Pod manifest (with this run's ports) and exit",
    )
    add_live_arguments(demo)


def run_local(args: argparse.Namespace) -> int:
    from probetui.cli.config import load_config, read_only, redaction, ui_settings
    from probetui.runtime.base import RuntimeFailure
    from probetui.runtime.local.runtime import LocalRuntime
    from probetui.spec.errors import ManifestError
    from probetui.spec.parse import load_pods

    headless = headless_requested(args)
    config = load_config(args)
    ui = ui_settings(config, args)
    decided = read_only(config, None, args.read_only, args.write)
    if decided.value and headless:
        lift = "drop --read-only" if decided.reason == "--read-only" else "pass --write"
        if decided.locked:
            lift = "nothing lifts a locked read-only"
        raise UsageError(
            f"read-only ({decided.reason}): the local runtime would start no process, so there "
            f"is nothing to record headless; {lift}, or leave out --no-ui to browse the probes"
        )
    try:
        pods = load_pods(args.manifest)
    except ManifestError as e:
        raise UsageError(str(e)) from None
    try:
        runtime = LocalRuntime(
            pods,
            source=f"local {args.manifest}",
            only=args.container,
            read_only=decided.value,
        )
    except RuntimeFailure as e:
        raise UsageError(f"{args.manifest}: {e}") from None
    runtime.redaction = redaction(config)
    if decided.value:
        runtime.read_only_reason = decided.reason
        note(
            f"read-only ({decided.reason}): no process is started, signalled or exec'd; "
            "showing the probes only"
        )
    return run_live(runtime, args, headless, ui=ui)


def run_demo(args: argparse.Namespace) -> int:
    from probetui.cli.config import (
        load_config,
        read_only,
        redaction,
        refuse_under_lock,
        ui_settings,
    )
    from probetui.runtime.base import RuntimeFailure
    from probetui.runtime.demo import demo_manifest_text, load_demo
    from probetui.runtime.local.runtime import LocalRuntime
    from probetui.spec.errors import ManifestError

    if args.print_manifest:
        # a manifest to read or to run with 'probetui local' (the ports are free right now)
        sys.stdout.write(demo_manifest_text())
        return EXIT_OK
    config = load_config(args)
    # a locked shell starts no process, and the demo is nothing but processes
    refuse_under_lock("demo", read_only(config, None, False, False))
    ui = ui_settings(config, args)
    try:
        runtime = LocalRuntime(load_demo(), source="demo")
    except (RuntimeFailure, ManifestError, OSError, ValueError) as e:
        # e.g. a port the demo needs is taken: one line, not a traceback
        raise UsageError(f"demo: {e}") from None
    runtime.redaction = redaction(config)
    return run_live(runtime, args, headless_requested(args), ui=ui)


# -- the live runner, for local, demo and the cluster view ---------------------------------


def headless_requested(args: argparse.Namespace) -> bool:
    return bool(args.no_ui or args.output)


def note(text: str) -> None:
    print(f"probetui: {text}", file=sys.stderr)


def run_live(
    runtime: Runtime,
    args: argparse.Namespace,
    headless: bool,
    *,
    ui: dict[str, Any] | None = None,
    kube_version: str | None = None,
) -> int:
    """`ui`: the screen's keymap and theme (`probetui.ui.app.run`'s keywords); `kube_version`:
    the kubelet version the shadow's requests name (default the engine's)."""
    from probetui.probe.base import DEFAULT_KUBE_VERSION
    from probetui.runtime.base import RuntimeFailure

    kube_version = kube_version or DEFAULT_KUBE_VERSION
    # the release the engine plays where a pod's node does not say its own, for what the
    # screen and the notes say of it
    runtime.configured_kubelet = kube_version
    duration = args.duration
    if duration is not None and not duration > 0:
        raise UsageError(f"--duration {duration:g}: must be more than 0 seconds")
    from probetui.shards.live import AUTO, choose, make_engine, shards_problem

    requested = getattr(args, "shards", AUTO)
    problem = shards_problem(runtime, requested)
    if problem:
        raise UsageError(problem)
    choice = choose(runtime, requested)
    shards = choice.shards
    summary = summary_sink(args, headless)
    # before anything starts: a path that cannot be recorded to is one line and exit 2
    recorder = open_recorder(
        runtime, getattr(args, "record", None), getattr(args, "retain", None), kube_version
    )
    # headless says it on stderr; a screen shows it, so the terminal holds nothing of it after
    shown: list[str] = []
    say = note if headless else shown.append
    for text in getattr(runtime, "notes", ()):
        say(f"note: {text}")
    from probetui.runtime.local.groups import REGISTRY

    sinks: list[Any] = [s for s in (recorder, summary) if s is not None]
    try:
        if recorder is not None:
            recorder.start()
        if not headless:
            from probetui.ui.app import run as run_ui

            REGISTRY.install_exit_handlers()
            notices = [recorder.take_failure] if recorder is not None else []
            # the runtime's own lines (the node agents' faults, each naming its node and fix)
            take_notice = getattr(runtime, "take_notice", None)
            if callable(take_notice):
                notices.append(take_notice)
            engine = make_engine(
                runtime,
                sinks,
                shards=shards,
                kube_version=kube_version,
                say=say,
                headless=False,
                choice=choice,
            )
            if shards:
                notices.append(engine.take_notice)
            archive = None
            if recorder is not None:
                from probetui.record.archive import HistoryArchive

                archive = HistoryArchive(recorder.path)
            try:
                result = run_ui(engine, notices=notices, archive=archive, notes=shown, **(ui or {}))
            except RuntimeFailure as e:
                raise UsageError(str(e)) from None
            return result if isinstance(result, int) else EXIT_OK
        if recorder is not None:
            recorder.on_failure = lambda text: note(text)
        # after anything that sets handlers: SIGHUP and crashes kill the children at once;
        # SIGINT and SIGTERM are taken over by the loop below for an orderly stop
        REGISTRY.install_exit_handlers()
        return _headless(runtime, duration, sinks, kube_version, shards, choice)
    finally:
        if recorder is not None:
            recorder.close()


def open_recorder(runtime: Runtime, path: str | None, retain: str | None, kube_version: str) -> Any:
    """Return the `--record` sink, its file checked and locked, or None without --record."""
    if path is None:
        if retain is not None:
            raise UsageError("--retain: only with --record FILE")
        return None
    import time

    from probetui import __version__
    from probetui.record.recorder import Recorder
    from probetui.record.schema import RecordingError, SessionMeta
    from probetui.record.timespec import TimeSpecError, parse_duration

    try:
        seconds = parse_duration(retain) if retain is not None else None
    except TimeSpecError as e:
        raise UsageError(f"--retain {e}") from None
    target = getattr(runtime, "target", None)
    meta = SessionMeta(
        started=time.time(),
        probetui=__version__,
        kube_version=kube_version,
        source=str(getattr(target, "source", None) or runtime.source),
        runtime="kubernetes" if target is not None else str(runtime.source).split(" ")[0],
        via=runtime.via,
        context=getattr(target, "context", None),
        namespace=(
            "*" if getattr(target, "all_namespaces", False) else getattr(target, "namespace", None)
        ),
        selector=getattr(target, "selector", None),
        read_only=runtime.read_only,
    )
    try:
        return Recorder(path, meta, retain=seconds)
    except RecordingError as e:
        raise UsageError(str(e)) from None


def _headless(
    runtime: Runtime,
    duration: float | None,
    sinks: list[Any],
    kube_version: str,
    shards: int = 0,
    choice: Any = None,
) -> int:
    from probetui.runtime.base import RuntimeFailure
    from probetui.shards.live import make_engine
    from probetui.timeline.jsonl import JsonlWriter

    class Writer(JsonlWriter):
        """Ends the run once nobody reads the output any more (`| head`)."""

        on_broken: Any = None

        def event(self, event: Any) -> None:
            was = self.broken
            super().event(event)
            if self.broken and not was and self.on_broken is not None:
                self.on_broken()

    writer = Writer(sys.stdout)
    signals: list[int] = []

    async def main() -> None:
        task = cancel_on_signals(signals)
        loop = asyncio.get_running_loop()
        # from inside a sink call: cancel once the engine's callback has returned
        writer.on_broken = lambda: loop.call_soon(task.cancel)
        engine = make_engine(
            runtime,
            [writer, *sinks],
            shards=shards,
            kube_version=kube_version,
            say=note,
            headless=True,
            choice=choice,
        )
        watch = asyncio.ensure_future(warn_when_behind(engine.lateness, note))
        try:
            await engine.run(duration)
        except asyncio.CancelledError:
            if not signals and not writer.broken:
                raise
        finally:
            watch.cancel()

    try:
        asyncio.run(main())
    except RuntimeFailure as e:
        raise UsageError(str(e)) from None
    if writer.broken:
        silence_stdout()
        return EXIT_OK
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    return EXIT_SIGNAL_BASE + signals[0] if signals else EXIT_OK


def cancel_on_signals(signals: list[int]) -> asyncio.Task[Any]:
    """Return the running task, cancelled by SIGINT or SIGTERM, each signal appended to `signals`:
    an orderly stop whose exit status names the signal (128+N)."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()

    def stop(sig: int) -> None:
        signals.append(sig)
        task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop, sig)
    return task


async def warn_when_behind(
    lateness: Callable[[], float], say: Callable[[str], None], every: float = 5.0
) -> None:
    """Headless, the JSONL goes on as it is; stderr says when the shadow prober falls behind its
    ticks (more probes than this process can run on time: its verdicts are then unreliable) and
    when it has caught up again. The UI's top bar says the same."""
    from probetui.prober.lateness import BEHIND, behind_words

    behind = False
    while True:
        await asyncio.sleep(every)
        late = lateness()
        if late >= BEHIND and not behind:
            say(
                f"{behind_words(late)}: more probes than one process can run on time; results "
                "are unreliable until it catches up (watch fewer pods: -n, -l)"
            )
        elif late < BEHIND and behind:
            say("shadow prober caught up with its ticks")
        behind = late >= BEHIND


def silence_stdout() -> None:
    # the reader is gone: whatever is still buffered would fail again at exit
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
