"""`probetui simulate`: a scenario's kubelet decisions in virtual time, as text or JSON; or, with
`--recording`, a recorded pod's history replayed through the same model with other settings.

The simulation is `probetui.simulate`; this is its command line: `--set` overrides run
beside the scenario (or the recorded settings) as given, so the output can show both side by
side.
"""

from __future__ import annotations

import argparse
import json
import sys

from probetui.cli.errors import EXIT_FAILURE, EXIT_OK, UsageError


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.description = (
        "Run a scenario in virtual time and print the kubelet's decisions; or, with "
        "--recording, replay a recorded pod's probe answers through the same model with the "
        '--set overrides ("would failureThreshold 5 have saved us?").'
    )
    s.add_argument("scenario", metavar="SCENARIO", nargs="?", help="scenario YAML file")
    s.add_argument("--json", action="store_true", help="print events and summary as JSON")
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PROBE.FIELD=VALUE",
        help="override a probe field, e.g. liveness.failureThreshold=6 (repeatable)",
    )
    from probetui.cli.replay import allow_relative_times

    allow_relative_times(s)
    r = s.add_argument_group("from a recording (probetui ... --record FILE)")
    r.add_argument("--recording", metavar="FILE", help="a recording instead of a scenario")
    r.add_argument("--pod", metavar="NS/NAME", help="the recorded pod to replay")
    r.add_argument("-c", "--container", help="its container (default: the first probed one)")
    r.add_argument("--since", metavar="T", help="from T: 03:10, -6h, or an ISO time")
    r.add_argument("--until", metavar="T", help="to T (default: the recording's end)")


def run(args: argparse.Namespace) -> int:
    if args.recording is not None:
        return _run_recorded(args)
    for flag in ("pod", "container", "since", "until"):
        if getattr(args, flag) is not None:
            raise UsageError(f"--{flag} goes with --recording FILE; a scenario file names its pod")
    if args.scenario is None:
        raise UsageError("give a scenario file, or --recording FILE --pod NS/NAME")
    from probetui import simulate as sim

    try:
        base = sim.load_scenario(args.scenario)
        scenario = sim.apply_overrides(base, args.set) if args.set else base
    except sim.ScenarioError as e:
        raise UsageError(f"{args.scenario}: {e}") from None
    # the events are written as the run makes them final, never all held: a week of virtual
    # time at a 1 s period is millions of them
    baseline = sim.simulate_stream(base, lambda e: None) if args.set else None
    out = sys.stdout
    if args.json:
        writer = sim.JsonWriter(out)
        writer.close(sim.simulate_stream(scenario, writer.add), baseline, args.set)
        return EXIT_OK
    head = f"simulated {scenario.duration:g}s of pod {scenario.pod.name}, container {scenario.container}"
    if args.set:
        head += f" with {', '.join(args.set)}"
    out.write(head + "\n")
    timeline = sim.Timeline()

    def lines(e: dict[str, object]) -> None:
        for line in timeline.add(e):
            out.write(line + "\n")

    summary = sim.simulate_stream(scenario, lines)
    tail = [*timeline.close(), "", "summary:", *sim.render_summary(summary, baseline)]
    out.write("\n".join(tail) + "\n")
    return EXIT_OK


def _run_recorded(args: argparse.Namespace) -> int:
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
        cf = counterfactual(rec, container, args.set)
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
