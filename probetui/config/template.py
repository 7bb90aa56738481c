"""`probetui config --init` writes a starting file with every setting shown and commented out.

What it changes is then only what the user uncomments."""

from __future__ import annotations

import textwrap

from probetui.config.keymap import default_keys
from probetui.config.schema import VERSION, VIAS

__all__ = ["template"]


def template() -> str:
    from probetui.ui.themes import theme_names

    themes = textwrap.fill(
        ", ".join(theme_names()) + ".",
        width=94,
        initial_indent="# Theme: ",
        subsequent_indent="#   ",
        break_on_hyphens=False,
    )
    from probetui.redact import BUILTIN_ALLOW_HEADERS, MASK

    headers = textwrap.fill(
        ", ".join(sorted(_title(h) for h in BUILTIN_ALLOW_HEADERS)) + ".",
        width=94,
        initial_indent="# clear: the headers ",
        subsequent_indent="#   ",
        break_on_hyphens=False,
    )
    keys = default_keys()
    width = max(len(k) for k in keys) + 1
    key_lines = "\n".join(
        f'#   {binding_id + ":":<{width}} "{value}"' for binding_id, value in keys.items()
    )
    return f"""\
# probetui configuration (schema version {VERSION}). Uncomment what you want to change.
# `probetui config` shows the settings in force and where each one comes from:
# default < /etc/probetui/config.yaml < this file < environment < command-line flag.
version: {VERSION}

# Read-only: send only get, list and watch to the API server (no exec, port-forward or
# proxy), and start no process under `probetui local`. Also: PROBETUI_READ_ONLY=1,
# --read-only; --write lifts it for one run unless a lock holds it.
# A lock (PROBETUI_READ_ONLY=locked, or `lock: true` in /etc/probetui/config.yaml) holds a
# cluster, not a name: a context whose cluster has a CA certificate or the server address of
# a locked context's is locked too, and so is every cluster without a CA of its own. A lock
# of everything (the variable, or the system file's top-level readOnly) also refuses `probetui
# demo` and `check --exec`. A lock is a guard-rail for this shell's probetui, not a security
# boundary against someone who can run another program: RBAC is (the view ClusterRole is all
# that read-only needs).
# readOnly: false

{themes}
# Also --theme NAME or PROBETUI_THEME; NO_COLOR=1 makes any theme monochrome.
# The command palette (ctrl+p, "Theme") switches it while probetui runs.
# theme: probetui

# Keys, by binding id (shown with their defaults). Textual key names ("ctrl+t", "f5",
# "question_mark") or one character; several keys comma-separated.
# keys:
{key_lines}

# Per kubeconfig context, by name or glob (* ? [...]); an exact name beats a glob, a longer
# glob a shorter one. Flags still win: -n, -l, --via, --read-only/--write, --kubelet-version.
# contexts:
#   "prod-*":
#     readOnly: true
#   "kind-*":
#     via: port-forward         # {" | ".join(VIAS)}
#     namespace: default
#     selector: app=web
#     kubeletVersion: "1.35"    # kube-probe/X.Y in the User-Agent, where the node cannot tell

# Secrets never reach the screen, the JSONL output or a recording: every container env value,
# every HTTP probe query parameter value and every probe header value is masked ({MASK}),
# but for the names listed here (the names themselves always show). Built in, shown in the
{headers}
# Credential-looking arguments of exec probes and commands (--password=X, -pX for mysql,
# -u user:pw for curl, user:pw@host) are masked too (docs/architecture.md, Redaction).
# redact:
#   allowEnv: [LOG_LEVEL, PORT]      # env var names, exact
#   allowQuery: [verbose, format]    # query parameter names, exact
#   allowHeaders: [X-Tenant]         # header names, any case
"""


def _title(header: str) -> str:
    return "-".join(part.capitalize() for part in header.split("-"))
