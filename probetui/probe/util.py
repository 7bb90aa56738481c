"""Port resolution, `probe.ResolveContainerPort` (`pkg/probe/util.go`, spec 16)."""

from __future__ import annotations

from probetui.spec.model import Container


class PortResolutionError(Exception):
    """The kubelet returns (Unknown, err) for these: retried, discarded, never a kill (16.4)."""


def _atoi(text: str) -> int:
    # Go's strconv.Atoi: optional sign, decimal digits only
    body = text[1:] if text[:1] in "+-" else text
    if not body or not body.isascii() or not body.isdigit():
        raise PortResolutionError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    return int(text)


def resolve_container_port(port: int | str, container: Container) -> int:
    if isinstance(port, int):
        resolved = port
    else:
        named = container.port_by_name(port)
        resolved = named if named is not None else _atoi(port)
    if 0 < resolved < 65536:
        return resolved
    raise PortResolutionError(f"invalid port number: {resolved}")
