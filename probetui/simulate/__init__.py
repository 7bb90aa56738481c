"""`probetui simulate` plays the kubelet's probe decisions for a scenario, in virtual time.

- `scenario.py`: the scenario (`Scenario`, `App`, `Behaviour`), loading and validating it, and
  `--set` overrides (`apply_overrides`).
- `run.py`: the virtual-time run: `SimKubelet` (the real Manager and Workers on `SimClock`,
  `PodKubelet` over a simulated backend), `synthetic_attempt`, `simulate()`, and
  `simulate_stream()`, which hands the events out as they become final instead of keeping them.
- `report.py`: the summary, the human timeline and summary table, the `--json` document, each
  also fed an event at a time (`Summary`, `Timeline`, `JsonWriter`).

This is the API the command line (`probetui/cli/simulate.py`), `benchmarks/simulate.py` and the
tests use.
"""

from __future__ import annotations

from probetui.simulate.report import (
    JsonWriter,
    Summary,
    Timeline,
    render_summary,
    render_timeline,
    summarize,
    to_json,
)
from probetui.simulate.run import (
    SimKubelet,
    kubelet_json,
    simulate,
    simulate_stream,
    synthetic_attempt,
)
from probetui.simulate.scenario import (
    App,
    Behaviour,
    Scenario,
    ScenarioError,
    apply_overrides,
    load_scenario,
    parse_scenario,
)

__all__ = [
    "App",
    "Behaviour",
    "JsonWriter",
    "Scenario",
    "ScenarioError",
    "SimKubelet",
    "Summary",
    "Timeline",
    "apply_overrides",
    "kubelet_json",
    "load_scenario",
    "parse_scenario",
    "render_summary",
    "render_timeline",
    "simulate",
    "simulate_stream",
    "summarize",
    "synthetic_attempt",
    "to_json",
]
