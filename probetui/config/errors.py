"""The one error of configuration says bad input in one line naming where it is."""

from __future__ import annotations

__all__ = ["ConfigError", "key_path"]


class ConfigError(ValueError):
    """Signals a config file, an environment variable or a flag that cannot be used.

    The command line prints it as one line and exits 2 before anything connects.
    """


def key_path(*parts: str) -> str:
    """`contexts."prod-*".readOnly`: dotted, a part quoted where it holds what would misread
    (a binding id's own dots, a glob's star)."""
    out = []
    for part in parts:
        plain = part and all(c.isalnum() or c in "_-" for c in part)
        out.append(part if plain else '"' + part.replace('"', '\\"') + '"')
    return ".".join(out)
