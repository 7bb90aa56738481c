"""Merge the time-ordered streams read from a recording, each ended where damage is found.

A recording is read as many streams in time order (a probe's chunks, the kubelet's rows, the
specs and statuses); these merge them by time the way a whole file would have given them: where
one stream raises `Damaged`, what the others hold before its time comes first, then it is
raised (the earliest, where there are several). Also the whole-µs bounds of a time window.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from probetui.record import codec
from probetui.record.schema import (
    Damaged,
)

T = TypeVar("T")


def us_at_least(t: float) -> int:
    """The first whole µs n with n / US >= t: the float comparison an event's time makes."""
    if t == -math.inf:
        return -(1 << 62)
    n = math.ceil(t * codec.US)
    while (n - 1) / codec.US >= t:
        n -= 1
    while n / codec.US < t:
        n += 1
    return n


def us_at_most(t: float) -> int:
    """The last whole µs n with n / US <= t."""
    if t == math.inf:
        return 1 << 62
    n = math.floor(t * codec.US)
    while (n + 1) / codec.US <= t:
        n += 1
    while n / codec.US > t:
        n -= 1
    return n


def merge_segments(
    segments: Iterator[tuple[Any, ...]],
    open_segment: Callable[[tuple[Any, ...]], Iterator[tuple[float, T]]],
) -> Iterator[tuple[float, int, T]]:
    """The (key, item) streams of segments that come in order of their start (`seg[0]`),
    merged by key: a segment is opened only once the merge reaches its start, so a long
    recording is never opened all at once. Yields (key, 0, item), as `events()` merges.

    Damage (`Damaged`) in the segments read, in opening one or in reading on in one ends that
    stream there: what the others hold keyed before its time comes first, then it is raised
    (the earliest, where there are several), as a whole file would have given it."""
    order = itertools.count()
    heap: list[tuple[float, int, T, Iterator[tuple[float, T]]]] = []
    fence: Damaged | None = None

    def fenced(e: Damaged) -> None:
        nonlocal fence
        if fence is None or e.sooner(fence):
            fence = e

    def pull() -> tuple[Any, ...] | None:
        if fence is not None and fence.t is None:
            return None
        try:
            got = next(segments, None)
        except Damaged as e:
            fenced(e)
            return None
        return None if got is None or (fence is not None and past(got[0], fence)) else got

    pending = pull()
    while heap or pending is not None:
        while pending is not None and (not heap or pending[0] <= heap[0][0]):
            try:
                it = open_segment(pending)
                first = next(it, None)
            except Damaged as e:
                fenced(e.at(pending[0]))
                first = None
            if first is not None:
                heapq.heappush(heap, (first[0], next(order), first[1], it))
            pending = pull()
        if not heap:
            continue
        key, n, item, it = heap[0]
        if fence is not None and past(key, fence):
            break
        yield key, 0, item
        try:
            following = next(it, None)
        except Damaged as e:
            fenced(e.at(key))
            following = None
        if following is None:
            heapq.heappop(heap)
        else:
            heapq.heapreplace(heap, (following[0], n, following[1], it))
    if fence is not None:
        raise fence


def fenced_merge(
    streams: Iterable[Iterator[T]], key: Callable[[T], Any], time: Callable[[T], float]
) -> Iterator[T]:
    """`heapq.merge(*streams, key=key)` (ties to the stream given first), where a stream that
    raises `Damaged` ends there: what the others hold before its time (`time(item)`) comes
    first, then it is raised (the earliest, where there are several)."""
    heap: list[tuple[Any, int, T, Iterator[T]]] = []
    fence: Damaged | None = None

    def pull(it: Iterator[T], order: int) -> None:
        nonlocal fence
        try:
            x = next(it)
        except StopIteration:
            return
        except Damaged as e:
            if fence is None or e.sooner(fence):
                fence = e
            return
        heapq.heappush(heap, (key(x), order, x, it))

    for order, it in enumerate(streams):
        pull(iter(it), order)
    while heap:
        _, order, x, it = heapq.heappop(heap)
        if fence is not None and past(time(x), fence):
            break
        yield x
        pull(it, order)
    if fence is not None:
        raise fence


def later_than(e: Damaged, until: float, fence: Damaged | None) -> Damaged:
    """`e` where it lies past `until` (the sooner of it and `fence`); else it is raised."""
    if e.t is None or e.t <= until:
        raise e
    return e if fence is None or e.sooner(fence) else fence


def raising(fence: Damaged | None) -> Iterator[Any]:
    """A stream that is nothing but `fence` (none: empty), for `fenced_merge` to merge."""
    if fence is not None:
        raise fence
    yield from ()


def past(t: float, fence: Damaged) -> bool:
    """Whether what is stamped `t` lies where `fence` says the recording is damaged."""
    return fence.t is None or t >= fence.t


def by_first(x: tuple[Any, ...]) -> Any:
    return x[0]


def by_first_two(x: tuple[Any, ...]) -> tuple[Any, Any]:
    return (x[0], x[1])


__all__ = [
    "T",
    "by_first",
    "by_first_two",
    "fenced_merge",
    "later_than",
    "merge_segments",
    "past",
    "raising",
    "us_at_least",
    "us_at_most",
]
