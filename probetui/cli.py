"""Command line: `probetui` (the cluster view), `check`, `simulate`, `local`, `demo`.

`probetui` with no subcommand connects to a cluster as kubectl would (`--kubeconfig`,
`KUBECONFIG`, `--context`, `-n`/`-A`, `-l`, in-cluster config) and shadows its kubelets. A bad
kubeconfig or context is one line and exit 2 before anything connects. The first list of pods
must succeed: when it does not (refused credentials, missing permissions, an API server that
cannot be reached or keeps failing after three tries), the run stops with one line naming the
problem: exit 2 headless; the UI prints the same line and exits 1, as for any runtime that
cannot go on. After that first list, API faults are retried with back-off for as long as
probetui runs: headless prints each change of the connection state on stderr, and the UI header
shows "[reconnecting: ...]" beside the context.

Each subcommand imports what it needs when it runs, so `probetui check` starts without loading
Textual or the Kubernetes client. Bad input is one line on stderr and exit status 2.

`local` and `demo` run the live engine over the local runtime. With `--no-ui` (or `--output
jsonl`) the engine runs headless: one JSON object a line on stdout, flushed line by line. It
ends by itself after `--duration`, or when every pod has ended for good (exit 0), or on SIGINT
(exit 130) or SIGTERM (exit 143): the engine is cancelled, every container is stopped (SIGTERM,
SIGKILL after at most 2 s) and reaped, and what was recorded is already on stdout. A reader
that goes away (`| head`) ends it too, with exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from probetui.runtime.base import Runtime

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_UNKNOWN = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage or bad input: printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # one line, naming the command and where to look, instead of argparse's usage dump
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="probetui",
        description="See what the kubelet's prober is thinking: probes, result runs, thresholds.",
    )
    p.add_argument("--version", action="version", version=_version())
    _cluster_arguments(p)
    sub = p.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    c = sub.add_parser(
        "check",
        help="run one probe attempt exactly as the kubelet would",
        description="Run one probe attempt as the kubelet would. Exit status: 0 success or "
        "warning, 1 failure, 3 unknown (prober error), 2 bad usage or input.",
    )
    target = c.add_mutually_exclusive_group()
    target.add_argument("--http-get", metavar="URL", help="HTTP GET probe of URL")
    target.add_argument("--tcp", metavar="HOST:PORT", help="TCP connect probe")
    target.add_argument("--grpc", metavar="HOST:PORT", help="gRPC health check probe")
    target.add_argument(
        "--exec", dest="exec_", action="store_true", help="exec probe: the command follows --"
    )
    target.add_argument("-f", "--filename", metavar="MANIFEST", help="run a probe from a manifest")
    c.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'")
    c.add_argument("--service", default="", help="gRPC service name (default: the server)")
    c.add_argument("--tls", action="store_true", help="gRPC over TLS without verification")
    c.add_argument("--timeout", type=float, default=1.0, metavar="SECONDS")
    c.add_argument("-c", "--container", help="container in the manifest (default: first probed)")
    c.add_argument("--pod", help="pod or workload name when the manifest holds several")
    c.add_argument(
        "--probe",
        choices=("liveness", "readiness", "startup"),
        help="which probe; with -f default the first of liveness, readiness, startup",
    )
    c.add_argument("--host", default="127.0.0.1", help="pod IP to use with -f (default 127.0.0.1)")
    c.add_argument("--kube-version", default=None, help="version in User-Agent kube-probe/X.Y")
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("command_argv", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    s = sub.add_parser(
        "simulate",
        help="what the kubelet would do, in virtual time",
        description="Run a scenario in virtual time and print the kubelet's decisions.",
    )
    s.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    s.add_argument("--json", action="store_true", help="print events and summary as JSON")
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PROBE.FIELD=VALUE",
        help="override a probe field, e.g. liveness.failureThreshold=6 (repeatable)",
    )

    loc = sub.add_parser(
        "local",
        help="run a Pod manifest's containers as local processes, probed as the kubelet would",
        description="Run each container's command and args as a local process (no images), "
        "with probetui playing the kubelet: probes on 127.0.0.1, kills, restarts with "
        "CrashLoopBackOff, readiness. Headless exit status: 0 at --duration or when every pod "
        "has ended, 130 on SIGINT, 143 on SIGTERM, 2 for a manifest that cannot run.",
    )
    loc.add_argument("manifest", metavar="MANIFEST", help="Pod (or workload) manifest, YAML")
    loc.add_argument(
        "-c",
        "--container",
        action="append",
        default=[],
        metavar="CONTAINER",
        help="run only this container (repeatable); the others are left out",
    )
    _live_arguments(loc)
    loc.add_argument(
        "--read-only",
        action="store_true",
        help="start, signal and exec nothing: show the manifest's probes only (UI only)",
    )

    demo = sub.add_parser(
        "demo",
        help="bundled demo services under the local runtime: every probe behaviour in a minute",
        description="Start the bundled demo services as local processes and probe them as the "
        "kubelet would. Headless exit status as for 'probetui local'.",
    )
    demo.add_argument(
        "--print-manifest",
        action="store_true",
        help="print the demo's Pod manifest (with this run's ports) and exit",
    )
    _live_arguments(demo)
    return p


# the cluster view's flags live on the top-level parser under their own names, so that a
# subcommand's flag of the same name (e.g. local's --read-only) is never confused with them
_CLUSTER_DESTS = {
    "k8s_kubeconfig": "--kubeconfig",
    "k8s_context": "--context",
    "k8s_namespace": "-n/--namespace",
    "k8s_all_namespaces": "-A/--all-namespaces",
    "k8s_selector": "-l/--selector",
    "k8s_via": "--via",
    "k8s_read_only": "--read-only",
    "k8s_no_ui": "--no-ui",
    "k8s_output": "--output",
    "k8s_duration": "--duration",
}


def _cluster_arguments(p: argparse.ArgumentParser) -> None:
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
        choices=("direct", "port-forward", "proxy"),
        help="how shadow probes reach pods: the pod IP, an API server port-forward, or "
        "pods/proxy (HTTP only); default direct in a cluster, port-forward outside",
    )
    g.add_argument(
        "--read-only",
        dest="k8s_read_only",
        action="store_true",
        help="send only get, list and watch to the API server: no exec, port-forward or proxy",
    )
    g.add_argument(
        "--no-ui", dest="k8s_no_ui", action="store_true", help="no screen: JSON lines on stdout"
    )
    g.add_argument(
        "--output",
        dest="k8s_output",
        choices=("jsonl",),
        help="headless output format (implies --no-ui)",
    )
    g.add_argument(
        "--duration",
        dest="k8s_duration",
        type=float,
        metavar="SECONDS",
        help="stop by itself after SECONDS",
    )


def _live_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-ui", action="store_true", help="no screen: print events as JSON lines")
    p.add_argument(
        "--output",
        choices=("jsonl",),
        help="headless output format (implies --no-ui): one JSON object per line",
    )
    p.add_argument("--duration", type=float, metavar="SECONDS", help="stop by itself after SECONDS")


def _version() -> str:
    from probetui import __version__

    return f"probetui {__version__}"


# -- check ----------------------------------------------------------------------------------


def _host_port(text: str, flag: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"{flag} {text}: expected HOST:PORT, e.g. 127.0.0.1:8080")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    number = int(port)
    if not 0 < number < 65536:
        raise UsageError(f"{flag} {text}: port must be 1-65535")
    return host or "127.0.0.1", number


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
    what = f"a {args.probe} probe" if args.probe else "a probe"
    where = f"container {args.container!r}" if args.container else f"pod {pod.name}"
    raise UsageError(f"{args.filename}: {where} has no {what}")


async def _check(args: argparse.Namespace) -> tuple[Any, str]:
    from probetui.probe.base import DEFAULT_KUBE_VERSION
    from probetui.prober.prober import retry_on_error, run_probe_with_retries
    from probetui.spec.model import ProbeType

    kube_version = args.kube_version or DEFAULT_KUBE_VERSION
    timeout = args.timeout
    if timeout <= 0:
        raise UsageError(f"--timeout {timeout:g}: must be more than 0 seconds")
    if args.filename:
        from probetui.prober.handlers import HandlerRunner
        from probetui.prober.status import PodStatus

        pod, container, probe_type, probe = _manifest_probe(args)
        runner = HandlerRunner(kube_version=kube_version)
        outcome = await run_probe_with_retries(
            runner, probe_type, probe, pod, container, PodStatus(pod_ip=args.host)
        )
        return outcome, probe_type.key
    probe_type = ProbeType.parse(args.probe or "liveness")
    outcome = await retry_on_error(probe_type, lambda: _adhoc_attempt(args, timeout, kube_version))
    return outcome, probe_type.key


async def _adhoc_attempt(args: argparse.Namespace, timeout: float, kube_version: str) -> Any:
    if args.http_get:
        # the same handler the live engine runs (tests/probe/test_http_lean.py holds it
        # identical to the httpx reference)
        from probetui.probe import http_lean

        if not args.http_get.lower().startswith(("http://", "https://")):
            raise UsageError(f"--http-get {args.http_get}: expected an http:// or https:// URL")
        return await http_lean.probe(
            args.http_get, _headers(args.header), timeout, kube_version=kube_version
        )
    if args.tcp:
        from probetui.probe import tcp

        return await tcp.probe(*_host_port(args.tcp, "--tcp"), timeout)
    if args.grpc:
        from probetui.probe import grpc

        host, port = _host_port(args.grpc, "--grpc")
        return await grpc.probe(
            host, port, args.service, timeout, kube_version=kube_version, tls=args.tls
        )
    if args.exec_:
        from probetui.probe import exec as exec_probe

        argv = list(args.command_argv)
        if argv and argv[0] == "--":
            argv = argv[1:]
        if not argv:
            raise UsageError("--exec needs a command after --, e.g. --exec -- cat /tmp/healthy")
        return await exec_probe.probe(argv, timeout)
    raise UsageError(
        "check needs one of --http-get URL, --tcp HOST:PORT, --grpc HOST:PORT, "
        "--exec -- CMD, -f MANIFEST"
    )


def _check_main(args: argparse.Namespace) -> int:
    if args.command_argv and not args.exec_:
        raise UsageError(f"unexpected arguments: {' '.join(args.command_argv)}")
    outcome, probe = asyncio.run(_check(args))
    attempt = outcome.attempt
    result = "unknown" if outcome.error is not None else attempt.result.value
    code = {"success": EXIT_OK, "warning": EXIT_OK, "failure": EXIT_FAILURE}.get(
        result, EXIT_UNKNOWN
    )
    event = outcome.event
    if args.json:
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


def _excerpt(text: str, limit: int = 300) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


# -- simulate -------------------------------------------------------------------------------


def _simulate_main(args: argparse.Namespace) -> int:
    from probetui.prober import simulate as sim

    try:
        base = sim.load_scenario(args.scenario)
        scenario = sim.apply_overrides(base, args.set) if args.set else base
    except sim.ScenarioError as e:
        raise UsageError(f"{args.scenario}: {e}") from None
    result = sim.simulate(scenario)
    baseline = sim.simulate(base)["summary"] if args.set else None
    if args.json:
        if baseline is not None:
            result["baseline"] = baseline
            result["overrides"] = list(args.set)
        json.dump(result, sys.stdout)
        sys.stdout.write("\n")
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


# -- local, demo ---------------------------------------------------------------------------


def _local_main(args: argparse.Namespace) -> int:
    from probetui.runtime.base import RuntimeFailure
    from probetui.runtime.local.runtime import LocalRuntime
    from probetui.spec.errors import ManifestError
    from probetui.spec.parse import load_pods

    headless = _headless_requested(args)
    if args.read_only and headless:
        raise UsageError(
            "--read-only: the local runtime would start no process, so there is nothing to "
            "record headless; drop --read-only, or leave out --no-ui to browse the probes"
        )
    try:
        pods = load_pods(args.manifest)
    except ManifestError as e:
        raise UsageError(str(e)) from None
    try:
        runtime = LocalRuntime(
            pods,
            source=f"local {args.manifest}",
            only=args.container,
            read_only=args.read_only,
        )
    except RuntimeFailure as e:
        raise UsageError(f"{args.manifest}: {e}") from None
    if args.read_only:
        _note("read-only: no process is started, signalled or exec'd; showing the probes only")
    return _live(runtime, args, headless)


def _demo_main(args: argparse.Namespace) -> int:
    from probetui.runtime.base import RuntimeFailure
    from probetui.runtime.local.runtime import LocalRuntime
    from probetui.spec.errors import ManifestError

    if not _module_exists("probetui.runtime.demo"):
        raise UsageError("the demo is not built yet; try 'probetui local MANIFEST'")
    from probetui.runtime.demo import demo_manifest_text, load_demo

    if args.print_manifest:
        # a manifest to read or to run with 'probetui local' (the ports are free right now)
        sys.stdout.write(demo_manifest_text())
        return EXIT_OK
    try:
        runtime = LocalRuntime(load_demo(), source="demo")
    except (RuntimeFailure, ManifestError, OSError, ValueError) as e:
        # e.g. a port the demo needs is taken: one line, not a traceback
        raise UsageError(f"demo: {e}") from None
    return _live(runtime, args, _headless_requested(args))


def _cluster_main(args: argparse.Namespace) -> int:
    from probetui.runtime.kubernetes.config import ConnectOptions, KubeconfigError, resolve
    from probetui.runtime.kubernetes.runtime import KubernetesRuntime

    if args.k8s_all_namespaces and args.k8s_namespace:
        raise UsageError("-n and -A: pick one namespace, or all of them")
    options = ConnectOptions(
        kubeconfig=args.k8s_kubeconfig,
        context=args.k8s_context,
        namespace=args.k8s_namespace,
        all_namespaces=args.k8s_all_namespaces,
        selector=args.k8s_selector,
        read_only=args.k8s_read_only,
    )
    try:
        target = resolve(options)
    except KubeconfigError as e:
        raise UsageError(str(e)) from None
    # the first list must succeed in both modes (module docstring)
    runtime = KubernetesRuntime(target, via=args.k8s_via, fail_fast=True)
    live = argparse.Namespace(
        no_ui=args.k8s_no_ui, output=args.k8s_output, duration=args.k8s_duration
    )
    headless = _headless_requested(live)
    if headless:
        runtime.on_state = lambda text: _note(text or "connected again")
        runtime.on_note = lambda text: _note(f"note: {text}")
    return _live(runtime, live, headless)


def _cluster_flags_given(args: argparse.Namespace) -> list[str]:
    return [flag for dest, flag in _CLUSTER_DESTS.items() if getattr(args, dest, None)]


def _headless_requested(args: argparse.Namespace) -> bool:
    return bool(args.no_ui or args.output)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _note(text: str) -> None:
    print(f"probetui: {text}", file=sys.stderr)


def _live(runtime: Runtime, args: argparse.Namespace, headless: bool) -> int:
    duration = args.duration
    if duration is not None and not duration > 0:
        raise UsageError(f"--duration {duration:g}: must be more than 0 seconds")
    for note in getattr(runtime, "notes", ()):
        _note(f"note: {note}")
    from probetui.runtime.local.process import REGISTRY

    if not headless:
        if not _module_exists("probetui.ui.app"):
            raise UsageError("the UI is not built yet; use --no-ui")
        from probetui.engine import Engine
        from probetui.ui.app import run as run_ui

        REGISTRY.install_exit_handlers()
        result = run_ui(Engine(runtime))
        return result if isinstance(result, int) else EXIT_OK
    # after anything that sets handlers: SIGHUP and crashes kill the children at once; SIGINT
    # and SIGTERM are taken over by the loop below for an orderly stop
    REGISTRY.install_exit_handlers()
    return _headless(runtime, duration)


def _headless(runtime: Runtime, duration: float | None) -> int:
    from probetui.engine import Engine
    from probetui.runtime.base import RuntimeFailure
    from probetui.timeline.jsonl import JsonlWriter

    class Writer(JsonlWriter):
        """Ends the run once nobody reads the output any more (`| head`)."""

        on_broken: Any = None

        def event(self, event: Any) -> None:
            was = self.broken
            super().event(event)
            if self.broken and not was and self.on_broken is not None:
                self.on_broken()

    writer = Writer(sys.stdout)
    signals: list[int] = []

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()

        def stop(sig: int) -> None:
            signals.append(sig)
            task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop, sig)
        # from inside a sink call: cancel once the engine's callback has returned
        writer.on_broken = lambda: loop.call_soon(task.cancel)
        engine = Engine(runtime, [writer])
        watch = asyncio.ensure_future(warn_when_behind(engine.lateness, _note))
        try:
            await engine.run(duration)
        except asyncio.CancelledError:
            if not signals and not writer.broken:
                raise
        finally:
            watch.cancel()

    try:
        asyncio.run(main())
    except RuntimeFailure as e:
        raise UsageError(str(e)) from None
    if writer.broken:
        _silence_stdout()
        return EXIT_OK
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.flush()
    return 128 + signals[0] if signals else EXIT_OK


async def warn_when_behind(
    lateness: Callable[[], float], say: Callable[[str], None], every: float = 5.0
) -> None:
    """Headless, the JSONL goes on as it is; stderr says when the shadow prober falls behind its
    ticks (more probes than this process can run on time: its verdicts are then unreliable) and
    when it has caught up again. The UI's top bar says the same."""
    from probetui.prober.lateness import BEHIND, behind_words

    behind = False
    while True:
        await asyncio.sleep(every)
        late = lateness()
        if late >= BEHIND and not behind:
            say(
                f"{behind_words(late)}: more probes than one process can run on time; results "
                "are unreliable until it catches up (watch fewer pods: -n, -l)"
            )
        elif late < BEHIND and behind:
            say("shadow prober caught up with its ticks")
        behind = late >= BEHIND


def _silence_stdout() -> None:
    # the reader is gone: whatever is still buffered would fail again at exit
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            return _cluster_main(args)
        given = _cluster_flags_given(args)
        if given:
            raise UsageError(
                f"{', '.join(given)} before '{args.command}' belong to the cluster view; put "
                f"{args.command}'s own options after it (see 'probetui {args.command} --help')"
            )
        if args.command == "check":
            return _check_main(args)
        if args.command == "simulate":
            return _simulate_main(args)
        if args.command == "local":
            return _local_main(args)
        if args.command == "demo":
            return _demo_main(args)
        raise UsageError(f"unknown command {args.command!r} (see 'probetui --help')")
    except UsageError as e:
        print(f"probetui: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): not an error worth a traceback
        sys.stderr.close()
        return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
