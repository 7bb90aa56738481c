"""The kubelet's counts beside the shadow's: frames, spans seen whole, mismatches.

A span is judged only where both ends are the same kubelet process and the same shadow worker,
with no counter down and the shadow on time; inside it, the totals may differ by one attempt
(the two workers' phases at the span's ends) and a result by two (an attempt moved across each
end where the answer changed).
"""

from __future__ import annotations

from probetui.agent.counts import CountsJoin, ShadowProbe
from probetui.agent.kubelet import KubeletCounts
from probetui.keys import ProbeKey
from probetui.spec.model import ProbeType
from probetui.stream.rows import PodNames

KEY = ProbeKey("u-1", "app", ProbeType.READINESS)
NAMES = PodNames("u-1", "shop", "web-1")


def _c(ok: int, failed: int = 0, unknown: int = 0) -> dict[str, int]:
    return {"successful": ok, "failed": failed, "unknown": unknown}


def _scrape(t: float, kubelet: dict[str, int] | None, start: float = 100.0) -> KubeletCounts:
    series = {("u-1", "app", "Readiness"): kubelet} if kubelet is not None else {}
    return KubeletCounts(t=t, start=start, series=series)


def _step(
    join: CountsJoin,
    t: float,
    kubelet: dict[str, int] | None,
    shadow: dict[str, int] | None,
    *,
    worker: int = 1,
    start: float = 100.0,
    on_time: bool = True,
) -> dict:
    (frame,) = join.frames(
        _scrape(t, kubelet, start), [ShadowProbe(KEY, NAMES, shadow, worker)], on_time
    )
    return frame


def test_the_frame_carries_both_sides_as_counted() -> None:
    join = CountsJoin(agent_start=50.0)
    frame = _step(join, 110.0, _c(12, 3), _c(11, 3))
    assert frame == {
        "k": "counts",
        "t": 110.0,
        "uid": "u-1",
        "ns": "shop",
        "pod": "web-1",
        "c": "app",
        "probe": "readiness",
        "kubelet": _c(12, 3),
        "shadow": _c(11, 3),
        "since": 50.0,
        "kubeletStart": 100.0,
    }
    assert join.latest == {KEY: frame}


def test_a_span_within_the_phases_slack_agrees() -> None:
    join = CountsJoin(agent_start=50.0)
    _step(join, 110.0, _c(10), _c(10))
    # ten seconds: the kubelet ran one more attempt than the shadow inside the span
    assert _step(join, 120.0, _c(20), _c(19))["mismatch"] is False
    # the answer changed inside the span: one attempt crossed each end on one side
    assert _step(join, 130.0, _c(23, 7), _c(21, 8))["mismatch"] is False
    assert (join.spans, join.mismatches) == (2, 0)


def test_the_kubelet_failing_where_the_shadow_succeeds_is_a_mismatch() -> None:
    join = CountsJoin(agent_start=50.0)
    _step(join, 110.0, _c(10), _c(10))
    assert _step(join, 120.0, _c(14, 6), _c(20))["mismatch"] is True
    # the kubelet probing half as often (a stalled worker) is one too
    assert _step(join, 130.0, _c(19, 6), _c(30))["mismatch"] is True
    assert (join.spans, join.mismatches) == (2, 2)


def test_spans_not_seen_whole_are_not_judged() -> None:
    join = CountsJoin(agent_start=50.0)
    _step(join, 110.0, _c(10), _c(10))
    # the kubelet restarted: its counters start again
    assert "mismatch" not in _step(join, 120.0, _c(2), _c(20), start=115.0)
    # a counter went down without a new start time (its worker was made anew)
    assert "mismatch" not in _step(join, 130.0, _c(1), _c(30), start=115.0)
    # the shadow's worker is another one
    assert "mismatch" not in _step(join, 140.0, _c(11), _c(0), start=115.0, worker=2)
    # the shadow fell behind its ticks at one end
    assert "mismatch" not in _step(
        join, 150.0, _c(40), _c(10), start=115.0, worker=2, on_time=False
    )
    assert "mismatch" not in _step(join, 160.0, _c(50), _c(20), start=115.0, worker=2)
    # the shadow does not run it (exec): the kubelet's side alone, never judged
    frame = _step(join, 170.0, _c(60), None, start=115.0, worker=2)
    assert frame["shadow"] is None and "mismatch" not in frame
    assert (join.spans, join.mismatches) == (0, 0)


def test_a_probe_neither_side_counts_gets_no_frame() -> None:
    join = CountsJoin(agent_start=50.0)
    frames = join.frames(_scrape(110.0, None), [ShadowProbe(KEY, NAMES, None, 1)], True)
    assert frames == [] and join.latest == {}


def test_a_static_pods_counters_are_found_by_name() -> None:
    join = CountsJoin(agent_start=50.0)
    scraped = KubeletCounts(t=110.0, start=100.0)
    scraped.by_name[("shop", "web-1", "app", "Readiness")] = _c(5)
    (frame,) = join.frames(scraped, [ShadowProbe(KEY, NAMES, _c(5), 1)], True)
    assert frame["kubelet"] == _c(5)


def test_a_frame_keeps_the_counts_of_its_scrape_when_the_workers_go_on() -> None:
    """The join copies both sides: the shadow's counters are the worker's own, which its next
    attempts move, and the next span is judged from what this scrape saw."""
    join = CountsJoin(agent_start=50.0)
    live = _c(10)
    first = _step(join, 110.0, _c(10), live)
    live["successful"] += 5
    assert first["shadow"] == _c(10) and join.latest[KEY]["shadow"] == _c(10)
    second = _step(join, 120.0, _c(15), live)
    assert second["mismatch"] is False and (join.spans, join.mismatches) == (1, 0)
    live["successful"] += 9  # nine attempts that the kubelet did not make: a mismatch
    assert _step(join, 130.0, _c(15), live)["mismatch"] is True


def test_a_scrapes_frames_encoded_are_what_dumps_writes_of_each() -> None:
    """`encoded` writes the frames its own way, from parts kept between scrapes: the bytes must
    be `dumps`' of every frame, whatever the frame holds (a side without counts, a verdict or
    none, no kubelet start, names to escape, counts of more than the kubelet's results)."""
    from probetui.stream.protocol import dumps

    other = ProbeKey("u-2", 'side"car', ProbeType.LIVENESS)
    other_names = PodNames("u-2", "shöp", "wéb\n2")
    exec_key = ProbeKey("u-2", "app", ProbeType.STARTUP)
    join = CountsJoin(agent_start=1764643000.123456789)
    assert join.encoded() == b""

    def scrape(t: float, n: int, start: float | None) -> bytes:
        scraped = KubeletCounts(t=t, start=start)
        scraped.series[("u-1", "app", "Readiness")] = _c(n, 1)
        scraped.series[("u-2", "app", "Startup")] = _c(1)
        join.frames(
            scraped,
            [
                ShadowProbe(KEY, NAMES, _c(n, 1), 1),
                ShadowProbe(other, other_names, {**_c(n), "odd": True}, 2),  # type: ignore[dict-item]
                ShadowProbe(exec_key, other_names, None, 3),
            ],
            True,
        )
        data = join.encoded()
        assert data == b"".join(dumps(frame) for frame in join.latest.values())
        assert join.encoded() is data
        return data

    first = scrape(1764643516.6491234, 10, 1764600000.2)
    second = scrape(1764643526.6491234, 20, 1764600000.2)
    assert b'"mismatch":false' in second and b'"mismatch"' not in first
    third = scrape(1764643536.7, 25, None)
    assert b"kubeletStart" not in third and third != second
