"""`streams.stop_task`: a socket's close stops its background tasks even when a cancel is swallowed
on the way (a library's timeout, CPython gh-134471), and never waits for good on one that will not
stop. Plain asyncio tasks, no Redis."""

import asyncio
import contextlib
import logging

from arena import streams


async def swallowing(times: int, ended: list) -> None:
    """Eats its first `times` cancels, as a library's read that turns a cancel into a timeout does."""
    for _ in range(times):
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(60)
    try:
        await asyncio.sleep(60)
    finally:
        ended.append(True)


async def test_a_task_that_swallows_its_first_cancels_is_cancelled_again_until_it_ends():
    ended: list = []
    task = asyncio.create_task(swallowing(3, ended))
    await asyncio.sleep(0)
    await streams.stop_task(task, "a swallower", grace_s=30)
    assert task.cancelled() and ended == [True]


async def test_a_task_that_will_not_stop_is_left_after_the_grace_with_a_warning(caplog):
    ended: list = []
    task = asyncio.create_task(swallowing(50, ended))  # more cancels than its grace sends (~5)
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with caplog.at_level(logging.WARNING, logger="arena.streams"):
        await streams.stop_task(task, "a stubborn task", grace_s=0.5)
    assert loop.time() - started >= 0.5 and not task.done()
    assert "a stubborn task did not stop when cancelled" in caplog.text
    while not task.done():  # this test's to end: the cancels it has left, each heard at once
        task.cancel()
        await asyncio.sleep(0)


async def test_a_task_that_ended_with_an_error_is_stopped_quietly():
    async def failing():
        raise RuntimeError("logged where it happened")

    task = asyncio.create_task(failing())
    await asyncio.sleep(0)
    await streams.stop_task(task, "a failed task")
    assert isinstance(task.exception(), RuntimeError)
