# -*- coding: utf-8 -*-
"""The Python 3 only phases: a coroutine, and non-ASCII names."""
import asyncio
import importlib.util
import os
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


async def coro_leaf(seconds):
    deadline = clock() + seconds
    x = 0
    while clock() < deadline:
        # long stretches between awaits: the stack is coro_main;coro_leaf
        # nearly all the time, not the event loop's
        for i in range(50000):
            x += i  # LEAF-CORO
        await asyncio.sleep(0)
    return x


async def coro_main(seconds):
    return await coro_leaf(seconds)


def run(phase):
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(coro_main(phase))
    finally:
        loop.close()
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "ünïcode_loop_😀.py")
    spec = importlib.util.spec_from_file_location("unicode_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.naïve_函数(phase)
