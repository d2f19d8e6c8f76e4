"""The staff status page's WebSocket: the orchestrator's snapshot, re-rendered once a second."""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from django.template.loader import render_to_string
from django.utils.html import format_html

from arena import streams
from arena.generations.consumers import ArenaSocket

from .status import snapshot

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
        status = snapshot(streams.client(), streams.keys())
        return render_to_string("workers/_status.html", {"status": status, "oob": True})
