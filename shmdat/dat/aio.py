"""asyncio on top of CNO file descriptors: `await evd.wait_async()`, `await cno.wait_async()`.

A CNO's fileno() polls readable while the CNO is triggered (a background
thread runs progress while the event loop sleeps). The loop here polls once
with a zero timeout and only then awaits the descriptor: an event that
arrives after the poll triggers the CNO and wakes the loop, so none is
missed.
"""

import asyncio

from .constants import TIMEOUT_INFINITE
from .errors import TimeoutExpired


async def _readable(fd, seconds):
    """Until `fd` polls readable or `seconds` (None: no limit) pass."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await asyncio.wait_for(ready, seconds)
    except asyncio.TimeoutError:
        pass
    finally:
        loop.remove_reader(fd)


async def wait(poll, cno, timeout, clear=False):
    """Call poll() (a zero-timeout wait) until it returns, sleeping on `cno`'s
    descriptor in between; TimeoutExpired from the last poll once `timeout` (us)
    passes. clear: forget the CNO's triggers before each poll (a private CNO
    whose triggers nobody else consumes)."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout >= TIMEOUT_INFINITE else loop.time() + timeout / 1e6
    fd = cno.fileno()
    while True:
        if clear:
            cno._clear()
        try:
            return poll()
        except TimeoutExpired:
            if deadline is not None and loop.time() >= deadline:
                raise
        await _readable(fd, None if deadline is None else max(0.0, deadline - loop.time()))
