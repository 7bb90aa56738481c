"""default < system file < user file < environment < flag, for every setting that each layer
can hold (the table in probetui/config/resolve.py)."""

from __future__ import annotations

from typing import Any

import pytest

from probetui.config import Config
from tests.config.helpers import config

CONTEXT = "prod-eu"


def _value(cfg: Config, setting: str, flag: Any = None) -> tuple[Any, str]:
    if setting == "theme":
        got = cfg.theme(flag)
    elif setting == "read_only":
        got = cfg.read_only(CONTEXT, flag_read_only=bool(flag), flag_write=flag is False)
    else:
        got = cfg.context_settings(CONTEXT, {setting: flag})[setting]
    return got.value, got.source


# setting: (its file entry, values for system, user, environment (None: no variable), flag)
CASES: dict[str, tuple[str, tuple[Any, Any, str | None, Any]]] = {
    "theme": ("top", ("nord", "dracula", "gruvbox", "monokai")),
    "read_only": ("top", (True, False, "1", False)),
    "via": ("context", ("proxy", "direct", "port-forward", "proxy")),
    "namespace": ("context", ("sys-ns", "user-ns", None, "flag-ns")),
    "selector": ("context", ("tier=sys", "tier=user", None, "tier=flag")),
    "kubelet_version": ("context", ("1.31", "1.32", "1.33", "1.34")),
}
YAML_KEY = {
    "theme": "theme",
    "read_only": "readOnly",
    "via": "via",
    "namespace": "namespace",
    "selector": "selector",
    "kubelet_version": "kubeletVersion",
}
ENV = {
    "theme": "PROBETUI_THEME",
    "read_only": "PROBETUI_READ_ONLY",
    "via": "PROBETUI_VIA",
    "kubelet_version": "PROBETUI_KUBELET_VERSION",
}
DEFAULTS = {"theme": None, "read_only": False}


def _file(setting: str, value: Any) -> dict[str, Any]:
    where, _ = CASES[setting]
    if where == "top":
        return {YAML_KEY[setting]: value}
    return {"contexts": {"prod-*": {YAML_KEY[setting]: value}}}


@pytest.mark.parametrize("setting", list(CASES))
def test_each_layer_beats_the_one_below(setting: str) -> None:
    _, (system, user, env, flag) = CASES[setting]
    assert _value(config(), setting) == (DEFAULTS.get(setting), "default")

    got = _value(config(system=_file(setting, system)), setting)
    assert got[0] == system and got[1].startswith("system file ")

    got = _value(config(system=_file(setting, system), user=_file(setting, user)), setting)
    assert got[0] == user and got[1].startswith("user file ")

    layered = {"system": _file(setting, system), "user": _file(setting, user)}
    if env is not None:
        got = _value(config(**layered, env={ENV[setting]: env}), setting)
        expected = {"1": True}.get(env, env)
        assert got == (expected, f"environment {ENV[setting]}")
    with_env = {ENV[setting]: env} if env is not None else {}
    got = _value(config(**layered, env=with_env), setting, flag)
    assert got[0] == flag and got[1].startswith("flag ")


def test_keys_user_file_beats_system_file() -> None:
    cfg = config(
        system={"keys": {"probetui.probe-now": "ctrl+t", "probetui.follow": "F"}},
        user={"keys": {"probe_now": "ctrl+y"}},
    )
    keymap = cfg.keymap()
    assert keymap["probetui.probe-now"].value == "ctrl+y"
    assert keymap["probetui.probe-now"].source.startswith("user file ")
    assert keymap["probetui.follow"].value == "F"
    assert keymap["probetui.follow"].source.startswith("system file ")


def test_a_user_file_turns_a_system_read_only_off_when_nothing_locks_it() -> None:
    cfg = config(system={"readOnly": True}, user={"readOnly": False})
    assert cfg.read_only(CONTEXT).value is False
    cfg = config(system={"readOnly": True}, user={}, env={"PROBETUI_READ_ONLY": "0"})
    assert cfg.read_only(CONTEXT).value is False
    assert cfg.read_only(CONTEXT, flag_write=True).source == "flag --write"
