"""Seeded fuzzing of every input file the command line reads: manifests (`lint`, `local`,
`check -f`), scenarios and their pod files (`simulate`), config files (`config --config`) and
kubeconfigs (`config --kubeconfig`). Valid seed files are mutated (bit flips, truncation, deep
nesting, alias bombs and chains, huge and odd numbers, wrong types, invalid UTF-8, repeated
lines, tabs, recursive aliases, an oversized file) and each mutant is run through
`probetui.cli.main`: no traceback, an exit status of 0, 1 or 2, no hang, bounded memory.

The cases run in one child process (one import of probetui, a few seconds in all) under an
address-space limit of 1.5 GB, each with its own alarm; nothing in them starts a process or
dials anything: `local` stops before its runtime would start, `check -f` stops before its
handler would run, and the kubeconfig is only read for its current context. Recordings are
fuzzed elsewhere. `PROBETUI_FUZZ_SEED` and `PROBETUI_FUZZ_CASES` run other or more cases.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SEED = int(os.environ.get("PROBETUI_FUZZ_SEED", "20240611"))
CASES = int(os.environ.get("PROBETUI_FUZZ_CASES", "100"))  # per kind of input
CASE_SECONDS = 10.0
ADDRESS_SPACE = 1536 * 1024 * 1024
ALLOWED = {0, 1, 2}

MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations:
    probetui.io/start-seconds: "45"
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
    spec:
      terminationGracePeriodSeconds: 30
      initContainers:
        - name: proxy
          image: envoy:1
          restartPolicy: Always
          command: ["envoy", "-c", "/etc/envoy.yaml"]
          ports: [{name: admin, containerPort: 9901}]
          readinessProbe:
            httpGet: {path: /ready, port: admin}
            periodSeconds: 5
      containers:
        - name: app
          image: example/app:1
          command: ["python3", "-m", "http.server", "8080"]
          ports:
            - name: http
              containerPort: 8080
          livenessProbe:
            httpGet:
              path: /healthz
              port: http
              httpHeaders: [{name: X-Probe, value: live}]
            initialDelaySeconds: 10
            periodSeconds: 10
            timeoutSeconds: 1
            failureThreshold: 1
          readinessProbe:
            httpGet: {path: /healthz, port: http}
            periodSeconds: 5
            timeoutSeconds: 5
          startupProbe:
            tcpSocket: {port: 8080}
            periodSeconds: 2
            failureThreshold: 10
        - name: worker
          image: example/worker:1
          command: ["sleep", "1000"]
          livenessProbe:
            exec: {command: [cat, /tmp/healthy]}
            terminationGracePeriodSeconds: 60
          readinessProbe:
            grpc: {port: 8443}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
"""

MANIFEST_JSON = json.dumps(
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "one"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "x",
                    "command": ["sleep", "100"],
                    "livenessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 3},
                    "readinessProbe": {"httpGet": {"path": "/", "port": 8080}},
                }
            ]
        },
    },
    indent=1,
)

SCENARIO = """\
pod: pod.yaml
container: app
duration: 300
app:
  start_after: 1
  ready_after: 20
  latency_ms: 30
  exit_after: 250
  exit_code: 3
  stop_seconds: 2
  fail_between: [[60, 90], [120, 121]]
  probes:
    readiness: {latency_ms: 1200, fail_between: [[30, 40]]}
    liveness: {ready_after: 5}
"""

CONFIG = """\
version: 1
readOnly: false
theme: probetui
contexts:
  "prod-*":
    readOnly: true
  "kind-*":
    via: port-forward
    namespace: default
    selector: app=web
    kubeletVersion: "1.35"
"""

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: fuzz
clusters:
  - name: fuzz
    cluster:
      server: https://127.0.0.1:1
      insecure-skip-tls-verify: true
users:
  - name: fuzz
    user: {token: not-a-secret}
contexts:
  - name: fuzz
    context: {cluster: fuzz, user: fuzz, namespace: shop}
