"""`probetui config`, `--init`, where the files are looked for, and bad input: one line naming
the file, the key path and what was expected, exit 2, before anything connects."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from probetui.cli import main
from tests.config.helpers import system_file, user_file, write


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    assert err.startswith("probetui: error: ")
    return err.removeprefix("probetui: error: ")


def _kubeconfig(tmp_path: Path) -> Path:
    # a server nothing listens on: a run that got as far as connecting would say so
    return write(
        tmp_path / "kubeconfig",
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": "http://127.0.0.1:9"}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "prod-eu", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "prod-eu",
        },
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("readOnly: sure\n", "readOnly: expected true or false, got 'sure'"),
        ("theme: nrod\n", "theme: expected a theme"),
        ("colour: red\n", "colour: unknown key"),
        ("contexts:\n  prod-*:\n    readonly: true\n", 'contexts."prod-*".readonly: unknown key'),
        ("contexts:\n  prod-*:\n    via: ssh\n", 'contexts."prod-*".via: expected direct or'),
        ("contexts: [a]\n", "contexts: expected a mapping, got a list"),
        ("version: 2\n", "version: expected 1"),
        ("keys:\n  probe_nwo: x\n", "keys.probe_nwo: unknown binding id (did you mean"),
        ("keys:\n  probe_now: ctrl+tt\n", "'ctrl+tt' is not a key"),
        ("keys:\n  probe_now: f\n", 'keys."probetui.probe-now": key f is also probetui.follow'),
        ("keys:\n  probe_now: ctrl+p\n", "key ctrl+p is the command palette"),
        ("readOnly: [\n", "line 2: expected YAML"),
        ("- 1\n", "expected a mapping of settings at the top, got a list"),
        # YAML keeps the last of two; a forgotten line below must not turn read-only off
        ("readOnly: true\nreadOnly: false\n", "line 2: readOnly: given twice"),
        (
            "contexts:\n  prod-*: {readOnly: true}\n  'prod-*': {via: direct}\n",
            'line 3: contexts."prod-*": given twice',
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_connecting(
    body: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(user_file(), body)
    assert main(["--kubeconfig", str(_kubeconfig(tmp_path)), "--no-ui"]) == 2
    err = _error(capsys)
    assert err.startswith(f"{path}: ") and expected in err, err
    # the same line for every command that reads the configuration
    assert main(["demo", "--print-manifest"]) == 0
    capsys.readouterr()
    assert main(["config"]) == 2
    assert expected in _error(capsys)


def test_bad_environment_and_flags(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROBETUI_READ_ONLY", "maybe")
    assert main(["config"]) == 2
    assert _error(capsys) == "environment PROBETUI_READ_ONLY: expected 1, 0 or locked, got 'maybe'"
    monkeypatch.delenv("PROBETUI_READ_ONLY")
    assert main(["--theme", "nope", "config"]) == 2
    assert _error(capsys).startswith("--theme: expected a theme")
    assert main(["--kubelet-version", "1.x", "--no-ui"]) == 2
    assert _error(capsys).startswith("--kubelet-version: expected a version")


def test_a_missing_file_is_not_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", str(tmp_path / "nope.yaml"), "config", "--context", "x"]) == 0
    out = capsys.readouterr().out
    assert f"user    {tmp_path / 'nope.yaml'}  (not found, chosen by --config)" in out


def test_where_the_user_file_is_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def user_line() -> str:
        assert main(["config", "--context", "x"]) == 0
        return capsys.readouterr().out.splitlines()[2]

    assert user_line() == f"  user    {user_file()}  (not found, chosen by XDG_CONFIG_HOME)"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert user_line() == f"  user    {tmp_path}/.config/probetui/config.yaml  (not found)"
    monkeypatch.setenv("PROBETUI_CONFIG", str(tmp_path / "env.yaml"))
    assert "chosen by PROBETUI_CONFIG" in user_line()
    # --config beats PROBETUI_CONFIG, before the command or after it
    for argv in (["--config", "f.yaml", "config"], ["config", "--config", "f.yaml"]):
        assert main([*argv, "--context", "x"]) == 0
        assert "f.yaml  (not found, chosen by --config)" in capsys.readouterr().out


def test_probetui_config_says_where_each_setting_came_from(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(system_file(), {"lock": True, "contexts": {"prod-*": {"readOnly": True}}})
    user = write(
        user_file(),
        {
            "theme": "nord",
            "keys": {"probe_now": "ctrl+t"},
            "contexts": {"prod-eu": {"via": "direct"}},
        },
    )
    monkeypatch.setenv("PROBETUI_KUBELET_VERSION", "1.33")
    assert main(["config", "--context", "prod-eu"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert f"system {system_file()} (read, chosen by PROBETUI_SYSTEM_CONFIG, lock: true)" in lines
    assert 'settings for context "prod-eu" (--context)' in lines
    assert f"readOnly true (locked) system file {system_file()} (contexts prod-*)" in lines
    assert f"theme nord user file {user}" in lines
    assert f"via direct user file {user} (contexts prod-eu)" in lines
    assert "kubeletVersion 1.33 environment PROBETUI_KUBELET_VERSION" in lines
    assert f"probetui.probe-now ctrl+t user file {user}" in lines
    assert "probetui.follow f default" in lines


def test_probetui_config_takes_a_run_s_flags(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a run with these flags would have in force, each from "flag ...": and a --write the
    lock refuses is the run's one line, with no table before it."""
    write(user_file(), {"contexts": {"prod-*": {"readOnly": True, "via": "direct"}}})
    argv = ["config", "--context", "prod-eu", "--write", "--via", "proxy", "-n", "shop"]
    assert main([*argv, "-l", "app=web", "--kubelet-version", "v1.31.2"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    for row in (
        "readOnly false flag --write",
        "via proxy flag --via",
        "namespace shop flag -n",
        "selector app=web flag -l",
        "kubeletVersion 1.31.2 flag --kubelet-version",
    ):
        assert row in lines
    monkeypatch.setenv("PROBETUI_READ_ONLY", "locked")
    assert main(["config", "--context", "prod-eu", "--write"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("probetui: error: --write: read-only is locked by PROBETUI_READ_ONLY")
    assert err.count("\n") == 1
    assert main(["config", "--kubelet-version", "1.x"]) == 2
    assert _error(capsys).startswith("--kubelet-version: expected a version")


def test_probetui_config_shows_the_lock_a_context_s_cluster_is_under(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import base64

    import trustme

    ca = base64.b64encode(trustme.CA().cert_pem.bytes()).decode()
    cluster = {"server": "https://10.0.0.1:6443", "certificate-authority-data": ca}
    kubeconfig = write(
        tmp_path / "kubeconfig",
        {
            "clusters": [{"name": "c", "cluster": cluster}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [
                {"name": n, "context": {"cluster": "c", "user": "u"}}
                for n in ("prod-eu", "dev-laptop")
            ],
            "current-context": "dev-laptop",
        },
    )
    write(system_file(), {"lock": True, "contexts": {"prod-*": {"readOnly": True}}})
    assert main(["config", "--kubeconfig", str(kubeconfig)]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert (
        f"readOnly true (locked) system file {system_file()} (contexts prod-*), the cluster of "
        'context "prod-eu"'
    ) in lines
    assert main(["config", "--kubeconfig", str(kubeconfig), "--write"]) == 2
    assert _error(capsys).startswith(f"--write: read-only is locked by system file {system_file()}")


def test_the_current_context_comes_from_the_kubeconfig(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "--kubeconfig", str(_kubeconfig(tmp_path))]) == 0
    assert 'settings for context "prod-eu" (the kubeconfig\'s current context)' in (
        capsys.readouterr().out
    )


def test_init_writes_a_file_that_changes_nothing_until_uncommented(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["config", "--init"]) == 0
    path = user_file()
    assert str(path) in capsys.readouterr().out
    text = path.read_text()
    assert yaml.safe_load(text) == {"version": 1}
    assert main(["config", "--init"]) == 2
    assert "exists: not overwritten" in _error(capsys)

    # the "done when": a user remaps a key and picks a theme by uncommenting lines
    lines = text.splitlines()
    for wanted in ("# theme: probetui", "# keys:", "#   probetui.probe-now:"):
        (i,) = [n for n, line in enumerate(lines) if line.startswith(wanted)]
        lines[i] = lines[i].removeprefix("# ")
    path.write_text("\n".join(lines).replace('probe-now:       "t"', 'probe-now:       "ctrl+t"'))
    assert main(["config", "--context", "x"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"theme probetui user file {path}" in out
    assert f"probetui.probe-now ctrl+t user file {path}" in out


def test_local_takes_read_only_from_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {containers: [{name: c, command: [sleep, '5']}]}\n"
    )
    monkeypatch.setenv("PROBETUI_READ_ONLY", "1")
    assert main(["local", str(manifest), "--no-ui"]) == 2
    assert _error(capsys).startswith("read-only (PROBETUI_READ_ONLY): the local runtime")
    monkeypatch.setenv("PROBETUI_READ_ONLY", "locked")
    assert main(["local", str(manifest), "--no-ui", "--write"]) == 2
    assert _error(capsys).startswith("--write: read-only is locked by PROBETUI_READ_ONLY")
    monkeypatch.delenv("PROBETUI_READ_ONLY")
    write(user_file(), {"readOnly": True})
    assert main(["local", str(manifest), "--no-ui", "--write", "--duration", "0.3"]) == 0
