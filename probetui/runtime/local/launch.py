"""Launch a container's supervisor (`supervisor.py`) from probetui's side.

How it is run, what it is handed, what it reports back, and the runtime's words for a container
that did not start.

Every container runs under a supervisor of its own (a bare interpreter started with `-I -S`), so
that no container outlives probetui however probetui ends, SIGKILL and the OOM killer included.
The supervisor arms PR_SET_PDEATHSIG on itself (no code runs in probetui's child between fork and
exec: `preexec_fn` is unsafe once other threads exist, and grpc starts some), forks the container
as the leader of its own group and, when probetui dies, sends the group SIGTERM and SIGKILL
`ORPHAN_GRACE` (2 s) later. The container's leader is armed too (SIGKILL), should the supervisor
itself be killed. It costs one bare interpreter start per container start and its memory per
running container (`python -m benchmarks.supervisor` measures both). The supervisor runs from
its code compiled once per probetui process (`supervisor_code`, a memfd run as
/proc/self/fd/N), because compiling its source at each start would cost a share of its CPU and
memory (guarded by benchmarks/supervisor.py).

The container is handed over in a memfd (`spec_memfd`: argv, working directory, the exact
environment), with one end of a socket pair on which the container's exec probe attempts are
asked for (`execs.py`). The supervisor answers one line on a pipe (`read_status`): `S PID` once
the container's exec worked, `E chdir|exec ERRNO` when it did not. Only `S` counts as started; for
an `E`, `start_failure` builds the message from the errno exactly as for a direct spawn, in
runc's wording, which is what ends up in the container status message.
"""

from __future__ import annotations

import asyncio
import importlib.util
import marshal
import os
import sys
from pathlib import Path

from probetui.probe.gotext import exec_start_error
from probetui.runtime.local.procspec import ProcessSpec
from probetui.runtime.local.supervisor import encode_spec

# the supervisor's source (it imports the standard library only)
SUPERVISOR_PATH = str(Path(__file__).with_name("supervisor.py"))
# once probetui is gone, how long a container has between SIGTERM and SIGKILL
ORPHAN_GRACE = 2.0

_code_fd: int | None = None


def supervisor_code() -> int:
    """Return a memfd holding the supervisor compiled, as a .pyc file: the interpreter runs a file
    by its magic number, so `python /proc/self/fd/N` runs it without compiling. Made once per
    probetui process, from the source as it is now; every supervisor reads it anew."""
    global _code_fd
    if _code_fd is None:
        source = Path(SUPERVISOR_PATH).read_bytes()
        code = compile(source, SUPERVISOR_PATH, "exec", dont_inherit=True)
        # magic, flags (0: the header's next 8 bytes are a source time and size, unchecked here)
        data = importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)
        fd = os.memfd_create("probetui-supervisor", os.MFD_CLOEXEC)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            os.close(fd)
            raise
        _code_fd = fd
    return _code_fd


def supervisor_argv(
    spec_fd: int,
    status_fd: int,
    orphan_grace: float,
    control_fd: int | None = None,
    code_fd: int | None = None,
) -> list[str]:
    """Tell how probetui runs a container's supervisor: isolated, without site-packages, from its
    compiled code's memfd (`supervisor_code`) when given, else from its source."""
    argv = [
        sys.executable,
        "-I",
        "-S",
        SUPERVISOR_PATH if code_fd is None else f"/proc/self/fd/{code_fd}",
        str(os.getpid()),
        str(spec_fd),
        str(status_fd),
        repr(float(orphan_grace)),
    ]
    return argv if control_fd is None else [*argv, str(control_fd)]


def spec_memfd(spec: ProcessSpec) -> int:
    """Return the container's argv, cwd and environment in an anonymous file for the supervisor."""
    data = encode_spec(list(spec.argv), dict(spec.env), spec.cwd)
    fd = os.memfd_create("probetui-container-spec", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


async def read_status(fd: int, loop: asyncio.AbstractEventLoop) -> bytes:
    """Return the supervisor's one status line (without its newline), or b"" when it closed the pipe
    without one. Bounded: the line is a few bytes."""
    done: asyncio.Future[bytes] = loop.create_future()
    got = bytearray()

    def readable() -> None:
        try:
            chunk = os.read(fd, 256)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        got.extend(chunk)
        if (not chunk or b"\n" in got or len(got) > 4096) and not done.done():
            done.set_result(bytes(got).split(b"\n", 1)[0])

    os.set_blocking(fd, False)
    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)


def start_failure(spec: ProcessSpec, status: bytes, code: int | None) -> str:
    """Return the runtime's words for a failed start, from the supervisor's `E chdir|exec ERRNO`;
    `code` is how the supervisor itself exited, for a status line it never wrote."""
    parts = status.split()
    if len(parts) == 3 and parts[0] == b"E" and parts[2].isdigit():
        err = int(parts[2])
        where = spec.cwd if parts[1] == b"chdir" else spec.argv[0]
        exc = OSError(err, os.strerror(err), where)
        return _start_error(spec.argv[0], spec.cwd, exc)
    return f"the container's supervisor exited ({code}) before starting it"


def _start_error(argv0: str, cwd: str | None, exc: OSError) -> str:
    # runc's wording, which is what ends up in the container status message
    if cwd is not None and exc.filename == cwd:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        reason = reason[:1].lower() + reason[1:]
        return f'chdir to cwd ("{cwd}") set in config.json failed: {reason}'
    return exec_start_error(argv0, exc)


__all__ = [
    "ORPHAN_GRACE",
    "SUPERVISOR_PATH",
    "read_status",
    "spec_memfd",
    "start_failure",
    "supervisor_argv",
    "supervisor_code",
]
