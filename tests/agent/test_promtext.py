"""The Prometheus text the agent reads (the kubelet's /metrics/probes) and writes (/metrics)."""

from __future__ import annotations

import math

import pytest

from probetui.agent import promtext
from probetui.agent.kubelet import counts_from
from probetui.agent.promtext import Family, PromTextError, exposition, parse, parse_line

# as compbasemetrics.HandlerFor writes the kubelet's prober registry (text format 0.0.4)
KUBELET = """\
# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.76464351622e+09
# HELP prober_probe_duration_seconds [ALPHA] Duration in seconds for a probe response.
# TYPE prober_probe_duration_seconds histogram
prober_probe_duration_seconds_bucket{container="app",namespace="shop",pod="web-1",probe_type="Readiness",le="0.005"} 10
# HELP prober_probe_total [BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="app",namespace="shop",pod="web-1",pod_uid="u-1",probe_type="Readiness",result="failed"} 3
prober_probe_total{container="app",namespace="shop",pod="web-1",pod_uid="u-1",probe_type="Readiness",result="successful"} 1234
prober_probe_total{container="app",namespace="shop",pod="web-1",pod_uid="u-1",probe_type="Liveness",result="successful"} 99
prober_probe_total{container="odd \\"name\\"",namespace="shop",pod="web-1",pod_uid="u-1",probe_type="Startup",result="unknown"} 1
"""


def test_the_kubelets_counters_by_probe_and_its_start() -> None:
    counts = counts_from(KUBELET, 5.0)
    assert counts.t == 5.0 and counts.start == 1764643516.22
    assert counts.series[("u-1", "app", "Readiness")] == {
        "successful": 1234,
        "failed": 3,
        "unknown": 0,
    }
    assert counts.series[("u-1", "app", "Liveness")]["successful"] == 99
    assert counts.series[("u-1", 'odd "name"', "Startup")]["unknown"] == 1
    # the same series by name, for a static pod whose counters carry the kubelet's own UID
    assert (
        counts.by_name[("shop", "web-1", "app", "Readiness")]
        is counts.series[("u-1", "app", "Readiness")]
    )
    assert counts.skipped == 0


def test_a_line_of_another_metric_costs_nothing_and_a_bad_line_of_ours_only_itself() -> None:
    text = KUBELET + "prober_probe_total{container=broken} 1\nprober_probe_totally 5\n"
    parsed = parse(text, ("prober_probe_total",))
    assert len(parsed.samples) == 4 and parsed.skipped == 1
    assert all(s.name == "prober_probe_total" for s in parsed.samples)


def test_only_lines_that_start_with_a_wanted_name_are_read_wherever_they_are() -> None:
    """The first line, a CRLF line and the last line without its newline are read; a wanted
    name inside another metric's line is not a line of it."""
    text = (
        'prober_probe_total{result="failed"} 1\r\n'
        'other{note="x\\nprober_probe_total 7"} 2\n'
        "x_prober_probe_total 3\n"
        "process_start_time_seconds 5\n"
        'prober_probe_total{result="unknown"} 4'
    )
    parsed = parse(text, ("prober_probe_total", "process_start_time_seconds"))
    assert [(s.name, s.value) for s in parsed.samples] == [
        ("prober_probe_total", 1.0),
        ("process_start_time_seconds", 5.0),
        ("prober_probe_total", 4.0),
    ]
    assert parsed.skipped == 0


def test_values_labels_and_escapes() -> None:
    s = parse_line('m{a="x\\\\y",b="line\\nnext", c="q\\"q"} +Inf 1700000000000')
    assert s.labels == {"a": "x\\y", "b": "line\nnext", "c": 'q"q'} and s.value == math.inf
    assert parse_line("m 1e3").value == 1000.0 and parse_line("m{} -2").value == -2
    assert math.isnan(parse_line("m NaN").value)
    for bad in ('m{a="x} 1', "m{a=x} 1", "m", "m one", 'm{a="1"} 1 2 3', '{a="1"} 1'):
        with pytest.raises(PromTextError):
            parse_line(bad)


def test_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    long = 'prober_probe_total{container="' + "x" * promtext.MAX_LINE + '"} 1'
    assert parse(long, ("prober_probe_total",)).skipped == 1
    monkeypatch.setattr(promtext, "MAX_SERIES", 2)
    parsed = parse(KUBELET, ("prober_probe_total",))
    assert len(parsed.samples) == 2 and parsed.truncated


def test_exposition_reads_back() -> None:
    text = exposition(
        [
            Family("a_total", "counter", "A.", [({"k": 'v"1'}, 3.0), ({"k": "v2"}, 0.5)]),
            Family("b", "gauge", "B.", [({}, 7.0)]),
        ]
    )
    assert "# TYPE a_total counter\n" in text and 'a_total{k="v\\"1"} 3\n' in text
    parsed = parse(text, ("a_total", "b"))
    assert [(s.name, s.labels, s.value) for s in parsed.samples] == [
        ("a_total", {"k": 'v"1'}, 3.0),
        ("a_total", {"k": "v2"}, 0.5),
        ("b", {}, 7.0),
    ]


