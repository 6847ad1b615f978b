"""pyverbs.providers.shm0.shm0dv: shm0's direct verbs, plain functions on shm0's verbs
objects (README "The shm0 extension (shm0dv)").

Each function takes the object it is about first and raises PyverbsUserError when
that is not a verbs object of its kind (a str, a QP where a Context is meant), and
PyverbsRDMAError (EOPNOTSUPP) when it is one of another provider's (rdma-core's
pyverbs on a NIC), as mlx5dv's calls fail on a device that is not mlx5.
"""

import errno
from typing import NamedTuple

from ....hw import cma
from ... import checks
from ...cmid import CMID, CMEventChannel
from ...cq import CQ, WC
from ...device import Context, events_queued
from ...pyverbs_error import PyverbsRDMAError
from ...qp import QP
from ...srq import SRQ


def _shm0(obj, cls, name, what):
    """`obj` if it is shm0's `cls`; EOPNOTSUPP if it is another provider's object of
    that kind (a class of that name in its ancestry), PyverbsUserError otherwise."""
    if obj.__class__ is cls or isinstance(obj, cls):        # (the common case: one comparison)
        return obj
    if any(base.__name__ == cls.__name__ for base in type(obj).__mro__):
        raise PyverbsRDMAError(f"{what}: the {cls.__name__} is not shm0's", errno.EOPNOTSUPP)
    return checks.instance(obj, cls, name)


def events_pending(ctx):
    """How many async and rdma_cm events the device has queued in this process so
    far, whichever Context or event channel they went to: a program that remembers
    the last value drains its async events and CM channels only when it moved (no
    system call on a quiet round). Raises PyverbsUserError, PyverbsRDMAError
    (EOPNOTSUPP)."""
    if ctx.__class__ is not Context:
        _shm0(ctx, Context, "ctx", "events_pending")
    return events_queued.value


def completions_made(ctx):
    """How many work completions the device has put in this Context's CQs so far
    (it only grows; those a cq_sink's `direct` took never reach a CQ and are not
    counted): a caller that polls many CQs after a round of progress polls them only
    when it moved. Raises PyverbsUserError, PyverbsRDMAError (EOPNOTSUPP)."""
    if ctx.__class__ is not Context:
        _shm0(ctx, Context, "ctx", "completions_made")
    return ctx.completions_made


def context_lock(ctx):
    """The lock the Context's progress runs under (a reentrant lock). shm0 runs only
    inside calls: a layer above that runs it from its own calls (a DAT provider) takes
    this lock as its own, so that block() releasing it while asleep lets that layer's
    other threads in, and no second lock is ever waited on under it. Raises
    PyverbsUserError, PyverbsRDMAError (EOPNOTSUPP)."""
    return _shm0(ctx, Context, "ctx", "context_lock").lock


def progress(ctx):
    """Run the device once, as every poll, post and wait on the Context does, and return
    events_pending(ctx) after it (a caller's quiet round then makes no second call). A
    caller that takes the completions of several CQs runs it once, then poll_cq each.
    Raises PyverbsUserError, PyverbsRDMAError (EBADF: closed; EIO: the device had a
    fatal error; EOPNOTSUPP)."""
    if ctx.__class__ is not Context or ctx._closed or ctx._fatal:
        _shm0(ctx, Context, "ctx", "progress").check_usable("Failed to run the device")
    ctx.progress()
    return events_queued.value


def progress_locked(ctx):
    """progress(ctx) for a caller that holds context_lock(ctx) already, as a layer that
    runs the device from its own calls under that lock does (the DAT provider's every
    poll): the round runs without taking the lock again. Called without the lock, it
    races the Context's other threads. Raises as progress."""
    if ctx.__class__ is not Context or ctx._closed or ctx._fatal:
        _shm0(ctx, Context, "ctx", "progress_locked").check_usable("Failed to run the device")
    ctx._poll()
    return events_queued.value


def poll_cq(cq, num_entries):
    """ibv_poll_cq without running the device first: (npolled, [WC]) of the completions
    the CQ holds now. Raises PyverbsUserError, PyverbsRDMAError (EBADF: closed;
    EOVERFLOW once the CQ overran; EOPNOTSUPP)."""
    if cq.__class__ is not CQ:
        cq = _shm0(cq, CQ, "cq", "poll_cq")
    if num_entries.__class__ is not int or num_entries < 0:
        num_entries = checks.uint(num_entries, "num_entries")
    if cq._closed:
        cq._check_open("Failed to poll CQ")
    if not cq._wcs and not cq.overrun:
        return 0, []            # (the commonest answer of a caller that polls many CQs a round)
    lock = cq.context.lock
    lock.acquire()              # (acquire/release: half the cost of `with` on the hot path)
    try:
        return cq._take(num_entries)
    finally:
        lock.release()


