"""step_now: a new task's first step runs in place, as the task, or not at all."""

from __future__ import annotations

import asyncio

from plughost_runner.process.eager import step_now


async def test_a_task_that_finishes_in_one_step_is_done_at_once_and_ran_as_itself() -> None:
    loop = asyncio.get_running_loop()
    seen: list[object] = []

    async def handler() -> str:
        seen.append(asyncio.current_task())
        return "answer"

    created: asyncio.Future[asyncio.Task[str]] = loop.create_future()

    def callback() -> None:
        task = loop.create_task(handler())
        step_now(loop, task)
        assert task.done()
        created.set_result(task)

    loop.call_soon(callback)
    task = await asyncio.wait_for(created, timeout=10)
    assert task.result() == "answer"
    assert seen == [task]


async def test_a_task_that_waits_ran_to_its_first_await_and_finishes_later() -> None:
    loop = asyncio.get_running_loop()
    steps: list[str] = []
    go = asyncio.Event()

    async def handler() -> str:
        steps.append("first")
        async with asyncio.timeout(10):  # needs a current task: the eager step has one
            await go.wait()
        steps.append("second")
        return "later"

    created: asyncio.Future[asyncio.Task[str]] = loop.create_future()

    def callback() -> None:
        task = loop.create_task(handler())
        step_now(loop, task)
        assert steps == ["first"] and not task.done()
        created.set_result(task)

    loop.call_soon(callback)
    task = await asyncio.wait_for(created, timeout=10)
    go.set()
    assert await asyncio.wait_for(task, timeout=10) == "later"
    assert steps == ["first", "second"]


async def test_inside_a_task_it_leaves_the_step_to_the_loop() -> None:
    loop = asyncio.get_running_loop()
    steps: list[str] = []

    async def handler() -> None:
        steps.append("ran")

    task = loop.create_task(handler())
    step_now(loop, task)  # this test is itself a task: two cannot run at once
    assert steps == [] and not task.done()
    await asyncio.wait_for(task, timeout=10)
    assert steps == ["ran"]
