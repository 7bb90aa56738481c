"""`probetui simulate`: the kubelet's probe decisions for a scenario, in virtual time.

The public API the command line (`probetui/cli/simulate.py`), `benchmarks/simulate.py` and the
tests use.
"""

from __future__ import annotations

from probetui.simulate.run import (
    App,
    Behaviour,
    Scenario,
    ScenarioError,
    SimKubelet,
    apply_overrides,
    load_scenario,
    parse_scenario,
    render_summary,
    render_timeline,
    simulate,
    summarize,
    synthetic_attempt,
)

__all__ = [
    "App",
    "Behaviour",
    "Scenario",
    "ScenarioError",
    "SimKubelet",
    "apply_overrides",
    "load_scenario",
    "parse_scenario",
    "render_summary",
    "render_timeline",
    "simulate",
    "summarize",
    "synthetic_attempt",
]
