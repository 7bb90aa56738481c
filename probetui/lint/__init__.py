"""`probetui lint` gives probe advice from the manifest, the kubelet's model and what was observed.

- `model.py`: the object a rule judges (`LintObject`), `Rule`, `Hit`, `Finding`, `Problem`,
  `Severity`, and the `Evidence` protocol the recording rules will fill.
- `load.py`: files, directories and stdin to objects; bad input as one-line `Problem`s.
- `rules_static.py`: the anchor rules (kubectl-probes, kube-score, kube-linter, Polaris,
  Datree) that need only the manifest.
- `rules_model.py`: the rules only the kubelet's model gives, with their consequences.
- `simulated.py`: those consequences, each a short run of `probetui simulate`'s model.
- `observed.py`: `Observed`, the `Evidence` of a recording, a live cluster session or the UI's
  store, with the counterfactual of a proposed setting over it.
- `rules_evidence.py`: the rules that read it (latency against the timeout, starts against the
  budget, Ready flaps, errored attempts, divergence from the kubelet).
- `budget.py`: the start-up budget a container needs, from its starts seen or declared,
  proven on the kubelet's model; `prove.py`: an evidence rule's proposal tried in the replay.
- `registry.py`: every rule by id, `--disable`/`--enable`, the silencing annotation, the run.
- `human.py`, `machine.py`: the outputs (text; JSON and SARIF).
"""

from probetui.lint.load import Loaded, load, load_text
from probetui.lint.model import Evidence, Finding, Hit, LintObject, Problem, Rule, Severity
from probetui.lint.registry import RULES, run, select

__all__ = [
    "RULES",
    "Evidence",
    "Finding",
    "Hit",
    "LintObject",
    "Loaded",
    "Problem",
    "Rule",
    "Severity",
    "load",
    "load_text",
    "run",
    "select",
]
