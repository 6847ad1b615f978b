"""Running a transport's cells between two spawned processes (or under mpiexec)."""

import json
import multiprocessing
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from multiprocessing.connection import wait

import numpy as np

from .plan import REPS, Cell, iterations
from .timing import drive, serve

CELL_TIMEOUT = 120.0        # seconds: one cell that takes longer means the transport hung
_ctx = multiprocessing.get_context("spawn")


def _endpoint(transport, role, ctrl, max_size, data_conn):
    if transport == "shmdat":
        from .shmdat_transport import ShmdatEndpoint
        return ShmdatEndpoint(role, ctrl, max_size)
    if transport == "multiprocessing.Pipe":
        from .alternatives import PipeEndpoint
        return PipeEndpoint(role, ctrl, max_size, data_conn)
    if transport == "pyzmq":
        from .alternatives import ZmqEndpoint
        return ZmqEndpoint(role, ctrl, max_size)
    raise ValueError(transport)


def _side(transport, role, ctrl, results, cells, budget, max_size, data_conn):
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
    except BaseException:
        results.send(("error", traceback.format_exc()))


def run_pair(transport, cells, budget, on_row):
    """Measure `cells` over `transport` between two spawned processes; on_row(cell, median, min)."""
    max_size = max(c.size for c in cells)
    ctrl_a, ctrl_b = _ctx.Pipe()
    data_a, data_b = _ctx.Pipe() if transport == "multiprocessing.Pipe" else (None, None)
    procs, conns = [], []
    for role, ctrl, data in (("server", ctrl_a, data_a), ("client", ctrl_b, data_b)):
        mine, theirs = _ctx.Pipe(duplex=False)
        p = _ctx.Process(target=_side, args=(transport, role, ctrl, theirs, cells, budget, max_size, data),
                         daemon=True)
        p.start()
        theirs.close()
        procs.append(p)
        conns.append(mine)
    try:
        pending = set(conns)
        while pending:
            ready = wait(list(pending), CELL_TIMEOUT)
            if not ready:
                raise RuntimeError(f"{transport}: no progress within {CELL_TIMEOUT:.0f} s")
            for conn in ready:
                try:
                    msg = conn.recv()
                except EOFError:
                    raise RuntimeError(f"{transport}: a benchmark process died") from None
                if msg[0] == "row":
                    on_row(*msg[1:])
                elif msg[0] == "error":
                    raise RuntimeError(f"{transport} failed:\n{msg[1]}")
                else:
                    pending.discard(conn)
    finally:
        reap(procs)


def reap(procs, timeout=10):
    """Join benchmark processes, killing any that did not finish."""
    for p in procs:
        p.join(timeout)
        if p.is_alive():
            p.kill()
            p.join()


def mpi_available():
    import importlib.util
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    if not shutil.which("mpiexec"):
        return "mpiexec is not on PATH"
    return None


def run_mpi(cells, budget, on_row):
    """Measure `cells` over mpi4py: two ranks under mpiexec, one JSON line per result."""
    cmd = [shutil.which("mpiexec"), "-n", "2", sys.executable, "-m", "shmdat.bench.mpi_worker"]
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
            raise RuntimeError(f"mpiexec failed: {proc.stderr.read()[-2000:]}")
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
