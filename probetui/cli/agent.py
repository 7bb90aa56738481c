"""`probetui agent` runs the node agent a DaemonSet puts on every node (docs/agents.md).

It shadows the kubelet of one node: the pods the API server places there (a pod watch with
`fieldSelector=spec.nodeName=NODE`), probed from the node's network with the cluster view's
engine, exec probes observed only; it reads the kubelet's own counts from `/metrics/probes`, and
serves the stream (`/v1/stream`), its metrics and `/healthz` on the node's IP. `NODE_NAME` and
`NODE_IP` come from the downward API, or `--node` and `--node-ip`. In-cluster config, or
`--kubeconfig` (tests, a laptop).

`--print-manifest` prints the objects to run it and exits.

Imports only what the agent runs: no Textual.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys
from pathlib import Path
from typing import Any

from probetui.cli.errors import EXIT_OK, EXIT_SIGNAL_BASE, UsageError
from probetui.durations import duration_arg

DEFAULT_PORT = 9479
# a node's probes due within a second of each other run in one wake-up of the agent's loop
# (benchmarks.agents guards the CPU it saves); a verdict a second late stays inside the period
# and slack a divergence must outlast
TICK_ALIGN = 1.0
DEFAULT_TOKEN_FILE = "/var/run/probetui/token"
MIN_ENTRIES = 1024


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value}: a port is 0 to 65535")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be 1 or more")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Run the node agent: shadow the kubelet of one node and serve the stream on its IP."
    )
    p.add_argument(
        "--node", metavar="NAME", help="the node (default $NODE_NAME, from the downward API)"
    )
    p.add_argument(
        "--node-ip", metavar="IP", help="the node's IP (default $NODE_IP, status.hostIP)"
    )
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"port to serve on (default {DEFAULT_PORT})",
    )
    p.add_argument("--bind", metavar="ADDR", help="address to serve on (default the node's IP)")
    p.add_argument(
        "--token-file",
        metavar="FILE",
        default=DEFAULT_TOKEN_FILE,
        help=f"the read token readers must send (default {DEFAULT_TOKEN_FILE})",
    )
    p.add_argument(
        "--scrape-every",
        type=duration_arg,
        default=10.0,
        metavar="DURATION",
        help="how often the kubelet's /metrics/probes is read (default 10s, at least 1s)",
    )
    p.add_argument(
        "--tick-align",
        type=duration_arg,
        default=TICK_ALIGN,
        metavar="DURATION",
        help=f"round every probe's ticks up to a multiple of this, so that probes due together "
        f"share a wake-up; 0 arms them as the kubelet does (default {TICK_ALIGN:g}s, at most 1s)",
    )
    p.add_argument(
        "--kubelet-port", type=_port, default=10250, help="the kubelet's port (default 10250)"
    )
    p.add_argument(
        "--kubelet-insecure-tls",
        action="store_true",
        help="do not verify the kubelet's serving certificate (as metrics-server's flag)",
    )
    p.add_argument(
        "--kubelet-version",
        metavar="V",
        help="the kubelet version the probes name (default: asked of the kubelet)",
    )
    p.add_argument(
        "--retain",
        type=duration_arg,
        default=3600.0,
        metavar="DURATION",
        help="how much history a reader that attaches late gets (default 1h)",
    )
    p.add_argument(
        "--retain-entries",
        type=_count,
        default=200_000,
        metavar="N",
        help="at most this many frames kept for late readers (default 200000)",
    )
    p.add_argument(
        "--max-clients", type=_count, default=8, metavar="N", help="stream readers at once (8)"
    )
    p.add_argument(
        "--service-account-dir",
        metavar="DIR",
        default=None,
        help="where the ServiceAccount's token and ca.crt are (default the pod's mount)",
    )
    p.add_argument("--kubeconfig", metavar="FILE", help="a kubeconfig instead of in-cluster config")
    p.add_argument("--context", metavar="NAME", help="the kubeconfig's context to use")
    p.add_argument("--duration", type=duration_arg, metavar="DURATION", help="stop after this")
    p.add_argument(
        "--print-manifest",
        action="store_true",
        help="print the Namespace, RBAC, Secret and DaemonSet to run the agents, and exit",
    )
    p.add_argument(
        "-n",
        "--namespace",
        default=None,
        metavar="NS",
        help="with --print-manifest: the namespace (default probetui)",
    )
    p.add_argument(
        "--image", metavar="IMAGE", help="with --print-manifest: the image (default the release's)"
    )


def run(args: argparse.Namespace) -> int:
    if args.print_manifest:
        from probetui.agent.manifest import IMAGE, NAMESPACE, render

        sys.stdout.write(render(args.namespace or NAMESPACE, args.image or IMAGE))
        return EXIT_OK
    for flag, value in (("--namespace", args.namespace), ("--image", args.image)):
        if value is not None:
            raise UsageError(f"{flag}: only with --print-manifest")
    from probetui.agent import lazy_kube

    # before anything imports the API client: its packages' every API and model stay unloaded
    lazy_kube.defer()
    options = _options(args)
    target = _target(args, options.node)
    return _serve(options, target, args.duration)


def _options(args: argparse.Namespace) -> Any:
    from probetui.agent.run import AgentOptions

    node = args.node or os.environ.get("NODE_NAME", "")
    if not node:
        raise UsageError(
            "no node: pass --node NAME or set NODE_NAME (the DaemonSet sets it from spec.nodeName)"
        )
    node_ip = args.node_ip or os.environ.get("NODE_IP", "")
    if not node_ip:
        raise UsageError(
            "no node IP: pass --node-ip IP or set NODE_IP (the DaemonSet sets it from status.hostIP)"
        )
    for flag, value in (("--node-ip", node_ip), ("--bind", args.bind)):
        if value is None:
            continue
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise UsageError(f"{flag} {value!r}: not an IP address") from None
    if args.scrape_every < 1.0:
        raise UsageError(f"--scrape-every {args.scrape_every:g}s: at least 1s")
    if not 0.0 <= args.tick_align <= 1.0:
        raise UsageError(f"--tick-align {args.tick_align:g}s: from 0s to 1s")
    if args.retain < 60.0:
        raise UsageError(f"--retain {args.retain:g}s: at least 1m")
    if args.retain_entries < MIN_ENTRIES:
        raise UsageError(f"--retain-entries {args.retain_entries}: at least {MIN_ENTRIES}")
    if args.duration is not None and not args.duration > 0:
        raise UsageError(f"--duration {args.duration:g}: must be more than 0 seconds")
    return AgentOptions(
        node=node,
        node_ip=node_ip,
        bind=args.bind or node_ip,
        port=args.port,
        token_file=Path(args.token_file),
        scrape_every=args.scrape_every,
        kubelet_port=args.kubelet_port,
        kubelet_insecure_tls=args.kubelet_insecure_tls,
        retain=args.retain,
        retain_entries=args.retain_entries,
        max_clients=args.max_clients,
        kubelet_version=args.kubelet_version,
        tick_align=args.tick_align,
    )


def _target(args: argparse.Namespace, node: str) -> Any:
    from probetui.agent.runtime import node_selector
    from probetui.runtime.kubernetes.config import (
        SERVICE_ACCOUNT_DIR,
        ConnectOptions,
        KubeconfigError,
        resolve,
    )

    options = ConnectOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        all_namespaces=True,
        read_only=True,
        field_selector=node_selector(node),
    )
    try:
        sa_dir = Path(args.service_account_dir) if args.service_account_dir else SERVICE_ACCOUNT_DIR
        target = resolve(options, service_account_dir=sa_dir)
        target.check_read_only()
    except KubeconfigError as e:
        raise UsageError(str(e)) from None
    return target


def _serve(options: Any, target: Any, duration: float | None) -> int:
    import asyncio

    from probetui.agent.run import Agent
    from probetui.agent.server import TokenError
    from probetui.cli.live import cancel_on_signals
    from probetui.memory import collect_young_rarely
    from probetui.runtime.base import RuntimeFailure

    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="probetui agent: %(message)s"
    )
    # as a shard's: young collections every 700 allocations catch every attempt in flight and
    # fill the old generations with what reference counting frees a moment later
    collect_young_rarely()

    def say(text: str) -> None:
        print(f"probetui agent: {text}", file=sys.stderr, flush=True)

    try:
        agent = Agent(options, target, say=say)
    except TokenError as e:
        raise UsageError(str(e)) from None
    signals: list[int] = []

    async def main() -> None:
        cancel_on_signals(signals)
        try:
            await agent.run(duration)
        except asyncio.CancelledError:
            if not signals:
                raise

    try:
        asyncio.run(main())
    except RuntimeFailure as e:
        raise UsageError(str(e)) from None
    return EXIT_SIGNAL_BASE + signals[0] if signals else EXIT_OK


__all__ = ["add_arguments", "run"]
