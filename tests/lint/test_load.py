"""What `probetui lint` reads: helm-template-style streams, JSON, Lists, every workload kind,
init and sidecar containers, and bad input as one line each with the rest still read."""

from __future__ import annotations

import json
from pathlib import Path

from probetui.lint import load, load_text, run, select
from probetui.lint.load import Loaded

DATA = Path(__file__).parent / "data"
CORPUS = Path(__file__).parent / "corpus"


def _text(text: str, name: str = "in.yaml") -> Loaded:
    out = Loaded()
    load_text(text, name, out)
    return out


def test_helm_template_output() -> None:
    loaded = load([str(DATA / "helm-template.yaml")])
    assert loaded.problems == []
    assert [o.ref for o in loaded.objects] == [
        "Deployment default/shop",
        "CronJob default/shop-report",
        "Pod default/shop-test-connection",
    ]
    shop = loaded.objects[0]
    assert shop.document == "4"  # a leading `---` starts no document of its own
    assert shop.spec_path == "spec.template.spec"
    findings = run(loaded.objects, select())
    rules = {(f.obj.name, f.hit.container, f.rule.id) for f in findings}
    # the sidecar is linted; the plain init container is not probed and not linted
    assert ("shop", "envoy", "no-liveness-probe") in rules
    assert not any(container == "migrate" for _, container, _ in rules)
    assert ("shop", "shop", "liveness-same-as-readiness") in rules
    # a CronJob's template is found under jobTemplate; its pods serve no traffic
    assert ("shop-report", "report", "liveness-failure-threshold-one") in rules
    assert ("shop-report", "report", "no-readiness-probe") not in rules
    # the annotation silences everything on the test pod
    assert not any(name == "shop-test-connection" for name, _, _ in rules)
    line = next(f.line for f in findings if f.rule.id == "liveness-same-as-readiness")
    assert line == 66  # the container's livenessProbe key, in the whole file's numbering


def test_every_workload_kind_and_a_list() -> None:
    spec = {"containers": [{"name": "app", "readinessProbe": {"tcpSocket": {"port": 80}}}]}
    template = {"spec": spec}
    docs = [
        {"kind": "Pod", "metadata": {"name": "a"}, "spec": spec},
        *(
            {"kind": k, "metadata": {"name": k.lower()}, "spec": {"template": template}}
            for k in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job")
        ),
        {
            "kind": "CronJob",
            "metadata": {"name": "cron"},
            "spec": {"jobTemplate": {"spec": {"template": template}}},
        },
        {"kind": "Rollout", "metadata": {"name": "argo"}, "spec": {"template": template}},
    ]
    listed = {"kind": "List", "items": docs}
    loaded = _text(json.dumps(listed), "list.json")
    assert loaded.problems == []
    assert [o.kind for o in loaded.objects] == [
        "Pod",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Job",
        "CronJob",
        "Rollout",
    ]
    assert loaded.objects[2].document == "1, item 3"
    stream = "\n".join(json.dumps(d) for d in docs)  # a JSON stream, as kubectl accepts
    assert len(_text(stream, "s.json").objects) == len(docs)


def test_bad_documents_are_one_line_each_and_the_rest_is_read() -> None:
    text = (
        "kind: Service\nmetadata: {name: s}\n"
        "---\n"
        "kind: Pod\nmetadata: {name: broken\n"  # unclosed flow mapping
        "---\n"
        "{{- if .Values.enabled }}\nkind: Pod\n{{- end }}\n"
        "---\n"
        "kind: Deployment\nmetadata: {name: '{{ .Release.Name }}'}\n"
        "spec: {template: {spec: {containers: [{name: a}]}}}\n"
        "---\n"
        "kind: Widget\napiVersion: example.com/v1\nmetadata: {name: w}\n"
        "---\n"
        "metadata: {name: no-kind}\n"
        "---\n"
        "kind: Pod\nmetadata: {name: fine}\nspec: {containers: [{name: a}]}\n"
    )
    loaded = _text(text)
    assert [o.name for o in loaded.objects] == ["fine"]
    lines = [str(p) for p in loaded.problems]
    assert len(lines) == 5, lines
    assert lines[0].startswith("in.yaml, document 2, line ") and "invalid YAML" in lines[0]
    assert lines[1].startswith("in.yaml, document 3, line 7: unrendered template {{- if")
    assert lines[2].startswith(
        "in.yaml, document 4, line 12: unrendered template {{ .Release.Name }}"
    )
    assert lines[3] == (
        "in.yaml, document 5, line 15: unknown kind Widget (example.com/v1): no pod template "
        "at spec.template.spec.containers; skipped"
    )
    assert lines[4] == "in.yaml, document 6, line 19: no kind: say what the object is"
    assert all("\n" not in line for line in lines)


def test_a_type_error_names_object_container_and_field() -> None:
    loaded = _text(
        "kind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: a\n"
        "    livenessProbe: {periodSeconds: ten}\n"
    )
    assert [str(p) for p in loaded.problems] == [
        'in.yaml, document 1, line 6: Pod p: container "a": livenessProbe.periodSeconds: must '
        'be an integer, got the string "ten"'
    ]


def test_directories_recurse_and_unreadable_files_are_problems(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    src = CORPUS / "timeout-at-default" / "hit.yaml"
    (tmp_path / "sub" / "a.yaml").write_text(src.read_text())
    (tmp_path / "b.json").write_text(json.dumps({"kind": "ConfigMap", "metadata": {"name": "c"}}))
    (tmp_path / "notes.txt").write_text("not a manifest")
    loaded = load([str(tmp_path), str(tmp_path / "missing.yaml")])
    assert [o.file for o in loaded.objects] == [str(tmp_path / "sub" / "a.yaml")]
    assert loaded.files == 2
    assert [str(p) for p in loaded.problems] == [
        f"{tmp_path / 'missing.yaml'}: cannot read: No such file or directory"
    ]


def test_annotations_of_object_and_template_merge() -> None:
    loaded = load([str(CORPUS / "startup-budget-too-short" / "hit.yaml")])
    assert loaded.objects[0].annotations == {"probetui.io/start-seconds": "app=60"}
