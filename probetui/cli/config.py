"""`probetui config` shows the settings in force and where each came from.

`--init` writes a commented starting file. Also the `--config` and `--theme` options every
screen command takes, and reading the configuration for them (bad input: one line, exit 2,
before anything runs).

The configuration itself is `probetui.config`; this module only turns flags into its inputs
and its answers into lines. It imports it when a command runs, not when the parser is built.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from probetui.cli.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from probetui.config import ClusterKin, Config, Sourced
    from probetui.redact import Policy
    from probetui.runtime.kubernetes.kubeconfig import ClusterIdentity


def add_config_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup, top: bool) -> None:
    """`--config` and `--theme`, before the command (`top`) or after it; after it they must not
    reset what was given before (argparse lets a subcommand's defaults overwrite those)."""
    kw: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument(
        "--config",
        metavar="FILE",
        help="config file (default: $PROBETUI_CONFIG, else "
        "$XDG_CONFIG_HOME/probetui/config.yaml, else ~/.config/probetui/config.yaml)",
        **kw,
    )
    p.add_argument("--theme", metavar="NAME", help="theme (`probetui config` lists them)", **kw)


def load_config(args: argparse.Namespace) -> Config:
    from probetui.config import ConfigError, load

    try:
        return load(getattr(args, "config", None))
    except ConfigError as e:
        raise UsageError(str(e)) from None


def ui_settings(config: Config, args: argparse.Namespace) -> dict[str, Any]:
    """Return the screen's keymap and theme: keyword arguments of `probetui.ui.app.run`."""
    from probetui.config import ConfigError

    try:
        theme = config.theme(getattr(args, "theme", None)).value
    except ConfigError as e:
        raise UsageError(str(e)) from None
    keymap = {binding_id: s.value for binding_id, s in config.keymap().items()}
    return {"keymap": keymap or None, "theme": theme}


def redaction(config: Config) -> Policy:
    """Tell what of the pods' secrets may be shown or kept: the `redact:` allow-lists in force."""
    from probetui.redact import Policy

    lists = {key: s.value for key, s in config.redaction().items()}
    return Policy.from_json(lists)


def read_only(
    config: Config,
    context: str | None,
    read_only: bool,
    write: bool,
    kin: ClusterKin | None = None,
) -> Sourced:
    from probetui.config import ConfigError

    try:
        return config.read_only(context, flag_read_only=read_only, flag_write=write, kin=kin)
    except ConfigError as e:
        raise UsageError(str(e)) from None


def refuse_under_lock(what: str, lock: Sourced | None = None) -> None:
    """Refuse, in one line, what would start a process where the shell is locked read-only.

    `lock` is the lock already found; without it the environment and the system file are
    read (`shell_lock`), the user file not at all.
    """
    from probetui.config import ConfigError, shell_lock

    if lock is None:
        try:
            lock = shell_lock()
        except ConfigError as e:
            raise UsageError(str(e)) from None
    if lock is not None and lock.locked:
        raise UsageError(
            f"{what}: read-only is locked by {lock.source.removeprefix('environment ')}; "
            "this shell starts no process (ask whoever set the lock)"
        )


def cluster_kin(clusters: Mapping[str | None, ClusterIdentity], context: str | None) -> ClusterKin:
    """Tell what the kubeconfig's cluster identities tell of `context`'s cluster (None: the
    in-cluster config), for the lock; a cluster that cannot be identified has no CA."""
    from probetui.config import IN_CLUSTER, ClusterKin

    mine = clusters.get(context)
    if mine is None:
        return ClusterKin(has_ca=False)
    same = tuple(
        IN_CLUSTER if name is None else name
        for name, identity in clusters.items()
        if name != context and identity.same_cluster(mine)
    )
    return ClusterKin(same, mine.has_ca)


# -- the command --------------------------------------------------------------------------------


def add_arguments(p: argparse.ArgumentParser) -> None:
    from probetui.config.schema import VIAS

    p.description = (
        "Show the settings in force and where each one comes from (default, the system file, "
        "your file, the environment, a flag), for one kubeconfig context; or write a "
        "commented starting file with --init."
    )
    p.add_argument(
        "--init",
        action="store_true",
        help="write a commented starting file at the config path (never over an existing one)",
    )
    p.add_argument(
        "--context",
        metavar="NAME",
        help="show the settings for this kubeconfig context (default: the current context)",
    )
    p.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig to take the current context from"
    )
    g = p.add_argument_group(
        "a run's flags",
        "The cluster view's flags that settings come from, to see what a run with them would "
        "have in force (a --write the lock refuses is refused here too, in the same line).",
    )
    g.add_argument("--read-only", dest="cfg_read_only", action="store_true", help="as a run's")
    g.add_argument("--write", dest="cfg_write", action="store_true", help="as a run's")
    g.add_argument("--via", dest="cfg_via", choices=VIAS, help="as a run's")
    g.add_argument("-n", "--namespace", dest="cfg_namespace", metavar="NS", help="as a run's")
    g.add_argument("-l", "--selector", dest="cfg_selector", metavar="SELECTOR", help="as a run's")
    g.add_argument(
        "--kubelet-version", dest="cfg_kubelet_version", metavar="X.Y", help="as a run's"
    )


