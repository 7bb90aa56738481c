"""Where the config files are, and reading one.

- The system file: `/etc/probetui/config.yaml`, a bastion's, which may `lock` read-only.
  `PROBETUI_SYSTEM_CONFIG` names another (tests; hosts that keep /etc elsewhere).
- The user file: `--config FILE`, else `PROBETUI_CONFIG`, else
  `$XDG_CONFIG_HOME/probetui/config.yaml`, else `~/.config/probetui/config.yaml`.

A missing file is not an error (most users have none); a file that exists must be readable
YAML, said in one line otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from probetui.config.errors import ConfigError
from probetui.config.schema import FileSettings, parse_file

__all__ = ["SYSTEM_CONFIG", "ConfigFile", "read", "system_path", "user_path"]

SYSTEM_CONFIG = "/etc/probetui/config.yaml"


@dataclass(frozen=True, slots=True)
class ConfigFile:
    kind: str  # "system" or "user"
    path: str
    chosen_by: str  # "default", "XDG_CONFIG_HOME", "PROBETUI_CONFIG", "--config", ...
    settings: FileSettings | None  # None: not found

    @property
    def found(self) -> bool:
        return self.settings is not None


def system_path(environ: Mapping[str, str]) -> tuple[str, str]:
    if environ.get("PROBETUI_SYSTEM_CONFIG"):
        return environ["PROBETUI_SYSTEM_CONFIG"], "PROBETUI_SYSTEM_CONFIG"
    return SYSTEM_CONFIG, "default"


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
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ConfigFile(kind, path, chosen_by, None)
    except IsADirectoryError:
        raise ConfigError(f"{path}: expected a file, found a directory") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read it: {' '.join(str(e).split())}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ConfigError(
            f"{path}: {where}expected YAML: {' '.join(str(problem).split())}"
        ) from None
    return ConfigFile(kind, path, chosen_by, parse_file(path, kind, raw))
