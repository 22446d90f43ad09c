# Coroutines for target.py (3.5+ syntax, so not imported on 2.7).
SLEEP = None


async def coro_inner():
    SLEEP()  # MARK:coro_inner_call


async def coro_outer():
    await coro_inner()  # MARK:coro_outer_call


def run(sleep):
    global SLEEP
    SLEEP = sleep
    coro_outer().send(None)  # MARK:run_coro_call