def cq_sink(cq, queue, tag=None, direct=None):
    """Hand the CQ's completions to `queue` as the device makes them: each is appended as
    (tag, wc), in the order made, instead of being kept for poll_cq (which then finds
    none); those the CQ holds now are handed over first. queue None ends it: completions
    are kept again. For a consumer that runs the device itself and holds the Context's
    lock (context_lock) whenever it reads the queue: one queue for many CQs, read once a
    round, with no poll_cq per CQ (a kernel CQ's completion handler, in Python). A sunk
    CQ never overruns (the consumer bounds its own queue) and a QP's move to RESET takes
    back nothing handed over.

    `direct`, a callable direct(wr_id, byte_len, qp_num, solicited) -> bool, is offered
    each successful completion without immediate data or GRH first, as the device makes
    it and before any WC is made for it (unless the CQ is armed): True means it took
    the completion, which then goes nowhere else; False, that it goes to `queue` as
    usual. It runs inside the device's progress, under the Context's lock, wherever
    that progress runs (a poll, a post that completes at once, a wait): it may record
    and wake, but must call nothing on the device. `solicited` is wc_solicited's answer.
    What it takes is not counted by completions_made (no CQ holds it).

    Raises PyverbsUserError (queue without append, direct not callable, direct without
    queue), PyverbsRDMAError (EBADF: closed; EOPNOTSUPP)."""
    _shm0(cq, CQ, "cq", "cq_sink")
    if queue is not None and not callable(getattr(queue, "append", None)):
        raise checks.wrong("queue", "a queue with append() (a collections.deque) or None", queue)
    if direct is not None and (queue is None or not callable(direct)):
        raise checks.wrong("direct", "a callable, with a queue, or None", direct)
    with cq.context.lock:
        cq._check_open("Failed to sink a CQ")
        if queue is not None:
            for wc in cq._wcs:
                queue.append((tag, wc))
            cq._wcs.clear()
        cq._sink, cq._sink_tag, cq._direct = queue, tag, direct


def block(ctx, ready, deadline):
    """Sleep on the device's doorbell, running its progress (no core spins meanwhile),
    until ready() is true (-> True), the time.monotonic() `deadline` passes (-> False;
    None: no deadline) or another thread calls wake(ctx) (-> ready()'s value then).
    ready() is called with the Context's lock held. Raises InterruptedError when a
    signal handler returns during the sleep, PyverbsRDMAError (EBADF: the Context is
    or gets closed; EOPNOTSUPP), PyverbsUserError (ready not callable, deadline not
    a number)."""
    _shm0(ctx, Context, "ctx", "block")
    if not callable(ready):
        raise checks.wrong("ready", "callable", ready)
    if deadline is not None and (not isinstance(deadline, (int, float))
                                 or isinstance(deadline, bool)):
        raise checks.wrong("deadline", "a time.monotonic() value or None", deadline)
    return ctx.wait(ready, deadline)


def wake(ctx):
    """End the block(ctx, ...) calls of other threads under way: each looks at its
    ready() once more and returns. Raises PyverbsUserError, PyverbsRDMAError
    (EOPNOTSUPP)."""
    _shm0(ctx, Context, "ctx", "wake")
    ctx.wake()


def watch(ctx):
    """The device's look at its peers, if LOOK_SLICE has passed since the last (one
    clock read otherwise): the QPs of a peer process that died go to ERR with
    IBV_EVENT_QP_FATAL, also on paths that run no progress (a wait that finds events
    queued, a query, a post). Returns events_pending(ctx) after it. Raises
    PyverbsUserError, PyverbsRDMAError (EOPNOTSUPP)."""
    if ctx.__class__ is not Context:
        _shm0(ctx, Context, "ctx", "watch")
    ctx.watch()
    return events_queued.value


