"""`probetui lint PATH... | -` gives probe advice for CI, from the manifest and the kubelet's model.

Exit status: 0 nothing at or above `--fail-on`, 1 findings at or above it, 2 bad usage, or bad
input when nothing at all could be read (otherwise what could not be read is listed and the
rest is linted).

Evidence: `--recording FILE` lints with what a recording observed (alone, it
lints the recorded pods, one object per workload); `--cluster` watches a cluster read-only
(only get, list and watch) for `--for` (default 2m) through the cluster view's runtime and
engine, then lints the pods it saw, or the PATHs given, with what it saw. Read-only, the shadow
probes only by the pod IP: in a cluster (a CI runner's pod) by default, from outside with
`--via direct` where the pod network is reachable; otherwise only what the kubelet reports
(Ready flaps, kills, starts) is evidence. Without either, lint judges the manifests alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from probetui.cli.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError
from probetui.memory import frozen_while_used

if TYPE_CHECKING:
    from probetui.lint.load import Loaded
    from probetui.lint.model import Rule

_FAIL_ON = ("error", "warning", "info", "never")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Lint the probes of Pods and workloads (YAML or JSON, multi-document, directories, "
        "- for stdin). Exit status: 0 clean, 1 findings at or above --fail-on, 2 bad usage "
        "or nothing readable."
    )
    p.add_argument("paths", metavar="PATH", nargs="*", help="files, directories, or - for stdin")
    p.add_argument(
        "--output", "-o", choices=("human", "json", "sarif"), default="human", help="format"
    )
    p.add_argument(
        "--fail-on",
        choices=_FAIL_ON,
        default="error",
        help="the least severity that makes the exit status 1 (default: error)",
    )
    p.add_argument(
        "--disable", action="append", default=[], metavar="RULE[,RULE]", help="skip rules (or all)"
    )
    p.add_argument(
        "--enable",
        action="append",
        default=[],
        metavar="RULE[,RULE]",
        help="run rules even if disabled (or all)",
    )
    p.add_argument("--explain", metavar="RULE", help="what a rule checks, why, and the fix")
    p.add_argument(
        "--list-rules", action="store_true", help="every rule, its severity, its summary"
    )
    p.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="human output colour"
    )
    from probetui.cli import kubelet_flags

    kubelet_flags.add_arguments(
        p.add_argument_group("the kubelet played", "which release the model's simulations play")
    )
    e = p.add_argument_group("evidence", "what a recording or a cluster showed of the probes")
    e.add_argument(
        "--recording", metavar="FILE", help="a recording (--record FILE): lint with its evidence"
    )
    e.add_argument(
        "--cluster",
        action="store_true",
        help="watch the cluster read-only for --for, then lint with what was seen",
    )
    e.add_argument("--for", dest="watch_for", metavar="DURATION", help="how long (default 2m)")
    e.add_argument("--kubeconfig", dest="lint_kubeconfig", metavar="FILE", help="kubeconfig")
    e.add_argument("--context", dest="lint_context", metavar="NAME", help="kubeconfig context")
    e.add_argument("-n", "--namespace", dest="lint_namespace", metavar="NS", help="namespace")
    e.add_argument(
        "-A", "--all-namespaces", dest="lint_all", action="store_true", help="every namespace"
    )
    e.add_argument("-l", "--selector", dest="lint_selector", metavar="SELECTOR", help="labels")
    e.add_argument(
        "--via",
        dest="lint_via",
        choices=("direct",),
        help="--cluster: probe each pod's IP from here as the shadow does, so latency and "
        "errors are measured (only get, list and watch go to the API server either way; "
        "without it, the probes are not run outside a cluster)",
    )


def _colour(choice: str) -> bool:
    if choice != "auto":
        return choice == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def run(args: argparse.Namespace) -> int:
    from probetui.cli.kubelet_flags import profile_from
    from probetui.lint import human, registry
    from probetui.lint.load import load

    profile_from(args)  # a bad version or gate is refused before anything is read
    try:
        if args.explain:
            sys.stdout.write(human.explain(registry.rule(args.explain)))
            return EXIT_OK
        rules = registry.select(args.disable, args.enable)
    except registry.UnknownRule as e:
        raise UsageError(str(e)) from None
    if args.list_rules:
        sys.stdout.write(human.rule_list(list(registry.RULES.values()), {r.id for r in rules}))
        return EXIT_OK
    evidence = _evidence(args)
    if not args.paths and evidence is None:
        raise UsageError("give files, directories or - (stdin) to lint, or --recording FILE")
    if args.paths:
        loaded = load(args.paths)
    else:
        from probetui.lint.load import Loaded
        from probetui.lint.observed import recorded_objects

        assert evidence is not None
        where = args.recording or "cluster"
        loaded = Loaded(objects=recorded_objects(evidence, where), files=1)
    for p in loaded.problems:
        print(f"probetui lint: {p}", file=sys.stderr)
    unreadable = not loaded.objects and bool(loaded.problems or not loaded.files)
    if evidence is not None and not args.paths and not loaded.objects:
        unreadable = False  # a recording or a namespace with no pods is clean, not bad input
    # what was read lives to the end: out of the collector's sight, its full passes during the
    # rules' simulations do not walk it again and again (benchmarks.lint does the same)
    with frozen_while_used():
        return _report(args, loaded, rules, evidence, unreadable)


def _report(
    args: argparse.Namespace, loaded: Loaded, rules: list[Rule], evidence: Any, unreadable: bool
) -> int:
    from probetui.cli.config import load_config, redaction
    from probetui.cli.kubelet_flags import profile_from
    from probetui.lint import human, machine, registry, simulated
    from probetui.lint.model import Severity

    with simulated.playing(profile_from(args)):
        findings = registry.run(loaded.objects, rules, evidence, redaction(load_config(args)))
    fail_on = None if args.fail_on == "never" else Severity(args.fail_on)
    failed = bool(registry.at_or_above(findings, fail_on))
    if args.output == "json":
        out = machine.to_json(
            loaded.objects, findings, loaded.problems, rules, fail_on=fail_on, failed=failed
        )
    elif args.output == "sarif":
        out = machine.to_sarif(findings, loaded.problems, rules)
    else:
        out = human.render(loaded.objects, findings, loaded.problems, colour=_colour(args.color))
    sys.stdout.write(out)
    if unreadable:
        print("probetui lint: nothing could be linted", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_FAILURE if failed else EXIT_OK


def _evidence(args: argparse.Namespace) -> Any:
    """Return the `Observed` of --recording or --cluster, or None. Bad input is a UsageError."""
    if args.recording and args.cluster:
        raise UsageError("--recording and --cluster: pick one source of evidence")
    cluster_flags = [
        flag
        for flag, value in (
            ("--for", args.watch_for),
            ("--kubeconfig", args.lint_kubeconfig),
            ("--context", args.lint_context),
            ("-n", args.lint_namespace),
            ("-A", args.lint_all),
            ("-l", args.lint_selector),
        )
        if value
    ]
    if cluster_flags and not args.cluster:
        raise UsageError(f"{cluster_flags[0]}: only with --cluster")
    if args.recording:
        from probetui.lint.observed import from_recording
        from probetui.record.reader import open_recording
        from probetui.record.schema import RecordingError

        try:
            with open_recording(args.recording) as recording:
                return from_recording(recording)
        except RecordingError as e:
            raise UsageError(f"--recording {e}") from None
    if args.cluster:
        return _watch_cluster(args)
    return None


def _watch_cluster(args: argparse.Namespace) -> Any:
    """Watch read-only through the cluster view's runtime and engine into a timeline store,
    then read the store as evidence (the same reading the UI does)."""
    import asyncio
    import dataclasses
    import time

    from probetui.engine import Engine
    from probetui.lint.observed import from_store
    from probetui.record.timespec import TimeSpecError, parse_duration
    from probetui.runtime.base import RuntimeFailure
    from probetui.runtime.kubernetes.config import ConnectOptions, KubeconfigError, resolve
    from probetui.runtime.kubernetes.runtime import KubernetesRuntime
    from probetui.timeline.store import Store

    try:
        seconds = parse_duration(args.watch_for or "2m")
    except TimeSpecError as e:
        raise UsageError(f"--for {e}") from None
    if not seconds > 0:
        raise UsageError(f"--for {args.watch_for}: must be more than 0 seconds")
    if args.lint_all and args.lint_namespace:
        raise UsageError("-n and -A: pick one namespace, or all of them")
    options = ConnectOptions(
        kubeconfig=args.lint_kubeconfig,
        context=args.lint_context,
        namespace=args.lint_namespace,
        all_namespaces=args.lint_all,
        selector=args.lint_selector,
    )
    try:
        target = resolve(options)
    except KubeconfigError as e:
        raise UsageError(str(e)) from None
    # lint only looks: whatever the configuration says, nothing but get, list and watch
    # a direct probe of a pod's IP changes nothing: read-only runs it where it reaches
    runtime = KubernetesRuntime(
        dataclasses.replace(target, read_only=True), via=args.lint_via, fail_fast=True
    )
    runtime.read_only_reason = "lint --cluster"
    store = Store(history_seconds=max(seconds, 60.0))
    engine = Engine(runtime, [store])
    try:
        asyncio.run(engine.run(seconds))
    except RuntimeFailure as e:
        raise UsageError(str(e)) from None
    where = "all namespaces" if target.all_namespaces else f"namespace {target.namespace}"
    return from_store(store, time.time(), source=f"cluster {where} for {seconds:g} s")
