"""`probetui` with no COMMAND opens the cluster view, shadowing a cluster's kubelets.

Its defaults come from the configuration (`probetui.config`): read-only globally, by context
rule or from `PROBETUI_READ_ONLY`, and per context `--via`, the namespace, the selector and the
kubelet version; a flag beats all of them, and `--write` lifts a read-only that is not locked.

It connects to a cluster as kubectl would (`--kubeconfig`, `KUBECONFIG`, `--context`,
`-n`/`-A`, `-l`, in-cluster config). A bad kubeconfig or context is one line and exit 2 before
anything connects. The first list of pods must succeed: when it does not (refused credentials,
missing permissions, an API server that cannot be reached or keeps failing after three tries),
the run stops with one line naming the problem and exit 2, with a screen or without. After that first list, API faults are
retried with back-off for as long as probetui runs: headless prints each change of the
connection state on stderr, and the UI header shows "[reconnecting: ...]" beside the context.

The Kubernetes client is imported only when the view runs: these flags are on every command
line's parser, so `probetui check` must not pay for it.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from probetui.cli.errors import UsageError
from probetui.cli.live import (
    DURATION_HELP,
    add_record_arguments,
    headless_requested,
    note,
    run_live,
)
from probetui.cli.summary import add_summary_arguments
from probetui.durations import duration_arg

if TYPE_CHECKING:
    from probetui.config import Config, Sourced
    from probetui.runtime.kubernetes.config import ClusterTarget

# the cluster view's flags live on the top-level parser under their own names, so that a
# subcommand's flag of the same name (e.g. local's --read-only) is never confused with them
CLUSTER_DESTS = {
    "k8s_kubeconfig": "--kubeconfig",
    "k8s_context": "--context",
    "k8s_namespace": "-n/--namespace",
    "k8s_all_namespaces": "-A/--all-namespaces",
    "k8s_selector": "-l/--selector",
    "k8s_via": "--via",
    "k8s_agent_namespace": "--agent-namespace",
    "k8s_read_only": "--read-only",
    "k8s_write": "--write",
    "k8s_kubelet_version": "--kubelet-version",
    "k8s_no_ui": "--no-ui",
    "k8s_output": "-o/--output",
    "k8s_duration": "--duration",
    "k8s_shards": "--shards",
    "k8s_summary": "--summary",
    "k8s_record": "--record",
    "k8s_retain": "--retain",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "cluster view (no COMMAND)",
        "Watch the pods of a cluster, run shadow probes beside the kubelet's and show both.",
    )
    g.add_argument(
        "--kubeconfig", dest="k8s_kubeconfig", metavar="FILE", help="kubeconfig file to use"
    )
    g.add_argument("--context", dest="k8s_context", metavar="NAME", help="kubeconfig context")
    g.add_argument(
        "-n",
        "--namespace",
        dest="k8s_namespace",
        metavar="NS",
        help="namespace (default: the context's, else default)",
    )
    g.add_argument(
        "-A",
        "--all-namespaces",
        dest="k8s_all_namespaces",
        action="store_true",
        help="pods of every namespace",
    )
    g.add_argument(
        "-l", "--selector", dest="k8s_selector", metavar="SELECTOR", help="label selector"
    )
    g.add_argument(
        "--via",
        dest="k8s_via",
        choices=("direct", "port-forward", "proxy", "agent", "auto"),
        help="how shadow probes reach pods: the pod IP, an API server port-forward, "
        "pods/proxy (HTTP only), or the node agents (docs/agents.md); default auto: the "
        "agents where found, else direct in a cluster and port-forward outside",
    )
    g.add_argument(
        "--agent-namespace",
        dest="k8s_agent_namespace",
        metavar="NS",
        help="where the node agents run (default probetui)",
    )
    g.add_argument(
        "--read-only",
        dest="k8s_read_only",
        action="store_true",
        help="send only get, list and watch to the API server: no exec, port-forward or proxy",
    )
    g.add_argument(
        "--write",
        dest="k8s_write",
        action="store_true",
        help="lift the config file's or the environment's read-only for this run (refused "
        "when PROBETUI_READ_ONLY=locked or the system file locks it)",
    )
    g.add_argument(
        "--kubelet-version",
        dest="k8s_kubelet_version",
        metavar="X.Y",
        help="the kubelet version the shadow's requests name (kube-probe/X.Y); default 1.35",
    )
    g.add_argument(
        "--no-ui", dest="k8s_no_ui", action="store_true", help="no screen: JSON lines on stdout"
    )
    g.add_argument(
        "-o",
        "--output",
        dest="k8s_output",
        choices=("jsonl",),
        help="headless output format (implies --no-ui)",
    )
    g.add_argument(
        "--duration",
        dest="k8s_duration",
        type=duration_arg,
        metavar="DURATION",
        help=DURATION_HELP,
    )
    from probetui.shards.live import parse_shards

    g.add_argument(
        "--shards",
        dest="k8s_shards",
        type=parse_shards,
        default=None,  # auto; None so that flags_given sees it only when given
        metavar="N|auto",
        help="probe in N shard processes fed by one watch; default auto: in "
        "this process, the pods being unknown before the first list",
    )
    add_summary_arguments(g, prefix="k8s_")
    add_record_arguments(g, prefix="k8s_")


def run(args: argparse.Namespace) -> int:
    from probetui.cli.config import load_config, read_only, redaction, ui_settings
    from probetui.runtime.kubernetes.config import ConnectOptions, KubeconfigError, resolve
    from probetui.runtime.kubernetes.runtime import KubernetesRuntime
    from probetui.shards.live import AUTO

    if args.k8s_all_namespaces and args.k8s_namespace:
        raise UsageError("-n and -A: pick one namespace, or all of them")
    config = load_config(args)
    ui = ui_settings(config, args)
    # a --write that a lock refuses whatever the context is refused before kubeconfig is read
    read_only(config, None, args.k8s_read_only, args.k8s_write)
    if args.k8s_kubelet_version is not None:
        from probetui.config.schema import Expected, check_kubelet_version

        try:
            args.k8s_kubelet_version = check_kubelet_version(args.k8s_kubelet_version)
        except Expected as e:
            raise UsageError(f"--kubelet-version: expected {e}") from None
    options = ConnectOptions(
        kubeconfig=args.k8s_kubeconfig,
        context=args.k8s_context,
        namespace=args.k8s_namespace,
        all_namespaces=args.k8s_all_namespaces,
        selector=args.k8s_selector,
    )
    try:
        target = resolve(options)
    except KubeconfigError as e:
        raise UsageError(str(e)) from None
    target, settings = configured_target(config, target, args)
    try:
        target.check_read_only()
    except KubeconfigError as e:
        raise UsageError(str(e)) from None
    # the first list must succeed in both modes (module docstring)
    runtime = KubernetesRuntime(
        target,
        via=settings["via"].value,
        fail_fast=True,
        agent_namespace=args.k8s_agent_namespace,
    )
    runtime.read_only_reason = settings["read_only"].reason
    runtime.redaction = redaction(config)
    live = argparse.Namespace(
        no_ui=args.k8s_no_ui,
        output=args.k8s_output,
        duration=args.k8s_duration,
        summary=args.k8s_summary,
        record=args.k8s_record,
        retain=args.k8s_retain,
        shards=AUTO if args.k8s_shards is None else args.k8s_shards,
    )
    headless = headless_requested(live)
    if headless:
        runtime.on_state = lambda text: note(text or "connected again")
        runtime.on_note = lambda text: note(f"note: {text}")
    return run_live(runtime, live, headless, ui=ui, kube_version=settings["kubelet_version"].value)


def configured_target(
    config: Config, target: ClusterTarget, args: argparse.Namespace
) -> tuple[ClusterTarget, dict[str, Sourced]]:
    """Return the target with what the configuration says for its context (flags first), and those
    settings by name. Resolving happens first because a context rule needs the context's name,
    which may be the kubeconfig's current one, and a lock the cluster's identity."""
    from probetui.cli.config import cluster_kin, read_only
    from probetui.config import IN_CLUSTER, ConfigError

    context = target.context or IN_CLUSTER
    flags = {
        "via": args.k8s_via,
        "namespace": args.k8s_namespace,
        "selector": args.k8s_selector,
        "kubelet_version": args.k8s_kubelet_version,
    }
    try:
        settings = config.context_settings(context, flags)
    except ConfigError as e:
        raise UsageError(str(e)) from None
    kin = cluster_kin(target.clusters, target.context)
    settings["read_only"] = read_only(config, context, args.k8s_read_only, args.k8s_write, kin)
    changes: dict[str, Any] = {"read_only": settings["read_only"].value}
    namespace = settings["namespace"]
    if namespace.value and not args.k8s_namespace and not target.all_namespaces:
        changes.update(namespace=namespace.value, namespace_from=namespace.source)
    if settings["selector"].value:
        changes["selector"] = settings["selector"].value
    return dataclasses.replace(target, **changes), settings


def flags_given(args: argparse.Namespace) -> list[str]:
    return [flag for dest, flag in CLUSTER_DESTS.items() if getattr(args, dest, None)]
