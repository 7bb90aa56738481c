"""What node agents cost: `python -m benchmarks.agents [--mode node|ring|fanin]`.

- `node` (the default): a real `probetui agent` process for one node of `--pods` pods (110, the
  kubelet's default maxPods), each with three probes running at `--period` (10 s): an HTTP
  readiness and a TCP liveness probe on its app container and a gRPC readiness probe on a
  sidecar, against loopback targets (the pods' IP is 127.0.0.1). The API emulator serves the
  pods from its own process, beside a fake kubelet whose `/metrics/probes` (HTTPS, with the
  ServiceAccount token checked) counts every probe; one reader takes the stream as rows. After
  `--warmup`, the agent's CPU (cores) and RSS over `--duration`, its attempts a second, how far
  behind its ticks it ran, and what the reader received. Goals: under 1% of a core, under
  100 MB. Beside them, what explains the CPU at this rate: how often the agent's event loop
  slept and woke (its main thread's voluntary context switches a second; at a few dozen
  attempts a second each wake-up costs more than most attempts' own Python), its threads, and
  how busy the whole machine was meanwhile (cores; a loaded machine inflates every figure:
  compare runs made side by side).
- `ring`: an hour of those probes' attempts in the agent's ring, in this process: entries, bytes
  per attempt, and how long a late reader's whole replay takes to encode as rows.
- `fanin`: the reader's side at scale: `--agents` agents (their server and hub, fed by a
  synthetic shadow) streaming `--rate` attempts a second in all through the API emulator's
  pods/proxy to one cluster view (`--via agent`), headless and on the screen, or reading
  summaries only as an aggregator would (`--client summaries`; `benchmarks/fanin.py` says what
  runs and what is measured).

The machine is shared (two cores): the emulator, the targets and the reader compete with the
agent; the figures are the agent's own process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import re
import signal
import ssl
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from benchmarks.common import (
    BenchError,
    Parser,
    add_output_args,
    callgrind_command,
    callgrind_control,
    callgrind_dump,
    environment,
    format_table,
    machine_busy_seconds,
    process_cpu_seconds,
    reference_ms,
    report,
)

ROOT = Path(__file__).resolve().parents[1]
NODE = "bench-node"
SA_TOKEN = "bench-service-account-token"
READ_TOKEN = "bench-read-token-0123456789"
CORES_GOAL = 0.01
RSS_GOAL_MB = 100.0
# the buckets of the kubelet's prober_probe_duration_seconds (Prometheus's default buckets)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, "+Inf")


def node_pods(
    pods: int, period: int, http: int, tcp: int, grpc: int | None
) -> list[dict[str, Any]]:
    """`pods` pods on NODE with three probes each, all running at `period` (the sidecar's an
    HTTP one where `grpc` is None)."""
    from tests.kube.emulator import container, make_pod

    def probe(handler: dict[str, Any]) -> dict[str, Any]:
        return {
            **handler,
            "periodSeconds": period,
            "timeoutSeconds": 1,
            "successThreshold": 1,
            "failureThreshold": 3,
        }

    out = []
    for i in range(pods):
        out.append(
            make_pod(
                f"app-{i}",
                namespace=f"team-{i % 10}",
                node=NODE,
                containers=[
                    container(
                        "app",
                        readiness=probe({"httpGet": {"path": "/ready", "port": http}}),
                        liveness=probe({"tcpSocket": {"port": tcp}}),
                    ),
                    container(
                        "sidecar",
                        readiness=probe(
                            {"grpc": {"port": grpc}}
                            if grpc is not None
                            else {"httpGet": {"path": "/sidecar", "port": http}}
                        ),
                    ),
                ],
            )
        )
    return out


# -- the emulator and the fake kubelet, in their own process ------------------------------------


def _serve(pods: list[dict[str, Any]], workdir: str, queue: Any, stop: Any, period: int) -> None:
    asyncio.run(_serve_async(pods, workdir, queue, stop, period))


async def _serve_async(
    pods: list[dict[str, Any]], workdir: str, queue: Any, stop: Any, period: int
) -> None:
    import trustme
    from aiohttp import web

    from tests.kube.emulator import ApiEmulator

    ca = trustme.CA()
    sa = Path(workdir) / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(SA_TOKEN)
    ca.cert_pem.write_to_path(str(sa / "ca.crt"))
    started = time.time()
    series: list[str] = []
    async with ApiEmulator() as api:
        for pod in pods:
            created = api.add_pod(pod)
            meta = created["metadata"]
            for c, probe_type in (
                ("app", "Readiness"),
                ("app", "Liveness"),
                ("sidecar", "Readiness"),
            ):
                series.append(
                    f'container="{c}",namespace="{meta["namespace"]}",pod="{meta["name"]}",'
                    f'pod_uid="{meta["uid"]}",probe_type="{probe_type}"'
                )

        async def probes(request: web.Request) -> web.Response:
            if request.headers.get("Authorization") != f"Bearer {SA_TOKEN}":
                return web.Response(status=401, text="Unauthorized")
            n = int((time.time() - started) / period)
            lines = [f"process_start_time_seconds {started}"]
            # the kubelet serves its probes' duration histogram beside the counts: the agent
            # reads past it
            for labels in series:
                histogram = labels.rsplit(",pod_uid=", 1)[0] + labels[labels.index(",probe_type") :]
                for le in DURATION_BUCKETS:
                    lines.append(
                        f'prober_probe_duration_seconds_bucket{{{histogram},le="{le}"}} {n}'
                    )
                lines.append(f"prober_probe_duration_seconds_sum{{{histogram}}} {n * 0.001}")
                lines.append(f"prober_probe_duration_seconds_count{{{histogram}}} {n}")
            for labels in series:
                for result, count in (("successful", n), ("failed", 0), ("unknown", 0)):
                    lines.append(f'prober_probe_total{{{labels},result="{result}"}} {count}')
            return web.Response(text="\n".join(lines) + "\n")

        async def metrics(request: web.Request) -> web.Response:
            if request.headers.get("Authorization") != f"Bearer {SA_TOKEN}":
                return web.Response(status=401, text="Unauthorized")
            return web.Response(text='kubernetes_build_info{git_version="v1.35.4"} 1\n')

        app = web.Application()
        app.router.add_get("/metrics/probes", probes)
        app.router.add_get("/metrics", metrics)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context).start()
        kubelet_port = runner.addresses[0][1]
        kubeconfig = api.kubeconfig(Path(workdir) / "kubeconfig")
        queue.put((str(kubeconfig), str(sa), kubelet_port))
        try:
            await asyncio.to_thread(stop.wait)
        finally:
            await runner.cleanup()


# -- the agent process and a reader -------------------------------------------------------------


def _cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a live process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _status_field(pid: int, name: str) -> int:
    """An integer field of /proc/PID/status (0 when absent)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key == name:
                return int(value.split()[0])
    return 0


