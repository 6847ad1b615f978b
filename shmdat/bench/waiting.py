"""What waiting costs: the CPU of an idle blocked waiter, and how soon a blocked
waiter learns that its peer died (SIGKILL to CONNECTION_EVENT_BROKEN)."""

import multiprocessing
import os
import signal
import time

import shmdat
from shmdat import EventNumber, EvdFlags
from shmdat.hw import shm

from .plan import TIMEOUT_US
from .runner import expect, stop_on_sigterm, supervised

WHAT = "waiting benchmark"
_ctx = multiprocessing.get_context("spawn")


def _node(ia):
    pz = ia.pz_create()
    conn_evd = ia.evd_create(8, EvdFlags.CONNECTION)
    dto = ia.evd_create(8, EvdFlags.DTO)
    return conn_evd, dto, ia.ep_create(pz, dto, dto, conn_evd)


def _victim(conn):
    """Connects to the survivor, says so, then waits to be killed."""
    stop_on_sigterm()
    with shmdat.ia_open() as ia:
        conn_evd, _, ep = _node(ia)
        address, conn_qual = conn.recv()
        ep.connect(address, conn_qual, TIMEOUT_US)
        conn_evd.wait(TIMEOUT_US)
        conn.send("connected")
        conn.recv()


def _survivor(conn, idle_seconds):
    """Accepts the victim; reports the CPU of an idle blocked wait, then when the
    death was seen (time.monotonic is one clock for every process)."""
    stop_on_sigterm()
    with shmdat.ia_open() as ia:
        conn_evd, dto, ep = _node(ia)
        cr_evd = ia.evd_create(4, EvdFlags.CR)
        psp = ia.psp_create_any(cr_evd)
        conn.send((ia.address, psp.conn_qual))
        cr_evd.wait(TIMEOUT_US)[0].data.cr.accept(ep)
        conn_evd.wait(TIMEOUT_US)
        cpu = time.process_time()
        try:
            dto.wait(int(idle_seconds * 1e6))
        except shmdat.TimeoutExpired:
            pass
        conn.send(("idle_cpu", (time.process_time() - cpu) / idle_seconds))
        event, _ = conn_evd.wait(TIMEOUT_US)
        seen = time.monotonic()
        assert event.number == EventNumber.CONNECTION_EVENT_BROKEN, event.number
        conn.send(("seen", seen))


def measure(idle_seconds=2.0, deaths=3):
    """{"idle_waiter_cpu_percent": ..., "death_notice_ms": [...]}: one idle wait, `deaths` kills."""
    cpu, notices = None, []
    for _ in range(deaths):
        s_conn, s_child = _ctx.Pipe()
        v_conn, v_child = _ctx.Pipe()
        survivor = _ctx.Process(target=_survivor, args=(s_child, idle_seconds if cpu is None else 0.01),
                                daemon=True)
        victim = _ctx.Process(target=_victim, args=(v_child,), daemon=True)
        try:
            with supervised([survivor, victim]):
                survivor.start()
                victim.start()
                s_child.close()
                v_child.close()
                v_conn.send(expect(s_conn, WHAT))
                assert expect(v_conn, WHAT) == "connected"
                _, fraction = expect(s_conn, WHAT, idle_seconds + 60)
                cpu = 100 * fraction if cpu is None else cpu
                # The survivor is now blocked in evd.wait on its connection EVD.
                time.sleep(0.2)     # not synchronisation: lets the waiter get past its spin into the sleep
                killed = time.monotonic()
                os.kill(victim.pid, signal.SIGKILL)
                _, seen = expect(s_conn, WHAT)
                notices.append(1000 * (seen - killed))
        finally:
            shm.reclaim_dead()      # what the killed victim left, as `shmdat gc` would
    return {"idle_waiter_cpu_percent": cpu, "death_notice_ms": notices}
