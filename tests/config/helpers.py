"""Writing the config files a test needs: the user's and the system's, in tmp dirs that the
autouse fixture of tests/conftest.py already points probetui at."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from probetui.config import Config, load


def user_file() -> Path:
    return Path(os.environ["XDG_CONFIG_HOME"]) / "probetui" / "config.yaml"


def system_file() -> Path:
    return Path(os.environ["PROBETUI_SYSTEM_CONFIG"])


def write(path: Path, body: dict[str, Any] | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body if isinstance(body, str) else yaml.safe_dump(body, sort_keys=False))
    return path


def config(
    user: dict[str, Any] | None = None,
    system: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Config:
    if user is not None:
        write(user_file(), user)
    if system is not None:
        write(system_file(), system)
    return load(None, {**os.environ, **(env or {})})