def run(args: argparse.Namespace) -> int:
    if args.init:
        return _init(getattr(args, "config", None))
    config = load_config(args)
    context, why, clusters = _context(args)
    kin = cluster_kin(clusters, context) if context in clusters else None
    # every answer before the first line: bad input is one line, not a table cut short
    ro = read_only(config, context, args.cfg_read_only, args.cfg_write, kin)
    theme = ui_settings(config, args)["theme"]
    rows: list[tuple[str, str, str]] = [
        ("readOnly", _word(ro.value) + (" (locked)" if ro.locked else ""), ro.source),
        ("theme", _theme_word(theme), config.theme(getattr(args, "theme", None)).source),
    ]
    for name, sourced in config.context_settings(context, _run_flags(args)).items():
        rows.append((_yaml_name(name), _context_word(name, sourced.value), sourced.source))
    for key, sourced in config.redaction().items():
        shown = ", ".join(sourced.value) if sourced.value else "(none: every value masked)"
        if key == "allowHeaders":
            shown = "the harmless ones" + (f", {shown}" if sourced.value else "")
        rows.append((f"redact.{key}", shown, sourced.source))
    out = sys.stdout
    out.write("files\n")
    for file in config.files:
        state = "read" if file.found else "not found"
        chosen = "" if file.chosen_by == "default" else f", chosen by {file.chosen_by}"
        lock = ", lock: true" if file.settings is not None and file.settings.lock else ""
        note = f"; {file.note}" if file.note else ""
        out.write(f"  {file.kind:<7} {file.path}  ({state}{chosen}{lock}{note})\n")
    title = f'settings for context "{context}" ({why})' if context else f"settings ({why})"
    _table(out, title, rows)
    keymap = config.keymap()
    from probetui.config.keymap import default_keys

    rows = [
        (
            binding_id,
            keymap[binding_id].value if binding_id in keymap else keys,
            keymap[binding_id].source if binding_id in keymap else "default",
        )
        for binding_id, keys in default_keys().items()
    ]
    _table(out, "keys", rows)
    from probetui.ui.themes import theme_names

    out.write(f"themes\n  {', '.join(theme_names())}\n")
    return EXIT_OK


def _run_flags(args: argparse.Namespace) -> dict[str, Any]:
    """Return the per-context settings' flags as the cluster view reads them."""
    version = args.cfg_kubelet_version
    if version is not None:
        from probetui.config.schema import Expected, check_kubelet_version

        try:
            version = check_kubelet_version(version)
        except Expected as e:
            raise UsageError(f"--kubelet-version: expected {e}") from None
    return {
        "via": args.cfg_via,
        "namespace": args.cfg_namespace,
        "selector": args.cfg_selector,
        "kubelet_version": version,
    }


def _init(flag: str | None) -> int:
    from probetui.config.files import user_path
    from probetui.config.template import template

    path, _ = user_path(flag, os.environ)
    if os.path.exists(path):
        raise UsageError(
            f"{path} exists: not overwritten (edit it, remove it first, or --config another path)"
        )
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "x", encoding="utf-8") as f:
            f.write(template())
    except OSError as e:
        raise UsageError(f"{path}: cannot write it: {' '.join(str(e).split())}") from None
    print(f"wrote {path}: every setting is there, commented out; `probetui config` shows them")
    return EXIT_OK


def _context(
    args: argparse.Namespace,
) -> tuple[str | None, str, Mapping[str | None, ClusterIdentity]]:
    """Return the context to show, why that one, and the kubeconfig's clusters by context."""
    from probetui.runtime.kubernetes.kubeconfig import (
        KubeconfigError,
        identity_of,
        kubeconfig_files,
        merge,
    )

    try:
        merged = merge(kubeconfig_files(args.kubeconfig, os.environ))
    except KubeconfigError as e:
        if args.context:
            return args.context, "--context", {}
        raise UsageError(str(e)) from None
    clusters: dict[str | None, ClusterIdentity] = dict(identity_of(merged))
    if args.context:
        return args.context, "--context", clusters
    if merged.current_context:
        return merged.current_context, "the kubeconfig's current context", clusters
    return None, "no current context: pass --context NAME to see a context's rules", clusters


def _word(value: bool) -> str:
    return "true" if value else "false"


def _theme_word(theme: str | None) -> str:
    from probetui.ui.themes import DEFAULT_THEME

    words = theme or DEFAULT_THEME
    if "NO_COLOR" in os.environ:
        words += " (monochrome: NO_COLOR is set)"
    return words


def _yaml_name(name: str) -> str:
    from probetui.config.schema import CONTEXT_KEYS

    return next((key for key, (setting, _) in CONTEXT_KEYS.items() if setting == name), name)


def _context_word(name: str, value: Any) -> str:
    if value is not None:
        return str(value)
    from probetui.probe.base import DEFAULT_KUBE_VERSION

    return {
        "via": "auto: node agents where found, else direct in a cluster, port-forward outside",
        "namespace": "the kubeconfig context's, else default",
        "selector": "(none)",
        "kubelet_version": DEFAULT_KUBE_VERSION,
    }[name]


def _table(out: Any, title: str, rows: list[tuple[str, str, str]]) -> None:
    out.write(f"{title}\n")
    name_w = max(len(r[0]) for r in rows) + 2
    value_w = max(len(r[1]) for r in rows) + 2
    for name, value, source in rows:
        out.write(f"  {name:<{name_w}}{value:<{value_w}}{source}\n")
