"""Exec handler (`pkg/probe/exec`, docs/kubelet-behaviour.md §15.3-15.4, §9.6), vectors G, C9,
C10, C26 of docs/test-vectors.md.

The G rows run twice where they can: with a fake runner (exactly the upstream table) and with
real subprocesses through `run_local`. Timeouts are scaled down to 0.3 s.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from probetui.probe import exec as exec_probe
from probetui.probe import gotext
from probetui.probe.base import MAX_OUTPUT_BYTES, Result
from probetui.probe.exec import ExecOutput, expand_command, run_local, static_env
from probetui.spec.model import EnvVar

TEN_KIB = "logs-123" * 128 * 10  # 10240 bytes, upstream's tenKilobyte
ELEVEN_KIB = "logs-123" * 128 * 11  # 11264 bytes


def fake(out: ExecOutput, seen: list[list[str]] | None = None) -> exec_probe.ExecRunner:
    async def runner(argv: Sequence[str], timeout: float) -> ExecOutput:
        if seen is not None:
            seen.append(list(argv))
        return out

    return runner


def gone(pid: int) -> bool:
    """True once the process no longer runs (exited, or a zombie nobody has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] in ("Z", "X")


async def wait_gone(pid: int, within: float = 1.0) -> bool:
    async with asyncio.timeout(within):
        while not gone(pid):  # noqa: ASYNC110 - polls /proc, which has no event to wait on
            await asyncio.sleep(0.01)
    return True


# --- vector G with the upstream fakes -------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "result", "output", "has_error"),
    [
        (ExecOutput(b"OK", None), Result.SUCCESS, "OK", False),
        (ExecOutput(b"OK", 0), Result.SUCCESS, "OK", False),
        (ExecOutput(ELEVEN_KIB.encode(), None), Result.SUCCESS, TEN_KIB, False),
        (ExecOutput(b"", None, error="test error"), Result.UNKNOWN, "", True),
        (ExecOutput(b"", 1), Result.FAILURE, "", False),
    ],
    ids=["G1-ok", "G2-exit-0", "G3-truncated", "G4-error", "G5-exit-1"],
)
async def test_vector_g_exec_table(
    out: ExecOutput, result: Result, output: str, has_error: bool
) -> None:
    """TestExec rows 1-5: how the runner's outcome maps to result, output and error."""
    attempt = await exec_probe.probe(["cmd"], 1.0, runner=fake(out))
    assert attempt.result is result
    assert attempt.output == output
    assert (attempt.error is not None) is has_error
    if has_error:
        assert attempt.error == "test error"


async def test_vector_g6_timeout_fake() -> None:
    """G6: a CRI DeadlineExceeded is Failure with cri-client execSyncV1's error text as the
    output, no error (exec.go, ExecProbeTimeout); the partial output is dropped."""
    runner = fake(ExecOutput(b"partial", None, timed_out=True))
    attempt = await exec_probe.probe(["sh", "-c", "sleep 10"], 1.0, runner=runner)
    assert attempt.result is Result.FAILURE
    assert attempt.error is None
    assert attempt.output == 'command timed out: "sh -c sleep 10" timed out after 1s'
    assert attempt.timed_out


@pytest.mark.parametrize(
    ("argv", "timeout", "text"),
    [
        (["sh", "-c", "sleep 10"], 1.0, 'command timed out: "sh -c sleep 10" timed out after 1s'),
        (
            ["cat", "/tmp/health"],
            90.0,
            'command timed out: "cat /tmp/health" timed out after 1m30s',
        ),
        (
            ["sh", "-c", 'echo "a\\b"'],
            3600.0,
            r'command timed out: "sh -c echo \"a\\b\"" timed out after 1h0m0s',
        ),
        (["printf", "x\ty\n"], 2.0, r'command timed out: "printf x\ty\n" timed out after 2s'),
        (
            ["echo", "caf\u00e9\x7f"],
            1.0,
            'command timed out: "echo caf\u00e9\\x7f" timed out after 1s',
        ),
    ],
    ids=["vector-g6", "minutes", "quotes-and-backslash", "control-characters", "unicode-and-del"],
)
def test_exec_sync_v1_timeout_error_quotes_argv_like_go_percent_q(
    argv: list[str], timeout: float, text: str
) -> None:
    """cri-client execSyncV1: `%w: %q timed out after %s` with ErrCommandTimedOut ("command
    timed out"), the argv joined by spaces and quoted as Go's strconv.Quote, the timeout as a
    time.Duration."""
    assert gotext.exec_timed_out(argv, timeout) == text


