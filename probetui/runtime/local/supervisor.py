"""Supervise one container: a small process between probetui and the container.

Everything the container starts dies with it, and the container with probetui however probetui
dies (SIGKILL and the OOM killer included, when no handler of probetui's runs).

    python -I -S .../supervisor.py PARENT_PID SPEC_FD STATUS_FD GRACE [CONTROL_FD]

It is run by path with `-I -S` and imports the standard library only: it starts in about the time
of a bare interpreter and never reads the container's PYTHON* variables. `ContainerProcess` starts
it; nothing else should. What it does, in order:

1. Arms `PR_SET_PDEATHSIG` (SIGUSR2, its own signal) and re-checks `getppid()` against PARENT_PID,
   so a parent that died before the prctl is not missed. Becomes a child subreaper
   (`PR_SET_CHILD_SUBREAPER`, no privilege needed): a process of the container whose parent
   exits, a daemon that forked twice and called setsid() included, is reparented to the
   supervisor rather than to init, so it stays below the supervisor and is reaped by it.
2. Reads the container from SPEC_FD (a memfd: argv, working directory, the exact environment;
   the environment does not pass through this interpreter's own, which Python may change at
   start-up, e.g. the C-locale coercion that sets LC_CTYPE).
3. Forks the container: the child becomes the leader of a process group of its own, arms its own
   death signal (SIGKILL, should the supervisor itself be killed), changes to the working
   directory and execs. A failed chdir or exec is written back through a close-on-exec pipe, so
   the supervisor knows before anything else whether the container started, and reports
   `E chdir|exec ERRNO` or `S PID` on STATUS_FD; the runtime treats the container as started only
   on `S`.
4. Forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to the container's group, and reaps the orphans
   it adopted as they exit, so none lingers as a zombie while the container runs. Runs the exec
   probe attempts probetui asks for on CONTROL_FD (`_Control`) as its own children, as a
   runtime runs them in the container: what an attempt leaves running is the container's.
5. When its parent dies: SIGTERM to the group, SIGKILL GRACE seconds later unless the leader has
   exited by then.
6. When the leader exits: SIGKILL to what is left of the group (while the leader is still a
   zombie, so its group id cannot have been reused), then to every process below the supervisor
   (read from /proc, again until none is left: what left the group or the session too), as the
   kernel does to a PID namespace when its init exits; reaps them all, and exits the way the
   leader did: the same code, or killed by the same signal (no core file of its own), so the
   runtime's 128+N holds.

"Parent" for PR_SET_PDEATHSIG is the thread that forked: probetui spawns from its event loop's
thread. SIGUSR2 from anyone while the parent is alive is ignored. What the subreaper cannot hold:
a process that something outside the container starts on its behalf (a service manager, `at`);
and if the supervisor itself is SIGKILLed, the leader goes by its own death signal and probetui
kills what is left of its group, but what had left the group is reparented to init. No cgroup:
one would hold the same processes (and those of a SIGKILLed supervisor, with no one left to kill
them), but needs root or a delegated cgroup v2 subtree, and leaves a directory to remove;
the subreaper needs no privilege and holds every descendant.
"""

from __future__ import annotations

# _signal, not signal: the same calls without importing the enum module, a real share of a
# start (guarded by benchmarks/supervisor.py)
import _signal as signal
import errno
import os
import resource
import select
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
DEATH_SIGNAL = signal.SIGUSR2
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
# exit status of the supervisor when it cannot do its job (bad arguments, parent already gone)
EXIT_SUPERVISOR = 125
# how long the end keeps killing and reaping what is below it (a process in uninterruptible
# sleep dies only when it wakes); past it the supervisor exits and init inherits the rest
END_LIMIT = 5.0
# between two passes of the end's kills, the longest it waits for a SIGCHLD
END_PASS = 0.05


def _prctl(option: int, value: int) -> None:
    import ctypes  # here: the runtime imports this module for encode_spec alone

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def _prctl_pdeathsig(sig: int) -> None:
    _prctl(PR_SET_PDEATHSIG, int(sig))


def encode_spec(argv: list[str], env: dict[str, str], cwd: str | None) -> bytes:
    """Return the SPEC_FD payload: NUL-separated argc, argv, cwd ("" for none), then KEY=VALUE
    pairs."""
    parts = [str(len(argv)).encode(), *map(os.fsencode, argv), os.fsencode(cwd or "")]
    parts += [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()]
    return b"\0".join(parts)


