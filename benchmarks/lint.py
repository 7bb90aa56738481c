"""Lint benchmark: `probetui lint` over a generated corpus, and what a rule's simulated evidence
costs per object.

    python -m benchmarks.lint [--objects 10000] [--files 100] [--seed 15] [--repeat 3]
        [--evidence-repeat 20] [--history 60] [--json [PATH]]

(a) Writes `--objects` objects (every workload kind, one to three containers, sidecars, probes
of every handler, two in five with the API's defaults and the rest drawn from common values,
liveness and readiness on one endpoint in a third of containers, the other model-backed rules'
triggers at 1 to 5 in 100) into `--files` multi-document YAML files, then times `probetui lint DIR
--output json` in process: reading, every rule, the JSON, with the garbage collector as the
command has it (off while reading, then what was read frozen). The median of `--repeat` runs,
each with the simulation memo emptied first, so repeated configurations are paid for once per
run as in a real one. Goal: 10,000 objects in under 10 s.
(b) For each rule whose message carries a simulation, its check on its own corpus hit
(`tests/lint/corpus/RULE/hit.yaml`), memo emptied before every call: milliseconds per object.
Goal: under 5 ms.
(c) For each evidence rule, its check on one pod's observed history of
`--history` minutes (the kubelet's model run over a flapping, slow, erroring, diverging app),
with the counterfactual of its proposal for those that replay one, both memos emptied before
every call: milliseconds per object, the same 5 ms goal. lint replays the 4 minutes around the
problem (`observed.REPLAY_SECONDS`), so the figure should not grow with the history. The
latency rule once more with attempts that time out (`timing_out`): its what-if is then run,
where over the plain history's answers (all under both timeouts) it is not.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import Parser, add_output_args, environment, format_table, positive, report
from probetui.lint import load, machine, registry
from probetui.lint import simulated as lint_simulated
from probetui.lint.model import LintObject, Severity
from probetui.lint.observed import Observed, PodHistory, recorded_objects

NAME = "lint"
GOAL_S = 10.0
GOAL_OBJECTS = 10_000
GOAL_EVIDENCE_MS = 5.0
CORPUS = Path(__file__).resolve().parent.parent / "tests" / "lint" / "corpus"
SIMULATED_RULES = tuple(
    r.id for r in registry.RULES.values() if r.simulated and not r.needs_evidence
)
EVIDENCE_RULES = tuple(r.id for r in registry.RULES.values() if r.needs_evidence)
HISTORY_MINUTES = 60.0
_HANDLERS = ("httpGet", "tcpSocket", "grpc", "exec")
_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")


def _probe(rng: random.Random, port: int, path: str) -> dict[str, Any]:
    handler = rng.random()
    if handler < 0.65:
        # a port name the container does not declare: about 2 in 100
        target: int | str = rng.choice((port, "http")) if rng.random() > 0.02 else "web"
        h: dict[str, Any] = {"httpGet": {"path": path, "port": target}}
    elif handler < 0.85:
        h = {"tcpSocket": {"port": port}}
    elif handler < 0.93:
        h = {"grpc": {"port": 8443 if rng.random() < 0.05 else port}}
    else:
        h = {"exec": {"command": ["cat", "/tmp/healthy"]}}
    if rng.random() < 0.4:
        return h  # the API's defaults, as most charts leave them (period 10, timeout 1, 3)
    period = rng.choice((5, 10, 10, 10, 15, 20, 30))
    h["periodSeconds"] = period
    h["timeoutSeconds"] = period if rng.random() < 0.02 else rng.choice((1, 1, 2, 3, 5))
    h["failureThreshold"] = 1 if rng.random() < 0.03 else rng.choice((3, 3, 3, 5, 6, 10))
    if rng.random() < 0.2:
        h["initialDelaySeconds"] = rng.choice((5, 10, 15, 30, 60))
    if rng.random() < 0.01:
        h["terminationGracePeriodSeconds"] = 120
    return h


def _container(rng: random.Random, i: int, sidecar: bool = False) -> dict[str, Any]:
    port = rng.choice((8080, 8081, 9090, 3000))
    c: dict[str, Any] = {
        "name": f"c{i}",
        "image": "example/app:1",
        "ports": [{"name": "http", "containerPort": port}],
    }
    if sidecar:
        c["restartPolicy"] = "Always"
    # many charts point liveness and readiness at one endpoint: about a third here
    same = rng.random() < 0.3
    for field, chance, path in (
        ("readinessProbe", 0.8, "/healthz" if same else "/ready"),
        ("livenessProbe", 0.7, "/healthz"),
        ("startupProbe", 0.3, "/started"),
    ):
        if rng.random() < chance:
            c[field] = _probe(rng, port, path)
    if "readinessProbe" in c and "livenessProbe" in c and same:
        settings = {k: v for k, v in c["livenessProbe"].items() if k not in _HANDLERS}
        c["livenessProbe"] = {**settings, **_handler(c["readinessProbe"])}
    c.get("readinessProbe", {}).pop("terminationGracePeriodSeconds", None)
    return c


def _handler(probe: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in probe.items() if k in _HANDLERS}


def make_object(rng: random.Random, n: int) -> dict[str, Any]:
    kind = rng.choice(_KINDS)
    containers = [_container(rng, i) for i in range(rng.choice((1, 1, 1, 2, 3)))]
    spec: dict[str, Any] = {"containers": containers}
    if rng.random() < 0.2:
        spec["initContainers"] = [_container(rng, 9, sidecar=True)]
    if kind in ("Job", "CronJob", "Pod") and rng.random() < 0.5:
        spec["restartPolicy"] = "OnFailure"
    meta: dict[str, Any] = {"name": f"obj-{n}", "namespace": f"ns-{n % 17}"}
    if rng.random() < 0.1:
        meta["annotations"] = {"probetui.io/start-seconds": str(rng.choice((20, 45, 90)))}
    template = {"metadata": {"labels": {"app": f"obj-{n}"}}, "spec": spec}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta, "spec": spec}
    if kind == "CronJob":
        body: dict[str, Any] = {
            "schedule": "0 * * * *",
            "jobTemplate": {"spec": {"template": template}},
        }
    else:
        body = {"template": template}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta, "spec": body}


def write_corpus(where: Path, objects: int, files: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    paths = []
    per = -(-objects // files)
    for f in range(files):
        docs = [make_object(rng, f * per + i) for i in range(min(per, objects - f * per))]
        if not docs:
            break
        path = where / f"chart-{f:03d}.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        paths.append(path)
    return paths


def lint_once(directory: Path) -> dict[str, Any]:
    lint_simulated._run.cache_clear()
    started = time.perf_counter()
    loaded = load([str(directory)])
    read = time.perf_counter()
    gc.freeze()  # as `probetui lint` does once it has read (cli/lint.py)
    try:
        rules = registry.select()
        findings = registry.run(loaded.objects, rules)
        ruled = time.perf_counter()
        failed = bool(registry.at_or_above(findings, Severity.ERROR))
        out = machine.to_json(
            loaded.objects, findings, loaded.problems, rules, fail_on=Severity.ERROR, failed=failed
        )
        done = time.perf_counter()
    finally:
        gc.unfreeze()
    by_rule: dict[str, int] = {}
    for f in findings:
        by_rule[f.rule.id] = by_rule.get(f.rule.id, 0) + 1
    return {
        "objects": len(loaded.objects),
        "problems": len(loaded.problems),
        "findings": len(findings),
        "by_rule": dict(sorted(by_rule.items())),
        "read_s": round(read - started, 3),
        "rules_s": round(ruled - read, 3),
        "output_s": round(done - ruled, 3),
        "total_s": round(done - started, 3),
        "json_bytes": len(out),
        "simulations": lint_simulated._run.cache_info().misses,
    }


def evidence_cost(rule_id: str, repeat: int) -> dict[str, Any]:
    loaded = load([str(CORPUS / rule_id / "hit.yaml")])
    obj, rule = loaded.objects[0], registry.rule(rule_id)
    walls = []
    for _ in range(repeat):
        lint_simulated._run.cache_clear()
        started = time.perf_counter()
        hits = list(rule.check(obj, None))
        walls.append(time.perf_counter() - started)
    assert hits and "simulate:" in hits[0].message, hits
    ms = statistics.median(walls) * 1000
    return {"rule": rule_id, "ms_per_object": round(ms, 3), "ms_max": round(max(walls) * 1000, 3)}


def observed_history(minutes: float) -> tuple[Any, list[Any], float]:
    """One pod's history in which every evidence rule fires: (pod, events, seconds)."""
    from dataclasses import replace

    from probetui.simulate.run import SimKubelet
    from probetui.simulate.scenario import App, Behaviour, Scenario
    from probetui.spec.model import Container, ExecAction, Pod, Probe, ProbeType
    from probetui.timeline.events import Event

    def probe(period: int, failure: int) -> Probe:
        return Probe(exec=ExecAction(("check",)), period_seconds=period, failure_threshold=failure)

    seconds = minutes * 60.0
    pod = Pod(
        "web",
        uid="u-web",
        containers=(
            Container(
                name="app",
                command=("x",),
                startup_probe=probe(5, 10),
                readiness_probe=probe(5, 1),
                liveness_probe=probe(10, 3),
            ),
        ),
    )
    fails = tuple((100.0 + 150.0 * i, 108.0 + 150.0 * i) for i in range(int(seconds // 150)))
    app = App(
        start_after=0.0,
        default=Behaviour(ready_after=42.0),
        probes={
            ProbeType.READINESS: Behaviour(ready_after=42.0, fail_between=fails, latency_ms=900.0)
        },
    )
    sim = SimKubelet(Scenario(pod=pod, container="app", duration=seconds, app=app))
    sim.run()
    events, n = [], 0
    for e in sim.events:
        if e.type == "ProbeAttempt" and e.probe == "liveness":
            if n % 10 == 0:
                e = replace(e, fields=dict(e.fields, outcome="error", error="exec: not found"))
            n += 1
        events.append(e)
    events.append(
        Event(
            "Divergence",
            seconds / 2,
            pod.uid,
            pod.namespace,
            pod.name,
            "app",
            "readiness",
            "shadow",
            {"message": "kubelet says not ready, shadow says ready for 12s", "likely": []},
        )
    )
    return pod, events, seconds


def _observed(pod: Any, events: list[Any], seconds: float) -> tuple[Observed, LintObject]:
    from probetui.simulate.recorded import recorded_pod

    rec = recorded_pod(pod, events, 0.0, seconds)
    divergences = [e for e in events if e.type == "Divergence"]
    observed = Observed([PodHistory(pod, rec, divergences, events)], "benchmark")
    return observed, recorded_objects(observed, "benchmark")[0]


def timing_out(events: list[Any]) -> list[Any]:
    """The history with readiness answers of 0.5 s, and its failures timeouts at 1 s: the
    latency rule then proposes a longer timeout over answers that timed out, whose what-if
    must be run (over answers all faster than both timeouts it is the run with the recorded
    settings again, which the counterfactual does not repeat)."""
    from dataclasses import replace

    out = []
    for e in events:
        if e.type == "ProbeAttempt" and e.probe == "readiness":
            fields = dict(e.fields, latency_ms=500.0)
            if fields.get("outcome") == "failure":
                fields.update(timedOut=True, latency_ms=1000.0)
            e = replace(e, fields=fields)
        out.append(e)
    return out


def observed_cost(
    rule_id: str, repeat: int, minutes: float, timeouts: bool = False
) -> dict[str, Any]:
    pod, events, seconds = observed_history(minutes)
    if timeouts:
        events = timing_out(events)
    rule = registry.rule(rule_id)
    walls = []
    for _ in range(repeat):
        observed, obj = _observed(pod, events, seconds)  # a fresh counterfactual memo
        lint_simulated._run.cache_clear()
        started = time.perf_counter()
        hits = list(rule.check(obj, observed))
        walls.append(time.perf_counter() - started)
    assert hits, rule_id
    ms = statistics.median(walls) * 1000
    return {
        "rule": rule_id + (" (timeouts)" if timeouts else ""),
        "ms_per_object": round(ms, 3),
        "ms_max": round(max(walls) * 1000, 3),
        "replayed": any(h.overrides for h in hits) and "counterfactual" in hits[0].message,
    }


def run(
    objects: int,
    files: int,
    seed: int,
    repeat: int,
    evidence_repeat: int,
    history_minutes: float = HISTORY_MINUTES,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="probetui-lint-bench-") as tmp:
        where = Path(tmp)
        write_corpus(where, objects, files, seed)
        lint_once(where)  # untimed: imports and first-call set-up
        runs = [lint_once(where) for _ in range(repeat)]
    totals = [r["total_s"] for r in runs]
    median = statistics.median(totals)
    evidence = [evidence_cost(r, evidence_repeat) for r in SIMULATED_RULES]
    worst = max(e["ms_per_object"] for e in evidence)
    observed = [observed_cost(r, evidence_repeat, history_minutes) for r in EVIDENCE_RULES]
    observed.append(
        observed_cost("observed-latency-near-timeout", evidence_repeat, history_minutes, True)
    )
    worst_observed = max(e["ms_per_object"] for e in observed)
    return {
        "benchmark": NAME,
        "config": {
            "objects": objects,
            "files": files,
            "seed": seed,
            "repeat": repeat,
            "history_minutes": history_minutes,
        },
        "environment": environment(),
        "goal": f"{GOAL_OBJECTS:,} objects in under {GOAL_S:g} s; simulated evidence under "
        f"{GOAL_EVIDENCE_MS:g} ms per object",
        "lint": {**runs[totals.index(median)], "total_s_all": totals, "median_s": median},
        "evidence": evidence,
        "observed": observed,
        "goal_met": {
            "corpus": median * GOAL_OBJECTS / max(objects, 1) < GOAL_S,
            "evidence": worst < GOAL_EVIDENCE_MS,
            "observed": worst_observed < GOAL_EVIDENCE_MS,
        },
    }


def table(r: dict[str, Any]) -> str:
    lint = r["lint"]
    met = r["goal_met"]
    rows: list[tuple[str, str]] = [
        ("goal", r["goal"]),
        (
            "corpus",
            f"{lint['objects']:,} objects in {lint['median_s']:.2f} s (median of "
            f"{len(lint['total_s_all'])}: read {lint['read_s']:.2f}, rules {lint['rules_s']:.2f}, "
            f"json {lint['output_s']:.2f}); goal {'met' if met['corpus'] else 'NOT met'}",
        ),
        (
            "",
            f"{lint['findings']:,} findings, {lint['simulations']:,} simulations run, "
            f"{lint['problems']} not linted",
        ),
    ]
    for e in r["evidence"]:
        rows.append((e["rule"], f"{e['ms_per_object']:.2f} ms per object (max {e['ms_max']:.2f})"))
    rows.append(("evidence", f"goal {'met' if met['evidence'] else 'NOT met'}"))
    minutes = r["config"]["history_minutes"]
    for e in r["observed"]:
        replay = ", with its counterfactual" if e["replayed"] else ""
        rows.append(
            (
                e["rule"],
                f"{e['ms_per_object']:.2f} ms per object (max {e['ms_max']:.2f}; "
                f"{minutes:g} min of history{replay})",
            )
        )
    rows.append(("observed evidence", f"goal {'met' if met['observed'] else 'NOT met'}"))
    return format_table(
        "probetui lint: a generated corpus, and simulated evidence per object", rows
    )


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="python -m benchmarks.lint", description=__doc__.split("\n\n")[0])
    p.add_argument("--objects", type=positive(int, "--objects"), default=GOAL_OBJECTS)
    p.add_argument("--files", type=positive(int, "--files"), default=100)
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--repeat", type=positive(int, "--repeat"), default=3)
    p.add_argument("--evidence-repeat", type=positive(int, "--evidence-repeat"), default=20)
    p.add_argument(
        "--history", type=positive(float, "--history"), default=HISTORY_MINUTES, metavar="MIN"
    )
    add_output_args(p)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return report(
        NAME,
        args,
        lambda: run(
            args.objects, args.files, args.seed, args.repeat, args.evidence_repeat, args.history
        ),
        table,
    )


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "make_object", "run", "table", "write_corpus"]
