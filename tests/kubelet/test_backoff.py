"""Restart back-off: client-go `flowcontrol.Backoff` and kuberuntime `doBackOff`.

Pins `staging/src/k8s.io/client-go/util/flowcontrol/backoff.go` (TestSlowBackoff,
TestBackoffReset, TestBackoffHighWaterMark, TestBackoffGC, TestIsInBackOffSinceUpdate), the
kubelet's crash-loop settings (`newCrashLoopBackOff` and its 600 s `HasExpiredFunc`) and
`doBackOff` in `pkg/kubelet/kuberuntime/kuberuntime_manager.go`. All times are virtual.
"""

from __future__ import annotations

import pytest

from probetui.kubelet.backoff import (
    CRASH_LOOP_RESET_AFTER,
    Backoff,
    BackOffCheck,
    backoff_key,
    crash_loop_backoff,
    do_back_off,
)
from probetui.probe.gotext import go_duration
from probetui.spec.model import Container, Pod

KEY = "web_ns1_u-1_app_img"


def test_kubelet_crash_loop_sequence_10_20_40_80_160_300_300() -> None:
    b = crash_loop_backoff()
    seen = [b.next(KEY, event_time=t, now=t) for t in range(0, 70, 10)]
    assert seen == [10, 20, 40, 80, 160, 300, 300]


def test_get_of_unknown_key_is_zero_and_not_in_backoff() -> None:
    b = crash_loop_backoff()
    assert b.get(KEY) == 0.0
    assert not b.is_in_backoff_since(KEY, 0.0, 0.0)


def test_backoff_reset_after_600s_without_failures_TestBackoffReset() -> None:
    """The kubelet's HasExpiredFunc: eventTime - lastUpdate > 600 s restarts at the initial."""
    b = crash_loop_backoff()
    for t in range(5):
        b.next(KEY, t, t)
    assert b.get(KEY) == 160
    last = b.last_update(KEY)
    assert last == 4
    # an exit exactly 600 s after the last restart still doubles (strictly greater)
    assert b.next(KEY, last + CRASH_LOOP_RESET_AFTER, last + 600) == 300
    last = b.last_update(KEY)
    assert last is not None
    assert b.next(KEY, last + CRASH_LOOP_RESET_AFTER + 0.001, last + 601) == 10


def test_expiry_is_flat_600s_even_with_a_smaller_configured_max() -> None:
    """KubeletCrashLoopBackOffMax: the reset threshold stays 600 s, not 2 * max."""
    b = crash_loop_backoff(max_container_restart_period=100.0)
    b.next(KEY, 0, 0)
    b.next(KEY, 1, 1)
    assert b.get(KEY) == 20
    assert b.next(KEY, 1 + 250, 251) == 40  # 2 * max = 200 would have reset
    assert b.next(KEY, 251 + 601, 852) == 10


def test_client_go_default_expiry_is_twice_max() -> None:
    b = Backoff(1.0, 4.0)
    b.next(KEY, 0, 0)
    b.next(KEY, 1, 1)
    assert b.get(KEY) == 2
    assert b.next(KEY, 9, 9) == 4  # 9 - 1 = 8 is not > 8
    assert b.next(KEY, 17.5, 17.5) == 1  # 17.5 - 9 > 8: reset


def test_slow_backoff_caps_at_max_TestBackoffHighWaterMark() -> None:
    b = Backoff(1.0, 5.0)
    assert [b.next(KEY, t, t) for t in range(6)] == [1, 2, 4, 5, 5, 5]


def test_initial_value_is_not_capped_by_max() -> None:
    b = Backoff(10.0, 5.0)
    assert b.next(KEY, 0, 0) == 10
    assert b.next(KEY, 1, 1) == 5


def test_reduced_decay_gate_gives_1s_to_60s() -> None:
    b = crash_loop_backoff(reduce_default_decay=True)
    assert [b.next(KEY, t, t) for t in range(8)] == [1, 2, 4, 8, 16, 32, 60, 60]


def test_configured_max_below_initial_lowers_the_initial() -> None:
    b = crash_loop_backoff(max_container_restart_period=2.0)
    assert [b.next(KEY, t, t) for t in range(3)] == [2, 2, 2]


def test_is_in_backoff_since_edges_strict_less_than() -> None:
    b = crash_loop_backoff()
    b.next(KEY, event_time=100.0, now=101.0)  # window 10 s
    assert b.is_in_backoff_since(KEY, 100.0, 100.0)
    assert b.is_in_backoff_since(KEY, 100.0, 109.999)
    assert not b.is_in_backoff_since(KEY, 100.0, 110.0)  # exactly the window: no longer waiting
    assert not b.is_in_backoff_since(KEY, 100.0, 200.0)
    assert not b.is_in_backoff_since("other", 100.0, 100.0)


def test_is_in_backoff_since_false_when_event_is_past_expiry() -> None:
    b = crash_loop_backoff()
    b.next(KEY, 0.0, 0.0)
    # the exit came 601 s after the last update: the old window no longer applies
    assert not b.is_in_backoff_since(KEY, 601.0, 601.0)
    assert b.is_in_backoff_since(KEY, 600.0, 600.0)


