"""Define what one handler attempt returns (`pkg/probe/probe.go`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# kubelet caps HTTP bodies and exec output at 10 KiB (http.go maxRespBodyLength, exec.go maxReadLength)
MAX_OUTPUT_BYTES = 10 * 1024

# The kubelet version that `User-Agent: kube-probe/<major>.<minor>` reports; a setting.
DEFAULT_KUBE_VERSION = "1.35"


class Result(StrEnum):
    """Names the handler-level result, `probe.Result` (docs/kubelet-behaviour.md §1.3)."""

    SUCCESS = "success"
    WARNING = "warning"
    FAILURE = "failure"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Attempt:
    """Records one execution of one handler.

    `error` set means the handler returned a Go error alongside its result: the prober retries
    such an attempt and the worker discards it (§9.2, §5.11). `output` is what the kubelet puts
    in its event; `body` is the HTTP body even where the kubelet leaves it out of the event.
    """

    handler: str  # "http", "tcp", "grpc", "exec"
    target: str  # what was dialled or run: URL, host:port, argv
    result: Result
    output: str = ""
    error: str | None = None
    latency: float = 0.0  # seconds, monotonic
    started_at: float = 0.0  # seconds, wall clock (time.time()) unless a clock says otherwise
    status_code: int | None = None  # HTTP status of the final response
    body: str | None = None  # HTTP body excerpt (<= 10 KiB)
    timed_out: bool = False

    @property
    def latency_ms(self) -> float:
        return round(self.latency * 1000.0, 3)


def user_agent(kube_version: str = DEFAULT_KUBE_VERSION) -> str:
    """`kube-probe/<major>.<minor>` as the kubelet sends it (request.go, grpc.go)."""
    parts = kube_version.lstrip("v").split(".")
    return "kube-probe/" + ".".join(parts[:2])


def decode(data: bytes) -> str:
    # Go strings are bytes; show undecodable bytes rather than fail on them
    return data.decode("utf-8", errors="replace")
