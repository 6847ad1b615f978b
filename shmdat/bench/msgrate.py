"""Message rate: N sender processes to one receiver over shmdat, 8-byte messages."""

import multiprocessing
import time

import shmdat
from shmdat import EventNumber, EvdFlags

from .plan import TIMEOUT_US
from .runner import error_report, expect, stop_on_sigterm, supervised
from .shmdat_transport import WINDOW, _next

SIZE = 8
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
            total = senders * per_sender
            first = None
            for _ in range(total):
                d = _next(recv_evd, False).data
                if first is None:
                    first = time.perf_counter()
                d.ep.post_recv(iov, None)
            elapsed = time.perf_counter() - first
            conn.send(("rate", (total - 1) / elapsed if elapsed > 0 else float("nan")))
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
            iov = [lmr.triplet(0, SIZE)]
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
    """Messages per second that one receiver takes from `senders` processes."""
    per_sender = max(1, total // senders)
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
        _, rate = expect(rconn, WHAT)
        for c in sconns:
            assert expect(c, WHAT) == "sent"
            c.send("bye")
        rconn.send("bye")
    return {"senders": senders, "messages": per_sender * senders, "size": SIZE, "msgs_per_s": rate}
