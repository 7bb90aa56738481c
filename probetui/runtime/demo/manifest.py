"""Fill in the bundled demo manifest and parse it into Pods like any user manifest.

`demo.yaml` gets the Python, free ports and a health-file path."""

from __future__ import annotations

import json
import re
import secrets
import socket
import sys
import tempfile
from collections import deque
from collections.abc import Mapping
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

from probetui.spec.model import Pod
from probetui.spec.parse import parse_pods

DEMO_NAMESPACE = "demo"
DEMO_SOURCE = "demo"
_TEMPLATE = "demo.yaml"
# `{{ name }}` or `{{ port:pod-name }}`
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)(?::([a-z0-9-]+))?\s*\}\}")
# Ports this process has handed out already, so two demos started from one process never share
# one even after the first has released its probe sockets; bounded like everything else.
_HANDED_OUT: deque[int] = deque(maxlen=1024)
# a bound picks a fresh port at most this many times before giving up on avoiding old ones
_PICK_ATTEMPTS = 64


def template_text() -> str:
    """Return the manifest template as shipped, placeholders and comments included."""
    return resources.files(__package__).joinpath(_TEMPLATE).read_text(encoding="utf-8")


def demo_port_names(template: str | None = None) -> tuple[str, ...]:
    """Return the names `ports` may use: one per pod that listens, in manifest order."""
    text = template_text() if template is None else template
    return tuple(
        dict.fromkeys(m[2] for m in _PLACEHOLDER.finditer(text) if m[1] == "port" and m[2])
    )


def _free_ports(count: int, avoid: set[int]) -> list[int]:
    """`count` distinct ports the OS had free on 127.0.0.1 a moment ago.

    Every socket stays bound until all are picked, so the OS cannot hand the same port out twice
    in one call. A port is free only until someone binds it: a service that loses the race says
    "port N is taken" and exits.
    """
    picked: list[int] = []
    with ExitStack() as stack:
        while len(picked) < count:
            for _ in range(_PICK_ATTEMPTS):
                sock = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                sock.bind(("127.0.0.1", 0))
                port = int(sock.getsockname()[1])
                if port not in avoid:
                    break
            picked.append(port)
            avoid.add(port)
    return picked


def _yaml_string(value: str) -> str:
    # a JSON string is a valid YAML double-quoted scalar
    return json.dumps(value, ensure_ascii=False)


def _source_root() -> str:
    """Tell what the demo services need on PYTHONPATH to import this very probetui, or "".

    From a checkout (or an editable install) the children must import the same code as the
    parent, whatever their working directory. An installed probetui is importable anyway, and
    putting site-packages on PYTHONPATH would move it ahead of the standard library.
    """
    root = Path(__file__).resolve().parents[3]
    if root.name in ("site-packages", "dist-packages"):
        return ""
    return str(root)


def default_health_file() -> str:
    """Return a path of its own per demo, under the temp directory; the exec-file service creates
    it."""
    return str(Path(tempfile.gettempdir()) / f"probetui-demo-{secrets.token_hex(4)}" / "healthy")


def demo_manifest_text(
    python: str = sys.executable,
    ports: Mapping[str, int] | None = None,
    *,
    health_file: str | None = None,
) -> str:
    """Return the demo manifest, ready for `probetui local`: `python` runs the services, `ports`
    fixes some ports by pod name (see `demo_port_names`), every other port is a free one.

    Raises ValueError for an unknown pod name or a port out of range.
    """
    template = template_text()
    names = demo_port_names(template)
    fixed = dict(ports or {})
    unknown = sorted(set(fixed) - set(names))
    if unknown:
        raise ValueError(
            f"no demo pod listens under the name {unknown[0]!r}; give one of: {', '.join(names)}"
        )
    for name, port in fixed.items():
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            raise ValueError(f"port for {name!r} must be 1-65535, got {port!r}")
    if len(set(fixed.values())) != len(fixed):
        raise ValueError("two demo pods cannot share one port")
    missing = [name for name in names if name not in fixed]
    avoid = set(fixed.values()) | set(_HANDED_OUT)
    chosen = dict(zip(missing, _free_ports(len(missing), avoid), strict=True))
    _HANDED_OUT.extend(chosen.values())
    all_ports = fixed | chosen

    values = {
        "python": _yaml_string(python),
        "pythonpath": _yaml_string(_source_root()),
        "health_file": _yaml_string(health_file or default_health_file()),
    }

    def fill(match: re.Match[str]) -> str:
        key, name = match[1], match[2]
        if key == "port" and name:
            return str(all_ports[name])
        if key in values and not name:
            return values[key]
        raise ValueError(f"demo.yaml: unknown placeholder {match[0]!r}")

    return _PLACEHOLDER.sub(fill, template)


def load_demo(
    python: str = sys.executable,
    ports: Mapping[str, int] | None = None,
    *,
    health_file: str | None = None,
) -> list[Pod]:
    """Return the demo's Pods, validated, with free ports unless `ports` fixes them."""
    text = demo_manifest_text(python, ports, health_file=health_file)
    return parse_pods(text, source=DEMO_SOURCE)