def cm_channel_fd(channel):
    """The CMEventChannel's fd (C's rdma_event_channel.fd): it polls readable while an
    event waits on the channel. With O_NONBLOCK set on it, CMEvent(channel) runs the
    device once and raises PyverbsRDMAError (EAGAIN) if still no event waits, as
    rdma_get_cm_event does on a non-blocking channel. Nothing runs the device while a
    process sleeps in select() on it: wait in block(). Raises PyverbsUserError,
    PyverbsRDMAError (EBADF: the channel is closed; EOPNOTSUPP)."""
    _shm0(channel, CMEventChannel, "channel", "cm_channel_fd")
    return channel._fd()


def cm_set_private_data_limit(cmid, nbytes):
    """The private data of this CMID's connect, accept and reject (and of the ids made
    from its events: a listener's requests) may be up to `nbytes` instead of IB CM's
    56, 196 and 148 bytes (SIDR's 180 and 136 on a UD id); EINVAL over it, as over
    those. shm0 carries up to 65000 bytes in one CM message.

    Its companion is a documented behaviour, no call: a DISCONNECTED event whose cause
    is the peer process's death (not its DREQ) has `status` -ECONNRESET (real rdma_cm:
    the dead process's kernel sends the DREQ, status 0).

    Raises PyverbsUserError, PyverbsRDMAError (EINVAL: nbytes over 65000; EBADF:
    closed; EOPNOTSUPP)."""
    _shm0(cmid, CMID, "cmid", "cm_set_private_data_limit")
    cmid._limit_private_data(nbytes)


class Shm0RqAttr(NamedTuple):
    """query_rq's answer: receives on the QP's own queue (`posted`), whether a receive
    (its own or one taken from its SRQ) is being filled by a message that has begun to
    arrive (`filling`), and whether a message found its receive credits used up
    (`credits_exhausted`, until RESET)."""
    posted: int
    filling: bool
    credits_exhausted: bool


def query_rq(qp):
    """The state of the QP's receive side (Shm0RqAttr). Raises PyverbsUserError,
    PyverbsRDMAError (EBADF: closed; EOPNOTSUPP)."""
    return Shm0RqAttr(*_shm0(qp, QP, "qp", "query_rq")._receive_state())


def wc_solicited(wc):
    """Whether the send a receive completion (a WC of a shm0 CQ) took asked for a
    solicited event (IBV_SEND_SOLICITED): ibv_wc has no such bit, and a DAT provider
    that polls its CQ must still tell which receives wake a solicited-only waiter.
    Raises PyverbsUserError (not a WC), PyverbsRDMAError (EOPNOTSUPP: not shm0's)."""
    if wc.__class__ is not WC:
        _shm0(wc, WC, "wc", "wc_solicited")
    return wc.solicited


def srq_available(srq):
    """How many receives are still on the SRQ (posted, not yet taken by a message).
    Raises PyverbsUserError, PyverbsRDMAError (EBADF: closed; EOPNOTSUPP)."""
    return _shm0(srq, SRQ, "srq", "srq_available")._available()


def take_count(qp):
    """How many receives (its own or its SRQ's) messages have taken at the QP since it
    was created: it only grows. Raises PyverbsUserError, PyverbsRDMAError (EBADF:
    closed; EOPNOTSUPP)."""
    _shm0(qp, QP, "qp", "take_count")._check_open("Failed to count the QP's receives")
    return qp._taken


def set_recv_credits(qp, n):
    """From now on the QP may take at most `n` more receives (None: no limit; RESET
    lifts it too). A message that would need one more is given none: the receive
    stays on the SRQ (or the QP's queue, which ERR then flushes), the QP goes to ERR
    with IBV_EVENT_QP_FATAL, and query_rq(qp).credits_exhausted is true. Raises
    PyverbsUserError (n not an int >= 0 or None), PyverbsRDMAError (EBADF: closed;
    EOPNOTSUPP)."""
    _shm0(qp, QP, "qp", "set_recv_credits")
    qp._set_receive_credits(None if n is None else checks.uint(n, "n", 62))


def consumer_memory_remote_ok(ctx):
    """(ok, why): whether memory the program owns, registered with MR(pd, length,
    access, address=addr), may have remote access here: peers reach it by cross-memory
    attach, which the kernel may forbid (Yama's ptrace_scope); MR then refuses remote
    access with EOPNOTSUPP. `why` says which rule decided. Raises PyverbsUserError,
    PyverbsRDMAError (EOPNOTSUPP)."""
    _shm0(ctx, Context, "ctx", "consumer_memory_remote_ok")
    return cma.status()
