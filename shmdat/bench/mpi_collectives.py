"""MPI collectives' side of the benchmark: one program run on N ranks by `mpiexec -n N
python -m shmdat.bench.mpi_collectives` (mpi4py) and, unchanged, by `shmdat run -n N
--mpi4py -- python -m shmdat.bench.mpi_collectives` (shmdat.mpi through the mpi4py shim).

Rank 0 reads the cells as JSON on its stdin and broadcasts them; every rank runs every
cell. A cell's figure is microseconds per call of the slowest rank (the time of a batch
of calls started together after a Barrier), median and min over REPS batches; rank 0
prints one JSON line per cell.
"""

import json
import statistics
import sys

import numpy as np
from mpi4py import MPI

from .plan import REPS, WARM, Cell, iterations


def _collective(comm, cell):
    """The cell's collective as a call without arguments; its buffers are made here,
    outside the timed loop. Allreduce sums doubles (cell.size / 8 of them)."""
    if cell.op == "barrier":
        return comm.Barrier
    if cell.op == "bcast":
        buf = [np.zeros(cell.size, np.uint8), MPI.BYTE]
        return lambda: comm.Bcast(buf, root=0)
    send = [np.ones(cell.size // 8, np.float64), MPI.DOUBLE]
    recv = [np.empty(cell.size // 8, np.float64), MPI.DOUBLE]
    return lambda: comm.Allreduce(send, recv, op=MPI.SUM)


def _seconds(comm, call, count):
    """Seconds per call over `count` calls, the slowest rank's (every rank gets it)."""
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(count):
        call()
    return comm.allreduce((MPI.Wtime() - t0) / count, op=MPI.MAX)


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    spec = comm.bcast(json.loads(sys.stdin.read()) if rank == 0 else None, root=0)
    for cell in (Cell(*c) for c in spec["cells"]):
        call = _collective(comm, cell)
        # Every rank gets the same estimate (the slowest rank's), hence the same count.
        count = iterations(_seconds(comm, call, WARM), spec["budget"] / REPS)
        us = [_seconds(comm, call, count) * 1e6 for _ in range(REPS)]
        if rank == 0:
            print(json.dumps({"cell": list(cell), "median": statistics.median(us), "min": min(us)}),
                  flush=True)


if __name__ == "__main__":
    main()
