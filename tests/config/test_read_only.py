"""Read-only by context rule and glob, and the lock that no file, variable or flag lifts."""

from __future__ import annotations

from pathlib import Path

import pytest

from probetui.config import IN_CLUSTER, ConfigError, files
from tests.config.helpers import config, write

RULES = {
    "contexts": {
        "*": {"via": "port-forward"},
        "prod-*": {"readOnly": True, "namespace": "payments"},
        "prod-eu-?": {"namespace": "payments-eu"},
        "prod-eu-1": {"readOnly": False},
        "[sq]a-*": {"readOnly": True},
    }
}


@pytest.mark.parametrize(
    ("context", "read_only", "reason"),
    [
        ("prod-us", True, "context rule prod-*"),
        ("prod-eu-2", True, "context rule prod-*"),
        ("prod-eu-1", False, ""),  # an exact name beats the glob
        ("qa-1", True, "context rule [sq]a-*"),
        ("dev", False, ""),
        ("production", False, ""),  # globs match the whole name
    ],
)
def test_context_globs(context: str, read_only: bool, reason: str) -> None:
    got = config(user=RULES).read_only(context)
    assert (got.value, got.reason) == (read_only, reason)


def test_the_more_literal_glob_wins_and_rules_merge_per_key() -> None:
    settings = config(user=RULES).context_settings("prod-eu-2")
    assert settings["namespace"].value == "payments-eu"
    assert "contexts prod-eu-?" in settings["namespace"].source
    assert settings["via"].value == "port-forward"  # from "*", the only rule that sets it
    assert config(user=RULES).context_settings("prod-us")["namespace"].value == "payments"


def test_in_cluster_config_is_matched_as_a_context_named_in_cluster() -> None:
    cfg = config(user={"contexts": {IN_CLUSTER: {"readOnly": True}}})
    assert cfg.read_only(IN_CLUSTER).value is True


def test_a_context_rule_beats_its_file_s_top_level() -> None:
    cfg = config(user={"readOnly": True, "contexts": {"dev-*": {"readOnly": False}}})
    assert cfg.read_only("dev-1").value is False
    assert cfg.read_only("prod").value is True
    assert cfg.read_only("prod").reason == "config file"


def test_the_flags() -> None:
    cfg = config(user={"readOnly": True})
    assert cfg.read_only("x", flag_write=True).value is False
    assert config().read_only("x", flag_read_only=True).reason == "--read-only"
    with pytest.raises(ConfigError, match="pick one"):
        cfg.read_only("x", flag_read_only=True, flag_write=True)


def test_the_environment_lock_refuses_write_and_outranks_every_file() -> None:
    cfg = config(
        user={"readOnly": False, "contexts": {"*": {"readOnly": False}}},
        env={"PROBETUI_READ_ONLY": "locked"},
    )
    got = cfg.read_only("dev")
    assert got.value and got.locked and got.reason == "locked by PROBETUI_READ_ONLY"
    with pytest.raises(ConfigError) as refused:
        cfg.read_only("dev", flag_write=True)
    assert str(refused.value).startswith("--write: read-only is locked by PROBETUI_READ_ONLY")


def test_the_system_file_s_lock_holds_what_it_makes_read_only() -> None:
    system = {"lock": True, "contexts": {"prod-*": {"readOnly": True}}}
    cfg = config(system=system, user={"readOnly": False}, env={"PROBETUI_READ_ONLY": "0"})
    got = cfg.read_only("prod-eu")
    assert got.value and got.locked and got.reason == "locked: system context rule prod-*"
    with pytest.raises(ConfigError, match="--write: read-only is locked by system file"):
        cfg.read_only("prod-eu", flag_write=True)
    # where the system file does not make a context read-only, the lock holds nothing
    assert cfg.read_only("dev", flag_write=True).value is False
    assert cfg.read_only("dev").value is False


def test_a_locked_system_file_read_only_everywhere() -> None:
    cfg = config(system={"readOnly": True, "lock": True})
    assert cfg.read_only("anything").locked
    with pytest.raises(ConfigError):
        cfg.read_only("anything", flag_write=True)


def test_lock_in_a_user_file_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"config\.yaml: lock: expected only in the system file"):
        config(user={"lock": True})


def test_the_system_file_s_lock_holds_wherever_the_variable_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host's /etc/probetui/config.yaml that locks is read whatever PROBETUI_SYSTEM_CONFIG
    says: one variable in a shell must not point a lock away. One that does not lock leaves
    the variable its say (tests, hosts that keep /etc elsewhere)."""
    etc = write(tmp_path / "etc-probetui.yaml", {"readOnly": True, "lock": True})
    monkeypatch.setattr(files, "SYSTEM_CONFIG", str(etc))
    elsewhere = write(tmp_path / "elsewhere.yaml", {"readOnly": False})
    env = {"PROBETUI_SYSTEM_CONFIG": str(elsewhere)}
    cfg = config(env=env)
    assert (cfg.system.path, cfg.system.note) == (
        str(etc),
        "PROBETUI_SYSTEM_CONFIG is not read: this file locks read-only",
    )
    assert cfg.read_only("dev").locked
    with pytest.raises(ConfigError, match=f"--write: read-only is locked by system file {etc}"):
        cfg.read_only("dev", flag_write=True)

    write(etc, {"readOnly": True})
    cfg = config(env=env)
    assert (cfg.system.path, cfg.system.chosen_by) == (str(elsewhere), "PROBETUI_SYSTEM_CONFIG")
    assert cfg.read_only("dev").value is False
