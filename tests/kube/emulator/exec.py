"""pods/exec: the kubelet's remotecommand over a websocket, running a real local process.

Channels: 0 stdin, 1 stdout, 2 stderr, 3 error/status, 4 resize. Right after the upgrade the
server writes an empty message on the lowest writable channel (createWebSocketStreams). When
the command ends, channel 3 carries, for v4/v5, a JSON metav1.Status: Success, or Failure with
reason NonZeroExitCode and the exit code as the single cause's message (ServeExec); the older
protocols write only a failure, as text. Then the server closes the websocket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import WSMsgType, web

from .channels import CLOSE_CHANNEL, ChannelSocket

STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)

PROTOCOLS = (
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
)
_JSON_STATUS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io")


@dataclass(frozen=True, slots=True)
class ExecOptions:
    command: tuple[str, ...]
    container: str
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(command: tuple[str, ...], code: int) -> dict[str, Any]:
    # The CRI runtime's CodeExitError text, wrapped by ServeExec.
    argv = "[" + " ".join(command) + "]"
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            f"command terminated with non-zero exit code: error executing command {argv}, "
            f"exit code {code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def start_failure_status(command: tuple[str, ...], error: OSError) -> dict[str, Any]:
    # What runc/containerd report when the executable cannot be started.
    exe = command[0] if command else ""
    why = (
        "executable file not found in $PATH"
        if isinstance(error, FileNotFoundError)
        else (error.strerror or str(error)).lower()
    )
    cause = (
        "error executing command in container: failed to exec in container: failed to start "
        f'exec "{uuid.uuid4().hex}": OCI runtime exec failed: exec failed: unable to start '
        f'container process: exec: "{exe}": {why}: unknown'
    )
    return {
        "metadata": {},
        "status": "Failure",
        "message": f"Internal error occurred: {cause}",
        "reason": "InternalError",
        "details": {"causes": [{"message": cause}]},
        "code": 500,
    }


def _status_text(st: dict[str, Any]) -> str:
    return str(st.get("message", ""))


async def _pump(stream: asyncio.StreamReader | None, sock: ChannelSocket, channel: int) -> None:
    if stream is None:
        return
    while chunk := await stream.read(32 * 1024):
        await sock.send(channel, chunk)


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


async def serve_exec(
    request: web.Request,
    protocol: str,
    opts: ExecOptions,
    *,
    env: Mapping[str, str],
    timeout: float,
) -> web.WebSocketResponse:
    sock = await ChannelSocket.accept(request, protocol)
    json_status = protocol in _JSON_STATUS
    first = STDOUT if opts.stdout else STDERR if opts.stderr else ERROR
    await sock.send(first, b"")

    async def finish(st: dict[str, Any]) -> None:
        if json_status:
            await sock.send(ERROR, json.dumps(st, separators=(",", ":")).encode())
        elif st.get("status") != "Success":
            await sock.send(ERROR, _status_text(st).encode())
        await sock.close()

    try:
        proc = await asyncio.create_subprocess_exec(
            *opts.command,
            stdin=asyncio.subprocess.PIPE if opts.stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if opts.stdout else asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE if opts.stderr else asyncio.subprocess.DEVNULL,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as err:
        await finish(start_failure_status(opts.command, err))
        return sock.ws

    async def read_client() -> None:
        # stdin frames go to the process; the client closing the socket ends the exec.
        async for msg in sock.ws:
            if msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.ERROR):
                break
            decoded = sock.decode(msg)
            if decoded is None:
                continue
            channel, data = decoded
            if channel == CLOSE_CHANNEL and protocol == "v5.channel.k8s.io":
                if data[:1] == bytes([STDIN]) and proc.stdin is not None:
                    proc.stdin.close()
            elif channel == STDIN and proc.stdin is not None and not proc.stdin.is_closing():
                with contextlib.suppress(ConnectionError):
                    proc.stdin.write(data)
                    await proc.stdin.drain()

    reader = asyncio.create_task(read_client())
    pumps = asyncio.gather(_pump(proc.stdout, sock, STDOUT), _pump(proc.stderr, sock, STDERR))
    waiter = asyncio.ensure_future(proc.wait())
    try:
        done, _ = await asyncio.wait(
            {waiter, reader}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if waiter not in done:
            # the client went away or the emulator's safety timeout hit: end the command
            _kill(proc)
            await waiter
        with contextlib.suppress(ConnectionError):
            await asyncio.wait_for(pumps, timeout=2.0)
        code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        # a process ended by a signal reports 128+signal from the container runtime
        code = 128 - code if code < 0 else code
        if not sock.ws.closed:
            await finish(success_status() if code == 0 else exit_status(opts.command, code))
    finally:
        _kill(proc)
        if proc.returncode is None:
            await proc.wait()
        pumps.cancel()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await reader
        with contextlib.suppress(asyncio.CancelledError, ConnectionError):
            await pumps
    return sock.ws