async def test_vector_c26_error_keeps_runner_output_but_not_probe_output() -> None:
    """C26: the runner keeps the output even on error; exec.go then returns Unknown with an
    empty output and the error, which the worker discards."""
    out = ExecOutput(b"foo", None, error="bad")
    attempt = await exec_probe.probe(["x"], 1.0, runner=fake(out))
    assert out.output == b"foo"
    assert attempt.result is Result.UNKNOWN
    assert attempt.error == "bad"
    assert attempt.output == ""


async def test_vector_c9_runner_gets_the_exact_argv() -> None:
    """C9: the runner receives the argv unchanged; the target is the argv joined by spaces."""
    seen: list[list[str]] = []
    argv = ["/bin/bash", "-c", "some script"]
    attempt = await exec_probe.probe(argv, 1.0, runner=fake(ExecOutput(b"", 0), seen))
    assert seen == [argv]
    assert attempt.target == "/bin/bash -c some script"
    assert attempt.handler == "exec"


async def test_runner_exception_is_unknown_with_error() -> None:
    """A runner that raises (exec transport broken) is Unknown with an error, like any non-exit
    error from ExecSync (§15.4)."""

    async def broken(argv: Sequence[str], timeout: float) -> ExecOutput:
        raise ConnectionError("container not found")

    attempt = await exec_probe.probe(["true"], 1.0, runner=broken)
    assert attempt.result is Result.UNKNOWN
    assert attempt.error == "container not found"


# --- vector G with real processes -----------------------------------------------------------


async def test_vector_g1_real_success_output() -> None:
    """G1 with a real process: exit 0 is Success with the output."""
    attempt = await exec_probe.probe(["printf", "OK"], 1.0)
    assert (attempt.result, attempt.output, attempt.error) == (Result.SUCCESS, "OK", None)
    assert attempt.target == "printf OK"


async def test_vector_g3_real_output_capped_at_10_kib() -> None:
    """G3 with a real process: 11 KiB of output keeps the first 10240 bytes (maxReadLength)."""
    code = f"import sys; sys.stdout.write({ELEVEN_KIB!r})"
    attempt = await exec_probe.probe([sys.executable, "-c", code], 2.0)
    assert attempt.result is Result.SUCCESS
    assert attempt.output == TEN_KIB


async def test_vector_g5_real_nonzero_exit_is_failure_with_output() -> None:
    """G5 / §15.4: non-zero exit is Failure with the output as the message."""
    attempt = await exec_probe.probe(["sh", "-c", "printf 'not ready'; exit 1"], 1.0)
    assert attempt.result is Result.FAILURE
    assert attempt.output == "not ready"
    assert attempt.error is None


async def test_vector_g6_real_timeout_kills_and_fails() -> None:
    """G6 with a real process: `sleep 10` under a 0.3 s timeout is Failure
    `command timed out: "sh -c sleep 10" timed out after 300ms`, returned promptly."""
    attempt = await exec_probe.probe(["sh", "-c", "sleep 10"], 0.3)
    assert attempt.result is Result.FAILURE
    assert attempt.output == 'command timed out: "sh -c sleep 10" timed out after 300ms'
    assert attempt.timed_out
    assert attempt.error is None
    assert 0.25 <= attempt.latency < 1.0


