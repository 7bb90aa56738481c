"""Masking of credentials in what the screen shows and what a recording keeps (probe headers,
URLs, commands, outputs).

An HTTP probe may carry an `Authorization` or `Cookie` header, or any header whose name looks
like a secret. Its value is never drawn: not in the probe as written, and not where it
reappears (an echoing endpoint's body, an error text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from probetui.spec.model import Container, HTTPHeader

MASK = "••••••"
_SECRET_NAME = re.compile(r"authorization|cookie|token|secret|key|passw|credential", re.I)
# name=value or name: value pairs in commands and query strings
_PAIR = re.compile(
    r"(?P<name>[\w.-]*(?:authorization|token|secret|key|passw(?:or)?d?|credential)[\w.-]*)"
    r"(?P<sep>\s*[=:]\s*)(?P<value>(?:bearer|basic)\s+\S+|[^\s&;,'\"]+)",
    re.I,
)
_SCHEME_TOKEN = re.compile(r"\b(?P<scheme>bearer|basic)\s+[A-Za-z0-9._~+/=-]{6,}", re.I)
_USERINFO = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^/@\s:]*):(?P<pw>[^/@\s]*)@", re.I
)


def is_secret_header(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def header_text(header: HTTPHeader) -> str:
    value = MASK if is_secret_header(header.name) else header.value
    return f"{header.name}: {value}"


def secret_values(containers: Iterable[Container]) -> tuple[str, ...]:
    """The literal secret header values of these containers' probes (to mask wherever seen)."""
    out: set[str] = set()
    for c in containers:
        for probe in (c.liveness_probe, c.readiness_probe, c.startup_probe):
            if probe is None or probe.http_get is None:
                continue
            for h in probe.http_get.http_headers:
                if is_secret_header(h.name) and len(h.value) >= 4:
                    out.add(h.value)
                    # "Bearer abc": the token alone may show up too
                    parts = h.value.split(None, 1)
                    if len(parts) == 2 and len(parts[1]) >= 4:
                        out.add(parts[1])
    return tuple(sorted(out, key=len, reverse=True))


def mask(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with known secret values, URL passwords and secret-looking pairs masked."""
    if not text:
        return text
    for s in secrets:
        if s in text:
            text = text.replace(s, MASK)
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    text = _SCHEME_TOKEN.sub(lambda m: f"{m['scheme']} {MASK}", text)
    return _PAIR.sub(lambda m: f"{m['name']}{m['sep']}{MASK}", text)
