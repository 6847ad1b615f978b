"""Message rate of the DAT layer: N sender processes to one receiver over shmdat,
8-byte messages, each sender keeping WINDOW sends posted; the receiver waits in
evd.wait and reposts. Timed at the receiver from its first message to its last,
in REPS stretches: the median and min of their rates."""

import multiprocessing
import statistics
import time

import shmdat
from shmdat import EventNumber, EvdFlags

from .plan import MSGRATE_SIZE, REPS, TIMEOUT_US, WINDOW, rate_row
from .runner import error_report, expect, stop_on_sigterm, supervised
from .shmdat_transport import _next

WHAT = "message-rate test"
_ctx = multiprocessing.get_context("spawn")


def _receiver(conn, senders, per_sender):
    stop_on_sigterm()
    try:
        with shmdat.ia_open() as ia:
            pz = ia.pz_create()
            cr_evd = ia.evd_create(senders + 1, EvdFlags.CR)
            conn_evd = ia.evd_create(2 * senders + 1, EvdFlags.CONNECTION)
            recv_evd = ia.evd_create(senders * WINDOW * 2, EvdFlags.DTO)
            req_evd = ia.evd_create(8, EvdFlags.DTO)
            lmr = ia.lmr_create(pz, 4096)
            iov = [lmr.triplet(0, 64)]
            psp = ia.psp_create_any(cr_evd)
            conn.send((ia.address, psp.conn_qual))
            eps = []
            for _ in range(senders):
                cr = cr_evd.wait(TIMEOUT_US)[0].data.cr
                ep = ia.ep_create(pz, recv_evd, req_evd, conn_evd)
                for _ in range(WINDOW):
                    ep.post_recv(iov, None)
                cr.accept(ep)
                eps.append(ep)
            for _ in range(senders):
                if conn_evd.wait(TIMEOUT_US)[0].number != EventNumber.CONNECTION_EVENT_ESTABLISHED:
                    raise RuntimeError("a sender failed to connect")
            conn.send("ready")
            # Message indices at which the clock is read: the first, then REPS stretches.
            bounds = [k * (senders * per_sender - 1) // REPS for k in range(REPS + 1)]
            stamps = []
            for count in [1] + [b - a for a, b in zip(bounds, bounds[1:])]:
                for _ in range(count):
                    _next(recv_evd, False).data.ep.post_recv(iov, None)
                stamps.append(time.perf_counter())
            rates = [(b - a) / (t1 - t0) for a, b, t0, t1 in zip(bounds, bounds[1:], stamps, stamps[1:])]
            conn.send(("rates", rates))
            conn.recv()     # the senders are done: close
    except Exception:
        conn.send(error_report())


def _sender(conn, address, conn_qual, count):
    stop_on_sigterm()
    try:
        with shmdat.ia_open() as ia:
            pz = ia.pz_create()
            conn_evd = ia.evd_create(4, EvdFlags.CONNECTION)
            dto = ia.evd_create(2 * WINDOW, EvdFlags.DTO)
            lmr = ia.lmr_create(pz, 4096)
            ep = ia.ep_create(pz, dto, dto, conn_evd)
            ep.connect(address, conn_qual, TIMEOUT_US)
            conn_evd.wait(TIMEOUT_US)
            conn.recv()     # go
            iov = [lmr.triplet(0, MSGRATE_SIZE)]
            outstanding = 0
            for _ in range(count):
                if outstanding == WINDOW:
                    _next(dto, False)
                    outstanding -= 1
                ep.post_send(iov, None)
                outstanding += 1
            for _ in range(outstanding):
                _next(dto, False)
            conn.send("sent")
            conn.recv()     # the receiver has everything: disconnect
    except Exception:
        conn.send(error_report())


def run(senders, total):
    """The message-rate row (plan.rate_row) of one receiver taking `total` messages from
    `senders` processes (each sends at least REPS + 1)."""
    per_sender = max(REPS + 1, total // senders)
    rconn, rchild = _ctx.Pipe()
    receiver = _ctx.Process(target=_receiver, args=(rchild, senders, per_sender), daemon=True)
    with supervised([receiver]) as procs:
        receiver.start()
        rchild.close()
        address, conn_qual = expect(rconn, WHAT)
        sconns = []
        for _ in range(senders):
            mine, theirs = _ctx.Pipe()
            p = _ctx.Process(target=_sender, args=(theirs, address, conn_qual, per_sender), daemon=True)
            p.start()
            theirs.close()
            procs.append(p)
            sconns.append(mine)
        assert expect(rconn, WHAT) == "ready"
        for c in sconns:
            c.send("go")
        _, rates = expect(rconn, WHAT)
        for c in sconns:
            assert expect(c, WHAT) == "sent"
            c.send("bye")
        rconn.send("bye")
    return rate_row("shmdat", senders, "block", statistics.median(rates), min(rates))
