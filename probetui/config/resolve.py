"""The settings in force and where each came from: default < system file < user file <
environment < flag, for every setting that layer can hold.

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
empty (what is masked: `probetui.redact`). Read-only has one rule above all of this:
`PROBETUI_READ_ONLY=locked`, or `lock: true` in the system file where that file makes a context
read-only, cannot be lifted by a user file, the environment or `--write` (refused with one
line).
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

__all__ = ["ENV", "FLAGS", "IN_CLUSTER", "Config", "Sourced", "load"]

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
    """A setting's value in force; `source` says where it came from, `reason` says it short
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
        """The file's rules that match `context`, least specific first."""
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
        """Every value the files give `setting`, lowest precedence first."""
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
        """The `redact:` allow-lists in force, by YAML key (`REDACT_KEYS`): each the last
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

    def read_only(
        self, context: str | None, *, flag_read_only: bool = False, flag_write: bool = False
    ) -> Sourced:
        """Whether read-only is on, why, and whether it is locked; raises ConfigError for a
        `--write` the lock refuses."""
        if flag_read_only and flag_write:
            raise ConfigError("--read-only and --write: pick one")
        layers = self._layers("read_only", context)
        system = [x for x in layers if x.source.startswith("system ")]
        env = self.env("read_only")
        lock: Sourced | None = None
        if env is not None and env.locked:
            lock = env
        elif (
            self.system.settings is not None
            and self.system.settings.lock
            and system
            and system[-1].value
        ):
            lock = Sourced(True, system[-1].source, f"locked: {system[-1].reason}", True)
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
        if env is not None:
            return env
        if layers:
            last = layers[-1]
            return last if last.value else Sourced(False, last.source)
        return Sourced(False)


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
