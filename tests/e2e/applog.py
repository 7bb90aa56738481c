"""The test apps' own record of each probe they received, read from their container logs.

Lines are `kubectl logs --timestamps` output: the runtime's RFC 3339 stamp, then the app's line.

- busybox httpd -vvv: `[::ffff:10.123.1.1]:41422: connected`, `...: url:/path`, `...: closed`,
  `...: response:200` for a file, and our CGI scripts' `[10.123.1.1]:41422: answer:503` and
  `[10.123.1.1]:41422: agent:kube-probe/1.35` (the request's User-Agent);
- grpchealth: `PROBE <unix time> grpc <peer ip:port> <service> <status>`.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass

_STAMP = re.compile(r"^(\S+Z) (.*)$")
_HTTPD = re.compile(
    r"^\[(?:::ffff:)?([0-9.]+)\]:(\d+): "
    r"(connected|url:(\S+)|(?:answer|response):(\d+)|agent:(\S*)|.*)$"
)
_GRPC = re.compile(r"^PROBE (\S+) grpc ([0-9.]+):(\d+) (\S*) ?(\S+)$")


@dataclass
class Received:
    """One probe as the app saw it: when the connection came, from where, and the answer."""

    t: float
    peer: str
    port: int
    path: str | None = None
    answer: str | None = None  # HTTP status code, gRPC status name; None for a bare connect
    agent: str | None = None  # the User-Agent a CGI script was asked with


def _ts(stamp: str) -> float:
    # nanoseconds do not fit fromisoformat on 3.11: cut to microseconds
    head, _, frac = stamp.rstrip("Z").partition(".")
    return datetime.datetime.fromisoformat(f"{head}.{frac[:6].ljust(6, '0')}+00:00").timestamp()


def parse(text: str) -> list[Received]:
    conns: dict[tuple[str, int], Received] = {}
    out: list[Received] = []
    for line in text.splitlines():
        m = _STAMP.match(line)
        if not m:
            continue
        t, body = _ts(m.group(1)), m.group(2)
        g = _GRPC.match(body)
        if g:
            out.append(Received(t, g.group(2), int(g.group(3)), g.group(4), g.group(5)))
            continue
        h = _HTTPD.match(body)
        if not h:
            continue
        key = (h.group(1), int(h.group(2)))
        what = h.group(3)
        if what == "connected":
            conns[key] = r = Received(t, key[0], key[1])
            out.append(r)
        elif key in conns and h.group(4) is not None:
            conns[key].path = h.group(4)
        elif key in conns and h.group(5) is not None:
            conns[key].answer = h.group(5)
        elif key in conns and h.group(6) is not None:
            conns[key].agent = h.group(6)
    return out


def from_peer(received: list[Received], peer: str) -> list[Received]:
    return [r for r in received if r.peer == peer]
