"""A bad manifest raises one error type: a single line that says where and what to change.

`str(err)` reads, for example::

    deploy.yaml, document 2 (Deployment web): container "app": livenessProbe: may not specify
    more than 1 handler type (httpGet and exec are both set; keep one)

(one line in practice). The parts are kept as attributes too, so callers (the CLI's `--json`,
the UI) can show them separately.
"""

from __future__ import annotations

from collections.abc import Sequence

from probetui.spec.model import ContainerKind

# how upstream's messages name each kind of container ("init container \"setup\"")
KIND_WORDS = {
    ContainerKind.CONTAINER: "container",
    ContainerKind.INIT: "init container",
    ContainerKind.EPHEMERAL: "ephemeral container",
}


def _one_line(text: str) -> str:
    # YAML parser messages and user values may span lines; the contract is a single line
    return " ".join(text.split())


class ManifestError(Exception):
    """Signals a manifest that cannot be turned into a valid Pod.

    - `origin`: "deploy.yaml, document 2 (Deployment web)", as in `Pod.source`; may be empty.
    - `line`: 1-based line in the file when known.
    - `container` / `container_kind`: the container concerned ("app", "init container").
    - `field`: the field path, relative to the container when there is one.
    - `detail`: what is wrong (upstream's wording for validation errors).
    - `fix`: what to do about it, when that is obvious.
    - `more`: further problems found in the same pass, each already one line.
    """

    def __init__(
        self,
        detail: str,
        *,
        origin: str = "",
        line: int | None = None,
        container: str | None = None,
        container_kind: str = "container",
        field: str | None = None,
        fix: str | None = None,
        more: Sequence[str] = (),
    ) -> None:
        self.detail = detail
        self.origin = origin
        self.line = line
        self.container = container
        self.container_kind = container_kind
        self.field = field
        self.fix = fix
        self.more = tuple(more)
        super().__init__(self.message)

    @property
    def where(self) -> str:
        """Return the location part: origin, line, container and field, without the problem."""
        head = ", ".join(p for p in (self.origin, f"line {self.line}" if self.line else "") if p)
        parts = [head] if head else []
        if self.container:
            parts.append(f'{self.container_kind} "{self.container}"')
        if self.field:
            parts.append(self.field)
        return ": ".join(parts)

    @property
    def message(self) -> str:
        text = self.detail
        if self.fix:
            text = f"{text} ({self.fix})"
        where = self.where
        if where:
            text = f"{where}: {text}"
        if self.more:
            text = f"{text}; also: " + "; ".join(self.more)
        return _one_line(text)

    def __str__(self) -> str:
        return self.message


class LimitExceeded(ManifestError):
    """Signals a manifest past one of the readers' bounds (its size, nesting or aliases):
    refused whole, since reading it in parts would only spend the bound again."""
