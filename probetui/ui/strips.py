"""Keep Textual's strips free of the reference cycles two of their caches make.

A Textual `Strip` memoizes its operations in caches of its own, and two of them can answer
with the strip itself, which the cache then holds: `divide` at the strip's own length (the
compositor divides every line it draws at its regions' cuts, and a line one region wide gives
`[self]`) and `crop_extend` to its own length. A strip in such a cycle is not freed by
reference counting when the screen drops it; it waits for the cyclic collector with its
segments and its seven caches. Such strips are nearly all of the UI's cyclic garbage, and
what of it dies frozen (`ui/gcpace.py`) makes the forced full pass long (guarded by
`benchmarks/ui`).

`install` answers those two cases before the cache is reached: the same strips come back, and
nothing refers to itself. It changes Textual's class once per process, and leaves it alone
where the methods are not the ones this was written against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from rich.style import Style
from textual.strip import Strip

_installed = False
# Textual's own methods, as they were before `install`
_original: dict[str, Callable[..., Any]] = {}


def install() -> bool:
    """Patch `Strip` (once); True when the patch is in place."""
    global _installed
    if _installed:
        return True
    divide, crop_extend = Strip.__dict__.get("divide"), Strip.__dict__.get("crop_extend")
    if not callable(divide) or not callable(crop_extend):
        return False

    def divide_no_cycle(self: Strip, cuts: Iterable[int]) -> list[Strip]:
        cuts = list(cuts)
        length = self.cell_length
        if [cut for cut in cuts if cut <= length] == [length]:
            return [self]
        return divide(self, cuts)

    def crop_extend_no_cycle(self: Strip, start: int, end: int, style: Style | None) -> Strip:
        # extend_cell_length and crop both give the strip itself: nothing to cache
        if start <= 0 and end == self.cell_length:
            return self
        return crop_extend(self, start, end, style)

    divide_no_cycle.__doc__ = divide.__doc__
    crop_extend_no_cycle.__doc__ = crop_extend.__doc__
    _original.update(divide=divide, crop_extend=crop_extend)
    Strip.divide = divide_no_cycle  # type: ignore[method-assign]
    Strip.crop_extend = crop_extend_no_cycle  # type: ignore[method-assign]
    _installed = True
    return True


__all__ = ["install"]
