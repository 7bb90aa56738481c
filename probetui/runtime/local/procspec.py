"""Work out what a container runs as a local process: its argv, environment and working directory.

`process_spec` builds them from the manifest as the kubelet does (`makeEnvironmentVariables`,
`ExpandContainerCommandAndArgs`), restricted to literal values: the local runtime runs commands,
not images, and has no API server to resolve a `valueFrom`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from probetui.probe.exec import expand_command
from probetui.spec.model import Container


class LocalRuntimeError(Exception):
    """Signals a container the local runtime cannot run as written."""


@dataclass(frozen=True)
class ProcessSpec:
    """Says what to run: argv (no shell), the full environment, the working directory.

    `warnings` lists what the manifest asks for that the local runtime cannot honour (env vars
    set with valueFrom), for the caller to show.
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None = None
    warnings: tuple[str, ...] = ()


def process_spec(container: Container, base_env: Mapping[str, str] | None = None) -> ProcessSpec:
    """Build the ProcessSpec for a container (kubelet `makeEnvironmentVariables` and
    `ExpandContainerCommandAndArgs`, restricted to literal values).

    Env values may use `$(NAME)` for a variable defined earlier in the list; command and args are
    expanded with the container's own variables (never the host's). The process environment is
    `base_env` (default: os.environ) with the container's variables on top. A variable set with
    valueFrom is not set and not expanded (`$(NAME)` stays as written); a warning says so.
    """
    if not container.command:
        raise LocalRuntimeError(
            f'container "{container.name}" has no command: the local runtime runs commands, '
            "not images; add command: [...]"
        )
    container_env: dict[str, str] = {}
    warnings: list[str] = []
    for var in container.env:
        if var.value_from is not None:
            container_env.pop(var.name, None)
            source = ", ".join(sorted(var.value_from)) or "valueFrom"
            warnings.append(
                f'container "{container.name}": env {var.name} comes from {source}, which the '
                "local runtime cannot resolve; it is not set"
            )
            continue
        value = var.value or ""
        # as the kubelet does, an empty value is not expanded and references only see
        # variables defined before this one
        container_env[var.name] = expand_command([value], container_env)[0] if value else ""
    argv = expand_command([*container.command, *container.args], container_env)
    env = dict(os.environ if base_env is None else base_env)
    env.update(container_env)
    return ProcessSpec(
        argv=tuple(argv), env=env, cwd=container.working_dir, warnings=tuple(warnings)
    )


__all__ = ["LocalRuntimeError", "ProcessSpec", "process_spec"]
