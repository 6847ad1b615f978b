"""Running a transport's cells between two spawned processes (or under mpiexec),
and stopping benchmark processes without leaving their memory behind."""

import contextlib
import importlib.util
import json
import multiprocessing
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import wait

import numpy as np

from ..hw import shm
from .alternatives import PipeEndpoint, ZmqEndpoint
from .plan import REPS, Cell, iterations
from .shmdat_transport import ShmdatEndpoint
from .timing import drive, serve
from .verbs_transport import VerbsEndpoint

CELL_TIMEOUT = 120.0        # seconds: one cell that takes longer means the transport hung
JOIN_TIMEOUT = 10.0         # seconds a benchmark process gets to exit, then again after SIGTERM
_ctx = multiprocessing.get_context("spawn")


def stop_on_sigterm():
    """In a benchmark process: make SIGTERM an exception, so that its `with` and
    `finally` blocks close its IA (default SIGTERM would leave its segments behind)."""
    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)      # once: never inside our own cleanup
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, stop)


def error_report():
    """What a benchmark process sends when it fails: the error in one line, and its traceback."""
    tb = traceback.format_exc()
    return ("error", tb.strip().splitlines()[-1], tb)


def expect(conn, what, timeout=CELL_TIMEOUT):
    """The next message from a benchmark process; RuntimeError if it failed, died or hung."""
    if not conn.poll(timeout):
        raise RuntimeError(f"{what}: no answer within {timeout:.0f} s")
    try:
        msg = conn.recv()
    except EOFError:
        raise RuntimeError(f"{what}: a benchmark process died") from None
    if isinstance(msg, tuple) and msg[0] == "error":
        raise RuntimeError(f"{what} failed: {msg[1]}\n\n{msg[2]}")
    return msg


def reap(procs, timeout=JOIN_TIMEOUT):
    """Join benchmark processes. One still running after `timeout` is asked to stop
    (SIGTERM: it closes its IA), and killed only if it does not; what a killed one
    left in /dev/shm is reclaimed at once (its owner is dead: `shmdat gc` would)."""
    killed = []
    for p in procs:
        p.join(timeout)
        if p.is_alive():
            p.terminate()
            p.join(JOIN_TIMEOUT)
        if p.is_alive():
            p.kill()
            p.join()
            killed.append(p.pid)
    if killed:
        shm.reclaim_dead()
        print(f"shmdat bench: killed benchmark process(es) {killed}, which did not stop;"
              " their shared memory was reclaimed", file=sys.stderr)


@contextlib.contextmanager
def supervised(procs):
    """Reap `procs` (a list that may grow inside) on the way out. On an error, stop
    them at once: a peer of the process that failed may wait for it for ever."""
    try:
        yield procs
    except BaseException:
        reap(procs, timeout=0)
        raise
    reap(procs)


def _endpoint(transport, role, ctrl, max_size, data_conn):
    if transport == "shmdat":
        return ShmdatEndpoint(role, ctrl, max_size)
    if transport == "shmdat.verbs":
        return VerbsEndpoint(role, ctrl, max_size)
    if transport == "multiprocessing.Pipe":
        return PipeEndpoint(role, ctrl, max_size, data_conn)
    if transport == "pyzmq":
        return ZmqEndpoint(role, ctrl, max_size)
    raise ValueError(transport)


def _side(transport, role, ctrl, results, cells, budget, max_size, data_conn):
    stop_on_sigterm()
    try:
        t = _endpoint(transport, role, ctrl, max_size, data_conn)
        try:
            if role == "server":
                serve(t, ctrl)
            else:
                drive(t, ctrl, cells, budget, lambda cell, med, mn: results.send(("row", cell, med, mn)))
        finally:
            t.close()
        results.send(("done",))
    except Exception:
        results.send(error_report())


def run_pair(transport, cells, budget, on_row):
    """Measure `cells` over `transport` between two spawned processes; on_row(cell, median, min)."""
    max_size = max(c.size for c in cells)
    ctrl_a, ctrl_b = _ctx.Pipe()
    data_a, data_b = _ctx.Pipe() if transport == "multiprocessing.Pipe" else (None, None)
    conns = []
    with supervised([]) as procs:
        for role, ctrl, data in (("server", ctrl_a, data_a), ("client", ctrl_b, data_b)):
            mine, theirs = _ctx.Pipe(duplex=False)
            p = _ctx.Process(target=_side, args=(transport, role, ctrl, theirs, cells, budget, max_size, data),
                             daemon=True)
            p.start()
            procs.append(p)
            conns.append(mine)
            # Only the children hold their ends now: a child that exits is an EOF to its peer.
            for end in (theirs, ctrl, data):
                if end is not None:
                    end.close()
        pending = set(conns)
        while pending:
            ready = wait(list(pending), CELL_TIMEOUT)
            if not ready:
                raise RuntimeError(f"{transport}: no progress within {CELL_TIMEOUT:.0f} s")
            for conn in ready:
                msg = expect(conn, transport)
                if msg[0] == "row":
                    on_row(*msg[1:])
                else:
                    pending.discard(conn)


def find_mpiexec():
    """The mpiexec beside the interpreter (the mpich wheel puts it in the venv's bin,
    which is not on PATH when the venv is not activated), else the one on PATH."""
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", os.defpath)])
    return shutil.which("mpiexec", path=path)


def mpi_available():
    """None if mpi4py can run, else why not."""
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    if not find_mpiexec():
        return "no mpiexec beside the interpreter or on PATH"
    return None


def run_mpi(cells, budget, on_row, transport="mpi4py", ranks=2, worker="shmdat.bench.mpi_worker"):
    """Measure `cells` with the MPI program `worker` (a module) on `ranks` ranks, one JSON
    line per result: on mpi4py under mpiexec, or (transport "shmdat.mpi") unchanged on
    shmdat.mpi under `shmdat run --mpi4py`."""
    program = [sys.executable, "-m", worker]
    if transport == "shmdat.mpi":
        cmd = [sys.executable, "-m", "shmdat", "run", "-n", str(ranks), "--mpi4py", "--", *program]
    else:
        cmd = [find_mpiexec(), "-n", str(ranks), *program]
    spec = json.dumps({"cells": [list(c) for c in cells], "budget": budget})
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        proc.stdin.write(spec)
        proc.stdin.close()
        for line in proc.stdout:
            if line.startswith("{"):
                r = json.loads(line)
                on_row(Cell(*r["cell"]), r["median"], r["min"])
        if proc.wait(CELL_TIMEOUT) != 0:
            raise RuntimeError(f"{cmd[0]} failed: {proc.stderr.read()[-2000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_memcpy(sizes, budget, on_row):
    """numpy.copyto in one process: the memory-bandwidth limit."""
    src = np.ones(max(sizes), np.uint8)
    dst = np.zeros_like(src)
    for size in sizes:
        s, d = src[:size], dst[:size]

        def once():
            t0 = time.perf_counter()
            np.copyto(d, s)
            return time.perf_counter() - t0
        n = iterations(min(once() for _ in range(3)), budget / REPS)
        gbps = [size * n / sum(once() for _ in range(n)) / 1e9 for _ in range(REPS)]
        on_row(Cell("memcpy_bw", size, "poll"), statistics.median(gbps), min(gbps))
