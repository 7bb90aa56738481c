"""`probetui lint PATH... | -`: probe advice for CI, from the manifest and the kubelet's model.

Exit status: 0 nothing at or above `--fail-on`, 1 findings at or above it, 2 bad usage, or bad
input when nothing at all could be read (otherwise what could not be read is listed and the
rest is linted).
"""

from __future__ import annotations

import argparse
import os
import sys

from probetui.cli.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError

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


def _colour(choice: str) -> bool:
    if choice != "auto":
        return choice == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def run(args: argparse.Namespace) -> int:
    from probetui.lint import human, machine, registry
    from probetui.lint.load import load
    from probetui.lint.model import Severity

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
    if not args.paths:
        raise UsageError("give files, directories or - (stdin) to lint")
    loaded = load(args.paths)
    for p in loaded.problems:
        print(f"probetui lint: {p}", file=sys.stderr)
    unreadable = not loaded.objects and bool(loaded.problems or not loaded.files)
    findings = registry.run(loaded.objects, rules)
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
