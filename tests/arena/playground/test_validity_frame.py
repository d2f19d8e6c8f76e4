"""The generation socket's outcome frame says whether the answer follows its schema or regex."""

import pytest
from channels.routing import URLRouter

from arena import streams
from arena.generations.models import Generation
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.mark.parametrize(("params", "text", "shown"), [
    ({"regex": "[0-9]+"}, "42", "Matches the regex"),
    ({"json_schema": {"type": "object"}}, "[1]", "Does not match the JSON schema"),
    ({}, "anything", 'id="gen-validity"></div>'),
])
async def test_the_outcome_frame_shows_validity(owner, smollm, params, text, shown):
    gen = await Generation.objects.acreate(owner=owner, model=smollm, prompt="Hi", params=params)
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/generations/{gen.id}/")
    comm.scope["user"] = owner
    assert (await comm.connect())[0]
    await comm.receive_from()  # the snapshot: queued
    streams.client().xadd(streams.keys().stream(str(gen.id)),
                          p.event(p.DONE, text=text, finish_reason="stop", metrics={"generated_tokens": 1}))
    final = await comm.receive_from()
    assert 'data-state="done"' in final and shown in final
    await comm.disconnect()
