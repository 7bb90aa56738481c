"""SVG snapshots of the main screens (pytest-textual-snapshot), from the synthetic store.

The baselines under __snapshots__ were looked at before they were accepted; `pytest
--snapshot-update tests/ui/test_snapshots.py` rewrites them after a deliberate change.
"""

from __future__ import annotations

from tests.ui.fakes import make_app

SIZE = (160, 45)


def test_main_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The overview: workloads on the left, the first container's panes on the right."""
    app, _, _ = make_app()
    assert snap_compare(app, terminal_size=SIZE)


def test_container_mid_restart(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """crashy/worker, killed by liveness four times, now in CrashLoopBackOff, zoomed out."""
    app, _, _ = make_app()
    assert snap_compare(app, press=["j", "j", "j", "minus", "minus"], terminal_size=SIZE)


def test_flapping_readiness_in_details_mode(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """web-flap/web after its readiness outage, in details mode (enter)."""
    app, _, _ = make_app()
    assert snap_compare(app, press=["end", "enter"], terminal_size=SIZE)


def test_help_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app, _, _ = make_app()
    assert snap_compare(app, press=["question_mark"], terminal_size=SIZE)


def test_read_only(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """READ-ONLY badge; the exec probe says it is not run; t and T are not offered."""
    app, _, _ = make_app(read_only=True)
    assert snap_compare(app, press=["j", "j"], terminal_size=SIZE)


def test_workloads_grouped(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The cluster view with a Deployment and a StatefulSet: problems first, the workloads'
    summary lines, the bad replica under its Deployment's line."""
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    assert snap_compare(app, terminal_size=SIZE)


def test_workloads_grouped_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    """The same at 80x24, the Deployment folded (z): the columns hold, the names keep room."""
    app, _, _ = make_app(fleet=True, observes_kubelet=True)
    assert snap_compare(app, press=["j", "z"], terminal_size=(80, 24))
