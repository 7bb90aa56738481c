"""Parse the command line and run its command.

The commands: `probetui` (the cluster view), `check`, `simulate`, `local`, `demo`, `replay`,
`config`, `lint`, `agent`.

One module a command, as pip's `commands/`: `cluster.py` (no COMMAND), `check.py`,
`simulate.py`, `live.py` (`local`, `demo` and the live runner they share with the cluster
view), `replay.py` (a recording read back), `config.py` (the settings in force; `--config` and
`--theme`, which the commands that read the configuration take before or after their name),
`lint.py` (`probetui lint`, over `probetui/lint/`), `agent.py` (the node agent, over
`probetui/agent/`); exit codes and `UsageError` in `errors.py`. Bad input is one line on stderr and exit
status 2.

`COMMANDS` names each command's module without importing it: a subcommand's arguments are
added only once the command line has named it, and each module imports what it needs when it
runs, so `probetui check` starts without loading Textual or the Kubernetes client.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from probetui.cli import cluster
from probetui.cli.config import add_config_arguments
from probetui.cli.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UsageError


@dataclass(frozen=True, slots=True)
class CommandInfo:
    """Says where a command lives: `module.add_arguments(parser)` and `module.run(args) -> int`."""

    module: str
    summary: str  # its line in `probetui --help`, known without importing the module
    add_arguments: str = "add_arguments"
    run: str = "run"
    configured: bool = False  # reads the config files: takes --config and --theme after its name

    def load(self) -> tuple[Callable[[argparse.ArgumentParser], None], Callable[..., int]]:
        module = importlib.import_module(self.module)
        return getattr(module, self.add_arguments), getattr(module, self.run)


COMMANDS: dict[str, CommandInfo] = {
    "check": CommandInfo(
        "probetui.cli.check", "run one probe attempt exactly as the kubelet would"
    ),
    "simulate": CommandInfo("probetui.cli.simulate", "what the kubelet would do, in virtual time"),
    "local": CommandInfo(
        "probetui.cli.live",
        "run a Pod manifest's containers as local processes, probed as the kubelet would",
        add_arguments="add_local_arguments",
        run="run_local",
        configured=True,
    ),
    "demo": CommandInfo(
        "probetui.cli.live",
        "bundled demo services under the local runtime: every probe behaviour in a minute",
        add_arguments="add_demo_arguments",
        run="run_demo",
        configured=True,
    ),
    "replay": CommandInfo(
        "probetui.cli.replay",
        "read back a recording made with --record (JSON lines for now)",
        configured=True,
    ),
    "lint": CommandInfo(
        "probetui.cli.lint", "probe advice for CI from manifests and the kubelet's model"
    ),
    "agent": CommandInfo(
        "probetui.cli.agent",
        "the node agent a DaemonSet runs: one node's probes, the kubelet's counts, the stream",
    ),
    "config": CommandInfo(
        "probetui.cli.config",
        "the settings in force and where each comes from; --init writes a starting file",
        configured=True,
    ),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # one line, naming the command and where to look, instead of argparse's usage dump
        raise UsageError(f"{message} (see '{self.prog} --help')")


class _CommandParser(_Parser):
    """Acts as a subcommand's parser, given its arguments only when argparse hands it its part
    of the command line (its `--help` included)."""

    def __init__(self, *args: Any, command: CommandInfo, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._command: CommandInfo | None = command

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._command is not None:
            add_arguments, _ = self._command.load()
            if self._command.configured:
                add_config_arguments(self, top=False)
            self._command = None
            add_arguments(self)
        return super().parse_known_args(args, namespace)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="probetui",
        description="See what the kubelet's prober is thinking: probes, result runs, thresholds.",
    )
    p.add_argument("--version", action="version", version=_version())
    add_config_arguments(
        p.add_argument_group(
            "configuration", "The config file and the theme, for every command with a screen."
        ),
        top=True,
    )
    cluster.add_arguments(p)
    sub = p.add_subparsers(dest="command", parser_class=_CommandParser, metavar="COMMAND")
    for name, info in COMMANDS.items():
        sub.add_parser(name, help=info.summary, command=info)
    return p


def _version() -> str:
    from probetui import __version__

    return f"probetui {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            # a subcommand's stray argument reaches the top parser: name the subcommand's help
            prog = "probetui" if args.command is None else f"probetui {args.command}"
            raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see '{prog} --help')")
        if args.command is None:
            return cluster.run(args)
        given = cluster.flags_given(args)
        if given:
            raise UsageError(
                f"{', '.join(given)} before '{args.command}' belong to the cluster view; put "
                f"{args.command}'s own options after it (see 'probetui {args.command} --help')"
            )
        _, run = COMMANDS[args.command].load()
        return run(args)
    except UsageError as e:
        print(f"probetui: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`| head`): not an error worth a traceback
        sys.stderr.close()
        return EXIT_OK


__all__ = ["COMMANDS", "CommandInfo", "main"]
