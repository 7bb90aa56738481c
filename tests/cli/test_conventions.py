"""The command line follows kubectl's conventions: `-o/--output` wherever there is a format,
durations as Go writes them (a bare number still seconds), one name for one thing, help on
every flag, and a usage error that names the command's own help."""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
from pathlib import Path

import pytest

from probetui.cli import COMMANDS, _parser, main
from probetui.cli.errors import UsageError
from probetui.durations import DurationError, parse_duration


def _parsers() -> dict[str, argparse.ArgumentParser]:
    top = _parser()
    found = {"probetui": top}
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                # a subcommand's arguments are added when it is first parsed
                with contextlib.suppress(UsageError):
                    sub.parse_known_args([])
                found[f"probetui {name}"] = sub
    return found


def test_every_command_is_walked() -> None:
    assert set(_parsers()) == {"probetui", *(f"probetui {n}" for n in COMMANDS)}


@pytest.mark.parametrize("prog", sorted(_parsers()))
def test_every_flag_has_help(prog: str) -> None:
    parser = _parsers()[prog]
    silent = [
        "/".join(a.option_strings)
        for a in parser._actions
        if a.option_strings and not a.help and a.dest != "command_argv"
    ]
    assert not silent, f"{prog}: no help for {silent}"


@pytest.mark.parametrize("prog", sorted(_parsers()))
def test_every_output_flag_has_its_short_form(prog: str) -> None:
    for action in _parsers()[prog]._actions:
        if "--output" in action.option_strings:
            assert "-o" in action.option_strings, prog


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("300ms", 0.3),
        ("2d", 172800.0),
        ("45", 45.0),  # a bare number is seconds, as it always was
        ("2.5", 2.5),
        ("1m0.5s", 60.5),
    ],
)
def test_durations_read_as_go_writes_them(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5x", "m", "1h-5m", "-5s", "nan", "inf", "0", "1e400"])
def test_a_bad_duration_is_refused(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--no-ui", "--duration", "5x"],
        ["local", "pod.yaml", "--duration", "soon"],
        ["--duration", "1y", "--no-ui"],
        ["check", "--tcp", "127.0.0.1:1", "--timeout", "fast"],
    ],
)
def test_a_bad_duration_flag_is_one_line(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not a duration" in err and "1h30m" in err, err


def test_check_takes_go_durations_and_both_version_spellings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        target = f"127.0.0.1:{listener.getsockname()[1]}"
        for version_flag in ("--kubelet-version", "--kube-version"):
            code = main(
                ["check", "--tcp", target, "--timeout", "500ms", version_flag, "1.33", "-o", "json"]
            )
            assert code == 0
            assert json.loads(capsys.readouterr().out)["result"] == "success"
        # the old spelling of the JSON output keeps working
        assert main(["check", "--tcp", target, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["result"] == "success"


@pytest.mark.parametrize("command", ["demo", "check", "simulate", "lint", "replay", "config"])
def test_a_subcommand_usage_error_names_its_own_help(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([command, "--no-such-flag"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"'probetui {command} --help'" in err, err


def test_a_missing_probe_reads_as_english(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        "spec: {containers: [{name: app, image: x}]}\n"
    )
    assert main(["check", "-f", str(manifest)]) == 2
    assert "pod web has no probe" in capsys.readouterr().err
    assert main(["check", "-f", str(manifest), "--probe", "readiness"]) == 2
    assert "has no readiness probe" in capsys.readouterr().err


def test_a_missing_scenario_file_is_named_once(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["simulate", str(missing)]) == 2
    assert capsys.readouterr().err.count(str(missing)) == 1


def test_a_scenario_file_takes_go_durations_beside_bare_seconds(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = Path(__file__).resolve().parents[2] / "examples" / "slow-start-pod.yaml"
    bare = tmp_path / "bare.yaml"
    bare.write_text(
        f"pod: {pod}\nduration: 300\napp: {{start_after: 1, ready_after: 45, latency_ms: 20,"
        " fail_between: [[120, 150]]}\n"
    )
    go = tmp_path / "go.yaml"
    go.write_text(
        f"pod: {pod}\nduration: 5m\napp: {{start_after: 1s, ready_after: 45s, latency_ms: 20ms,"
        " fail_between: [[2m, 2m30s]]}\n"
    )
    assert main(["simulate", str(bare), "-o", "json"]) == 0
    from_bare = json.loads(capsys.readouterr().out)
    assert main(["simulate", str(go), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == from_bare


def test_simulate_duration_flag_over_the_limit_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pod = Path(__file__).resolve().parents[2] / "examples" / "slow-start-pod.yaml"
    assert main(["simulate", str(pod), "--duration", "31d"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--duration: at most" in err and "30 days" in err, err
