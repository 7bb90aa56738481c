"""The agent's own `/metrics` say what it probed and where the shadow and the kubelet part ways.

| metric | type | what |
|---|---|---|
| `probetui_agent_attempts_total{probe_type,result}` | counter | the shadow's attempts by probe type (`Liveness`, `Readiness`, `Startup`, as the kubelet's `prober_probe_total` labels it) and outcome (`success`, `warning`, `failure`, `timeout`, `error`) |
| `probetui_agent_divergences_total` | counter | `Divergence` events: the shadow's published result and the kubelet's verdict apart for longer than a period and 1.5 s |
| `probetui_agent_kubelet_count_mismatches_total` | counter | spans between two scrapes, seen whole, where the kubelet's `prober_probe_total` and the shadow's count differ by more than the two workers' phases allow (`counts.py`) |
| `probetui_agent_kubelet_count_spans_total` | counter | spans judged (the mismatches' denominator) |
| `probetui_agent_kubelet_scrapes_total` | counter | scrapes of the kubelet's `/metrics/probes` that gave counts |
| `probetui_agent_kubelet_scrape_errors_total{error}` | counter | scrapes that did not, by why: `unauthorized`, `forbidden`, `not-found`, `unreachable`, `tls`, `timeout`, `status`, `body` |
| `probetui_agent_pods` | gauge | pods of this node the agent watches |
| `probetui_agent_probes` | gauge | probe workers (exec probes included, which it only observes) |
| `probetui_agent_clients` | gauge | `/v1/stream` readers attached |
| `probetui_agent_lateness_seconds` | gauge | how far behind its ticks the shadow prober runs |
| `probetui_agent_ring_entries` | gauge | frames kept for late readers |
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probetui.agent.promtext import Family, exposition

if TYPE_CHECKING:
    from probetui.agent.run import Agent


def render(agent: Agent) -> str:
    hub = agent.hub
    attempts = Family(
        "probetui_agent_attempts_total",
        "counter",
        "The shadow's probe attempts on this node, by probe type and outcome.",
        [({"probe_type": pt, "result": word}, float(n)) for pt, word, n in hub.attempt_counts()],
    )
    errors = Family(
        "probetui_agent_kubelet_scrape_errors_total",
        "counter",
        "Scrapes of the kubelet's /metrics/probes that gave no counts, by why.",
        [({"error": kind}, float(n)) for kind, n in sorted(agent.scrape_errors.items())],
    )

    def one(name: str, kind: str, text: str, value: float) -> Family:
        return Family(name, kind, text, [({}, float(value))])

    families = [
        attempts,
        one(
            "probetui_agent_divergences_total",
            "counter",
            "Divergence events: the shadow's published result and the kubelet's verdict apart.",
            hub.divergences,
        ),
        one(
            "probetui_agent_kubelet_count_mismatches_total",
            "counter",
            "Spans between two scrapes where the kubelet's and the shadow's counts differ by "
            "more than the workers' phases allow.",
            agent.join.mismatches,
        ),
        one(
            "probetui_agent_kubelet_count_spans_total",
            "counter",
            "Spans between two scrapes judged for a mismatch.",
            agent.join.spans,
        ),
        one(
            "probetui_agent_kubelet_scrapes_total",
            "counter",
            "Scrapes of the kubelet's /metrics/probes that gave counts.",
            agent.scrapes,
        ),
        errors,
        one("probetui_agent_pods", "gauge", "Pods of this node the agent watches.", len(hub.pods)),
        one(
            "probetui_agent_probes",
            "gauge",
            "Probe workers of this node's pods.",
            agent.probe_count(),
        ),
        one(
            "probetui_agent_clients",
            "gauge",
            "Readers of /v1/stream attached.",
            len(hub.clients),
        ),
        one(
            "probetui_agent_lateness_seconds",
            "gauge",
            "How far behind its ticks the shadow prober runs.",
            agent.engine.lateness(),
        ),
        one(
            "probetui_agent_ring_entries",
            "gauge",
            "Frames kept for readers that attach late.",
            hub.ring.entries,
        ),
    ]
    return exposition(families)


__all__ = ["render"]
