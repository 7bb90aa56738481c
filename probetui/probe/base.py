"""What one handler attempt returns (`pkg/probe/probe.go`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# kubelet caps HTTP bodies and exec output at 10 KiB (http.go maxRespBodyLength, exec.go maxReadLength)
MAX_OUTPUT_BYTES = 10 * 1024

# The kubelet version that `User-Agent: kube-probe/<major>.<minor>` reports; a setting.
DEFAULT_KUBE_VERSION = "1.35"


class Result(StrEnum):
    """Handler-level result, `probe.Result` (docs/kubelet-behaviour.md §1.3)."""

    SUCCESS = "success"
    WARNING = "warning"
    FAILURE = "failure"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One execution of one handler.

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


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def go_quote(text: str | bytes) -> str:
    """Go's `%q` of a string (strconv.Quote), which the kubelet's texts use for URLs, commands
    and the lines a server sent.

    Go strings are bytes: `bytes`, and the lone surrogates that `surrogateescape` leaves for
    bytes that are not UTF-8, come out as `\\xNN`, as Go prints a byte that is not UTF-8.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "surrogateescape")
    out = ['"']
    for c in text:
        code = ord(c)
        if c in _GO_ESCAPES:
            out.append(_GO_ESCAPES[c])
        elif 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif c.isprintable():
            out.append(c)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            # a surrogate is no rune: Go prints the replacement character's escape
            out.append("\\ufffd")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def user_agent(kube_version: str = DEFAULT_KUBE_VERSION) -> str:
    """`kube-probe/<major>.<minor>` as the kubelet sends it (request.go, grpc.go)."""
    parts = kube_version.lstrip("v").split(".")
    return "kube-probe/" + ".".join(parts[:2])


def truncate_bytes(data: bytes, limit: int = MAX_OUTPUT_BYTES) -> bytes:
    return data[:limit]


def decode(data: bytes) -> str:
    # Go strings are bytes; show undecodable bytes rather than fail on them
    return data.decode("utf-8", errors="replace")


def go_duration(seconds: float) -> str:
    """Format seconds the way Go's `time.Duration.String` does: 10s, 1m20s, 5m0s, 1.5s, 500ms."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        for unit, size in (("ns", 1), ("µs", 1_000), ("ms", 1_000_000)):
            if u < size * 1000:
                return f"{sign}{_frac(u, size)}{unit}"
    hours, rem = divmod(u, 3_600_000_000_000)
    minutes, rem = divmod(rem, 60_000_000_000)
    text = f"{_frac(rem, 1_000_000_000)}s"
    if u >= 60_000_000_000:
        text = f"{minutes}m{text}"
    if u >= 3_600_000_000_000:
        text = f"{hours}h{text}"
    return sign + text


def _frac(value: int, size: int) -> str:
    """`value / size` with the fraction's trailing zeros dropped, as Go prints it."""
    whole, part = divmod(value, size)
    if part == 0:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{str(part).rjust(digits, '0').rstrip('0')}"
