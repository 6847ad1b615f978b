"""Consumer Notification Objects (dat_cno_*), and a file descriptor for them.

A CNO is triggered when an EVD attached to it receives a notification event
while no thread waits on that EVD. ``cno.wait`` consumes the trigger.
``cno.fileno()`` gives a pipe that polls readable while the CNO is triggered;
since nothing in a process blocked in select() would otherwise run progress,
the first fileno() call starts a daemon thread that sleeps in the IA's
device and runs progress when it rings.
"""

import collections
import os
import threading
import time

from . import aio
from .args import check_timeout
from .constants import TIMEOUT_INFINITE
from .errors import Abort, InterruptedCall, InvalidState, TimeoutExpired
from .handle import Handle
from .values import CnoParam


class CNO(Handle):
    kind = "cno"

    def __init__(self, ia):
        super().__init__(ia)
        self._triggered = collections.deque()    # EVDs that triggered it, oldest first
        self._waiter = None
        self._pipe = None                        # (read fd, write fd) once fileno() was called
        self._thread = None

    def _trigger(self, evd):
        """Called with the IA lock held when an attached EVD gets a notification event."""
        if evd not in self._triggered:
            self._triggered.append(evd)
            if len(self._triggered) == 1 and self._pipe is not None:
                os.write(self._pipe[1], b"!")
        self._ia._engine.wake()

    def _untrigger(self):
        evd = self._triggered.popleft()
        if not self._triggered and self._pipe is not None:
            try:
                os.read(self._pipe[0], 64)
            except BlockingIOError:
                pass
        return evd

    def wait(self, timeout):
        """dat_cno_wait: wait up to `timeout` microseconds for a trigger; returns the EVD
        that triggered it. Raises TimeoutExpired, InterruptedCall, Abort (CNO freed or
        IA closed meanwhile), InvalidState (another thread waits), InvalidParameter."""
        prog = self._ia._engine
        with prog.lock:
            self._check()
            seconds = check_timeout(timeout, 2)
            if self._waiter is not None:
                raise InvalidState("another thread is already waiting on this CNO",
                                   subtype="INVALID_STATE_CNO_IN_USE")
            self._waiter = threading.get_ident()
            try:
                deadline = None if seconds is None else time.monotonic() + seconds
                try:
                    prog.block(lambda: bool(self._triggered) or self._freed or self._ia._freed,
                               deadline)
                except InterruptedError:
                    raise InterruptedCall("a signal interrupted the wait") from None
                if self._freed or self._ia._freed:
                    raise Abort("the CNO was freed or its IA closed during the wait")
                if not self._triggered:
                    raise TimeoutExpired("the CNO was not triggered within the timeout")
                evd = self._untrigger()
                return None if evd._freed else evd
            finally:
                self._waiter = None

    async def wait_async(self, timeout=TIMEOUT_INFINITE):
        """dat_cno_wait for asyncio: `evd = await cno.wait_async(timeout)`; the errors of wait()."""
        check_timeout(timeout, 2)
        return await aio.wait(lambda: self.wait(0), self, timeout)

    def _clear(self):
        """Forget every trigger (for the private CNO of evd.wait_async, which polls its EVD)."""
        while self._triggered:
            self._untrigger()

    def fileno(self):
        """A file descriptor that polls readable while the CNO is triggered."""
        with self._ia._engine.lock:
            self._check()
            if self._pipe is None:
                r, w = os.pipe()
                os.set_blocking(r, False)
                os.set_blocking(w, False)
                self._pipe = (r, w)
                if self._triggered:
                    os.write(w, b"!")
                self._thread = threading.Thread(target=self._run_progress, daemon=True,
                                                name="shmdat-cno-progress")
                self._thread.start()
            return self._pipe[0]

    def _run_progress(self):
        prog = self._ia._engine
        with prog.lock:
            while not (self._freed or self._ia._freed):
                prog.block(lambda: self._freed or self._ia._freed, None)

    def query(self):
        """dat_cno_query -> CnoParam."""
        with self._ia._engine.lock:
            self._check()
            return CnoParam(ia=self._ia, agent=None)

    def free(self):
        """dat_cno_free. Raises InvalidState while an EVD is attached to it; InvalidHandle."""
        ia = self._ia
        with ia._engine.lock:
            self._check()
            users = [e for e in ia._evds if e._cno is self]
            if users:
                raise InvalidState(f"{len(users)} EVD(s) still use this CNO",
                                   subtype="INVALID_STATE_CNO_IN_USE")
            self._destroy()

    def _destroy(self):
        self._mark_freed()
        self._ia._cnos.discard(self)
        self._ia._engine.wake()
        if self._pipe is not None:
            os.close(self._pipe[1])
            os.close(self._pipe[0])
            self._pipe = None
