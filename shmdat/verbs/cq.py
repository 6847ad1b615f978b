"""Completion queues (pyverbs.cq): CQ, CompChannel and WC.

A CQ holds work completions in order. The device is software, so polling a CQ
(or waiting on a channel) is also what moves the Context's QPs along: a send
posted on one QP completes when the other side polls, with no thread.

A CompChannel delivers one event per arming (`cq.req_notify()`): the next
completion, or with `solicited_only` the next solicited receive or error, as
ibv_get_cq_event(3) says. Its `fd` polls readable while an event waits.
"""

import collections
import errno
import os

from . import checks, libibverbs_enums as e
from .base import PyverbsCM, PyverbsObject, close_children
from .device import LIMITS, Context
from .pyverbs_error import PyverbsRDMAError, PyverbsUserError

_NOT_ARMED, _ARMED_ALL, _ARMED_SOLICITED = 0, 1, 2


class WC:
    """ibv_wc: one work completion.

    Every field has its default on the class, so that the device makes a
    completion by setting only what it knows (wc(), one per completion, on the
    hot path); a program's WC(...) sets them all, as pyverbs' constructor does."""
    wr_id = status = opcode = vendor_err = byte_len = qp_num = src_qp = imm_data = wc_flags = 0
    pkey_index = slid = sl = dlid_path_bits = 0
    solicited = False       # shm0's: the sender asked for a solicited event (shm0dv.wc_solicited)

    def __init__(self, wr_id=0, status=0, opcode=0, vendor_err=0, byte_len=0, qp_num=0, src_qp=0,
                 imm_data=0, wc_flags=0, pkey_index=0, slid=0, sl=0, dlid_path_bits=0):
        self.wr_id, self.status, self.opcode, self.vendor_err = wr_id, status, opcode, vendor_err
        self.byte_len, self.qp_num, self.src_qp, self.imm_data = byte_len, qp_num, src_qp, imm_data
        self.wc_flags, self.pkey_index, self.slid, self.sl = wc_flags, pkey_index, slid, sl
        self.dlid_path_bits = dlid_path_bits

    def __str__(self):
        return "".join(f"{name:<22}: {getattr(self, name)}\n" for name in _WC_FIELDS)


_WC_FIELDS = ("wr_id", "status", "opcode", "vendor_err", "byte_len", "qp_num", "src_qp", "imm_data",
              "wc_flags", "pkey_index", "slid", "sl", "dlid_path_bits", "solicited")
_new = object.__new__
_SUCCESS = int(e.IBV_WC_SUCCESS)


def new_wc(wr_id, status, opcode, byte_len, qp_num):
    """The device's completion: the fields a completion always has, the rest at
    their defaults (about a third of the cost of WC(...) with keywords)."""
    made = _new(WC)
    made.wr_id, made.status, made.opcode, made.byte_len, made.qp_num = wr_id, status, opcode, byte_len, qp_num
    return made