def decode_spec(data: bytes) -> tuple[list[bytes], dict[bytes, bytes], bytes | None]:
    parts = data.split(b"\0")
    argc = int(parts[0])
    argv = parts[1 : 1 + argc]
    cwd = parts[1 + argc] or None
    env: dict[bytes, bytes] = {}
    for pair in parts[2 + argc :]:
        key, _, value = pair.partition(b"=")
        env[key] = value
    return argv, env, cwd


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _killpg(pgid: int, sig: int) -> None:
    # (try/except, not contextlib.suppress: contextlib is an import this start-up can do without)
    try:  # noqa: SIM105
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill(pid: int, sig: int) -> None:
    try:  # noqa: SIM105
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def descendants(root: int) -> list[int]:
    """Return every process below `root` now (zombies included), parents before their children, read
    from /proc in one pass."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            stat = os.read(fd, 1024)
        except OSError:
            continue
        finally:
            os.close(fd)
        # "PID (COMM) STATE PPID ...": COMM may hold spaces and parentheses, not after the last )
        fields = stat[stat.rfind(b")") + 2 :].split(b" ", 2)
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    found: list[int] = []
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            found.append(pid)
            todo.append(pid)
    return found


class _Control:
    """Runs probetui's exec probe attempts in the container's stead: asked for on the control
    socket (SOCK_SEQPACKET), one message each.

    A request is `X ID` with three descriptors: a spec memfd (as SPEC_FD: the command, the
    container's environment and working directory), the attempt's stdout and its stderr. The
    answers: `S ID PID` once it runs, `E ID chdir|exec ERRNO` when it cannot start, `Z ID CODE`
    once it has exited and been reaped (CODE as os.waitstatus_to_exitcode gives it, -N for
    signal N). An answer that does not fit is dropped: probetui's side bounds every wait. Each
    attempt is the leader of a session of its own below this subreaper (`_spawn_attempt`), so
    what it leaves running stays in the container and ends with it.
    """

    def __init__(self, fd: int) -> None:
        os.set_inheritable(fd, False)
        self.fd = fd
        self.open = True
        self.attempts: dict[int, bytes] = {}  # PID -> request ID
        self.sock = None

    def serve(self) -> None:
        """Start every attempt asked for so far; stop listening once probetui closed its end."""
        if self.sock is None:
            # at the first request, not at start-up: a container without exec probes never
            # loads the module (not socket: its enums are an import this process does without)
            import _socket

            self.sock = _socket.socket(fileno=self.fd)
            self.sock.setblocking(False)
            self._ancillary = _socket.CMSG_SPACE(3 * 4)
            self._flags = _socket.MSG_CMSG_CLOEXEC
            self._rights = (_socket.SOL_SOCKET, _socket.SCM_RIGHTS)
        while self.open:
            try:
                data, ancillary, _, _ = self.sock.recvmsg(64, self._ancillary, self._flags)
            except BlockingIOError:
                return
            except OSError:
                data, ancillary = b"", []
            fds: list[int] = []
            for level, kind, payload in ancillary:
                if (level, kind) == self._rights:
                    fds.extend(memoryview(payload[: len(payload) - len(payload) % 4]).cast("i"))
            try:
                if not data:
                    self.open = False
                elif data[:1] == b"X" and data[1:].isdigit() and len(fds) == 3:
                    self._start(data[1:], fds)
            finally:
                for fd in fds:
                    try:  # noqa: SIM105
                        os.close(fd)
                    except OSError:
                        pass

    def _start(self, rid: bytes, fds: list[int]) -> None:
        os.lseek(fds[0], 0, os.SEEK_SET)
        argv, env, cwd = decode_spec(_read_all(fds[0]))
        pid, failure = _spawn_attempt(argv, env, cwd, (fds[1], fds[2]))
        if failure:
            self._send(b"E " + rid + b" " + failure)
        else:
            self.attempts[pid] = rid
            self._send(b"S %s %d" % (rid, pid))

    def reaped(self, pid: int, status: int) -> None:
        rid = self.attempts.pop(pid, None)
        if rid is not None:
            self._send(b"Z %s %d" % (rid, os.waitstatus_to_exitcode(status)))

    def _send(self, line: bytes) -> None:
        try:  # noqa: SIM105
            self.sock.send(line)
        except OSError:
            pass


def _reap(leader: int, control: _Control | None) -> bool:
    """Reap every child that has exited but the leader; True once the leader has exited (it is
    left a zombie: its group id stays ours until the group is killed)."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        if info is None:
            return False
        if info.si_pid == leader:
            return True
        try:
            _, status = os.waitpid(info.si_pid, 0)
        except ChildProcessError:
            continue
        if control is not None:
            control.reaped(info.si_pid, status)


def _end(leader: int, wake_r: int, control: _Control | None) -> int:
    """SIGKILL the leader's group and every process below this one, again until none is left,
    and reap them all; returns the leader's wait status."""
    _killpg(leader, signal.SIGKILL)
    _, status = os.waitpid(leader, 0)
    # the leader's children were ours before it became a zombie: a process is left below us
    # only while we have a child, and the usual end (nothing left) reads no /proc
    me = os.getpid()
    deadline = time.monotonic() + END_LIMIT
    while True:
        try:
            while True:
                pid, code = os.waitpid(-1, os.WNOHANG)
                if not pid:
                    break
                if control is not None:
                    control.reaped(pid, code)
        except ChildProcessError:
            break
        if time.monotonic() >= deadline:
            break
        # a PID read here is freed only once its process is reaped, by us or by its parent,
        # which this pass kills first (parents come first): reusing it would take the PID
        # space wrapping around within the pass
        for pid in descendants(me):
            _kill(pid, signal.SIGKILL)
        ready, _, _ = select.select([wake_r], [], [], END_PASS)
        if ready:
            os.read(wake_r, 512)
    return status


def _child(argv: list[bytes], env: dict[bytes, bytes], cwd: bytes | None, err_w: int, sup: int):
    """Between fork and exec, in the (single-threaded) supervisor's child: never returns."""
    try:
        os.setpgid(0, 0)
        # exec keeps ignored signals ignored and the mask as it is: give the container what a
        # process started by a runtime has (Python ignores SIGPIPE and SIGXFSZ for itself)
        signal.set_wakeup_fd(-1)
        for sig in (*FORWARDED, DEATH_SIGNAL, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        _prctl_pdeathsig(signal.SIGKILL)
        if os.getppid() != sup:
            os._exit(128 + signal.SIGKILL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
    except BaseException:
        os._exit(EXIT_SUPERVISOR)
    kind = b"chdir"
    try:
        if cwd is not None:
            os.chdir(cwd)
        kind = b"exec"
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(err_w, b"%s %d" % (kind, exc.errno or errno.EINVAL))
    except BaseException:
        os.write(err_w, b"exec %d" % errno.EINVAL)
    os._exit(127)


def _spawn(argv: list[bytes], env: dict[bytes, bytes], cwd: bytes | None) -> tuple[int, bytes]:
    """Fork and exec the container; its PID and, when its chdir or exec failed,
    `chdir|exec ERRNO` (it is then reaped). Returns once the exec has happened or failed."""
    err_r, err_w = os.pipe()
    me = os.getpid()
    # no signal may run a handler in the child before it has reset them
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    pid = os.fork()
    if pid == 0:
        _child(argv, env, cwd, err_w, me)
    try:  # noqa: SIM105
        os.setpgid(pid, pid)
    except OSError:
        pass  # the child did it first, or has already exec'd (EACCES)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(err_w)
    failure = _read_all(err_r)
    os.close(err_r)
    if failure:
        os.waitpid(pid, 0)
    return pid, failure


# what an exec attempt must not inherit: the dispositions this process set (its handlers end at
# exec anyway; the signals Python ignores stay ignored across it)
_DEFAULTED = (*FORWARDED, DEATH_SIGNAL, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ)


def _spawn_attempt(
    argv: list[bytes], env: dict[bytes, bytes], cwd: bytes | None, stdio: tuple[int, int]
) -> tuple[int, bytes]:
    """Start an exec attempt as the leader of a session of its own, stdout and stderr on
    `stdio`, the command looked up in the attempt's PATH as execvpe does; its PID, or 0 and
    `chdir|exec ERRNO`.

    posix_spawn, not fork: an attempt is frequent, and a fork of this interpreter costs about a
    millisecond of CPU more (the copied page tables, and Python between fork and exec). It
    cannot arm a death signal: should this process be SIGKILLed, probetui kills the attempt's
    group when the control socket closes (`execs.ExecChannel.close`). It cannot change
    directory either: this process does, its own working directory being of no other use.
    """
    if cwd is not None:
        try:
            os.chdir(cwd)
        except OSError as exc:
            return 0, b"chdir %d" % (exc.errno or errno.EINVAL)
    program = argv[0] if argv else b""
    if b"/" in program:
        candidates = [program]
    else:
        # os.get_exec_path's reading of PATH, without the warnings module it imports
        dirs = env.get(b"PATH", os.fsencode(os.defpath)).split(b":")
        candidates = [os.path.join(d, program) for d in dirs]
    actions = [(os.POSIX_SPAWN_DUP2, stdio[0], 1), (os.POSIX_SPAWN_DUP2, stdio[1], 2)]
    saved: OSError | None = None
    last: OSError = FileNotFoundError(errno.ENOENT, "")
    for path in candidates:
        try:
            if len(candidates) > 1:
                os.stat(path)  # a directory of PATH without it: no spawn to find that out
            return os.posix_spawn(
                path, argv, env, file_actions=actions, setsid=True, setsigdef=_DEFAULTED
            ), b""
        except (FileNotFoundError, NotADirectoryError) as exc:
            last = exc
        except OSError as exc:
            last = exc
            saved = saved or exc
    return 0, b"exec %d" % ((saved or last).errno or errno.EINVAL)


def _report(fd: int, line: bytes) -> None:
    """The status line, once; a parent already gone (EPIPE) is seen by the loop's death signal."""
    try:  # noqa: SIM105
        os.write(fd, line)
    except OSError:
        pass
    os.close(fd)


def _mirror(status: int) -> None:
    """Exit as the container's leader did."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
        signal.set_wakeup_fd(-1)
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else EXIT_SUPERVISOR)


def main(args: list[str]) -> int:
    try:
        parent, spec_fd, status_fd = int(args[0]), int(args[1]), int(args[2])
        grace = float(args[3])
        control_fd = int(args[4]) if len(args) > 4 else -1
    except (IndexError, ValueError):
        print("supervisor: usage: PARENT_PID SPEC_FD STATUS_FD GRACE [CONTROL_FD]", file=sys.stderr)
        return EXIT_SUPERVISOR
    os.set_inheritable(status_fd, False)
    control = _Control(control_fd) if control_fd >= 0 else None
    # run from its compiled code's memfd (launch.supervisor_code): the container must not
    # inherit that descriptor
    fd_path = "/proc/self/fd/"
    if sys.argv[0].startswith(fd_path) and sys.argv[0][len(fd_path) :].isdigit():
        os.close(int(sys.argv[0][len(fd_path) :]))

    # every signal of interest becomes one byte on a pipe that the loop below reads
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    for sig in (*FORWARDED, DEATH_SIGNAL, signal.SIGCHLD):
        signal.signal(sig, lambda signum, frame: None)
    _prctl_pdeathsig(DEATH_SIGNAL)
    if os.getppid() != parent:
        return EXIT_SUPERVISOR
    _prctl(PR_SET_CHILD_SUBREAPER, 1)

    with os.fdopen(spec_fd, "rb") as spec:
        argv, env, cwd = decode_spec(spec.read())

    pid, failure = _spawn(argv, env, cwd)
    if failure:
        _report(status_fd, b"E " + failure + b"\n")
        return 127
    _report(status_fd, b"S %d\n" % pid)

    orphaned = False
    deadline: float | None = None  # when the group gets SIGKILL, once orphaned
    while True:
        timeout = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        watched = [wake_r, control.fd] if control is not None and control.open else [wake_r]
        ready, _, _ = select.select(watched, [], [], timeout)
        received = os.read(wake_r, 512) if wake_r in ready else b""
        if _reap(pid, control):
            _mirror(_end(pid, wake_r, control))
        if control is not None and control.fd in ready:
            control.serve()
        for signum in received:
            if signum in FORWARDED:
                _killpg(pid, signum)
            elif signum == DEATH_SIGNAL and not orphaned and os.getppid() != parent:
                orphaned = True
                _killpg(pid, signal.SIGTERM)
                deadline = time.monotonic() + grace
        if deadline is not None and time.monotonic() >= deadline:
            _killpg(pid, signal.SIGKILL)
            deadline = None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
