"""Resolve the settings in force and where each came from.

The order is default < system file < user file < environment < flag, for every setting that
layer can hold.

| setting         | file (top level) | file (`contexts:`) | environment              | flag              |
|-----------------|------------------|--------------------|--------------------------|-------------------|
| read-only       | readOnly         | readOnly           | PROBETUI_READ_ONLY       | --read-only/--write |
| theme           | theme            |                    | PROBETUI_THEME           | --theme           |
| keys            | keys             |                    |                          |                   |
| via             |                  | via                | PROBETUI_VIA             | --via             |
| namespace       |                  | namespace          |                          | -n                |
| selector        |                  | selector           |                          | -l                |
| kubelet version |                  | kubeletVersion     | PROBETUI_KUBELET_VERSION | --kubelet-version |
| redact lists    | redact           |                    |                          |                   |

Inside one file a context rule beats the file's top level, an exact context name beats a glob,
and of two globs the one with more literal characters wins. Each `redact` list (allowEnv,
allowQuery, allowHeaders) is the user file's where it gives one, else the system file's, else
empty (what is masked: `probetui.redact`).

Read-only has one rule above all of this, the lock, which no user file, variable or `--write`
lifts (`--write` is refused with one line). A context is locked when:

1. `PROBETUI_READ_ONLY=locked` is set (everything is locked); or the system file says
   `lock: true` and
2. makes the context read-only itself (its top level, or its most specific context rule); or
3. makes read-only another context of the kubeconfig (or the in-cluster config) whose cluster
   is this context's: a CA certificate in common, or the same server `scheme://host:port`
   (`ClusterKin`, from the kubeconfig's cluster identities); or
4. makes anything read-only, and the context's cluster has no CA of its own
   (`certificate-authority(-data)` absent, `insecure-skip-tls-verify`, an http server): such a
   cluster cannot be told from a locked one.

What has no context (`local`, `demo`, `check --exec`) is locked by 1, or by 2 through the
system file's top level (`shell_lock`). A lock is a guard-rail for the shell's own probetui,
not a security boundary: whoever can run another binary, or edit the kubeconfig, is held only
by the API server's RBAC.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from probetui.config.errors import ConfigError
from probetui.config.files import ConfigFile, read, read_system, user_path
from probetui.config.keymap import check_clashes
from probetui.config.schema import (
    REDACT_KEYS,
    ContextRule,
    Expected,
    check_kubelet_version,
    check_theme,
    check_via,
)

__all__ = ["ENV", "FLAGS", "IN_CLUSTER", "ClusterKin", "Config", "Sourced", "load", "shell_lock"]

ENV = {
    "read_only": "PROBETUI_READ_ONLY",
    "theme": "PROBETUI_THEME",
    "via": "PROBETUI_VIA",
    "kubelet_version": "PROBETUI_KUBELET_VERSION",
}
FLAGS = {
    "theme": "--theme",
    "via": "--via",
    "namespace": "-n",
    "selector": "-l",
    "kubelet_version": "--kubelet-version",
}
CONTEXT_SETTINGS = ("via", "namespace", "selector", "kubelet_version")
# what `contexts:` patterns are matched against when probetui runs with in-cluster config
IN_CLUSTER = "in-cluster"
LOCKED = "locked"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True, slots=True)
class Sourced:
    """Holds a setting's value in force; `source` says where it came from, `reason` says it short
    (the top bar's words for read-only)."""

    value: Any
    source: str = "default"
    reason: str = ""
    locked: bool = False


def _env_read_only(value: str) -> bool | None:
    word = value.strip().lower()
    if word in _TRUE or word == LOCKED:
        return True
    if word in _FALSE:
        return False
    raise Expected("1, 0 or locked")


_ENV_CHECKS: dict[str, Callable[[str], Any]] = {
    "read_only": _env_read_only,
    "theme": check_theme,
    "via": check_via,
    "kubelet_version": check_kubelet_version,
}


def _specificity(pattern: str, context: str) -> tuple[bool, int]:
    exact = pattern == context
    literal = sum(c not in "*?[]" for c in pattern)
    return exact, literal


@dataclass(frozen=True, slots=True)
class ClusterKin:
    """Holds what the kubeconfig tells of a context's cluster, for a lock that holds for a cluster
    whatever its context is called: the other contexts whose cluster is the same (the same CA
    certificate or server address), and whether it has a CA of its own to tell it apart."""

    same_cluster: tuple[str, ...] = ()
    has_ca: bool = True


@dataclass(frozen=True, slots=True)
class Config:
    system: ConfigFile
    user: ConfigFile
    environ: Mapping[str, str]

    @property
    def files(self) -> tuple[ConfigFile, ConfigFile]:
        return self.system, self.user

    def env(self, setting: str) -> Sourced | None:
        name = ENV.get(setting)
        raw = self.environ.get(name, "") if name else ""
        if not raw:
            return None
        try:
            value = _ENV_CHECKS[setting](raw)
        except Expected as e:
            raise ConfigError(f"environment {name}: expected {e}, got {raw!r}") from None
        locked = setting == "read_only" and raw.strip().lower() == LOCKED
        reason = f"locked by {name}" if locked else name
        return Sourced(value, f"environment {name}", reason if value else "", locked)

    def rules(self, file: ConfigFile, context: str) -> list[ContextRule]:
        """Return the file's rules that match `context`, least specific first."""
        if file.settings is None:
            return []
        matching = [
            (i, r)
            for i, r in enumerate(file.settings.contexts)
            if fnmatch.fnmatchcase(context, r.pattern)
        ]
        matching.sort(key=lambda ir: (_specificity(ir[1].pattern, context), ir[0]))
        return [r for _, r in matching]

    def _layers(self, setting: str, context: str | None) -> list[Sourced]:
        """Return every value the files give `setting`, lowest precedence first."""
        out = []
        for file in self.files:
            settings = file.settings
            if settings is None:
                continue
            where = f"{file.kind} file {file.path}"
            top = getattr(settings, setting, None) if setting in ("read_only", "theme") else None
            if top is not None:
                words = "system config" if file.kind == "system" else "config file"
                out.append(Sourced(top, where, words))
            for rule in self.rules(file, context) if context is not None else ():
                if setting in rule.values:
                    words = f"context rule {rule.pattern}"
                    if file.kind == "system":
                        words = "system " + words
                    out.append(
                        Sourced(rule.values[setting], f"{where} (contexts {rule.pattern})", words)
                    )
        return out

    def setting(self, setting: str, context: str | None, flag: Any = None) -> Sourced:
        """`setting` in force: the flag's value (None: not given), else the environment's,
        else the files' (context rules for `context`), else the default None."""
        if flag is not None:
            return Sourced(flag, f"flag {FLAGS[setting]}", FLAGS[setting])
        env = self.env(setting)
        if env is not None:
            return env
        layers = self._layers(setting, context)
        return layers[-1] if layers else Sourced(None)

    def theme(self, flag: str | None = None) -> Sourced:
        if flag is not None:
            try:
                check_theme(flag)
            except Expected as e:
                raise ConfigError(f"--theme: expected {e}, got {flag!r}") from None
        return self.setting("theme", None, flag)

    def keymap(self) -> dict[str, Sourced]:
        out: dict[str, Sourced] = {}
        for file in self.files:
            if file.settings is not None:
                for binding_id, keys in file.settings.keys.items():
                    out[binding_id] = Sourced(keys, f"{file.kind} file {file.path}")
        return out

    def redaction(self) -> dict[str, Sourced]:
        """Return the `redact:` allow-lists in force, by YAML key (`REDACT_KEYS`): each the last
        file's that gives it, else empty."""
        out: dict[str, Sourced] = {}
        for key, name in REDACT_KEYS.items():
            out[key] = Sourced(())
            for file in self.files:
                names = getattr(file.settings.redact, name) if file.settings is not None else None
                if names is not None:
                    out[key] = Sourced(names, f"{file.kind} file {file.path}")
        return out

    def context_settings(
        self, context: str | None, flags: Mapping[str, Any] | None = None
    ) -> dict[str, Sourced]:
        flags = flags or {}
        return {s: self.setting(s, context, flags.get(s)) for s in CONTEXT_SETTINGS}

    def _system_read_only(self, context: str | None) -> Sourced | None:
        """Tell what the system file alone says of `context`'s read-only, where it says true."""
        layers = [x for x in self._layers("read_only", context) if x.source.startswith("system ")]
        return layers[-1] if layers and layers[-1].value else None

    def _system_locks(self) -> bool:
        """The system file says `lock: true` and makes something read-only."""
        settings = self.system.settings
        if settings is None or not settings.lock:
            return False
        return settings.read_only is True or any(
            rule.values.get("read_only") is True for rule in settings.contexts
        )

    def lock(self, context: str | None, kin: ClusterKin | None = None) -> Sourced | None:
        """Return the lock that holds `context` read-only, or None (the module docstring says when).

        `kin` is what the kubeconfig tells of the context's cluster; without it (no kubeconfig,
        or no context at all: local, demo, check) only the environment and the names count.
        """
        env = self.env("read_only")
        if env is not None and env.locked:
            return env
        if not self._system_locks():
            return None
        named = self._system_read_only(context)
        if named is not None:
            return Sourced(True, named.source, f"locked: {named.reason}", True)
        for other in kin.same_cluster if kin is not None else ():
            by = self._system_read_only(other)
            if by is not None:
                return Sourced(
                    True,
                    f'{by.source}, the cluster of context "{other}"',
                    f"locked: {by.reason} (the cluster of {other})",
                    True,
                )
        if kin is not None and not kin.has_ca:
            return Sourced(
                True,
                f"system file {self.system.path} (lock: true; a cluster without a CA of its own "
                "cannot be told from a locked one)",
                "locked: system lock (a cluster without a CA)",
                True,
            )
        return None

    def read_only(
        self,
        context: str | None,
        *,
        flag_read_only: bool = False,
        flag_write: bool = False,
        kin: ClusterKin | None = None,
    ) -> Sourced:
        """Tell whether read-only is on, why, and whether it is locked; raises ConfigError for a
        `--write` the lock refuses."""
        if flag_read_only and flag_write:
            raise ConfigError("--read-only and --write: pick one")
        lock = self.lock(context, kin)
        if lock is not None:
            if flag_write:
                raise ConfigError(
                    f"--write: read-only is locked by {lock.source.removeprefix('environment ')}"
                    "; this shell may only get, list and watch (ask whoever set the lock)"
                )
            return lock
        if flag_write:
            return Sourced(False, "flag --write", "--write")
        if flag_read_only:
            return Sourced(True, "flag --read-only", "--read-only")
        env = self.env("read_only")
        if env is not None:
            return env
        layers = self._layers("read_only", context)
        if layers:
            last = layers[-1]
            return last if last.value else Sourced(False, last.source)
        return Sourced(False)


def shell_lock(environ: Mapping[str, str] | None = None) -> Sourced | None:
    """Return the lock over what has no context (`local`, `demo`, `check --exec`), or None: only the
    environment and the system file can lock, so the user file is not read. Raises
    ConfigError."""
    env = dict(os.environ if environ is None else environ)
    nobody = ConfigFile("user", "", "not read", None)
    return Config(read_system(env), nobody, env).lock(None)


def load(config_flag: str | None = None, environ: Mapping[str, str] | None = None) -> Config:
    """Read the system and the user file and check the environment's settings; raises
    ConfigError. Nothing is connected to and nothing else is read."""
    env = dict(os.environ if environ is None else environ)
    system = read_system(env)
    user = read("user", *user_path(config_flag, env))
    config = Config(system, user, env)
    keymap = config.keymap()
    if keymap:
        check_clashes(
            {k: v.value for k, v in keymap.items()},
            {k: v.source.split(" file ", 1)[1] for k, v in keymap.items()},
        )
    for setting in ENV:
        config.env(setting)
    return config