"""

# -- mutations --------------------------------------------------------------------------------

Mutation = Callable[[random.Random, bytes], bytes]

ODD_NUMBERS = [
    b"-1",
    b"0",
    b"1e308",
    b"-1e308",
    b"9223372036854775807",
    b"9223372036854775808",
    b"1" + b"0" * 400,
    b".inf",
    b"-.inf",
    b".nan",
    b"1e-300",
    b"0x7fffffff",
    b"2592001",
    b"31536000",
]
ODD_VALUES = [
    b"[]",
    b"{}",
    b"[1, 2]",
    b"{a: b}",
    b"null",
    b"true",
    b'"text"',
    b"~",
    b"!!binary aGVsbG8=",
    b"2001-12-14",
    b"&x [*x]",
    b"!!python/object:os.system ls",
    b"<<: {a: 1}",
    b"'{{ .Values.port }}'",
]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


PLAUSIBLE_NUMBERS = [b"1", b"2", b"3", b"5", b"10", b"30", b"45", b"120", b"600", b"3600"]


def flip_bits(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def nest_deep(rng: random.Random, data: bytes) -> bytes:
    depth = rng.choice([60, 101, 2500, 100_000])
    if rng.random() < 0.5:
        value = b"[" * depth + b"]" * depth
    else:
        value = b"\n" + b"".join(b" " * (i + 2) + b"- " + b"\n" for i in range(min(depth, 3000)))
    return _replace_value(rng, data, value)


def alias_bomb(rng: random.Random, data: bytes) -> bytes:
    levels, width = rng.choice([(3, 10), (6, 10), (9, 10), (30, 2)])
    rows = [b'b0: &b0 "xxxxxxxxxx"']
    for i in range(1, levels + 1):
        rows.append(b"b%d: &b%d [" % (i, i) + b", ".join([b"*b%d" % (i - 1)] * width) + b"]")
    lines = _lines(data)
    # under a mapping somewhere, at its indentation, or at the top
    keyed = [i for i, line in enumerate(lines) if line.rstrip().endswith(b":")]
    if keyed and rng.random() < 0.7:
        at = rng.choice(keyed)
        indent = b" " * (len(lines[at]) - len(lines[at].lstrip()) + 2)
        lines[at + 1 : at + 1] = [indent + row for row in rows]
    else:
        lines = rows + lines
    return b"\n".join(lines)


def _number(data: bytes, rng: random.Random, choices: list[bytes]) -> bytes:
    spots = [m.span() for m in re.finditer(rb"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", data)]
    if not spots:
        return data + b"\nn: " + rng.choice(choices)
    start, end = rng.choice(spots)
    return data[:start] + rng.choice(choices) + data[end:]


def alias_chain(rng: random.Random, data: bytes) -> bytes:
    """Anchors each within the nesting bound around an alias of the one before."""
    levels = rng.choice([20, 60, 99])
    rows = []
    for i in range(rng.choice([2, 5, 40])):
        inner = b"*c%d" % (i - 1) if i else b"1"
        rows.append(b"c%d: &c%d " % (i, i) + b"[" * levels + inner + b"]" * levels)
    return b"\n".join(rows) + b"\n" + data


def odd_number(rng: random.Random, data: bytes) -> bytes:
    return _number(data, rng, ODD_NUMBERS)


def other_number(rng: random.Random, data: bytes) -> bytes:
    """A number changed for another that might well be meant: the mutant often still runs."""
    return _number(data, rng, PLAUSIBLE_NUMBERS)


def comment(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    lines.insert(rng.randrange(len(lines) + 1), b"# a comment: {not: [yaml")
    return b"\n".join(lines)


def wrong_type(rng: random.Random, data: bytes) -> bytes:
    return _replace_value(rng, data, rng.choice(ODD_VALUES))


def bad_utf8(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    junk = rng.choice([b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"])
    return data[:at] + junk + data[at:]


def repeat_line(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    at = rng.randrange(len(lines))
    lines.insert(at, lines[at])
    return b"\n".join(lines)


def tab_indent(rng: random.Random, data: bytes) -> bytes:
    lines = _lines(data)
    at = rng.randrange(len(lines))
    lines[at] = b"\t" + lines[at].lstrip(b" ")
    return b"\n".join(lines)


def _replace_value(rng: random.Random, data: bytes, value: bytes) -> bytes:
    """`value` in place of a random `key: value`'s value (or a new key at the top)."""
    lines = _lines(data)
    keyed = [i for i, line in enumerate(lines) if b": " in line or line.rstrip().endswith(b":")]
    if not keyed:
        return b"k: " + value + b"\n" + data
    at = rng.choice(keyed)
    key = lines[at].split(b":", 1)[0]
    lines[at] = key + b": " + value
    return b"\n".join(lines)


# (mutation, weight): the ones that break a file outright weigh less than those that leave
# it readable with an odd value in it, so that many mutants get past the reader
MUTATIONS: list[tuple[Mutation, int]] = [
    (flip_bits, 2),
    (truncate, 1),
    (nest_deep, 2),
    (alias_bomb, 2),
    (alias_chain, 1),
    (odd_number, 4),
    (other_number, 5),
    (wrong_type, 3),
    (bad_utf8, 1),
    (repeat_line, 1),
    (tab_indent, 1),
    (comment, 1),
]


def mutate(rng: random.Random, seed: bytes) -> bytes:
    data = seed
    mutations, weights = zip(*MUTATIONS, strict=True)
    for _ in range(rng.choice([1, 1, 1, 1, 2, 2, 3])):
        data = rng.choices(mutations, weights)[0](rng, data)
    return data


# -- the cases --------------------------------------------------------------------------------