class CompChannel(PyverbsCM):
    """ibv_create_comp_channel: `CompChannel(ctx)`."""
    context_set = "ccs"

    def __init__(self, context):
        super().__init__()
        if not isinstance(context, Context):
            raise PyverbsUserError(f"Cannot create a completion channel from {type(context)}")
        self.context = context
        context.add_ref(self)
        self.cqs = set()
        self._events = collections.deque()          # CQs whose event waits to be got
        # The pipe behind `fd`, made when a program first asks for it: a program that
        # only calls get_cq_event pays no write and read per event.
        self._r = self._w = None

    @property
    def fd(self):
        """The channel's fd: it polls readable while an event waits (C's
        ibv_comp_channel.fd). Raises PyverbsRDMAError (EBADF: closed)."""
        with self.context.lock:
            if self._r is None:
                self._check_open("Failed to get the completion channel's fd")
                r, w = os.pipe()
                os.set_blocking(r, False)
                os.set_blocking(w, False)
                if self._events:
                    os.write(w, b"\1" * len(self._events))
                self._r, self._w = r, w
            return self._r

    def _notify(self, cq):
        self._events.append(cq)
        if self._w is not None:
            os.write(self._w, b"\1")
        self.context.wake_waiters()

    def get_cq_event(self, expected_cq):
        """ibv_get_cq_event: wait for the next event; it must be `expected_cq`'s.

        Raises PyverbsRDMAError (EBADF on a closed channel; EINVAL when the
        event is of another CQ, which is then consumed, as pyverbs does).
        """
        if expected_cq.__class__ is not CQ:
            checks.instance(expected_cq, CQ, "expected_cq")
        self._check_open("Failed to get CQ event")
        while True:
            self.context.block(lambda: bool(self._events) or self._closed)
            with self.context.lock:     # (the event and its byte on the fd's pipe go together)
                self._check_open("Failed to get CQ event")
                if self._events:        # (else another thread waiting here took it)
                    cq = self._events.popleft()
                    if self._r is not None:
                        os.read(self._r, 1)
                    break
        if cq is not expected_cq:
            raise PyverbsRDMAError("Received event on an unexpected CQ", errno.EINVAL)
        expected_cq.num_events += 1

    def _release(self):
        close_children([self.cqs])
        self.context.ccs.discard(self)
        self._events.clear()
        if self._r is not None:
            os.close(self._r)
            os.close(self._w)


