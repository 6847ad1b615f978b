"""shmdat as a benchmark transport: one connection, send/recv and RDMA over it.

Each side keeps WINDOW receives posted (all over the same buffer: the bytes
are not checked) and reaps its request completions lazily, WINDOW at most
outstanding, as a DAT consumer tuned for throughput would.
"""

import time

import shmdat
from shmdat import EpAttr, EventNumber, EvdFlags, RmrTriplet

from .plan import TIMEOUT_US, WINDOW


class ShmdatEndpoint:
    def __init__(self, role, ctrl, max_size):
        self.ia = shmdat.ia_open()
        try:
            self._connect(role, ctrl, max_size)
        except BaseException:
            self.ia.close()     # at once: its LMRs may be large
            raise
        self.outstanding = 0
        self.iovs = {}          # (op, size) -> its local_iov, built once as the verbs side's WRs are

    def _connect(self, role, ctrl, max_size):
        ia = self.ia
        self.pz = ia.pz_create()
        self.recv_evd = ia.evd_create(4 * WINDOW, EvdFlags.DTO)
        self.req_evd = ia.evd_create(4 * WINDOW, EvdFlags.DTO)
        conn_evd = ia.evd_create(8, EvdFlags.CONNECTION)
        self.src = ia.lmr_create(self.pz, max_size)
        self.dst = ia.lmr_create(self.pz, max_size)
        attr = EpAttr(max_rdma_read_out=WINDOW, max_rdma_read_in=WINDOW)
        self.ep = ia.ep_create(self.pz, self.recv_evd, self.req_evd, conn_evd, attr)
        self.recv_iov = [self.dst.triplet(0, max_size)]
        for _ in range(WINDOW):
            self.ep.post_recv(self.recv_iov, None)
        if role == "server":
            cr_evd = ia.evd_create(8, EvdFlags.CR)
            psp = ia.psp_create_any(cr_evd)
            ctrl.send((ia.address, psp.conn_qual))
            event, _ = cr_evd.wait(TIMEOUT_US)
            event.data.cr.accept(self.ep)
            self._expect(conn_evd, EventNumber.CONNECTION_EVENT_ESTABLISHED)
            psp.free()
            cr_evd.free()
        else:
            address, conn_qual = ctrl.recv()
            self.ep.connect(address, conn_qual, TIMEOUT_US)
            self._expect(conn_evd, EventNumber.CONNECTION_EVENT_ESTABLISHED)
        ctrl.send(tuple(self.dst.rmr_triplet()))
        self.remote = RmrTriplet(*ctrl.recv())

    @staticmethod
    def _expect(evd, number):
        event, _ = evd.wait(TIMEOUT_US)
        if event.number != number:
            raise RuntimeError(f"expected {number.name}, got {event.number.name}")

    def _reap(self, poll, keep):
        """Reap request completions until at most `keep` are outstanding."""
        evd = self.req_evd
        while self.outstanding > keep:
            event = _next(evd, poll)
            if event.data.status:
                raise RuntimeError(f"request completed with {event.data.status.name}")
            self.outstanding -= 1

    def _iov(self, op, size):
        iov = self.iovs.get((op, size))
        if iov is None:
            iov = self.iovs[(op, size)] = [(self.dst if op == "rdma_read" else self.src).triplet(0, size)]
        return iov

    def send(self, size):
        if self.outstanding >= WINDOW:
            self._reap(False, WINDOW - 1)
        self.ep.post_send(self._iov("send", size), None)
        self.outstanding += 1

    def recv(self, poll):
        event = _next(self.recv_evd, poll)
        self.ep.post_recv(self.recv_iov, None)
        return event.data.transferred_length

    def rdma(self, op, size):
        if self.outstanding >= WINDOW:
            self._reap(False, WINDOW - 1)
        remote = self.remote._replace(segment_length=size)
        if op == "rdma_write":
            self.ep.post_rdma_write(self._iov(op, size), None, remote)
        else:
            self.ep.post_rdma_read(self._iov(op, size), None, remote)
        self.outstanding += 1

    def finish(self, poll):
        self._reap(poll, 0)

    def close(self):
        self.ia.close()


def _next(evd, poll):
    """The next event: dequeued in a loop when polling, from evd.wait when blocking. The
    polling loop reads the clock once every _CLOCK_EVERY empty dequeues only (a clock read
    costs as much as a dozen Python lines here; the verbs and mpi4py loops read none)."""
    if not poll:
        return evd.wait(TIMEOUT_US)[0]
    dequeue, empty = evd.dequeue, shmdat.QueueEmpty
    empties, deadline = 0, None
    while True:
        try:
            return dequeue()
        except empty:
            empties += 1
            if not empties % _CLOCK_EVERY:
                if deadline is None:
                    deadline = time.monotonic() + TIMEOUT_US / 1e6
                elif time.monotonic() > deadline:
                    raise TimeoutError("no event while polling") from None


_CLOCK_EVERY = 1024
