"""The one event type everything downstream of the engine reads: store, UI, headless output.

The vocabulary is `probetui simulate`'s: `ProbeAttempt`, `ResultChanged`, `ContainerStarted`,
`ContainerExited`, `Killing`, `BackOff`, `Unhealthy`, `ProbeWarning`, `StartedChanged`,
`ReadyChanged`; plus `ProbeSkipped` (a doProbe that ran no handler; the timeline draws it,
the headless output leaves it out, as simulate does) and, from the cluster source,
`Divergence`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from probetui.prober.prober import outcome_label
from probetui.prober.worker import ProbeRecord, WorkerState

SHADOW = "shadow"  # probetui's own workers
KUBELET = "kubelet"  # the kubelet, real (cluster) or played (local runtime)

# a worker's state changed without a doProbe record (paused, resumed, stopped): for the store
WORKER_STATE = "WorkerState"

# events the headless output does not print
NOT_IN_JSONL = frozenset({"ProbeSkipped", WORKER_STATE})


@dataclass(slots=True)
class Event:
    type: str
    t: float  # wall-clock seconds
    pod_uid: str
    namespace: str
    pod: str
    container: str | None
    probe: str | None  # "liveness", "readiness", "startup"
    source: str
    fields: dict[str, Any] = field(default_factory=dict)
    # the worker's record behind a ProbeAttempt / ProbeSkipped: the store keeps it for the UI
    record: ProbeRecord | None = None
    # the worker's state where no record carries it (WorkerState, the engine's own skips)
    state: WorkerState | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "ts": datetime.fromtimestamp(self.t, UTC).isoformat(timespec="milliseconds"),
            "namespace": self.namespace,
            "pod": self.pod,
            "container": self.container,
            "probe": self.probe,
            "source": self.source,
        }
        out.update(self.fields)
        return out

    def to_line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))


def attempt_fields(record: ProbeRecord, via: str | None = None) -> dict[str, Any]:
    """A ProbeAttempt's fields, named as in `probetui simulate --json` and `probetui check`."""
    outcome = record.outcome
    assert outcome is not None
    attempt = outcome.attempt
    fields: dict[str, Any] = {
        "outcome": outcome_label(outcome),
        "result": outcome.result.label,
        "resultRun": record.result_run,
        "trigger": record.trigger.value,
        "manual": record.manual,
        "tries": len(outcome.attempts),
    }
    if attempt is not None:
        fields.update(
            handler=attempt.handler,
            target=attempt.target,
            latency_ms=attempt.latency_ms,
            output=attempt.output,
        )
        if attempt.status_code is not None:
            fields["statusCode"] = attempt.status_code
        if attempt.timed_out:
            fields["timedOut"] = True
    if outcome.error is not None:
        fields["error"] = outcome.error
    if outcome.event is not None:
        fields["event"] = outcome.event.message
    if via is not None:
        fields["via"] = via
    return fields


__all__ = ["KUBELET", "NOT_IN_JSONL", "SHADOW", "WORKER_STATE", "Event", "attempt_fields"]