def test_is_in_backoff_since_update_TestIsInBackOffSinceUpdate() -> None:
    b = Backoff(1.0, 10.0)
    b.next(KEY, 0.0, 0.0)
    assert b.is_in_backoff_since_update(KEY, 0.5)
    assert not b.is_in_backoff_since_update(KEY, 1.0)


def test_reset_forgets_the_key() -> None:
    b = crash_loop_backoff()
    b.next(KEY, 0, 0)
    b.next(KEY, 1, 1)
    b.reset(KEY)
    assert KEY not in b
    assert b.next(KEY, 2, 2) == 10


def test_gc_drops_entries_untouched_for_longer_than_expiry_TestBackoffGC() -> None:
    b = crash_loop_backoff()
    b.next(KEY, 0, 0)
    b.next("fresh", 500, 500)
    b.gc(600.0)
    assert KEY in b
    b.gc(600.5)
    assert KEY not in b
    assert "fresh" in b


def test_jitter_adds_up_to_factor_times_delay_when_a_source_is_given() -> None:
    b = Backoff(10.0, 300.0, jitter_factor=0.5, random=lambda: 1.0)
    assert b.next(KEY, 0, 0) == 15.0
    assert b.next(KEY, 1, 1) == 37.5  # 15 * 2 + 0.5 * 15
    plain = Backoff(10.0, 300.0, jitter_factor=0.5)
    assert plain.next(KEY, 0, 0) == 10.0  # no random source: no jitter, as the kubelet


# -- doBackOff ---------------------------------------------------------------------------------


def test_doBackOff_without_exited_instance_starts_at_once_and_records_nothing() -> None:
    """First start, and the first crash restart (kubernetes#133472): no entry, no Next."""
    b = crash_loop_backoff()
    check = do_back_off(b, KEY, last_exit_finished_at=None, now=5.0)
    assert check == BackOffCheck(in_backoff=False, delay=0.0, retry_at=None)
    assert KEY not in b


def test_doBackOff_crash_loop_timeline_measured_from_finished_at() -> None:
    b = crash_loop_backoff()
    # crash 1 at t=10: no entry, restart now, window 10 s armed
    assert do_back_off(b, KEY, last_exit_finished_at=10.0, now=11.0) == BackOffCheck(False, 10.0)
    # crash 2 at t=12: in back-off until 22
    check = do_back_off(b, KEY, last_exit_finished_at=12.0, now=13.0)
    assert check == BackOffCheck(in_backoff=True, delay=10.0, retry_at=22.0)
    assert b.get(KEY) == 10.0  # being in back-off does not move the window
    # the pod worker retries at 22: the start goes ahead and the window doubles
    assert do_back_off(b, KEY, last_exit_finished_at=12.0, now=22.0) == BackOffCheck(False, 20.0)
    # crash 3 at t=23: wait 20 s
    check = do_back_off(b, KEY, last_exit_finished_at=23.0, now=23.5)
    assert check.in_backoff and check.delay == 20.0 and check.retry_at == 43.0


def test_doBackOff_after_long_run_resets_to_initial() -> None:
    b = crash_loop_backoff()
    for t in (0.0, 100.0, 200.0):
        do_back_off(b, KEY, last_exit_finished_at=t, now=t + 50)
    assert b.get(KEY) == 40.0
    # the container ran for 11 minutes after the last restart at t=250
    finished = 250.0 + 660.0
    assert do_back_off(b, KEY, last_exit_finished_at=finished, now=finished + 1).delay == 10.0


def test_doBackOff_liveness_kill_in_one_sync_measures_from_previous_exit_after_gc() -> None:
    """The sync's snapshot shows the killed instance Running; the previous exit is old.

    Housekeeping GC (every 2 s) has dropped the entry, so the restart is immediate and the
    window starts again at 10 s.
    """
    b = crash_loop_backoff()
    do_back_off(b, KEY, last_exit_finished_at=0.0, now=1.0)
    for t in range(2, 5000, 2):
        b.gc(float(t))
    check = do_back_off(b, KEY, last_exit_finished_at=0.0, now=5000.0)
    assert check == BackOffCheck(in_backoff=False, delay=10.0)


def test_backoff_key_changes_with_image_getStableKey() -> None:
    p = Pod(name="web", namespace="ns1", uid="u-1")
    a = backoff_key(p, Container(name="app", image="img:1"))
    assert a == "web_ns1_u-1_app_img:1"
    assert a != backoff_key(p, Container(name="app", image="img:2"))


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (10, "10s"),
        (40, "40s"),
        (80, "1m20s"),
        (160, "2m40s"),
        (300, "5m0s"),
        (60, "1m0s"),
        (3600, "1h0m0s"),
        (1.5, "1.5s"),
        (0.5, "500ms"),
        (0.0015, "1.5ms"),
        (0, "0s"),
        (-10, "-10s"),
    ],
)
def test_go_duration_string_format(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