def cases(where: Path) -> list[tuple[str, list[str]]]:
    """(name, argv) of every case, their files written under `where`."""
    rng = random.Random(SEED)
    good = where / "good"
    good.mkdir()
    (good / "pod.yaml").write_text(MANIFEST)
    (good / "config.yaml").write_text(CONFIG)
    (good / "kubeconfig").write_text(KUBECONFIG)
    out: list[tuple[str, list[str]]] = []

    def write(name: str, data: bytes, file: str = "in.yaml") -> Path:
        folder = where / name
        folder.mkdir()
        (folder / file).write_bytes(data)
        return folder / file

    oversized = b"a: '" + b"x" * (8 * 1024 * 1024 + 16) + b"'\n"
    for i in range(CASES):
        seed = MANIFEST_JSON.encode() if i % 5 == 4 else MANIFEST.encode()
        data = oversized if i == 0 else mutate(rng, seed)
        path = str(write(f"manifest-{i}", data))
        command = ("lint", "local", "check")[i % 3]
        argv = {
            "lint": ["lint", path, "-o", rng.choice(["human", "json", "sarif"])],
            "local": ["local", path],
            "check": ["check", "-f", path],
        }[command]
        out.append((f"manifest-{i} ({command})", argv))
    for i in range(CASES):
        if i % 2:
            folder = where / f"scenario-{i}"
            folder.mkdir()
            (folder / "pod.yaml").write_bytes(mutate(rng, MANIFEST.encode()))
            (folder / "in.yaml").write_text(SCENARIO)
            path = folder / "in.yaml"
        else:
            path = write(f"scenario-{i}", mutate(rng, SCENARIO.encode()))
            (path.parent / "pod.yaml").write_text(MANIFEST)
        extra = rng.choice([[], ["--json"], ["--set", "liveness.failureThreshold=5"]])
        out.append((f"scenario-{i}", ["simulate", str(path), *extra]))
    for i in range(CASES):
        path = write(f"config-{i}", mutate(rng, CONFIG.encode()))
        out.append((f"config-{i}", ["config", "--config", str(path)]))
    for i in range(CASES):
        path = write(f"kubeconfig-{i}", mutate(rng, KUBECONFIG.encode()), "kubeconfig")
        argv = ["config", "--config", str(good / "config.yaml"), "--kubeconfig", str(path)]
        out.append((f"kubeconfig-{i}", argv))
    return out


# what runs the cases: one process, probetui imported once, each case under an alarm
HARNESS = r"""
import io, json, resource, signal, sys, time, traceback

limit = int(sys.argv[1])
seconds = float(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

from probetui.cli import live, main
from probetui.prober import prober
from probetui.simulate import scenario


class Hang(BaseException):
    pass


def alarm(signum, frame):
    raise Hang()


def started_nothing(*args, **kwargs):
    return 0  # `local`: the manifest was read and the runtime built; nothing is started


async def ran_nothing(runner, probe_type, probe, pod, container, status):
    # `check -f`: the probe was found in the manifest; no handler runs
    from probetui.probe.base import Attempt, Result

    async def once():
        return Attempt("none", "", Result.SUCCESS, "")

    return await prober.retry_on_error(probe_type, once)


live.run_live = started_nothing
prober.run_probe_with_retries = ran_nothing
# the fuzz asks whether each scenario is refused or run, not how long a month of virtual
# time takes: tests/simulate holds the bound itself
scenario.MAX_DURATION = 1200.0
signal.signal(signal.SIGALRM, alarm)

for line in sys.stdin:
    name, argv = json.loads(line)
    print(json.dumps({"start": name}), flush=True)
    out, err = io.StringIO(), io.StringIO()
    sys.stdout, sys.stderr = out, err
    began = time.monotonic()
    result = {"name": name}
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            result["code"] = main(argv)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except SystemExit as e:
        result["code"] = e.code if isinstance(e.code, int) else 2
    except Hang:
        result["error"] = f"no answer in {seconds:g} s"
    except BaseException:
        result["error"] = traceback.format_exc()
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    result["seconds"] = round(time.monotonic() - began, 3)
    result["stderr"] = err.getvalue()[-4000:]
    print(json.dumps(result), flush=True)

peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"peak": peak}), flush=True)
"""


@pytest.mark.timeout(300)
def test_no_input_file_gets_a_traceback_a_hang_or_the_memory(tmp_path: Path) -> None:
    todo = cases(tmp_path)
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PROBETUI_SYSTEM_CONFIG": str(tmp_path / "system.yaml"),
        "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-c", HARNESS, str(ADDRESS_SPACE), str(CASE_SECONDS)],
        input="".join(json.dumps(case) + "\n" for case in todo),
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    reports = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    started = [r["start"] for r in reports if "start" in r]
    done = [r for r in reports if "name" in r]
    assert proc.returncode == 0 and len(done) == len(todo), (
        f"the harness ended ({proc.returncode}) in case {started[-1] if started else None}: "
        f"{proc.stderr[-3000:]}"
    )
    failed = []
    for r in done:
        if "error" in r:
            failed.append(f"{r['name']}: {r['error']}")
        elif r["code"] not in ALLOWED:
            failed.append(f"{r['name']}: exit {r['code']}: {r['stderr'][-500:]}")
        elif "Traceback" in r["stderr"]:
            failed.append(f"{r['name']}: a traceback on stderr: {r['stderr'][-2000:]}")
    assert not failed, f"seed {SEED}:\n" + "\n".join(failed)
    codes = {r["code"] for r in done}
    assert {0, 2} <= codes  # mutants refused and mutants run: the seeds are not all broken
    peak = next(r["peak"] for r in reports if "peak" in r)
    assert peak < ADDRESS_SPACE
