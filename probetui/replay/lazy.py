"""A probe's history that a replay's seek may give its state before its entries.

A seek into a stretch where a probe did the same thing every time gives its history the state
the list reads (published and last result, a run under way, hold, pause) and leaves its
entries in the recording (`ReplayStore.defer_entries`). Whatever reads the entries, the exact
run or the totals fills the history first through its `Filler`, so it reads what feeding
everything at once would have left; `ProbeHistory` itself knows nothing of this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from probetui.keys import ProbeKey
from probetui.prober.results import ResultValue
from probetui.timeline.history import AttemptView, ProbeHistory, Texts

if TYPE_CHECKING:
    from collections.abc import Iterator


class Filler(Protocol):
    """Describes what fills deferred histories (`ReplayStore`): their entries fed as an eager seek
    would."""

    def fill_read(self, key: ProbeKey) -> None:
        """Fill the deferred history of `key`, which is being read (and maybe others)."""
        ...


class LazyHistory(ProbeHistory):
    """Acts as a `ProbeHistory` whose entries may be filled from the recording when first read."""

    __slots__ = ("_filler",)

    def __init__(self, key: ProbeKey, texts: Texts, capacity: int, detail: int) -> None:
        super().__init__(key, texts, capacity, detail)
        self._filler: Filler | None = None

    # -- its life in a replay -------------------------------------------------------------

    def renew(self, texts: Texts, capacity: int, detail: int) -> None:
        """Empty it as made anew: a seek takes back the histories the screen held."""
        ProbeHistory.__init__(self, self.key, texts, capacity, detail)
        self._filler = None

    def empty_for_filling(self, texts: Texts, capacity: int, detail: int) -> None:
        """Empty the ring and totals and keep the owner: its entries are about to be fed."""
        owner = self.owner
        self.renew(texts, capacity, detail)
        self.owner = owner

    def defer(self, filler: Filler) -> None:
        """Leave the entries to `filler`, which feeds them before anything reads them."""
        self._filler = filler

    @property
    def deferred(self) -> bool:
        """Whether its entries are still to be filled."""
        return self._filler is not None

    def filled(self) -> None:
        """Forget the filler: called by it before it feeds the entries."""
        self._filler = None

    def _ensure(self) -> None:
        filler = self._filler
        if filler is not None:
            filler.fill_read(self.key)

    # -- every reader of the entries, the exact run or the totals fills it first -----------

    @property
    def result_run(self) -> int:
        """The run of equal results the last record said (filled first)."""
        self._ensure()
        return self._run

    @result_run.setter
    def result_run(self, run: int) -> None:
        self._run = run
        self.in_run = run > 0

    @property
    def counts(self) -> list[int]:
        """Entries by Kind since the store was filled (filled first)."""
        self._ensure()
        return self._counts

    @property
    def last_t(self) -> float | None:
        """The time of the newest entry (filled first)."""
        self._ensure()
        return self._last_t

    @property
    def seq(self) -> int:
        """Count the entries ever appended (filled first)."""
        self._ensure()
        return self._seq

    def attempted(self) -> bool:
        """Tell whether any entry is an attempt (a deferred history has one by its state)."""
        return self._filler is not None or super().attempted()

    def __len__(self) -> int:
        self._ensure()
        return super().__len__()

    @property
    def oldest_t(self) -> float | None:
        """The time of the oldest entry held (filled first)."""
        self._ensure()
        return ProbeHistory.oldest_t.fget(self)  # type: ignore[attr-defined,no-any-return]

    def window(
        self, start: float, end: float, published_by: float | None = None
    ) -> list[tuple[float, int]]:
        """`ProbeHistory.window`, filled first."""
        self._ensure()
        return super().window(start, end, published_by)

    def changes(self, start: float, end: float) -> list[tuple[float, ResultValue]]:
        """`ProbeHistory.changes`, filled first."""
        self._ensure()
        return super().changes(start, end)

    def latencies(self, n: int) -> list[tuple[float, int]]:
        """`ProbeHistory.latencies`, filled first."""
        self._ensure()
        return super().latencies(n)

    def last_skip(self) -> AttemptView | None:
        """`ProbeHistory.last_skip`, filled first."""
        self._ensure()
        return super().last_skip()

    def recent(
        self, n: int, until: float | None = None, *, published: bool = False
    ) -> list[AttemptView]:
        """`ProbeHistory.recent`, filled first."""
        self._ensure()
        return super().recent(n, until, published=published)

    def indices_back(self) -> Iterator[int]:
        """`ProbeHistory.indices_back`, filled first."""
        self._ensure()
        return super().indices_back()


__all__ = ["Filler", "LazyHistory"]