class CQ(PyverbsCM):
    """ibv_create_cq: `CQ(ctx, cqe, cq_context=None, channel=None, comp_vector=0)`.

    Raises PyverbsRDMAError: EINVAL for cqe outside 1..max_cqe or a comp_vector
    the device lacks, EBADF for a closed context or channel.
    """
    context_set = "cqs"

    def __init__(self, context, cqe, cq_context=None, channel=None, comp_vector=0):
        super().__init__()
        if not isinstance(context, Context):
            raise PyverbsUserError(f"Cannot create a CQ from {type(context)}")
        if channel is not None and not isinstance(channel, CompChannel):
            raise PyverbsUserError(f"channel must be a CompChannel, not {type(channel)}")
        cqe = _check_cqe(cqe, "Failed to create a CQ")
        if checks.uint(comp_vector, "comp_vector") >= context.num_comp_vectors:
            raise PyverbsRDMAError(f"Failed to create a CQ: comp_vector {comp_vector!r} is not "
                                   f"below num_comp_vectors ({context.num_comp_vectors})", errno.EINVAL)
        if channel is not None:
            channel._check_open("Failed to create a CQ")
            channel.cqs.add(self)
        self.context, self.channel, self.cq_context = context, channel, cq_context
        context.add_ref(self)
        self.cqe = cqe
        self.num_events = 0
        self.qps = set()
        self._wcs = collections.deque()
        self._armed = _NOT_ARMED
        self.overrun = False                # more completions came than cqe: the CQ is in error
        # shm0dv.cq_sink: completions handed to this queue as (tag, wc), not kept in _wcs,
        # successful ones offered first to `direct` (_complete_ok)
        self._sink = self._sink_tag = self._direct = None

    @property
    def comp_channel(self):
        return self.channel

    def poll(self, num_entries=1):
        """ibv_poll_cq -> (npolled, [WC]): up to num_entries completions, oldest first.

        Raises PyverbsRDMAError (EBADF on a closed CQ; EOVERFLOW once the CQ overran).
        """
        if num_entries.__class__ is not int or num_entries < 0:
            num_entries = checks.uint(num_entries, "num_entries")
        if self._closed:
            self._check_open("Failed to poll CQ")
        context = self.context
        lock = context.lock
        lock.acquire()          # (as a NIC's CQ lock: another thread's round may be appending)
        try:
            if len(self._wcs) < num_entries or not num_entries:
                context._poll()     # the device runs unless the CQ can answer alone
            return self._take(num_entries)
        finally:
            lock.release()

    def _take(self, num_entries):
        """Up to num_entries of the completions there (ibv_poll_cq once the device ran),
        under the Context's lock: the device's rounds append to the queue under it."""
        if self.overrun:
            raise PyverbsRDMAError("Failed to poll CQ: it overran", errno.EOVERFLOW)
        wcs = self._wcs
        n = len(wcs)
        if n == 0:
            return 0, []
        if n <= num_entries:            # all of them (a poller that drains: the common case)
            taken = list(wcs)
            wcs.clear()
            return n, taken
        if num_entries == 1:
            return 1, [wcs.popleft()]
        taken = [wcs.popleft() for _ in range(num_entries)]
        return num_entries, taken

    def req_notify(self, solicited_only=False):
        """ibv_req_notify_cq: one event on the channel for the next completion
        (solicited_only: the next solicited receive, or any error)."""
        solicited_only = checks.boolean(solicited_only, "solicited_only")
        self._check_open("Request notify CQ")
        if self.channel is None:
            raise PyverbsRDMAError("Request notify CQ: the CQ has no completion channel",
                                   errno.EINVAL)
        self._armed = _ARMED_SOLICITED if solicited_only else _ARMED_ALL

    def ack_events(self, num_events):
        """ibv_ack_cq_events."""
        self.num_events -= checks.uint(num_events, "num_events")

    def resize(self, cqe):
        """ibv_resize_cq: at least `cqe` entries. EINVAL below the completions held."""
        self._check_open("Failed to resize CQ")
        cqe = _check_cqe(cqe, "Failed to resize CQ")
        if cqe < len(self._wcs):
            raise PyverbsRDMAError(f"Failed to resize CQ: it holds {len(self._wcs)} completions",
                                   errno.EINVAL)
        self.cqe = cqe

    def _complete_ok(self, wr_id, opcode, byte_len, qp_num, src_qp=0, solicited=False):
        """A QP's successful completion with no immediate data or GRH (the commonest):
        taken by the consumer shm0dv.cq_sink named `direct` if it will (with no WC
        made), unless the CQ is armed (its channel must hear of it); otherwise made a WC
        for _complete."""
        direct = self._direct
        if direct is not None and not self._armed and direct(wr_id, byte_len, qp_num, solicited):
            return
        wc = new_wc(wr_id, _SUCCESS, opcode, byte_len, qp_num)
        wc.src_qp = src_qp
        self._complete(wc, solicited)

    def _complete(self, wc, solicited=False):
        """A QP's completion arrives as a WC (every one that _complete_ok's consumer did
        not take)."""
        if len(self._wcs) >= self.cqe:
            if not self.overrun:            # as a NIC's CQ overrun: nothing more is kept,
                self.overrun = True         # IBV_EVENT_CQ_ERR, and its QPs go to ERR
                self.context._async_event(e.IBV_EVENT_CQ_ERR, cq=self)
                for qp in list(self.qps):
                    qp._fatal()
            return
        if solicited:
            wc.solicited = True
        if self._sink is None:
            self._wcs.append(wc)
        else:
            self._sink.append((self._sink_tag, wc))
        self.context.completions_made += 1
        armed = self._armed
        if armed and (armed == _ARMED_ALL or solicited or wc.status != e.IBV_WC_SUCCESS):
            self._armed = _NOT_ARMED
            self.channel._notify(self)

    def _purge(self, qp_num):
        """Drop the completions of a QP that went to RESET (a sunk CQ's are handed over)."""
        kept = [wc for wc in self._wcs if wc.qp_num != qp_num]
        self._wcs.clear()
        self._wcs.extend(kept)

    def _release(self):
        close_children([self.qps])
        self.context.wait_acked(self)
        if self.channel is not None:
            self.channel.cqs.discard(self)
        self.context.cqs.discard(self)
        self._wcs.clear()

    def __str__(self):
        return f"CQ\n  CQEs: {self.cqe}\n"


