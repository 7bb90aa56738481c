"""Every rule against its corpus: `corpus/RULE/hit.yaml` makes it fire, `near-miss.yaml` (one
step short of it) does not. The model-backed rules carry their simulated consequence."""

from __future__ import annotations

from pathlib import Path

import pytest

from probetui.lint import RULES, load, run, select
from probetui.lint.model import Finding

CORPUS = Path(__file__).parent / "corpus"
# the rules whose messages carry what `simulate` showed (each model rule is backed by a
# simulated consequence); success-threshold-not-one and invalid-spec quote the API server instead
SIMULATED = {r.id for r in RULES.values() if r.simulated and not r.needs_evidence}
# the evidence rules' corpora are histories, not manifests: tests/lint/test_evidence.py
MANIFEST_RULES = sorted(r.id for r in RULES.values() if not r.needs_evidence)


def _findings(path: Path, rule_id: str) -> list[Finding]:
    loaded = load([str(path)])
    assert loaded.problems == [], [str(p) for p in loaded.problems]
    assert loaded.objects
    return [f for f in run(loaded.objects, select()) if f.rule.id == rule_id]


def test_the_simulated_rules() -> None:
    assert {
        "startup-budget-too-short",
        "liveness-failure-threshold-one",
        "probe-grace-longer-than-pod",
        "named-port-not-declared",
        "grpc-on-tls-port",
        "liveness-same-as-readiness",
        "timeout-exceeds-period",
    } == SIMULATED


def test_every_rule_has_a_corpus() -> None:
    assert sorted(p.name for p in CORPUS.iterdir() if p.is_dir()) == MANIFEST_RULES
    for rule_id in MANIFEST_RULES:
        assert (CORPUS / rule_id / "hit.yaml").is_file()
        assert (CORPUS / rule_id / "near-miss.yaml").is_file()


@pytest.mark.parametrize("rule_id", MANIFEST_RULES)
def test_hit(rule_id: str) -> None:
    found = _findings(CORPUS / rule_id / "hit.yaml", rule_id)
    assert len(found) == 1, [f.hit.message for f in found]
    f = found[0]
    assert f.line is not None and f.line > 1
    assert "\n" not in f.hit.message and "\n" not in f.fix
    if rule_id in SIMULATED:
        assert "simulate:" in f.hit.message, f.hit.message
        assert "could not run" not in f.hit.message


@pytest.mark.parametrize("rule_id", MANIFEST_RULES)
def test_near_miss(rule_id: str) -> None:
    assert _findings(CORPUS / rule_id / "near-miss.yaml", rule_id) == []


def _one(rule_id: str) -> str:
    return _findings(CORPUS / rule_id / "hit.yaml", rule_id)[0].hit.message


def test_startup_budget_says_when_and_how_often() -> None:
    message = _one("startup-budget-too-short")
    # startup failureThreshold 3 x period 10 against a 60 s start: the first tick finds no
    # running container yet (§17.1), so the attempts at 10, 20 and 30 s fail
    assert "needs 60 s to start" in message
    assert "is killed at 30 s" in message
    assert "simulate: 3 kills in" in message and "never Ready" in message


def test_blip_kills_on_the_tick_it_fails() -> None:
    message = _one("liveness-failure-threshold-one")
    assert "a 1 s blip at 20 s -> Killing at 20 s" in message


def test_timeout_at_period_shows_the_stretched_period() -> None:
    message = _one("timeout-exceeds-period")
    assert "probed every 15 s" in message
    assert "killed 45 s after it hangs, not 30 s" in message


def test_probe_grace_is_used_for_the_kill() -> None:
    message = _one("probe-grace-longer-than-pod")
    assert "SIGKILL at" in message
    killed, sigkill = (
        float(x.split(" s")[0]) for x in message.split("killed at ")[1].split("SIGKILL at ")
    )
    assert sigkill - killed == pytest.approx(120)


def test_named_port_errors_and_never_ready() -> None:
    message = _one("named-port-not-declared")
    assert "never Ready" in message
    assert "strconv.Atoi" in message  # the kubelet's own text for the dropped attempts
    assert "0 kills" in message


def test_named_port_declared_by_another_container_is_still_a_hit() -> None:
    text = (CORPUS / "named-port-not-declared" / "hit.yaml").read_text()
    text += "        - name: other\n          ports: [{name: http, containerPort: 80}]\n"
    from probetui.lint import load_text
    from probetui.lint.load import Loaded

    out = Loaded()
    load_text(text, "x.yaml", out)
    found = [f for f in run(out.objects, select()) if f.rule.id == "named-port-not-declared"]
    assert len(found) == 1 and "container 'other' declares it" in found[0].hit.message


def test_outage_restarts_where_readiness_alone_would_not() -> None:
    message = _one("liveness-same-as-readiness")
    # liveness every 5 s, 3 failures: killed at 15 s into the outage, and again after each
    # restart while it lasts (the first restart is not delayed, §11.6)
    assert "kills it 4 times" in message


def test_success_threshold_quotes_the_api_server() -> None:
    message = _one("success-threshold-not-one")
    assert message.endswith(
        "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"
    )


class _Measured:
    def start_seconds(self, obj: object, container: str) -> float | None:
        return 120.0


def test_evidence_overrides_the_declared_start() -> None:
    loaded = load([str(CORPUS / "startup-budget-too-short" / "near-miss.yaml")])
    found = [
        f
        for f in run(loaded.objects, select(), evidence=_Measured())
        if f.rule.id == "startup-budget-too-short"
    ]
    assert len(found) == 1 and "needs 120 s to start (measured)" in found[0].hit.message
