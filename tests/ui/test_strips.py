"""`textual_compat.install_strips`: Textual's strips freed by reference counting, drawing exactly as before."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from probetui.ui.textual_compat import STRIP_ORIGINALS, install_strips


@pytest.fixture
def unpatched() -> Iterator[tuple[Callable[..., list[Strip]], Callable[..., Strip]]]:
    """Textual's own methods, whether or not the patch is in (other tests make apps)."""
    install_strips()
    yield STRIP_ORIGINALS["divide"], STRIP_ORIGINALS["crop_extend"]


def _strip() -> Strip:
    return Strip([Segment("hello ", Style(bold=True)), Segment("world")], 11)


def _cycles(op: Callable[[Strip], object]) -> int:
    was = gc.isenabled()
    gc.disable()
    gc.collect()
    try:
        for _ in range(50):
            op(_strip())
        return gc.collect()
    finally:
        if was:
            gc.enable()


def test_textual_strips_divided_or_crop_extended_to_themselves_are_cyclic(unpatched) -> None:
    # what the patch is for: with Textual's methods, each such strip is garbage for the
    # cyclic collector (if Textual stops doing this, the patch can go)
    divide, crop_extend = unpatched
    assert _cycles(lambda s: divide(s, [11])) > 0
    assert _cycles(lambda s: crop_extend(s, 0, 11, None)) > 0


def test_patched_strips_are_freed_by_reference_counting() -> None:
    assert install_strips()
    assert _cycles(lambda s: s.divide([11])) == 0
    assert _cycles(lambda s: s.divide([11, 12, 40])) == 0  # cuts past the end are dropped
    assert _cycles(lambda s: s.crop_extend(0, 11, None)) == 0
    assert _cycles(lambda s: s.crop_extend(-2, 11, None)) == 0


@pytest.mark.parametrize(
    "cuts", [[11], [5, 11], [3, 8, 11], [11, 20], [0, 11], [4], [], [2, 2, 11]]
)
def test_divide_gives_what_textual_gives(unpatched, cuts: list[int]) -> None:
    divide, _ = unpatched
    assert install_strips()
    assert _strip().divide(cuts) == divide(_strip(), cuts)


@pytest.mark.parametrize("span", [(0, 11), (-1, 11), (0, 15), (2, 11), (0, 5), (3, 20), (6, 6)])
def test_crop_extend_gives_what_textual_gives(unpatched, span: tuple[int, int]) -> None:
    _, crop_extend = unpatched
    assert install_strips()
    style = Style(reverse=True)
    assert _strip().crop_extend(*span, style) == crop_extend(_strip(), *span, style)
