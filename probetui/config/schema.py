"""Define the config file's schema, version 1, and validate a file into dataclasses.

```yaml
version: 1                 # the schema; a file without it is read as version 1
readOnly: false            # every context
theme: probetui            # a Textual theme or probetui's own
keys:                      # binding id: key(s), comma-separated
  probetui.probe-now: ctrl+t
contexts:                  # kubeconfig context name or glob (fnmatch: * ? [...])
  "prod-*":
    readOnly: true
    via: direct            # direct | port-forward | proxy | agent | auto
    namespace: payments
    selector: app=web
    kubeletVersion: "1.33" # the User-Agent's kube-probe/X.Y
lock: true                 # the system file only: its read-only cannot be lifted
redact:                    # names whose values are shown in the clear (probetui.redact)
  allowEnv: [LOG_LEVEL]    # container env vars (exact, case-sensitive)
  allowQuery: [verbose]    # HTTP probe query parameters (exact)
  allowHeaders: [X-Tenant] # HTTP probe headers, beside the built-in harmless ones (any case)
```

Every problem is one `ConfigError` naming the file, the key path and what was expected. Keys
and themes are checked against the UI's own lists (`keymap.py`, `probetui.ui.themes`), which
are imported only when a file names any.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from probetui.config.errors import ConfigError, key_path

__all__ = [
    "CONTEXT_KEYS",
    "REDACT_KEYS",
    "VERSION",
    "VIAS",
    "ContextRule",
    "Expected",
    "FileSettings",
    "RedactSettings",
    "check_bool",
    "check_kubelet_version",
    "check_theme",
    "check_via",
    "parse_file",
]

VERSION = 1
VIAS = ("direct", "port-forward", "proxy", "agent", "auto")
_VERSION_RE = re.compile(r"v?\d+\.\d+(\.\d+)?")


@dataclass(frozen=True, slots=True)
class ContextRule:
    """Holds one entry of `contexts`: what applies to the contexts its pattern matches."""

    pattern: str
    values: Mapping[str, Any]  # setting name (read_only, via, ...) -> value, only those given


@dataclass(frozen=True, slots=True)
class RedactSettings:
    """Holds one file's `redact:` allow-lists; None where the file gives no list."""

    allow_env: tuple[str, ...] | None = None
    allow_query: tuple[str, ...] | None = None
    allow_headers: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class FileSettings:
    """Holds one config file, validated. None (or empty) where the file says nothing."""

    path: str
    kind: str  # "system" or "user"
    read_only: bool | None = None
    theme: str | None = None
    keys: Mapping[str, str] = field(default_factory=dict)  # canonical binding id -> keys
    contexts: tuple[ContextRule, ...] = ()
    lock: bool = False
    redact: RedactSettings = RedactSettings()


class Expected(Exception):
    """Says what a value should have been; the caller adds the file and the key path."""


