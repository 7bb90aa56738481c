"""`probetui simulate`: a scenario's kubelet decisions in virtual time, as text or JSON.

The simulation is `probetui.simulate`; this is its command line: `--set` overrides run
beside the scenario as given, so the output can show both side by side.
"""

from __future__ import annotations

import argparse
import sys

from probetui.cli.errors import EXIT_OK, UsageError


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.description = "Run a scenario in virtual time and print the kubelet's decisions."
    s.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    s.add_argument("--json", action="store_true", help="print events and summary as JSON")
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PROBE.FIELD=VALUE",
        help="override a probe field, e.g. liveness.failureThreshold=6 (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    from probetui import simulate as sim

    try:
        base = sim.load_scenario(args.scenario)
        scenario = sim.apply_overrides(base, args.set) if args.set else base
    except sim.ScenarioError as e:
        raise UsageError(f"{args.scenario}: {e}") from None
    result = sim.simulate(scenario)
    baseline = sim.simulate(base)["summary"] if args.set else None
    if args.json:
        sys.stdout.write(sim.to_json(result, baseline, args.set) + "\n")
        return EXIT_OK
    out = [
        f"simulated {scenario.duration:g}s of pod {scenario.pod.name}, container {scenario.container}"
    ]
    if args.set:
        out[0] += f" with {', '.join(args.set)}"
    out += sim.render_timeline(result["events"])
    out.append("")
    out.append("summary:")
    out += sim.render_summary(result["summary"], baseline)
    print("\n".join(out))
    return EXIT_OK