def _check_cqe(cqe, what):
    """cqe as the C int pyverbs makes of it (Cython truncates a float, as
    rdma-core's tests rely on with max_cqe / 2); EINVAL outside 1..max_cqe."""
    cqe = checks.uint(cqe, "cqe")
    if not 1 <= cqe <= LIMITS["max_cqe"]:
        raise PyverbsRDMAError(f"{what}: cqe {cqe!r} is not from 1 to max_cqe ({LIMITS['max_cqe']})",
                               errno.EINVAL)
    return cqe


class PollCqAttr(PyverbsObject):
    """ibv_poll_cq_attr (comp_mask only, as in verbs.h)."""

    def __init__(self, comp_mask=0):
        super().__init__()
        self.comp_mask = comp_mask


class CqInitAttrEx(PyverbsObject):
    """ibv_cq_init_attr_ex."""

    def __init__(self, cqe=100, channel=None, comp_vector=0, wc_flags=0, comp_mask=0, flags=0,
                 parent_domain=None):
        super().__init__()
        self.cqe, self.comp_channel, self.comp_vector = cqe, channel, comp_vector
        self.wc_flags, self.comp_mask, self.flags = wc_flags, comp_mask, flags
        self.parent_domain = parent_domain


class CQEX(CQ):
    """ibv_create_cq_ex: `CQEX(ctx, CqInitAttrEx(...))`, polled a batch at a time:
    start_poll, poll_next, end_poll (0, or ENOENT when nothing is there), with the
    current completion read by `status`, `wr_id` and read_*().

    Raises PyverbsRDMAError: EOPNOTSUPP for wc_flags beyond the standard ones
    (timestamps, ...) or a parent domain, and the errors of CQ.
    """

    def __init__(self, context, init_attr=None):
        attr = checks.instance(init_attr, CqInitAttrEx, "init_attr", none=True) or CqInitAttrEx()
        checks.uint(attr.comp_mask, "init_attr.comp_mask")
        if checks.uint(attr.wc_flags, "init_attr.wc_flags", 64) & ~e.IBV_WC_STANDARD_FLAGS \
                or attr.parent_domain is not None or checks.uint(attr.flags, "init_attr.flags"):
            raise PyverbsRDMAError("Failed to create extended CQ: shm0 reports the standard "
                                   "completion fields only", errno.EOPNOTSUPP)
        super().__init__(context, attr.cqe, None, attr.comp_channel, attr.comp_vector)
        self.wc_flags = attr.wc_flags
        self._current = None

    def start_poll(self, attr=None):
        """ibv_start_poll: 0 and the first completion current, or ENOENT."""
        self._check_open("Failed to poll CQ")
        self.context.progress()
        if self.overrun:
            raise PyverbsRDMAError("Failed to poll CQ: it overran", errno.EOVERFLOW)
        return self.poll_next()

    def poll_next(self):
        """ibv_next_poll: 0 and the next completion current, or ENOENT."""
        with self.context.lock:
            if not self._wcs:
                return errno.ENOENT
            self._current = self._wcs.popleft()
        return 0

    def end_poll(self):
        """ibv_end_poll."""
        self._current = None

    @property
    def status(self):
        return self._current.status

    @property
    def wr_id(self):
        return self._current.wr_id

    def read_opcode(self):
        return self._current.opcode

    def read_vendor_err(self):
        return self._current.vendor_err

    def read_byte_len(self):
        return self._current.byte_len

    def read_imm_data(self):
        return self._current.imm_data

    def read_qp_num(self):
        return self._current.qp_num

    def read_src_qp(self):
        return self._current.src_qp

    def read_wc_flags(self):
        return self._current.wc_flags

    def read_slid(self):
        return self._current.slid

    def read_sl(self):
        return self._current.sl

    def read_dlid_path_bits(self):
        return self._current.dlid_path_bits