def _got(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def check_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise Expected("true or false")
    return value


def _check_text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Expected("a non-empty string")
    return value.strip()


def check_via(value: object) -> str:
    if value not in VIAS:
        raise Expected(" or ".join(VIAS))
    return str(value)


def check_kubelet_version(value: object) -> str:
    if isinstance(value, float):
        # YAML reads 1.30 as the number 1.3: refuse rather than guess the minor
        raise Expected('a version as a string, quoted ("1.33")')
    if not isinstance(value, str) or not _VERSION_RE.fullmatch(value.strip()):
        raise Expected('a version such as "1.33" or "v1.33.2"')
    return value.strip().lstrip("v")


def check_theme(value: object) -> str:
    from probetui.ui.themes import theme_names

    names = theme_names()
    if value not in names:
        close = difflib.get_close_matches(str(value), names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise Expected(
            f"a theme: {', '.join(names[:3])}, ... ({len(names)} in all, `probetui config` "
            f"lists them){hint}"
        )
    return str(value)


# the keys of a context rule: YAML key -> (setting name, check)
CONTEXT_KEYS: dict[str, tuple[str, Callable[[object], Any]]] = {
    "readOnly": ("read_only", check_bool),
    "via": ("via", check_via),
    "namespace": ("namespace", _check_text),
    "selector": ("selector", _check_text),
    "kubeletVersion": ("kubelet_version", check_kubelet_version),
}
_TOP_KEYS = ("version", "readOnly", "theme", "keys", "contexts", "lock", "redact")
# the keys of `redact:`: YAML key -> RedactSettings field
REDACT_KEYS = {
    "allowEnv": "allow_env",
    "allowQuery": "allow_query",
    "allowHeaders": "allow_headers",
}


def _mapping(path: str, where: tuple[str, ...], value: object) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path}: {key_path(*where)}: expected a mapping, got {_got(value)}")
    return value


def _unknown(path: str, where: tuple[str, ...], key: object, allowed: tuple[str, ...]) -> None:
    close = difflib.get_close_matches(str(key), allowed, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ConfigError(
        f"{path}: {key_path(*where, str(key))}: unknown key ({hint}expected one of "
        f"{', '.join(allowed)})"
    )


def _checked(
    path: str, where: tuple[str, ...], value: object, check: Callable[[object], Any]
) -> Any:
    try:
        return check(value)
    except Expected as e:
        raise ConfigError(f"{path}: {key_path(*where)}: expected {e}, got {_got(value)}") from None


def _contexts(path: str, raw: object) -> tuple[ContextRule, ...]:
    rules = []
    for pattern, body in _mapping(path, ("contexts",), raw).items():
        if not isinstance(pattern, str) or not pattern:
            raise ConfigError(
                f"{path}: contexts: expected context names or globs as keys, got {_got(pattern)}"
            )
        where = ("contexts", pattern)
        values: dict[str, Any] = {}
        for key, value in _mapping(path, where, body or {}).items():
            if key not in CONTEXT_KEYS:
                _unknown(path, where, key, tuple(CONTEXT_KEYS))
            name, check = CONTEXT_KEYS[key]
            values[name] = _checked(path, (*where, key), value, check)
        rules.append(ContextRule(pattern, values))
    return tuple(rules)


def _names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise Expected("a list of names")
    return tuple(v.strip() for v in value)


def _redact(path: str, raw: object) -> RedactSettings:
    lists: dict[str, tuple[str, ...]] = {}
    for key, value in _mapping(path, ("redact",), raw or {}).items():
        if key not in REDACT_KEYS:
            _unknown(path, ("redact",), key, tuple(REDACT_KEYS))
        lists[REDACT_KEYS[key]] = _checked(path, ("redact", key), value, _names)
    return RedactSettings(**lists)


def parse_file(path: str, kind: str, raw: object) -> FileSettings:
    """Validate one file's YAML document (None for an empty file)."""
    if raw is None:
        return FileSettings(path, kind)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{path}: expected a mapping of settings at the top, got {_got(raw)}")
    for key in raw:
        if key not in _TOP_KEYS:
            _unknown(path, (), key, _TOP_KEYS)
    if "version" in raw and raw["version"] != VERSION:
        raise ConfigError(
            f"{path}: version: expected {VERSION} (the schema this probetui reads), got "
            f"{_got(raw['version'])}"
        )
    if "lock" in raw and kind != "system":
        raise ConfigError(
            f"{path}: lock: expected only in the system file (a user's own file cannot lock "
            "itself; use /etc/probetui/config.yaml or PROBETUI_READ_ONLY=locked)"
        )
    keys: Mapping[str, str] = {}
    if raw.get("keys"):
        from probetui.config.keymap import parse_keys

        keys = parse_keys(path, _mapping(path, ("keys",), raw["keys"]))
    return FileSettings(
        path=path,
        kind=kind,
        read_only=_checked(path, ("readOnly",), raw["readOnly"], check_bool)
        if "readOnly" in raw
        else None,
        theme=_checked(path, ("theme",), raw["theme"], check_theme) if "theme" in raw else None,
        keys=keys,
        contexts=_contexts(path, raw["contexts"]) if raw.get("contexts") is not None else (),
        lock=_checked(path, ("lock",), raw["lock"], check_bool) if "lock" in raw else False,
        redact=_redact(path, raw["redact"]) if "redact" in raw else RedactSettings(),
    )
