"""probetui run headless beside the real kubelet, from the client namespace, and what it saw."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.cluster import CLIENT_NS, Cluster, in_ns


@dataclass
class Run:
    argv: list[str]
    proc: subprocess.Popen
    out: Path
    err: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""
    returncode: int | None = None

    def of(self, type_: str, **match: Any) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())
        ]


def start(
    cluster: Cluster, tmp: Path, *args: str, kubeconfig: Path | None = None, name: str = "probetui"
) -> Run:
    """Start `probetui ARGS --no-ui --output jsonl` in the client namespace."""
    out, err = tmp / f"{name}.jsonl", tmp / f"{name}.err"
    env = {**os.environ, "KUBECONFIG": str(kubeconfig or cluster.paths.admin_kubeconfig)}
    argv = in_ns(CLIENT_NS, sys.executable, "-m", "probetui", *args, "--no-ui", "--output", "jsonl")
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL, env=env)
    return Run(argv, proc, out, err)


def stop(run: Run, timeout: float = 15.0) -> Run:
    """SIGINT, as a person's ^C; what was printed is already on disk, line by line."""
    if run.proc.poll() is None:
        run.proc.send_signal(signal.SIGINT)
        try:
            run.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            run.proc.kill()
            run.proc.wait()
    run.returncode = run.proc.returncode
    run.stderr = run.err.read_text(errors="replace")
    run.events = [json.loads(line) for line in run.out.read_text().splitlines() if line.strip()]
    return run


def wait_listed(run: Run, timeout: float = 30.0) -> None:
    """Until probetui has made its first list (it prints its path note then), or fail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run.proc.poll() is not None:
            raise AssertionError(
                f"probetui exited {run.proc.returncode}: {run.err.read_text()[-2000:]}"
            )
        if run.out.stat().st_size > 0 or "note:" in run.err.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise AssertionError("probetui made no first list in time")


def kill(run: Run) -> None:
    with contextlib.suppress(ProcessLookupError):
        run.proc.kill()
