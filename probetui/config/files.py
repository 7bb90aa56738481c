"""Find the config files, and read one.

- The system file: `/etc/probetui/config.yaml`, a bastion's, which may `lock` read-only.
  `PROBETUI_SYSTEM_CONFIG` names another (tests; hosts that keep /etc elsewhere), except where
  `/etc/probetui/config.yaml` locks: a lock that one variable in the shell could point away
  from would be no lock, so that file is read whatever the variable says.
- The user file: `--config FILE`, else `PROBETUI_CONFIG`, else
  `$XDG_CONFIG_HOME/probetui/config.yaml`, else `~/.config/probetui/config.yaml`.

A missing file is not an error (most users have none); a file that exists must be readable
YAML, said in one line otherwise. A key given twice in one mapping is such a line too: YAML
loaders keep the last silently, so `readOnly: true` above a forgotten `readOnly: false` would
read as false.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from probetui.config.errors import ConfigError, key_path
from probetui.config.schema import FileSettings, parse_file
from probetui.spec import yaml_safe

__all__ = ["SYSTEM_CONFIG", "ConfigFile", "read", "read_system", "user_path"]

SYSTEM_CONFIG = "/etc/probetui/config.yaml"


@dataclass(frozen=True, slots=True)
class ConfigFile:
    kind: str  # "system" or "user"
    path: str
    chosen_by: str  # "default", "XDG_CONFIG_HOME", "PROBETUI_CONFIG", "--config", ...
    settings: FileSettings | None  # None: not found
    note: str = ""  # why this file and not the one asked for, where that differs

    @property
    def found(self) -> bool:
        return self.settings is not None


def read_system(environ: Mapping[str, str]) -> ConfigFile:
    """Return the system file: `PROBETUI_SYSTEM_CONFIG`'s where it is set, unless /etc's locks."""
    named = environ.get("PROBETUI_SYSTEM_CONFIG")
    if not named or named == SYSTEM_CONFIG:
        return read("system", SYSTEM_CONFIG, "default")
    if os.path.lexists(SYSTEM_CONFIG):
        etc = read("system", SYSTEM_CONFIG, "default")
        if etc.settings is not None and etc.settings.lock:
            return dataclasses.replace(
                etc, note="PROBETUI_SYSTEM_CONFIG is not read: this file locks read-only"
            )
    return read("system", named, "PROBETUI_SYSTEM_CONFIG")


def user_path(flag: str | None, environ: Mapping[str, str]) -> tuple[str, str]:
    if flag:
        return os.path.expanduser(flag), "--config"
    if environ.get("PROBETUI_CONFIG"):
        return os.path.expanduser(environ["PROBETUI_CONFIG"]), "PROBETUI_CONFIG"
    if environ.get("XDG_CONFIG_HOME"):
        return os.path.join(environ["XDG_CONFIG_HOME"], "probetui", "config.yaml"), (
            "XDG_CONFIG_HOME"
        )
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".config", "probetui", "config.yaml"), "default"


def read(kind: str, path: str, chosen_by: str) -> ConfigFile:
    try:
        text = yaml_safe.read_text(path, encoding="utf-8")
    except FileNotFoundError:
        return ConfigFile(kind, path, chosen_by, None)
    except IsADirectoryError:
        raise ConfigError(f"{path}: expected a file, found a directory") from None
    except (OSError, yaml_safe.TextError) as e:
        raise ConfigError(f"{path}: cannot read it: {' '.join(str(e).split())}") from None
    try:
        raw = _load(path, text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(
            f"{path}: {where}expected YAML: {' '.join(str(problem).split())}"
        ) from None
    return ConfigFile(kind, path, chosen_by, parse_file(path, kind, raw))


def _load(path: str, text: str) -> object:
    """`yaml.safe_load` within the readers' bounds, refusing a key given twice in one mapping."""
    return yaml_safe.load(text, inspect=lambda node: _refuse_duplicates(path, node, (), set()))


def _refuse_duplicates(path: str, node: yaml.Node, where: tuple[str, ...], seen: set[int]) -> None:
    # `seen`: an alias is the node it names; each node is walked once (anchors may nest)
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _refuse_duplicates(path, item, where, seen)
    if not isinstance(node, yaml.MappingNode):
        return
    keys: set[tuple[str, str]] = set()
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue  # not a key any setting has: the schema names it
        if (key.tag, key.value) in keys:
            raise ConfigError(
                f"{path}: line {key.start_mark.line + 1}: {key_path(*where, key.value)}: given "
                "twice (expected each key once; YAML would keep only the last)"
            )
        keys.add((key.tag, key.value))
        _refuse_duplicates(path, value, (*where, key.value), seen)