def test_a_scrape_after_the_first_reads_its_known_series_alike() -> None:
    """A second body of the same series with new values reads as a fresh parse does, its
    label values from the first, escapes and all; what the second no longer has is dropped."""
    known: promtext.Known = {}
    first = counts_from(KUBELET, 1.0, known)
    assert len(known) == 5  # the start time and four counters
    later = "\n".join(
        line for line in KUBELET.replace("} 1234", "} 1240").split("\n") if "Liveness" not in line
    )
    second = counts_from(later, 2.0, known)
    assert second.series == counts_from(later, 2.0).series
    assert second.series[("u-1", "app", "Readiness")]["successful"] == 1240
    assert (
        second.series[("u-1", 'odd "name"', "Startup")]
        == first.series[("u-1", 'odd "name"', "Startup")]
    )
    assert len(known) == 4


def test_a_line_with_a_timestamp_is_parsed_whole_every_time() -> None:
    """Only a series ending at its value is remembered: a timestamp must never read as one."""
    known: promtext.Known = {}
    body = 'prober_probe_total{result="failed"} 3 1700000000000\n'
    parse(body, ["prober_probe_total"], known)
    assert known == {}
    again = parse(
        'prober_probe_total{result="failed"} 3\nprober_probe_total{result="failed"} 3 9\n',
        ["prober_probe_total"],
        known,
    )
    assert [s.value for s in again.samples] == [3.0, 3.0]


def test_names_one_the_others_prefix_read_each_line_once_in_order() -> None:
    """Two wanted names where one begins the other find the same lines: each is read once, in
    the body's order, the first and the last line too."""
    text = "a_total 1\nb 9\na 2\na_total 3\nab 4\na 5"
    parsed = parse(text, ("a", "a_total"))
    assert [(s.name, s.value) for s in parsed.samples] == [
        ("a_total", 1.0),
        ("a", 2.0),
        ("a_total", 3.0),
        ("a", 5.0),
    ]
    assert parsed.skipped == 0


def test_a_known_series_with_a_bad_value_or_an_unwanted_name_reads_as_a_fresh_parse() -> None:
    """A series the last read parsed is taken at its value only: a value that is no number is
    skipped, and a series of a name not asked for this time is passed over, as a first read
    does."""
    known: promtext.Known = {}
    parse('m{a="1"} 1\nn{a="1"} 2\n', ("m", "n"), known)
    assert len(known) == 2
    body = 'm{a="1"} one\nn{a="1"} 3\n'
    again = parse(body, ("m",), known)
    fresh = parse(body, ("m",))
    assert again.samples == fresh.samples == [] and again.skipped == fresh.skipped == 1
    again = parse('n{a="1"} 4\nm{a="1"} 5\n', ("m", "n"), known)
    assert [(s.name, s.labels, s.value) for s in again.samples] == [
        ("n", {"a": "1"}, 4.0),
        ("m", {"a": "1"}, 5.0),
    ]


def test_counts_by_name_follow_the_last_line_of_a_name_two_uids_share() -> None:
    """A static pod's counters carry the kubelet's UID beside its mirror pod's: by name, the
    series of the body's last line of that name is the one kept."""
    line = 'prober_probe_total{{container="c",namespace="n",pod="p",pod_uid="{}",probe_type="Readiness",result="{}"}} {}'
    body = "\n".join(
        (
            line.format("u1", "successful", 1),
            line.format("u2", "successful", 2),
            line.format("u1", "failed", 3),
        )
    )
    counts = counts_from(body, 1.0)
    assert counts.by_name[("n", "p", "c", "Readiness")] is counts.series[("u1", "c", "Readiness")]
    assert counts.series[("u1", "c", "Readiness")] == {"successful": 1, "failed": 3, "unknown": 0}


def test_the_counts_remember_only_series_that_end_at_their_value() -> None:
    """`counts_from` keeps what each series counts between scrapes: a line with a timestamp,
    a longer name and a line that does not parse are never remembered, and a remembered series
    whose value no longer parses is skipped, not counted."""
    known: dict = {}
    body = (
        'prober_probe_total{pod_uid="u",container="c",probe_type="Liveness",result="failed"} 3 17\n'
        'prober_probe_totally{pod_uid="u",container="c",probe_type="Liveness",result="failed"} 9\n'
        "prober_probe_total{broken} 1\n"
        'prober_probe_total{pod_uid="u",container="c",probe_type="Liveness",result="successful"} 4\n'
        'prober_probe_total{pod_uid="u",container="c",probe_type="Other",result="successful"} 5\n'
    )
    counts = counts_from(body, 1.0, known)
    assert counts.series == {("u", "c", "Liveness"): {"successful": 4, "failed": 3, "unknown": 0}}
    assert counts.skipped == 1 and len(known) == 2  # the Liveness success and the Other
    again = counts_from(body.replace("} 4", "} NaN").replace("} 5", "} x"), 2.0, known)
    assert again.series == {("u", "c", "Liveness"): {"successful": 0, "failed": 3, "unknown": 0}}
    assert again.skipped == 2
