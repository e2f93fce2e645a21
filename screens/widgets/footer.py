"""The key bar at the foot of every planner screen, rebuilt only when its keys change."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

Shown = tuple[object, ...]


class KeyFooter(Footer):
    """Textual's Footer, rebuilt only when what it shows changes.

    Textual's Footer rebuilds all its key widgets whenever its screen's bindings may have
    changed, which includes every time the screen is shown or left: on a screen switch
    that rebuild (mounting and styling a widget per key, twice) cost more than the rest
    of the switch. Here a rebuild happens only while the screen is shown, and only when
    the keys, their labels, their enabled state or their tooltips differ from those drawn.
    """

    def __init__(self) -> None:
        super().__init__()
        self._drawn: Shown | None = None

    def shown(self) -> Shown:
        """What `compose` draws from the screen's active bindings, as comparable values."""
        app = self.app
        keys = tuple((b.key, b.action, b.description, app.get_key_display(b), enabled,
                      tooltip, b.tooltip, b.group, b.show)
                     for _, b, enabled, tooltip in self.screen.active_bindings.values()
                     if b.show or b.key == app.COMMAND_PALETTE_BINDING)
        return (keys, self.compact, self.show_command_palette, app.ENABLE_COMMAND_PALETTE)

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        # A screen left or covered redraws its keys when it is shown again (being shown
        # counts as a change of bindings), so nothing is built out of sight.
        if self.is_attached and screen is self.screen and screen.is_current:
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        if not self.is_attached or not self.screen.is_current:
            return
        shown = self.shown()
        if shown != self._drawn:
            self._drawn = shown
            await self.recompose()
