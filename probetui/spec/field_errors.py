"""Format `field.Error`, the API server's validation error, as upstream prints it.

See `k8s.io/apimachinery/pkg/util/validation/field/errors.go`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from probetui.goquote import go_quote
from probetui.spec.model import ContainerKind

__all__ = ["ErrorType", "FieldError"]


class ErrorType(StrEnum):
    """Mirrors `field.ErrorType`, named as in the constructors (`field.Invalid`,
    `field.Required`, ...)."""

    INVALID = "Invalid"
    REQUIRED = "Required"
    FORBIDDEN = "Forbidden"
    NOT_SUPPORTED = "NotSupported"
    DUPLICATE = "Duplicate"

    @property
    def text(self) -> str:
        """Return the words upstream prints for the type (`ErrorType.String`)."""
        return _TYPE_TEXT[self]


_TYPE_TEXT = {
    ErrorType.INVALID: "Invalid value",
    ErrorType.REQUIRED: "Required value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.DUPLICATE: "Duplicate value",
}


def _go_value(value: object) -> str:
    """Return a bad value as `field.Error.ErrorBody` prints it: numbers bare, strings quoted, nil
    null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)  # ErrorBody's %q
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return "[]string{" + ", ".join(_go_value(v) for v in value) + "}"
    return str(value)


@dataclass(frozen=True, slots=True)
class FieldError:
    """Holds one `field.Error`: `str()` is upstream's text, e.g.
    `spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1`.

    `container`, `container_kind` and `field` (the path below the container) locate it for
    people; `fix` is our advice, never part of upstream's text.
    """

    path: str
    type: ErrorType
    value: object = None
    detail: str = ""
    container: str | None = None
    container_kind: ContainerKind | None = None
    field: str = ""
    fix: str | None = None

    def body(self) -> str:
        """`ErrorBody`: the message without the field path."""
        if self.type in (ErrorType.REQUIRED, ErrorType.FORBIDDEN):
            text = self.type.text
        else:
            text = f"{self.type.text}: {_go_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def summary(self) -> str:
        """Return the body for people: Required/Forbidden details say it all without the type
        word."""
        if self.type in (ErrorType.REQUIRED, ErrorType.FORBIDDEN) and self.detail:
            return self.detail
        return self.body()

    def __str__(self) -> str:
        return f"{self.path}: {self.body()}"
