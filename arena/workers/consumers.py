"""The staff status page's WebSocket: the orchestrator's snapshot, re-rendered once a second."""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from arena import streams

from .status import snapshot

INTERVAL_S = 1.0


class StatusConsumer(AsyncWebsocketConsumer):
    # Reads Redis directly and takes nothing from the channel layer: not subscribing to it spares a
    # Redis pop per socket, and a Redis restart no longer kills the socket from inside Channels.
    channel_layer_alias = None

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_staff:
            await self.close(code=4403)
            return
        await self.accept()
        self.pump = asyncio.create_task(self._pump())

    async def disconnect(self, code):
        if getattr(self, "pump", None):
            self.pump.cancel()

    async def receive(self, text_data=None, bytes_data=None):
        """The page only listens; whatever a client sends is ignored."""

    async def _pump(self):
        last = None
        while True:
            html = await self._render()
            if html != last:
                await self.send(text_data=html)
                last = html
            await asyncio.sleep(INTERVAL_S)

    @database_sync_to_async
    def _render(self) -> str:
        status = snapshot(streams.client(), streams.keys())
        return render_to_string("workers/_status.html", {"status": status, "oob": True})