async def test_command_not_found_is_unknown_with_runtime_text() -> None:
    """A command that cannot start is an exec error, not an exit code: Unknown + error with the
    runtime's `executable file not found in $PATH` text (§15.4, last bullet)."""
    out = await run_local(["probetui-no-such-command"], 1.0)
    assert out.exit_code is None
    assert out.error == 'exec: "probetui-no-such-command": executable file not found in $PATH'
    attempt = await exec_probe.probe(["probetui-no-such-command"], 1.0)
    assert attempt.result is Result.UNKNOWN
    assert attempt.error == out.error


async def test_missing_path_and_not_executable(tmp_path: Path) -> None:
    """Go's os/exec wording for a path that does not exist or is not executable."""
    missing = tmp_path / "missing"
    plain = tmp_path / "plain"
    plain.write_text("echo hi\n")
    assert (await run_local([str(missing)], 1.0)).error == (
        f'exec: "{missing}": stat {missing}: no such file or directory'
    )
    assert (await run_local([str(plain)], 1.0)).error == f'exec: "{plain}": permission denied'


# --- run_local: output, process group, cancellation -----------------------------------------


async def test_spec_15_3_stdout_then_stderr_not_interleaved() -> None:
    """§15.3: RunInContainer returns all of stdout followed by all of stderr."""
    out = await run_local(["sh", "-c", "printf a; printf b >&2; printf c; printf d >&2"], 1.0)
    assert out.output == b"acbd"
    assert out.exit_code == 0


async def test_spec_15_3_chatty_child_does_not_block_and_is_capped() -> None:
    """§15.3: 1 MiB on each pipe neither blocks the child nor grows the output past 10 KiB;
    stdout comes first, so it fills the whole cap."""
    code = "import sys; sys.stderr.write('e' * 2**20); sys.stdout.write('o' * 2**20)"
    out = await run_local([sys.executable, "-c", code], 2.0)
    assert out.exit_code == 0
    assert out.output == b"o" * MAX_OUTPUT_BYTES


async def test_short_stdout_is_followed_by_stderr_up_to_the_cap() -> None:
    """The 10 KiB cap applies to the combined stdout+stderr."""
    code = "import sys; sys.stdout.write('o' * 10000); sys.stderr.write('e' * 1000)"
    out = await run_local([sys.executable, "-c", code], 2.0)
    assert out.output == b"o" * 10000 + b"e" * (MAX_OUTPUT_BYTES - 10000)


