"""`probetui check` runs one probe attempt of one handler, exactly as the kubelet runs it.

Only the handler that runs is imported, so a script can call `check` in a loop. An exec probe
(`--exec`, or a manifest's) runs a command: a shell locked read-only refuses it.

`--pod NS/NAME --compare-vias` runs one attempt of a running pod's probe through every path the
cluster view can take (the node agent, this machine, port-forward, pods/proxy) and shows them
side by side (`probetui/runtime/kubernetes/vantage.py`): exit 0 where every path that ran
agrees, 1 where they disagree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

from probetui.cli.config import refuse_under_lock
from probetui.cli.errors import EXIT_FAILURE, EXIT_OK, EXIT_UNKNOWN, UsageError
from probetui.durations import duration_arg


def add_arguments(c: argparse.ArgumentParser) -> None:
    c.description = (
        "Run one probe attempt as the kubelet would. Exit status: 0 success or "
        "warning, 1 failure, 3 unknown (prober error), 2 bad usage or input."
    )
    target = c.add_mutually_exclusive_group()
    target.add_argument("--http-get", metavar="URL", help="HTTP GET probe of URL")
    target.add_argument("--tcp", metavar="HOST:PORT", help="TCP connect probe")
    target.add_argument("--grpc", metavar="HOST:PORT", help="gRPC health check probe")
    target.add_argument(
        "--exec", dest="exec_", action="store_true", help="exec probe: the command follows --"
    )
    target.add_argument("-f", "--filename", metavar="MANIFEST", help="run a probe from a manifest")
    c.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="HTTP request header, as httpGet.httpHeaders (repeatable)",
    )
    c.add_argument("--service", default="", help="gRPC service name (default: the server)")
    c.add_argument("--tls", action="store_true", help="gRPC over TLS without verification")
    c.add_argument(
        "--timeout",
        type=duration_arg,
        default=1.0,
        metavar="DURATION",
        help="the probe's timeoutSeconds (e.g. 1s, 500ms; a bare number is seconds; default 1s)",
    )
    c.add_argument(
        "-c",
        "--container",
        metavar="CONTAINER",
        help="container in the manifest (default: first probed)",
    )
    c.add_argument(
        "--pod",
        metavar="POD",
        help="pod or workload name when the manifest holds several; with --compare-vias a pod "
        "of the cluster, NS/NAME",
    )
    c.add_argument(
        "--probe",
        choices=("liveness", "readiness", "startup"),
        help="which probe; with -f default the first of liveness, readiness, startup",
    )
    c.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="pod IP to use with -f (default 127.0.0.1)",
    )
    c.add_argument(
        "--kubelet-version",
        "--kube-version",
        dest="kube_version",
        default=None,
        metavar="X.Y",
        help="the kubelet version the request names (User-Agent kube-probe/X.Y); default 1.35",
    )
    c.add_argument(
        "--protocol",
        type=_protocol,
        default=None,
        metavar="HTTP1|HTTP2",
        help="httpGet.protocol: HTTP2 (or h2c) is HTTP/2 with prior knowledge, which the "
        "kubelet speaks only with H2CContainerProbe on (1.37+: --kubelet-version 1.37 "
        "--feature-gates H2CContainerProbe=true); elsewhere it sends HTTP/1.1",
    )
    c.add_argument(
        "--feature-gates",
        metavar="NAME=BOOL,...",
        default="",
        help="the kubelet's feature gates set away from the release's defaults, e.g. "
        "H2CContainerProbe=true",
    )
    c.add_argument(
        "-o",
        "--output",
        choices=("text", "json"),
        default=None,
        help="text (default) or json: one JSON object",
    )
    c.add_argument("--json", action="store_true", help="the same as --output json")
    v = c.add_argument_group(
        "compare vias",
        "--pod NS/NAME --compare-vias: one attempt of a running pod's probe through the node "
        "agent, this machine (the pod IP), port-forward and pods/proxy, side by side. Exit 0 "
        "where every path that ran agrees, 1 where they disagree.",
    )
    v.add_argument(
        "--compare-vias",
        action="store_true",
        help="compare the paths to the pod named by --pod NS/NAME (a pod of the cluster)",
    )
    v.add_argument("--kubeconfig", metavar="FILE", help="with --compare-vias: kubeconfig file")
    v.add_argument("--context", metavar="NAME", help="with --compare-vias: kubeconfig context")
    v.add_argument(
        "--agent-namespace",
        metavar="NS",
        help="with --compare-vias: where the node agents run (default probetui)",
    )
    v.add_argument(
        "--read-only",
        action="store_true",
        help="with --compare-vias: only get, list and watch (the agent's last attempt is shown; "
        "port-forward and proxy are not run)",
    )
    c.add_argument("command_argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)


def _host_port(text: str, flag: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"{flag} {text}: expected HOST:PORT, e.g. 127.0.0.1:8080")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    number = int(port)
    if not 0 < number < 65536:
        raise UsageError(f"{flag} {text}: port must be 1-65535")
    return host or "127.0.0.1", number


def _protocol(text: str) -> str:
    """httpGet.protocol as the API spells it: HTTP1 or HTTP2 (h2c and http/1.1 read too)."""
    value = {"h2c": "HTTP2", "http/1.1": "HTTP1"}.get(text.lower(), text.upper())
    if value not in ("HTTP1", "HTTP2"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected HTTP1 or HTTP2 (h2c)")
    return value


def _profile(args: argparse.Namespace, kube_version: str) -> Any:
    """Return the kubelet played: the release and gates the flags name. Without --feature-gates a
    version outside the modelled ones plays the nearest (it once only named the User-Agent)."""
    from probetui.kubelet.profile import (
        ProfileError,
        parse_feature_gates,
        profile_for,
        profile_of_node,
    )

    if not args.feature_gates:
        return profile_of_node(kube_version)
    try:
        return profile_for(kube_version, parse_feature_gates(args.feature_gates))
    except ProfileError as e:
        raise UsageError(str(e)) from None


def _h2c_note(protocol: str | None, profile: Any) -> None:
    """Say so where a probe asks for HTTP2 and the kubelet played does not read the field."""
    if protocol == "HTTP2" and not profile.h2c:
        print(
            f"note: protocol HTTP2 is read only with H2CContainerProbe on (kubelet 1.37 and "
            f"later, --feature-gates H2CContainerProbe=true); kubelet 1.{profile.minor} as "
            "played sends this probe over HTTP/1.1",
            file=sys.stderr,
        )


def _headers(items: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for item in items:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header {item!r}: expected 'Name: value'")
        out.append((name.strip(), value.strip()))
    return out


def _manifest_probe(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    from probetui.spec.errors import ManifestError
    from probetui.spec.model import ProbeType
    from probetui.spec.parse import load_pods

    try:
        pods = load_pods(args.filename)
    except ManifestError as e:
        raise UsageError(str(e)) from None
    if args.pod:
        pods = [p for p in pods if p.name == args.pod]
        if not pods:
            raise UsageError(f"{args.filename}: no pod or workload named {args.pod!r}")
    elif len(pods) > 1:
        names = ", ".join(p.name for p in pods)
        raise UsageError(f"{args.filename} holds several pods ({names}): pick one with --pod")
    pod = pods[0]
    order = (
        [ProbeType.parse(args.probe)]
        if args.probe
        else [ProbeType.LIVENESS, ProbeType.READINESS, ProbeType.STARTUP]
    )
    containers = pod.probed_containers()
    if args.container:
        containers = tuple(c for c in containers if c.name == args.container)
        if not containers:
            raise UsageError(f"{args.filename}: pod {pod.name} has no container {args.container!r}")
    for container in containers:
        for probe_type in order:
            probe = container.probe(probe_type)
            if probe is not None:
                return pod, container, probe_type, probe
    what = f"{args.probe} probe" if args.probe else "probe"
    where = f"container {args.container!r}" if args.container else f"pod {pod.name}"
    raise UsageError(f"{args.filename}: {where} has no {what}")


async def _check(args: argparse.Namespace) -> tuple[Any, str, Any]:
    from probetui.probe.base import DEFAULT_KUBE_VERSION
    from probetui.prober.prober import retry_on_error, run_probe_with_retries
    from probetui.spec.model import ProbeType

    kube_version = args.kube_version or DEFAULT_KUBE_VERSION
    timeout = args.timeout
    if timeout <= 0:
        raise UsageError(f"--timeout {timeout:g}: must be more than 0 seconds")
    profile = _profile(args, kube_version)
    if args.filename:
        from probetui.prober.handlers import HandlerRunner
        from probetui.prober.status import PodStatus

        if args.protocol is not None:
            raise UsageError("--protocol goes with --http-get; a manifest's probe says its own")
        pod, container, probe_type, probe = _manifest_probe(args)
        if probe.handler_name == "exec":
            refuse_under_lock(f"check -f {args.filename}: an exec probe")
        if probe.http_get is not None:
            _h2c_note(probe.http_get.protocol, profile)
        runner = HandlerRunner(kube_version=kube_version)
        outcome = await run_probe_with_retries(
            partial(runner, profile=profile),
            probe_type,
            probe,
            pod,
            container,
            PodStatus(pod_ip=args.host),
        )
        return outcome, probe_type.key, pod
    if args.protocol is not None and not args.http_get:
        raise UsageError("--protocol is httpGet's field: it goes with --http-get URL")
    _h2c_note(args.protocol, profile)
    h2c = args.protocol == "HTTP2" and profile.h2c
    probe_type = ProbeType.parse(args.probe or "liveness")
    outcome = await retry_on_error(
        probe_type, lambda: _adhoc_attempt(args, timeout, kube_version, h2c)
    )
    return outcome, probe_type.key, _adhoc_pod(args)


def _adhoc_pod(args: argparse.Namespace) -> Any:
    """Return the probe given by flags as a pod, for the redaction to know its secrets."""
    from urllib.parse import urlsplit

    from probetui.spec.model import Container, ExecAction, HTTPGetAction, HTTPHeader, Pod, Probe

    probe = None
    if args.http_get:
        url = urlsplit(args.http_get)
        path = url.path + (f"?{url.query}" if url.query else "")
        headers = tuple(HTTPHeader(n, v) for n, v in _headers(args.header))
        action = HTTPGetAction(port=0, path=path, http_headers=headers, protocol=args.protocol)
        probe = Probe(http_get=action)
    elif args.exec_:
        argv = list(args.command_argv)
        probe = Probe(exec=ExecAction(tuple(argv[1:] if argv[:1] == ["--"] else argv)))
    return Pod(name="check", containers=(Container(name="check", liveness_probe=probe),))


async def _adhoc_attempt(
    args: argparse.Namespace, timeout: float, kube_version: str, h2c: bool = False
) -> Any:
    if args.http_get:
        if not args.http_get.lower().startswith(("http://", "https://")):
            raise UsageError(f"--http-get {args.http_get}: expected an http:// or https:// URL")
        if args.protocol == "HTTP2" and not args.http_get.lower().startswith("http://"):
            # validateHTTPGetAction: the API server refuses HTTP2 with scheme HTTPS
            raise UsageError(
                f"--protocol HTTP2 --http-get {args.http_get}: h2c is HTTP/2 without TLS, "
                "use an http:// URL"
            )
        if h2c:
            # prober.go runProbe: ProbeH2C, HTTP/2 with prior knowledge
            from probetui.probe import http_h2c

            return await http_h2c.probe(
                args.http_get, _headers(args.header), timeout, kube_version=kube_version
            )
        # the one HTTP handler, the same the live engine runs
        from probetui.probe import http_lean

        return await http_lean.probe(
            args.http_get, _headers(args.header), timeout, kube_version=kube_version
        )
    if args.tcp:
        from probetui.probe import tcp

        return await tcp.probe(*_host_port(args.tcp, "--tcp"), timeout)
    if args.grpc:
        from probetui.probe import grpc_lean

        host, port = _host_port(args.grpc, "--grpc")
        return await grpc_lean.probe(
            host, port, args.service, timeout, kube_version=kube_version, tls=args.tls
        )
    if args.exec_:
        from probetui.probe import exec as exec_probe

        argv = list(args.command_argv)
        if argv and argv[0] == "--":
            argv = argv[1:]
        if not argv:
            raise UsageError("--exec needs a command after --, e.g. --exec -- cat /tmp/healthy")
        refuse_under_lock("check --exec")
        return await exec_probe.probe(argv, timeout)
    raise UsageError(
        "check needs one of --http-get URL, --tcp HOST:PORT, --grpc HOST:PORT, "
        "--exec -- CMD, -f MANIFEST"
    )


def run(args: argparse.Namespace) -> int:
    if args.command_argv and not args.exec_:
        raise UsageError(f"unexpected arguments: {' '.join(args.command_argv)}")
    if args.compare_vias:
        return _compare_vias(args)
    for flag, given in (
        ("--kubeconfig", args.kubeconfig),
        ("--context", args.context),
        ("--agent-namespace", args.agent_namespace),
        ("--read-only", args.read_only),
    ):
        if given:
            raise UsageError(f"{flag}: only with --compare-vias")
    from probetui.cli.config import load_config, redaction
    from probetui.redact import Redactor

    policy = redaction(load_config(args))
    outcome, probe, pod = asyncio.run(_check(args))
    # what is printed is masked as every other output is (the probe itself ran as given)
    redactor = Redactor(policy)
    outcome = redactor.outcome(redactor.pod(pod), outcome)
    attempt = outcome.attempt
    result = "unknown" if outcome.error is not None else attempt.result.value
    code = {"success": EXIT_OK, "warning": EXIT_OK, "failure": EXIT_FAILURE}.get(
        result, EXIT_UNKNOWN
    )
    event = outcome.event
    if args.json or args.output == "json":
        doc = {
            "result": result,
            "handler": attempt.handler,
            "target": attempt.target,
            "latency_ms": attempt.latency_ms,
            "output": attempt.output,
            "event": None
            if event is None
            else {"type": event.type, "reason": event.reason, "message": event.message},
            "probe": probe,
            "status_code": attempt.status_code,
            "timed_out": attempt.timed_out,
            "error": outcome.error,
            "tries": len(outcome.attempts),
        }
        print(json.dumps(doc))
        return code
    detail = attempt.error or attempt.output
    status = f"  {attempt.status_code}" if attempt.status_code is not None else ""
    line = f"{result:<8} {attempt.handler:<5} {attempt.target}  {attempt.latency_ms:.1f} ms{status}"
    print(line)
    if detail:
        print(f"  output: {_excerpt(detail)}")
    if event is not None:
        print(f"  kubelet event: {event.type} {event.reason}: {_excerpt(event.message)}")
    elif result in ("success",):
        print("  kubelet event: none (successes are not recorded)")
    if len(outcome.attempts) > 1:
        print(f"  tries: {len(outcome.attempts)} (the prober retries only errors)")
    return code


def _compare_vias(args: argparse.Namespace) -> int:
    """`--pod NS/NAME --compare-vias`: the probe's attempt by each path, side by side."""
    from probetui.cli.config import cluster_kin, load_config, read_only, redaction
    from probetui.config import IN_CLUSTER
    from probetui.redact import Redactor
    from probetui.runtime.kubernetes.config import ConnectOptions, KubeconfigError, resolve
    from probetui.runtime.kubernetes.vantage import VantageError, compare

    for flag, given in (
        ("--http-get", args.http_get),
        ("--tcp", args.tcp),
        ("--grpc", args.grpc),
        ("--exec", args.exec_),
        ("-f", args.filename),
    ):
        if given:
            raise UsageError(f"--compare-vias probes a pod of the cluster: drop {flag}")
    if not args.pod:
        raise UsageError("--compare-vias needs --pod NS/NAME (or NAME in the context's namespace)")
    namespace, _, name = args.pod.rpartition("/")
    config = load_config(args)
    try:
        target = resolve(
            ConnectOptions(
                kubeconfig=args.kubeconfig, context=args.context, namespace=namespace or None
            )
        )
    except KubeconfigError as e:
        raise UsageError(str(e)) from None
    decided = read_only(
        config,
        target.context or IN_CLUSTER,
        args.read_only,
        False,
        cluster_kin(target.clusters, target.context),
    )
    import dataclasses

    target = dataclasses.replace(target, read_only=decided.value)
    try:
        target.check_read_only()
        result = asyncio.run(
            compare(
                target,
                namespace or target.namespace,
                name,
                container=args.container,
                probe=args.probe,
                agent_namespace=args.agent_namespace,
                kube_version=args.kube_version,
            )
        )
    except (KubeconfigError, VantageError) as e:
        raise UsageError(str(e)) from None
    # what is printed is masked as every other output is
    redactor = Redactor(redaction(config))
    shown = redactor.pod(result.pod)
    rows = [(s, redactor.text(shown, s.detail)) for s in result.seen]
    where = f"{result.pod.namespace}/{result.pod.name}"
    if args.json or args.output == "json":
        doc = {
            "pod": where,
            "container": result.container.name,
            "probe": result.probe_type.key,
            "node": result.node or None,
            "agree": result.agree,
            "vias": [{**s.to_json(), "detail": detail} for s, detail in rows],
        }
        print(json.dumps(doc))
        return EXIT_OK if result.agree else EXIT_FAILURE
    print(
        f"{result.probe_type.key} probe of {where} ({result.container.name}), node "
        f"{result.node or '?'}:"
    )
    for s, detail in rows:
        word = s.result or "-"
        latency = f"{s.latency_ms:.1f} ms" if s.latency_ms is not None else "-"
        code = str(s.status_code) if s.status_code is not None else ""
        print(f"  {s.via:<13}{word:<9}{latency:>10}  {code:<4} {_excerpt(detail, 120)}".rstrip())
    ran = [s for s in result.seen if s.result is not None]
    if not result.agree:
        agent = next((s for s in ran if s.via == "agent"), None)
        print(
            "  the paths disagree"
            + (
                f": the agent's ({agent.result}) is what the kubelet sees from the node"
                if agent is not None
                else ""
            )
        )
    elif len(ran) > 1:
        print("  every path that ran agrees")
    return EXIT_OK if result.agree else EXIT_FAILURE


def _excerpt(text: str, limit: int = 300) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
