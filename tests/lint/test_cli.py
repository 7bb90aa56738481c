"""`probetui lint` on the command line: outputs, exit statuses, rule selection, silencing,
`--explain`, and SARIF checked against the SARIF 2.1.0 JSON schema (the OASIS schema as
Microsoft's jest-sarif package ships it, kept in tests/lint/data)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from probetui.cli import main
from probetui.lint import RULES

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
HELM = HERE / "data" / "helm-template.yaml"
SARIF_SCHEMA = HERE / "data" / "sarif-2.1.0-rtm.5.json"


def _lint(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["lint", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_human_output_groups_by_object_worst_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _lint(capsys, str(HELM), "--color", "never")
    assert code == 0  # warnings and info only, and --fail-on defaults to error
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"{HELM}, document 4: Deployment default/shop"
    assert "\x1b[" not in out
    order = {"error": 0, "warning": 1, "info": 2}
    first = [ln.split()[0] for ln in lines[1:] if ln.startswith("  ") and "fix:" not in ln]
    first = first[: next(i for i, ln in enumerate(lines[1:]) if not ln.startswith("  ")) // 2]
    assert first and [order[s] for s in first] == sorted(order[s] for s in first)
    assert lines[-1].startswith("3 objects, ")


def test_colour_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _lint(capsys, str(HELM), "--color", "always")
    assert "\x1b[33mwarning" in out


def test_fail_on_and_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert _lint(capsys, str(HELM))[0] == 0
    assert _lint(capsys, str(HELM), "--fail-on", "warning")[0] == 1
    hit = str(CORPUS / "named-port-not-declared" / "hit.yaml")
    assert _lint(capsys, hit)[0] == 1
    assert _lint(capsys, hit, "--fail-on", "never")[0] == 0
    assert _lint(capsys, hit, "--disable", "named-port-not-declared")[0] == 0


def test_nothing_readable_is_status_2_with_one_line_each(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nmetadata: {name: [\n")
    code, out, err = _lint(capsys, str(bad), "-o", "json")
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0].startswith(f"probetui lint: {bad}, document 1, line ")
    assert lines[-1] == "probetui lint: nothing could be linted"
    assert json.loads(out)["problems"][0]["document"] == "1"
    # one good file beside it: the rest is linted, and the bad one is still reported
    good = CORPUS / "timeout-at-default" / "hit.yaml"
    code, _, err = _lint(capsys, str(bad), str(good))
    assert code == 0 and str(bad) in err


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(HELM.read_text()))
    code, out, _ = _lint(capsys, "-", "-o", "json")
    assert code == 0
    doc = json.loads(out)
    assert {f["file"] for f in doc["findings"]} == {"<stdin>"}


def test_json_schema_v1(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _lint(capsys, str(CORPUS / "startup-budget-too-short" / "hit.yaml"), "-o", "json")
    doc = json.loads(out)
    assert doc["schema"] == "probetui.lint/v1"
    assert set(doc) == {"schema", "tool", "summary", "rules", "findings", "problems"}
    assert doc["summary"]["failed"] is True and doc["summary"]["fail_on"] == "error"
    finding = next(f for f in doc["findings"] if f["rule"] == "startup-budget-too-short")
    assert set(finding) == {
        "rule",
        "severity",
        "message",
        "fix",
        "file",
        "document",
        "line",
        "object",
        "container",
        "probe",
        "field",
        "proposed",  # added to v1 with the evidence rules (an addition keeps the version)
    }
    assert finding["object"] == {"kind": "Deployment", "namespace": "default", "name": "java"}
    assert finding["field"] == "spec.template.spec.containers[0].startupProbe"
    assert finding["probe"] == "startup" and finding["line"] == 11


def test_sarif_validates_against_the_schema(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    bad = tmp_path / "bad file.yaml"
    bad.write_text("kind: Gizmo\nmetadata: {name: g}\n")
    code, out, _ = _lint(
        capsys, str(HELM), str(CORPUS / "invalid-spec" / "hit.yaml"), str(bad), "-o", "sarif"
    )
    assert code == 1
    doc = json.loads(out)
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.Draft4Validator(schema).validate(doc)
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0"
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(RULES)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note")
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert len(notes) == 1 and "unknown kind Gizmo" in notes[0]["message"]["text"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "bad%20file.yaml"
    )


def test_disable_enable_and_the_annotation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hit = CORPUS / "timeout-at-default" / "hit.yaml"
    _, out, _ = _lint(
        capsys, str(hit), "-o", "json", "--disable", "all", "--enable", "timeout-at-default"
    )
    assert {f["rule"] for f in json.loads(out)["findings"]} == {"timeout-at-default"}
    silenced = tmp_path / "quiet.yaml"
    silenced.write_text(
        hit.read_text().replace(
            "metadata: {name: agent}",
            "metadata:\n  name: agent\n  annotations:\n"
            "    probetui.io/lint-disable: timeout-at-default, no-liveness-probe,"
            " probe-port-not-declared",
        )
    )
    _, out, _ = _lint(capsys, str(silenced), "-o", "json")
    assert json.loads(out)["findings"] == []
    code, _, err = _lint(capsys, str(hit), "--disable", "no-such-rule")
    assert code == 2 and "unknown rule 'no-such-rule'" in err


def test_explain_and_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _lint(capsys, "--explain", "named-port-not-declared")
    assert code == 0
    assert out.startswith("named-port-not-declared (error)")
    assert "§16.4" in out and "fix:" in out and "from:" in out
    code, out, _ = _lint(capsys, "--list-rules")
    assert code == 0 and len(out.splitlines()) == len(RULES)
    assert _lint(capsys, "--explain", "nope")[0] == 2


NEGATIVE_PERIOD = """\
apiVersion: v1
kind: Pod
metadata: {name: neg}
spec:
  containers:
    - name: app
      image: x
      livenessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: -1}
      readinessProbe: {httpGet: {path: /ready, port: 8080}}
"""


@pytest.mark.timeout(30)
def test_a_probe_the_api_server_refuses_is_an_error_and_never_simulated(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """periodSeconds -1 spun lint's simulation at 100% CPU for ever (a CI job hung): it is
    invalid-spec's error in validateProbe's words, exit 1, and no rule simulates it."""
    from probetui.lint import simulated

    def never(*args: object) -> None:
        raise AssertionError("simulated a container the API server rejects")

    monkeypatch.setattr(simulated, "_run", never)
    path = tmp_path / "neg.yaml"
    path.write_text(NEGATIVE_PERIOD)
    code, out, _ = _lint(capsys, str(path), "-o", "json")
    assert code == 1
    findings = json.loads(out)["findings"]
    invalid = [f for f in findings if f["rule"] == "invalid-spec"]
    assert [f["severity"] for f in invalid] == ["error"]
    assert (
        "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater "
        "than or equal to 0" in invalid[0]["message"]
    )
    assert not any("simulate" in f["message"].replace("not simulated", "") for f in findings)