async def test_stdin_is_dev_null_env_and_cwd_are_passed(tmp_path: Path) -> None:
    """No stdin (cat ends at once), the given env and working directory, no shell."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GREETING": "hi $(A)"}
    out = await run_local(
        ["sh", "-c", 'cat; printf "%s|%s" "$GREETING" "$(pwd)"'], 1.0, env=env, cwd=str(tmp_path)
    )
    assert out.output == f"hi $(A)|{tmp_path}".encode()


async def test_death_by_signal_is_exit_128_plus_signal() -> None:
    """A runtime reports a process killed by SIGKILL as exit 137: a Failure, not an error."""
    out = await run_local(["sh", "-c", "kill -9 $$"], 1.0)
    assert out.exit_code == 137
    attempt = await exec_probe.probe(["sh", "-c", "kill -9 $$"], 1.0)
    assert attempt.result is Result.FAILURE


async def test_timeout_kills_the_whole_process_group() -> None:
    """On timeout the child and the grandchild it started are both killed (by PID) and the
    output written before the kill is kept by the runner. Real time: 0.3 s timeout."""
    out = await run_local(["sh", "-c", "sleep 30 & echo $$ $!; wait"], 0.3)
    assert out.timed_out
    assert out.exit_code is None
    shell_pid, sleep_pid = (int(p) for p in out.output.split())
    assert gone(shell_pid)
    assert await wait_gone(sleep_pid)


async def test_background_child_holding_the_pipe_times_out_and_is_killed() -> None:
    """ExecSync waits for the output pipes to close, not only for the command to exit: a
    background process that keeps stdout open makes the exec run to its timeout."""
    out = await run_local(["sh", "-c", "sleep 30 & echo $!"], 0.3)
    assert out.timed_out
    assert await wait_gone(int(out.output))


async def test_cancellation_kills_and_reaps_the_child(tmp_path: Path) -> None:
    """Cancelling the calling task (worker stopped) kills the process group before returning."""
    pid_file = tmp_path / "pids"
    script = f"sleep 30 & echo $$ $! > {pid_file}; wait"
    task = asyncio.ensure_future(run_local(["sh", "-c", script], 10.0))
    async with asyncio.timeout(1.0):
        # the child's pid file has no event to wait on
        while not pid_file.exists() or not pid_file.read_text().strip():  # noqa: ASYNC110
            await asyncio.sleep(0.01)
    shell_pid, sleep_pid = (int(p) for p in pid_file.read_text().split())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert gone(shell_pid)
    assert await wait_gone(sleep_pid)


async def test_empty_argv_is_an_error() -> None:
    """An empty command cannot start (os/exec `exec: no command`)."""
    out = await run_local([], 1.0)
    assert (out.exit_code, out.error) == (None, "exec: no command")


# --- $(VAR) expansion ------------------------------------------------------------------------


def test_vector_c10_expands_known_and_keeps_unknown() -> None:
    """C10 / §9.6: `some $(A) $(B)` with only A=script gives `some script $(B)`."""
    argv = ["/bin/bash", "-c", "some $(A) $(B)"]
    assert expand_command(argv, {"A": "script"}) == ["/bin/bash", "-c", "some script $(B)"]


MAPPING = {
    "VAR_A": "A",
    "VAR_B": "B",
    "VAR_C": "C",
    "VAR_REF": "$(VAR_A)",
    "VAR_EMPTY": "",
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(VAR_A)", "A"),
        ("$(VAR_A)-$(VAR_A)", "A-A"),
        ("___$(VAR_B)___", "___B___"),
        ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
        ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
        ("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
        ("f000-$$VAR_A", "f000-$VAR_A"),
        ("foo\\$(VAR_C)bar", "foo\\Cbar"),
        ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
        ("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
        ("$(VAR_REF)", "$(VAR_A)"),
        ("foo$(VAR_EMPTY)bar", "foobar"),
        ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
        ("$?_boo_$!", "$?_boo_$!"),
        ("$VAR_A", "$VAR_A"),
        ("$(VAR_DNE)", "$(VAR_DNE)"),
        ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
        ("$$$$$$$(VAR_A)", "$$$A"),
        ("$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
        ("${VAR_A}", "${VAR_A}"),
        ("$(VAR_B)_______$(A", "B_______$(A"),
        ("$(VAR_C)_______$(", "C_______$("),
        ("$(VAR_A)foobarzab$", "Afoobarzab$"),
        ("--$($($($($--", "--$($($($($--"),
        ("$(foo$$var)", "$(foo$$var)"),
        ("$é$(VAR_A)", "$éA"),
        ("\n", "\n"),
    ],
)
def test_expansion_matches_upstream_mapping_cases(text: str, expected: str) -> None:
    """third_party/forked/golang/expansion TestMapping cases."""
    assert expand_command([text], MAPPING) == [expected]


def test_static_env_maps_value_from_vars_to_empty() -> None:
    """v1EnvVarsToMap puts every declared var in the map, valueFrom ones with "" (their Value),
    so `$(SECRET)` expands to "" while an undeclared `$(NOPE)` stays as written."""
    env = static_env(
        [
            EnvVar("A", "one"),
            EnvVar("SECRET", value_from={"secretKeyRef": {"name": "s", "key": "k"}}),
            EnvVar("A", "two"),
        ]
    )
    assert env == {"A": "two", "SECRET": ""}
    assert expand_command(["$(A)|$(SECRET)|$(NOPE)"], env) == ["two||$(NOPE)"]
