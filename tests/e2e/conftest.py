"""The real cluster, once per test session, for every test marked `e2e`.

Where the machine cannot run it (no Go, not root, no cgroup v1) the e2e tests skip and say why;
under CI (`CI=true`) that is a failure instead, since CI is where the proof must run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e import build
from tests.e2e.cluster import Busy, Cluster, ClusterError, unavailable_reason


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"e2e: the real test cluster is required in CI: {reason}", pytrace=False)
    pytest.skip(f"e2e: {reason}")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    reason = unavailable_reason()
    if reason:
        _unavailable(reason)
    # short: containerd's socket paths must stay under the 108 bytes of sun_path
    c = Cluster(Path(tempfile.mkdtemp(prefix="pte2e-", dir="/tmp")))
    try:
        c.up()
    except Busy as e:
        # nothing of the other cluster is touched: no down
        _unavailable(str(e))
    except build.Unavailable as e:
        c.down()
        _unavailable(str(e))
    except ClusterError as e:
        c.down()
        pytest.fail(f"e2e: the test cluster did not come up: {e}", pytrace=False)
    try:
        yield c
    finally:
        c.down()
