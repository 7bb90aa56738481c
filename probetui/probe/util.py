"""Resolve a probe's port as `probe.ResolveContainerPort` does (`pkg/probe/util.go`).

What upstream does is docs/kubelet-behaviour.md §16.
"""

from __future__ import annotations

from probetui.spec.model import Container


class ReachError(Exception):
    """Signals that the target cannot be dialled at all: an (Unknown, err) attempt, retried, then
    discarded.

    The kubelet returns (Unknown, err) for a port it cannot resolve (§16.4); probetui's
    runtimes use the same treatment when their path to the pod fails before the probe starts
    (a refused port-forward, a non-loopback host in the local runtime), so a broken path never
    counts toward killing a container.
    """


class PortResolutionError(ReachError):
    """Signals a named or numeric port that resolves to nothing valid (§16.4)."""


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
