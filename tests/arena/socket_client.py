"""Channels' test communicator with waits sized for a loaded machine.

Channels waits 1 s by default for a handshake, a frame or a close: on a shared two-core machine
running two test processes and PostgreSQL, a socket that opens correctly can take longer than that,
and a test then fails for the machine's load, not for the product. A wait that ends early costs
nothing; only a test that expects silence waits it out, and those say so (`receive_nothing`)."""

from channels.testing import WebsocketCommunicator as ChannelsCommunicator

WAIT_S = 10


class WebsocketCommunicator(ChannelsCommunicator):
    async def connect(self, timeout=WAIT_S):
        return await super().connect(timeout)

    async def receive_from(self, timeout=WAIT_S):
        return await super().receive_from(timeout)

    async def receive_json_from(self, timeout=WAIT_S):
        return await super().receive_json_from(timeout)

    async def disconnect(self, code=1000, timeout=WAIT_S):
        return await super().disconnect(code, timeout)

    async def receive_output(self, timeout=WAIT_S):
        return await super().receive_output(timeout)
