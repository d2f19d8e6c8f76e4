"""The staff status page's WebSocket: the orchestrator's snapshot, re-rendered once a second.

Each render asks again which models are secret to this viewer (status.page_context), so a
tournament that starts hides its contestants from the next frame, and the reveal shows them."""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from django.template.loader import render_to_string
from django.utils.html import format_html

from arena.generations.consumers import ArenaSocket

from .status import page_context

INTERVAL_S = 1.0


class StatusConsumer(ArenaSocket):
    """Staff only; the page only listens, so whatever a client sends is ignored (a frame over the
    size limit closes the socket, as on every arena socket)."""

    REFUSED = 4403

    def subject_for(self, user, url_kwargs: dict):
        return user if user.is_staff else None

    async def pump(self) -> None:
        last = None
        while True:
            html = await self._render()
            if html != last:
                await self.send(text_data=html)
                last = html
            await asyncio.sleep(INTERVAL_S)

    async def send_error(self, message: str) -> None:
        await self.send(text_data=format_html(
            '<div id="orchestrator-status" hx-swap-oob="true"><p class="notice">{}</p></div>', message))

    @database_sync_to_async
    def _render(self) -> str:
        return render_to_string("workers/_status.html", {**page_context(self.subject), "oob": True})
