"""The key footer, without the watcher leak of Textual's own.

Textual's Footer recomposes on every bindings change (a focus move, `enter`) and each new
FooterKey registers a `data_bind` watcher on the footer that is never removed (Textual issue
#6666): 18 dead entries per recompose, ~2,500 objects kept alive each time, and full garbage
collections that grew to 90-178 ms under the benchmark's flood (benchmarks/ui.py). Dropping the
entries of detached keys after each recompose keeps the list at its live size.
"""

from __future__ import annotations

from textual.widgets import Footer


class KeyFooter(Footer):
    async def recompose(self) -> None:
        await super().recompose()
        watchers: dict[str, list[tuple[object, object]]] = getattr(self, "__watchers", {})
        for entries in watchers.values():
            entries[:] = [
                (node, callback)
                for node, callback in entries
                if not getattr(node, "_closing", False)
                and not getattr(node, "_closed", False)
                and getattr(node, "is_attached", True)
            ]