def _rss(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process, in MB."""
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024 / 1e6
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


async def _metric_sum(session: Any, url: str, name: str) -> float:
    async with session.get(url + "/metrics", headers={"X-Probetui-Token": READ_TOKEN}) as resp:
        text = await resp.text()
    return sum(float(m) for m in re.findall(rf"^{name}(?:{{[^}}]*}})? (\S+)$", text, re.M))


async def _read(url: str, got: dict[str, int], stop: asyncio.Event) -> None:
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(url + "/v1/stream?rows=1", headers={"X-Probetui-Token": READ_TOKEN}) as resp,
    ):
        while not stop.is_set():
            chunk = await resp.content.readany()
            if not chunk:
                return
            got["bytes"] += len(chunk)
            got["frames"] += chunk.count(b"\n")


async def _node(args: argparse.Namespace) -> dict[str, Any]:
    import aiohttp

    from benchmarks.target import start_target

    try:
        http = start_target("http", prefer_nginx=True)
        grpc = start_target("grpc")
    except (OSError, RuntimeError) as exc:
        raise BenchError(f"could not start a loopback target: {exc}") from None
    ctx = multiprocessing.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    pods = node_pods(args.pods, args.period, http.port, http.port, grpc.port if args.grpc else None)
    agent: asyncio.subprocess.Process | None = None
    with tempfile.TemporaryDirectory(prefix="probetui-agents-") as workdir:
        server = ctx.Process(target=_serve, args=(pods, workdir, queue, stop, args.period))
        server.start()
        try:
            kubeconfig, sa, kubelet_port = await asyncio.to_thread(queue.get, True, 60)
            token = Path(workdir) / "read-token"
            token.write_text(READ_TOKEN)
            env = {k: v for k, v in os.environ.items() if "PROXY" not in k.upper()}
            env["PYTHONPATH"] = str(ROOT)
            profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
            agent = await asyncio.create_subprocess_exec(
                *(callgrind_command(args.callgrind) if args.callgrind else []),
                sys.executable, *profile,
                "-m", "probetui.cli", "agent",
                "--kubeconfig", kubeconfig, "--service-account-dir", sa,
                "--node", NODE, "--node-ip", "127.0.0.1", "--port", "0",
                "--token-file", str(token), "--kubelet-port", str(kubelet_port),
                "--scrape-every", f"{args.scrape_every}s",
                *(["--tick-align", f"{args.tick_align}s"] if args.tick_align is not None else []),
                stderr=asyncio.subprocess.PIPE, env=env,
            )  # fmt: skip
            url = await _agent_url(agent)
            got = {"bytes": 0, "frames": 0}
            done = asyncio.Event()
            reader = asyncio.create_task(_read(url, got, done)) if args.reader else None
            async with aiohttp.ClientSession() as session:
                await asyncio.sleep(args.warmup)
                cpu0, t0 = process_cpu_seconds(agent.pid), time.monotonic()
                split0 = _cpu_split(agent.pid)
                wakes0 = _status_field(agent.pid, "voluntary_ctxt_switches")
                busy0 = machine_busy_seconds()
                attempts0 = await _metric_sum(session, url, "probetui_agent_attempts_total")
                if args.callgrind:
                    await asyncio.to_thread(callgrind_control, agent.pid, "--instr=on", "--zero")
                bytes0 = got["bytes"]
                await asyncio.sleep(args.duration)
                instructions = (
                    await callgrind_dump(agent.pid, args.callgrind) if args.callgrind else None
                )
                cpu1, t1 = process_cpu_seconds(agent.pid), time.monotonic()
                split1 = _cpu_split(agent.pid)
                wakes1 = _status_field(agent.pid, "voluntary_ctxt_switches")
                busy1 = machine_busy_seconds()
                threads = _status_field(agent.pid, "Threads")
                attempts1 = await _metric_sum(session, url, "probetui_agent_attempts_total")
                lateness = await _metric_sum(session, url, "probetui_agent_lateness_seconds")
                scrapes = await _metric_sum(session, url, "probetui_agent_kubelet_scrapes_total")
                errors = await _metric_sum(
                    session, url, "probetui_agent_kubelet_scrape_errors_total"
                )
                probes = await _metric_sum(session, url, "probetui_agent_probes")
                rss, hwm = _rss(agent.pid)
            done.set()
            if reader is not None:
                reader.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await reader
            wall = t1 - t0
            # after the window, so that it does not compete with the agent measured
            reference = reference_ms()
            return {
                "mode": "node",
                "pods": args.pods,
                "probes": int(probes),
                "period_s": args.period,
                "warmup_s": args.warmup,
                "duration_s": round(wall, 2),
                "agent_cores": round((cpu1 - cpu0) / wall, 5),
                "agent_user_cores": round((split1[0] - split0[0]) / wall, 5),
                "agent_system_cores": round((split1[1] - split0[1]) / wall, 5),
                "agent_cpu_ms_per_attempt": round(
                    (cpu1 - cpu0) * 1000 / max(1.0, attempts1 - attempts0), 3
                ),
                "attempts_per_s": round((attempts1 - attempts0) / wall, 2),
                "agent_instructions_per_attempt": (
                    None
                    if instructions is None
                    else round(instructions / max(1.0, attempts1 - attempts0))
                ),
                "agent_wakeups_per_s": round((wakes1 - wakes0) / wall, 1),
                "agent_threads": threads,
                "machine_busy_cores": round((busy1 - busy0) / wall, 2),
                "expected_attempts_per_s": round(3 * args.pods / args.period, 2),
                "rss_mb": round(rss, 1),
                "peak_rss_mb": round(hwm, 1),
                "lateness_s": lateness,
                "kubelet_scrapes": int(scrapes),
                "kubelet_scrape_errors": int(errors),
                "reader": args.reader,
                "grpc": args.grpc,
                "reader_bytes_per_s": round((got["bytes"] - bytes0) / wall),
                "target": http.kind,
                "environment": environment(reference_ms=reference),
            }
        finally:
            if agent is not None and agent.returncode is None:
                agent.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(agent.wait(), 10)
                except TimeoutError:
                    agent.kill()
                    await agent.wait()
            stop.set()
            server.join(10)
            if server.is_alive():
                server.kill()
            http.stop()
            grpc.stop()


async def _agent_url(agent: asyncio.subprocess.Process) -> str:
    assert agent.stderr is not None
    said: list[str] = []
    while True:
        line = (await asyncio.wait_for(agent.stderr.readline(), 60)).decode()
        if not line:
            raise BenchError("the agent ended before serving: " + " | ".join(said[-5:]))
        said.append(line.strip())
        found = re.search(r"on (http://[^;]+);", line)
        if found:
            # keep draining its stderr, or a chatty agent would block on a full pipe
            asyncio.get_running_loop().create_task(_drain(agent.stderr))
            return found.group(1)


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


# -- the ring -----------------------------------------------------------------------------------


def _ring(args: argparse.Namespace) -> dict[str, Any]:
    from probetui.agent.client import StreamClient
    from probetui.agent.ring import Ring
    from probetui.keys import ProbeKey
    from probetui.probe.base import Attempt, Result
    from probetui.prober.prober import ProbeOutcome
    from probetui.prober.results import ResultValue
    from probetui.prober.steady import SteadyPart
    from probetui.prober.worker import ProbeRecord, Trigger
    from probetui.spec.model import Pod, ProbeType
    from probetui.stream.rows import row_parts
    from probetui.timeline.events import record_event

    probes = 3 * args.pods
    per_probe = int(3600 / args.period)
    entries = probes * per_probe
    ring = Ring(3600.0 * 2, entries + 10_000)
    keys = []
    for i in range(args.pods):
        pod = Pod(f"app-{i}", namespace=f"team-{i % 10}", uid=f"uid-{i:04d}")
        for container, probe_type in (
            ("app", ProbeType.READINESS),
            ("app", ProbeType.LIVENESS),
            ("sidecar", ProbeType.READINESS),
        ):
            keys.append((pod, ProbeKey(pod.uid, container, probe_type)))
    t0 = 1_800_000_000.0
    parts: dict[int, SteadyPart] = {}
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    stamp = t0
    for n in range(per_probe):
        for j, (pod, key) in enumerate(keys):
            t = t0 + n * args.period + j * args.period / len(keys)
            a = Attempt("http", "http://10.0.0.7:8080/ready", Result.SUCCESS, "", None,
                        0.0012 + (n % 7) * 1e-4, t, 200, "ok")  # fmt: skip
            record = ProbeRecord(
                key, t, t - 0.0003, Trigger.TICK, "containerd://4f1c", finished_at=t + 0.0013,
                outcome=ProbeOutcome(ResultValue.SUCCESS, None, (a,), None), result_run=n + 1,
                published=ResultValue.SUCCESS, next_tick=t + args.period,
                # the steady part as `Worker._emit` interns it: one per probe while it says the same
                steady=parts.get(j),
            )  # fmt: skip
            parts[j] = record.steady
            stamp = max(t + 0.002, stamp + 1e-6)
            ring.add_row(stamp, *row_parts(record_event(pod, record, "direct")))
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    client = StreamClient(pods=None, summary=False, rows=True, limit=1 << 30)
    sent = [0]

    async def write(data: bytes) -> None:
        sent[0] += len(data)

    began = time.perf_counter()
    n = asyncio.run(client.replay(ring, -1.0, None, write, lambda: None))
    replay_s = time.perf_counter() - began
    return {
        "mode": "ring",
        "pods": args.pods,
        "probes": probes,
        "period_s": args.period,
        "attempts": entries,
        "ring_entries": ring.entries,
        "ring_mb": round(held / 1e6, 1),
        "bytes_per_attempt": round(held / entries, 1),
        "replay_entries": n,
        "replay_s": round(replay_s, 3),
        "replay_mb": round(sent[0] / 1e6, 1),
        "replay_bytes_per_attempt": round(sent[0] / max(1, n), 1),
        "environment": environment(),
    }


# -- output -------------------------------------------------------------------------------------


def table(r: dict[str, Any]) -> str:
    if r["mode"] == "fanin":
        from benchmarks import fanin

        return fanin.table(r)

    def ok(met: bool) -> str:
        return "ok" if met else "OVER"

    if r["mode"] == "ring":
        rows = [
            ("attempts kept (an hour)", f"{r['attempts']:,} ({r['probes']} probes)"),
            ("ring memory", f"{r['ring_mb']} MB ({r['bytes_per_attempt']} B per attempt)"),
            (
                "a late reader's replay",
                f"{r['replay_s']} s to encode {r['replay_entries']:,} rows, "
                f"{r['replay_mb']} MB ({r['replay_bytes_per_attempt']} B a row)",
            ),
        ]
        return format_table("one node agent's ring", rows)
    rows = [
        ("node", f"{r['pods']} pods, {r['probes']} probes at period {r['period_s']} s"),
        (
            "attempts/s",
            f"{r['attempts_per_s']} (expected {r['expected_attempts_per_s']})",
        ),
        (
            "agent CPU",
            f"{r['agent_cores'] * 100:.2f}% of a core ({r['agent_cpu_ms_per_attempt']} ms an "
            f"attempt)  goal < {CORES_GOAL * 100:.0f}%: {ok(r['agent_cores'] < CORES_GOAL)}",
        ),
        *(
            [("  instructions", f"{r['agent_instructions_per_attempt']:,} an attempt (callgrind)")]
            if r.get("agent_instructions_per_attempt")
            else []
        ),
        (
            "  user / system",
            f"{r['agent_user_cores'] * 100:.2f}% / {r['agent_system_cores'] * 100:.2f}%",
        ),
        (
            "agent RSS",
            f"{r['rss_mb']} MB (peak {r['peak_rss_mb']})  goal < {RSS_GOAL_MB:.0f} MB: "
            f"{ok(r['peak_rss_mb'] < RSS_GOAL_MB)}",
        ),
        (
            "  wake-ups, threads",
            f"{r['agent_wakeups_per_s']}/s, {r['agent_threads']} threads",
        ),
        ("lateness", f"{r['lateness_s']} s"),
        ("kubelet scrapes", f"{r['kubelet_scrapes']} ({r['kubelet_scrape_errors']} errors)"),
        ("reader", f"{r['reader_bytes_per_s']} B/s" if r["reader"] else "none"),
        (
            "measured",
            f"{r['duration_s']} s after {r['warmup_s']} s of warm-up; the machine "
            f"{r['machine_busy_cores']} cores busy of {r['environment']['cpus']}",
        ),
        (
            "  machine speed",
            f"a fixed Python loop in {r['environment']['reference_ms']} ms of CPU (lower: faster; "
            "compare runs of other days by it)",
        ),
    ]
    return format_table("one node agent", rows)


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="benchmarks.agents", description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("node", "ring", "fanin"), default="node")
    p.add_argument("--pods", type=int, default=110, help="pods on the node (110)")
    p.add_argument("--period", type=int, default=10, help="every probe's period, seconds (10)")
    p.add_argument("--duration", type=float, default=None, help="seconds measured (60; fanin 30)")
    p.add_argument(
        "--warmup", type=float, default=None, help="seconds before measuring (30; fanin 10)"
    )
    p.add_argument("--scrape-every", type=float, default=10.0, help="kubelet scrapes (10 s)")
    p.add_argument(
        "--tick-align",
        type=float,
        default=None,
        help="the agent's --tick-align, seconds (the agent's default)",
    )
    p.add_argument("--no-reader", dest="reader", action="store_false", help="no stream reader")
    p.add_argument("--profile", metavar="PATH", help="write a cProfile of the agent to PATH")
    p.add_argument(
        "--callgrind",
        metavar="PATH",
        help="run the agent under valgrind's callgrind and report its instructions per attempt "
        "in the window (dumps at PATH.N; its CPU figures are then valgrind's, not the agent's)",
    )
    p.add_argument(
        "--no-grpc",
        dest="grpc",
        action="store_false",
        help="the sidecar's probe is HTTP, not gRPC",
    )
    fanin = p.add_argument_group("fanin")
    fanin.add_argument("--agents", type=int, default=50, help="agents, one a node (50)")
    fanin.add_argument(
        "--agents-per-process",
        type=int,
        default=1,
        help="agents sharing one process and event loop (1: a process each)",
    )
    fanin.add_argument("--pods-per-agent", type=int, default=300, help="pods per node (300)")
    fanin.add_argument("--rate", type=float, default=5000.0, help="attempts/s in all (5000)")
    fanin.add_argument(
        "--client",
        choices=("both", "headless", "screen", "summaries"),
        default="both",
        help="(both; summaries: an aggregator's reading, alone)",
    )
    fanin.add_argument(
        "--changes",
        type=float,
        default=0.0,
        help="published results the shadow turns over a second, in all (0)",
    )
    fanin.add_argument(
        "--counts-every",
        type=float,
        default=0.0,
        help="seconds between the agents' kubelet scrapes, each a counts frame a probe "
        "(0: none; the agent's own default is 10)",
    )
    fanin.add_argument(
        "--baseline", type=float, default=5.0, help="headless: seconds with the agents quiet (5)"
    )
    fanin.add_argument("--no-tls", dest="tls", action="store_false", help="plain HTTP to the API")
    fanin.add_argument("--size", default="160x45", help="the screen's terminal COLSxROWS")
    add_output_args(p)
    return p


def _fanin(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks import fanin
    from benchmarks.common import terminal_size

    return fanin.run(
        fanin.Config(
            agents=args.agents,
            agents_per_process=args.agents_per_process,
            pods_per_agent=args.pods_per_agent,
            rate=args.rate,
            changes=args.changes,
            counts_every=args.counts_every,
            client=args.client,
            duration=30.0 if args.duration is None else args.duration,
            warmup=10.0 if args.warmup is None else args.warmup,
            baseline=args.baseline,
            tls=args.tls,
            size=terminal_size(args.size),
        )
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode == "fanin":
        return _fanin(args)
    args.duration = 60.0 if args.duration is None else args.duration
    args.warmup = 30.0 if args.warmup is None else args.warmup
    if args.pods < 1 or args.period < 1 or args.duration <= 0 or args.warmup < 0:
        raise BenchError("--pods and --period at least 1, --duration above 0, --warmup 0 or more")
    if args.mode == "ring":
        return _ring(args)
    return asyncio.run(_node(args))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return report("agents", args, lambda: run(args), table)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "node_pods", "run", "table"]
