"""`probetui simulate` plays a scenario's kubelet decisions in virtual time, as text or JSON.

With `--recording`, it replays a recorded pod's history through the same model with other
settings.

The simulation is `probetui.simulate`; this is its command line: `--set` overrides run
beside the scenario (or the recorded settings) as given, so the output can show both side by
side.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from probetui.cli.errors import EXIT_FAILURE, EXIT_OK, UsageError
from probetui.durations import duration_arg


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.description = (
        "Run a scenario in virtual time and print the kubelet's decisions; or, with "
        "--recording, replay a recorded pod's probe answers through the same model with the "
        '--set overrides ("would failureThreshold 5 have saved us?").'
    )
    s.add_argument(
        "scenario",
        metavar="SCENARIO|MANIFEST",
        nargs="?",
        help="a scenario YAML file, or a plain manifest (a Pod or any workload kind) run with "
        "the default app model",
    )
    s.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default=None,
        help="text (default) or json: the events and the summary as one JSON document",
    )
    s.add_argument("--json", action="store_true", help="the same as --output json")
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PROBE.FIELD=VALUE",
        help="override a probe field, e.g. liveness.failureThreshold=6 (repeatable)",
    )
    from probetui.cli import kubelet_flags
    from probetui.cli.replay import allow_relative_times

    allow_relative_times(s)
    k = s.add_argument_group("the kubelet played")
    kubelet_flags.add_arguments(k)
    m = s.add_argument_group(
        "the app, without a scenario file (a manifest, or over a scenario's own app)"
    )
    m.add_argument(
        "--duration",
        type=duration_arg,
        metavar="DURATION",
        help="virtual time to simulate (e.g. 10m, 1h; a bare number is seconds; default 10m)",
    )
    m.add_argument(
        "--ready-after",
        type=duration_arg,
        metavar="DURATION",
        help="probes fail until this long after each container start (a slow start)",
    )
    m.add_argument(
        "--fail-between",
        action="append",
        default=[],
        metavar="START-END",
        help="probes fail in this window of virtual time, e.g. 2m-3m (repeatable)",
    )
    m.add_argument(
        "--latency",
        type=duration_arg,
        metavar="DURATION",
        help="how long each answer takes, e.g. 20ms (above timeoutSeconds it times out)",
    )
    r = s.add_argument_group("from a recording (probetui ... --record FILE)")
    r.add_argument("--recording", metavar="FILE", help="a recording instead of a scenario")
    r.add_argument(
        "--pod",
        metavar="NS/NAME",
        help="the recorded pod to replay; with a manifest, the pod or workload NAME to run",
    )
    r.add_argument(
        "-c",
        "--container",
        metavar="CONTAINER",
        help="its container (default: the first probed one)",
    )
    r.add_argument("--since", metavar="T", help="from T: 03:10, -6h, or an ISO time")
    r.add_argument("--until", metavar="T", help="to T (default: the recording's end)")


_APP_FLAGS = ("duration", "ready_after", "fail_between", "latency")


def run(args: argparse.Namespace) -> int:
    from probetui.cli.kubelet_flags import profile_from

    args.json = args.json or args.output == "json"
    profile = profile_from(args)
    if args.recording is not None:
        given = [f"--{f.replace('_', '-')}" for f in _APP_FLAGS if getattr(args, f)]
        if given:
            raise UsageError(f"{given[0]} goes with a scenario or a manifest, not --recording")
        return _run_recorded(args, profile)
    if args.scenario is None:
        raise UsageError(
            "give a scenario file or a manifest, or --recording FILE --pod NS/NAME "
            "(see 'probetui simulate --help')"
        )
    from probetui import simulate as sim
    from probetui.simulate import manifest

    plain = manifest.looks_like_manifest(args.scenario)
    refused = ("since", "until") if plain else ("pod", "container", "since", "until")
    for flag in refused:
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag} goes with --recording FILE; a scenario file names its pod")
    try:
        base = _scenario(args, plain)
        scenario = sim.apply_overrides(base, args.set) if args.set else base
    except sim.ScenarioError as e:
        # a message that names the file already (it could not be read) is not prefixed again
        text = str(e)
        if not text.startswith(str(args.scenario)):
            text = f"{args.scenario}: {text}"
        raise UsageError(text) from None
    # the events are written as the run makes them final, never all held: a week of virtual
    # time at a 1 s period is millions of them
    baseline = sim.simulate_stream(base, lambda e: None, profile) if args.set else None
    out = sys.stdout
    notes: list[str] = []
    if args.json:
        writer = sim.JsonWriter(out)
        app = {"model": "default", "words": manifest.describe_app(scenario.app)} if plain else None
        summary = sim.simulate_stream(scenario, writer.add, profile, notes)
        extra = {"kubelet": sim.kubelet_json(profile), "notes": notes, "app": app}
        writer.close(summary, baseline, args.set, extra=extra)
        return EXIT_OK
    head = f"simulated {scenario.duration:g}s of pod {scenario.pod.name}, container {scenario.container}"
    if args.set:
        head += f" with {', '.join(args.set)}"
    head += f", {profile.describe()}"
    if plain:
        head += (
            f"\napp model (no scenario file): {manifest.describe_app(scenario.app)}; "
            "change it with --ready-after, --fail-between, --latency or a scenario file"
        )
    out.write(head + "\n")
    timeline = sim.Timeline()

    def lines(e: dict[str, object]) -> None:
        for line in timeline.add(e):
            out.write(line + "\n")

    summary = sim.simulate_stream(scenario, lines, profile, notes)
    tail = [*timeline.close(), "", "summary:", *sim.render_summary(summary, baseline)]
    tail += [f"note: {note}" for note in notes]
    out.write("\n".join(tail) + "\n")
    return EXIT_OK


def _scenario(args: argparse.Namespace, plain: bool) -> Any:
    """Return the scenario file's, or a plain manifest's with the default app, and the flags'
    changes to its duration and app."""
    from probetui import simulate as sim
    from probetui.simulate import manifest
    from probetui.simulate.scenario import checked_duration

    windows = [manifest.fail_window(w) for w in args.fail_between]
    if plain:
        base = manifest.manifest_scenario(
            args.scenario, pod=args.pod, container=args.container, duration=args.duration
        )
    else:
        base = sim.load_scenario(args.scenario)
        if args.duration is not None:
            base = dataclasses.replace(base, duration=args.duration)
    if args.duration is not None:
        try:
            checked_duration(args.duration, "--duration")
        except sim.ScenarioError as e:
            raise UsageError(str(e)) from None
    if not base.duration > 0:
        raise sim.ScenarioError(f"--duration {base.duration:g}: must be more than 0 seconds")
    app = manifest.app_model(
        base.app, ready_after=args.ready_after, fail_between=windows, latency=args.latency
    )
    return dataclasses.replace(base, app=app)


def _run_recorded(args: argparse.Namespace, profile: Any) -> int:
    from datetime import UTC, datetime

    from probetui.record.reader import open_recording
    from probetui.record.schema import RecordingError
    from probetui.record.timespec import TimeSpecError
    from probetui.simulate.counterfactual import CounterfactualError, counterfactual
    from probetui.simulate.recorded import from_recording
    from probetui.simulate.report import render_counterfactual
    from probetui.simulate.scenario import ScenarioError

    if args.scenario is not None:
        raise UsageError("give a scenario file or --recording FILE, not both")
    if not args.pod:
        raise UsageError("--recording: name the pod with --pod NS/NAME")
    try:
        with open_recording(args.recording) as recording:
            rec = from_recording(recording, args.pod, args.since, args.until)
    except (RecordingError, TimeSpecError, ValueError) as e:
        raise UsageError(str(e)) from None
    container = args.container
    if container is None:
        probed = rec.pod.probed_containers()
        if not probed:
            raise UsageError(f"--pod {args.pod}: no container of it has a probe")
        container = probed[0].name
    try:
        cf = counterfactual(rec, container, args.set, profile)
    except (CounterfactualError, ScenarioError) as e:
        raise UsageError(f"--pod {args.pod}: {e}") from None
    if args.json:
        sys.stdout.write(json.dumps(cf.to_json()) + "\n")
        return EXIT_FAILURE if args.set and not cf.check.passed else EXIT_OK

    def when(t: float) -> str:
        return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")

    head = (
        f"replayed pod {rec.pod.namespace}/{rec.pod.name}, container {container}, "
        f"{when(rec.since)} to {when(rec.until)} ({rec.until - rec.since:.0f}s, "
        f"{rec.attempts} recorded attempts)"
    )
    if args.set:
        head += f" with {', '.join(args.set)}"
    print("\n".join([head, "", *render_counterfactual(cf)]))
    # a what-if asked for and refused (the model does not fit this history) is not a success
    return EXIT_FAILURE if args.set and not cf.check.passed else EXIT_OK
