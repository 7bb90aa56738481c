"""Offer every enabled key binding, by its description, in the command palette.

Built from the screen's active bindings, so read-only mode's hidden actions are hidden here
too and a remapped key shows its new key.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from textual.binding import ActiveBinding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from probetui.ui.keys import EXPLAIN


class ProbeCommands(Provider):
    def _commands(self) -> Iterator[tuple[str, str, ActiveBinding]]:
        chosen: dict[str, ActiveBinding] = {}
        for active in self.screen.active_bindings.values():
            binding = active.binding
            if not active.enabled or binding.action not in EXPLAIN:
                continue  # Textual's own commands are listed by its own provider
            ours = (binding.id or "").startswith("probetui.")
            if binding.action not in chosen or ours:
                chosen[binding.action] = active
        for active in chosen.values():
            binding = active.binding
            title = binding.description or binding.action
            help_text = f"{self.app.get_key_display(binding)}: {EXPLAIN[binding.action]}"
            yield title, help_text, active

    async def discover(self) -> Hits:
        for title, help_text, active in self._commands():
            yield DiscoveryHit(title, partial(self._run, active), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_text, active in self._commands():
            score = max(matcher.match(title), matcher.match(help_text) * 0.5)
            if score > 0:
                yield Hit(
                    score, matcher.highlight(title), partial(self._run, active), help=help_text
                )

    async def _run(self, active: ActiveBinding) -> None:
        await active.node.run_action(active.binding.action)
