"""A CI-sized run of `benchmarks.lint`, so the benchmark cannot rot: 200 generated objects in a
few files, and each simulated rule's evidence twice. The figures are not held to their goals
here (that is the full run's job); the corpus must lint cleanly and trip every rule."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from benchmarks import lint
from probetui.lint import RULES, load

pytestmark = pytest.mark.timeout(120)


def test_lint_benchmark_gives_every_figure() -> None:
    result = lint.run(
        objects=200, files=4, seed=15, repeat=1, evidence_repeat=2, history_minutes=10
    )
    run = result["lint"]
    assert run["objects"] == 200 and run["problems"] == 0
    assert run["findings"] > 200 and run["simulations"] > 0
    assert run["total_s"] > 0
    assert [e["rule"] for e in result["evidence"]] == list(lint.SIMULATED_RULES)
    assert all(e["ms_per_object"] > 0 for e in result["evidence"])
    # the latency rule once more over attempts that time out, whose what-if is run
    timeouts = "observed-latency-near-timeout (timeouts)"
    assert [e["rule"] for e in result["observed"]] == [*lint.EVIDENCE_RULES, timeouts]
    assert all(e["ms_per_object"] > 0 for e in result["observed"])
    assert {e["rule"] for e in result["observed"] if e["replayed"]} == {
        "observed-latency-near-timeout",
        "observed-start-near-budget",
        "readiness-flapping",
        timeouts,
    }
    assert "ms per object" in lint.table(result)


def test_generated_objects_read_as_written(tmp_path: Path) -> None:
    lint.write_corpus(tmp_path, 300, 3, seed=1)
    loaded = load([str(tmp_path)])
    assert len(loaded.objects) == 300 and loaded.problems == []
    kinds = {o.kind for o in loaded.objects}
    assert kinds == {
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Job",
        "CronJob",
        "Pod",
    }
    assert isinstance(lint.make_object(random.Random(0), 0), dict)
    assert set(lint.SIMULATED_RULES) <= set(RULES)
