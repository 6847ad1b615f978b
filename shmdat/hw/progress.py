"""Progress and waiting for one HCA (a verbs Context): the engine room.

Progress is manual: it runs inside the API's wait, poll and post calls, under
the HCA's lock. A thread that must block first spins (running progress) for a short,
tunable time, then sleeps. Only one thread of the IA sleeps on the doorbell
semaphore (the "sleeper"); others wait on a condition that the sleeper
signals after each round of progress.

The sleeper arms the doorbell, runs progress once more (a peer may have
published just before the arm and not rung), and only then sleeps. Sleeps are
cut into slices so that a dead peer is noticed within LIVENESS_SLICE even
though nobody rings, and so that a store-load reordering between a peer's
publish and its read of the armed word costs at most one slice, never a hang.

A sleeper also arms, for itself, the process's other HCAs that have no sleeper
of their own (`others`: a process's verbs Contexts, whose progress moves one
another): a ring for any of them wakes it, and its progress moves them all.
"""

import os
import threading
import time

import posix_ipc

SPIN_SECONDS = float(os.environ.get("SHMDAT_SPIN_US", "100")) / 1e6
LIVENESS_SLICE = 0.05           # seconds: a dead peer is seen within this
LOOK_SLICE = 0.01               # seconds: a running process (posting, polling) looks at its
#                                 peers this often; a sleeper wakes every LIVENESS_SLICE to look
_fence_lock = threading.Lock()


def fence():
    """A full memory barrier: acquiring a lock is a locked instruction on x86-64."""
    with _fence_lock:
        pass


class Progress:
    def __init__(self, hca, poll, others=None):
        self.hca = hca
        self.poll = poll                # the IA's progress function; runs under lock
        self.others = others            # () -> the other Progress objects poll() moves
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.sleeper = False
        self.blocked = 0                # threads inside block()
        self.next_timer = None          # monotonic deadline of the earliest CM timer

    def wake_local(self):
        """Make blocked threads of this process look again (call with the lock held)."""
        if self.blocked:
            self.cond.notify_all()
            if self.sleeper:
                self.hca.ring_self()

    def drain_waiters(self, bound=LIVENESS_SLICE * 20):
        """With the lock held, let the threads blocked here leave (their ready() must
        now be true); bounded, in case the caller interrupted a wait of its own thread."""
        end = time.monotonic() + bound
        while self.blocked and time.monotonic() < end:
            self.cond.wait(LIVENESS_SLICE)

    def block(self, ready, deadline):
        """With the lock held, run progress and sleep until ready() or the deadline.

        Returns ready()'s last value. posix_ipc.SignalError propagates when a
        signal interrupts the sleep.
        """
        self.blocked += 1
        try:
            while True:
                self.poll()
                if ready():
                    return True
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    return False
                limit = LIVENESS_SLICE
                if deadline is not None:
                    limit = min(limit, deadline - now)
                if self.next_timer is not None:
                    limit = max(0.0, min(limit, self.next_timer - now))
                if self.sleeper:
                    self.cond.wait(limit)
                    continue
                self._sleep(limit, ready)
        finally:
            self.blocked -= 1
            self.cond.notify_all()

    def _sleep(self, limit, ready):
        self.sleeper = True
        self.hca.arm()
        covered = self._cover() if self.others is not None else ()
        fence()
        try:
            self.poll()                 # the re-check after arming
            if ready():
                return
            saved = self.lock._release_save()     # the RLock may be held more than once
            try:
                self.hca.sleep(limit)
            finally:
                self.lock._acquire_restore(saved)
        finally:
            self._uncover(covered)
            self.hca.disarm()
            self.sleeper = False
            self.cond.notify_all()

    def _cover(self):
        """Arm for this sleeper the other HCAs that no sleeper of theirs has armed.
        Their locks are only tried (never two locks waited on); arming one under its
        lock never overwrites its own sleeper's arm."""
        covered = []
        for other in self.others():
            if other.lock.acquire(blocking=False):
                try:
                    if not other.sleeper and not other.hca.closed:
                        other.hca.arm(self.hca.n)
                        covered.append(other)
                finally:
                    other.lock.release()
        return covered

    def _uncover(self, covered):
        """Disarm what _cover armed, where it still rings us; one whose lock is busy is
        left armed for us (a ring then wakes us for nothing; its sleeper re-arms it)."""
        for other in covered:
            if other.lock.acquire(blocking=False):
                try:
                    if not other.hca.closed:
                        other.hca.disarm_for(self.hca.n)
                finally:
                    other.lock.release()


SignalError = posix_ipc.SignalError
