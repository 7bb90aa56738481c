"""`keys:` maps binding ids to keys, checked against the app's own bindings (`probetui.ui.keys`).

An id may be written as the app names it (`probetui.probe-now`) or with underscores and
without the prefix (`probe_now`), as k9s users write it; errors and `probetui
config` use the app's name. A key is Textual's name (`ctrl+t`, `f5`, `question_mark`) or one
character (`?`); several keys are comma-separated or a YAML list.

Clashes are checked over the whole keymap in force (defaults, system file, user file): two
bindings active on the same screen must not share a key, and Textual's own keys (the
command palette, focus) are not given away. Textual would otherwise let the later binding
silently take the key from the earlier one.
"""

from __future__ import annotations

import difflib
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from probetui.config.errors import ConfigError, key_path

__all__ = ["binding_ids", "check_clashes", "default_keys", "parse_keys"]

_MODIFIERS = ("ctrl", "shift", "alt", "meta", "super", "hyper")
_PREFIX = "probetui."


def _bindings() -> Iterator[tuple[int, Any]]:
    """(scope index, Binding) for every binding the app has."""
    from probetui.ui.keys import SCOPES

    for index, scope in enumerate(SCOPES):
        for bindings in scope:
            for binding in bindings:
                yield index, binding


def default_keys() -> dict[str, str]:
    """Binding id -> its keys as the app defines them."""
    return {b.id: _normalize(b.key) for _, b in _bindings() if b.id}


def binding_ids() -> tuple[str, ...]:
    return tuple(default_keys())


def _canonical(path: str, raw: object, known: tuple[str, ...]) -> str:
    name = str(raw)
    candidates = [name, _PREFIX + name]
    candidates += [c.replace("_", "-") for c in candidates]
    for candidate in candidates:
        if candidate in known:
            return candidate
    close = difflib.get_close_matches(name.replace("_", "-"), known, n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(_PREFIX + name.replace("_", "-"), known, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    raise ConfigError(
        f"{path}: {key_path('keys', name)}: unknown binding id ({hint}`probetui config` lists "
        "them all)"
    )


def _one_key(key: str) -> str | None:
    """Textual's name for one key, or None when it names none."""
    from textual.keys import Keys

    from probetui.ui.textual_compat import character_to_key

    *modifiers, base = key.split("+") if len(key) > 1 else [key]
    if any(m not in _MODIFIERS for m in modifiers) or not base:
        return None
    if len(base) == 1:
        # Textual's own mapping of "?" to "question_mark" and the like, so that clashes
        # between the two spellings are seen
        base = character_to_key(base)
    elif base not in {k.value for k in Keys}:
        try:
            unicodedata.lookup(base.replace("_", " "))
        except KeyError:
            return None
    return "+".join([*modifiers, base])


def _normalize(keys: str) -> str:
    return ",".join(_one_key(k.strip()) or k.strip() for k in keys.split(","))


def parse_keys(path: str, raw: Mapping[Any, Any]) -> dict[str, str]:
    """`keys:` of one file as {canonical id: normalized keys}; one-line errors."""
    known = binding_ids()
    out: dict[str, str] = {}
    for name, value in raw.items():
        binding_id = _canonical(path, name, known)
        where = key_path("keys", binding_id)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            value = ",".join(value)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(
                f'{path}: {where}: expected a key such as "ctrl+t" (or several, comma-separated), '
                f"got {value!r}"
            )
        keys = []
        for key in value.split(","):
            one = _one_key(key.strip().lower() if len(key.strip()) > 1 else key.strip())
            if one is None:
                raise ConfigError(
                    f"{path}: {where}: {key.strip()!r} is not a key (expected a Textual key name "
                    'such as "ctrl+t", "f5", "question_mark", or one character)'
                )
            keys.append(one)
        if binding_id in out:
            raise ConfigError(f"{path}: {where}: given twice (as {name!r} too)")
        out[binding_id] = ",".join(dict.fromkeys(keys))
    return out


def check_clashes(keymap: Mapping[str, str], where: Mapping[str, str]) -> None:
    """Refuse a keymap in force where two bindings of one scope share a key, or a binding takes
    one of Textual's. `where` names the file each remapped id came from."""
    from probetui.ui.keys import RESERVED

    in_force = {**default_keys(), **keymap}
    owners: dict[tuple[int, str], str] = {}
    for scope, binding in _bindings():
        if not binding.id:
            continue
        for key in in_force[binding.id].split(","):
            remapped = binding.id in keymap
            if remapped and key in RESERVED:
                raise ConfigError(
                    f"{where[binding.id]}: {key_path('keys', binding.id)}: key {key} is "
                    f"{RESERVED[key]} (pick another key)"
                )
            other = owners.setdefault((scope, key), binding.id)
            if other == binding.id:
                continue
            # name the file of whichever of the two was remapped, the later one if both
            culprit = binding.id if remapped else other
            victim = other if culprit == binding.id else binding.id
            fix = "another key for one of them" if victim in keymap else "another key"
            if victim not in keymap:
                fix += f", or move {victim} to another key too"
            raise ConfigError(
                f"{where[culprit]}: {key_path('keys', culprit)}: key {key} is also "
                f"{victim}'s (pick {fix})"
            )
