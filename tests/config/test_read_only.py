"""Read-only by context rule and glob, and the lock that no file, variable or flag lifts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from probetui.config import IN_CLUSTER, ClusterKin, ConfigError, files
from tests.config.helpers import config, system_file, write

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


# --- a lock holds for a cluster, not for a name -------------------------------------------------

LOCK_PROD = {"lock": True, "contexts": {"prod-*": {"readOnly": True}}}


def test_a_lock_holds_for_every_context_of_a_locked_cluster() -> None:
    """A context renamed (dev-laptop) whose cluster is a locked context's (prod-eu) is locked
    as that one is, whatever the user file, the environment or --write say."""
    cfg = config(system=LOCK_PROD, user={"readOnly": False}, env={"PROBETUI_READ_ONLY": "0"})
    kin = ClusterKin(same_cluster=("kind-kind", "prod-eu"))
    got = cfg.read_only("dev-laptop", kin=kin)
    assert got.value and got.locked
    assert got.reason == "locked: system context rule prod-* (the cluster of prod-eu)"
    assert 'the cluster of context "prod-eu"' in got.source
    with pytest.raises(ConfigError, match="--write: read-only is locked by system file"):
        cfg.read_only("dev-laptop", flag_write=True, kin=kin)
    # a cluster of its own, with a CA of its own: the lock holds nothing
    assert (
        cfg.read_only("dev-laptop", flag_write=True, kin=ClusterKin(("kind-kind",))).value is False
    )


def test_a_cluster_without_a_ca_under_a_lock_is_locked() -> None:
    cfg = config(system=LOCK_PROD)
    got = cfg.read_only("kubectl-proxy", kin=ClusterKin(has_ca=False))
    assert got.value and got.locked and got.reason == "locked: system lock (a cluster without a CA)"
    with pytest.raises(ConfigError, match="--write: read-only is locked"):
        cfg.read_only("kubectl-proxy", flag_write=True, kin=ClusterKin(has_ca=False))
    # a system file that locks nothing read-only holds nothing, with or without a CA
    idle = config(system={"lock": True, "contexts": {"prod-*": {"via": "direct"}}})
    assert idle.read_only("kubectl-proxy", kin=ClusterKin(has_ca=False)).value is False
    # nor does a system file without lock: true, or a lock only of the environment's
    unlocked = config(system={"contexts": {"prod-*": {"readOnly": True}}})
    assert (
        unlocked.read_only("x", flag_write=True, kin=ClusterKin(("prod-eu",), False)).value is False
    )


def test_a_name_the_lock_exempts_is_still_locked_for_a_locked_cluster() -> None:
    """An exemption by name is a name: it holds for a cluster of its own with a CA of its own."""
    system = {"lock": True, "readOnly": True, "contexts": {"dev-laptop": {"readOnly": False}}}
    cfg = config(system=system)
    assert cfg.read_only("dev-laptop", kin=ClusterKin()).value is False
    assert cfg.read_only("dev-laptop", kin=ClusterKin(("prod-eu",))).locked
    assert cfg.read_only("dev-laptop", kin=ClusterKin(has_ca=False)).locked


def test_what_has_no_context_is_locked_by_the_environment_or_the_system_top_level(
    tmp_path: Path,
) -> None:
    from probetui.config import shell_lock

    env = dict(os.environ)
    assert shell_lock(env) is None
    lock = shell_lock({**env, "PROBETUI_READ_ONLY": "locked"})
    assert lock is not None and lock.reason == "locked by PROBETUI_READ_ONLY"
    assert shell_lock({**env, "PROBETUI_READ_ONLY": "1"}) is None  # read-only, not a lock
    write(system_file(), LOCK_PROD)
    assert shell_lock(env) is None  # it locks contexts by name only
    write(system_file(), {"lock": True, "readOnly": True})
    lock = shell_lock(env)
    assert lock is not None and lock.locked and lock.reason == "locked: system config"
    # the user file is not read: a broken one does not stop the answer
    write(tmp_path / "xdg" / "probetui" / "config.yaml", "readOnly: [")
    assert shell_lock({**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}) is not None
