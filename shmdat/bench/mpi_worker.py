"""MPI's side of the benchmark, run by `mpiexec -n 2 python -m shmdat.bench.mpi_worker`
(mpi4py) and, unchanged, by `shmdat run -n 2 --mpi4py -- python -m shmdat.bench.mpi_worker`
(shmdat.mpi through the mpi4py shim): the same program on either MPI.

Rank 0 drives (the client), rank 1 serves; the cells come as JSON on rank 0's
stdin and each result goes out as one JSON line. The message-rate cell runs over
windows of Isend / Irecv (MpiWindowEndpoint), the others over Send / Recv.
"""

import json
import sys

from mpi4py import MPI

from .alternatives import MpiEndpoint, MpiWindowEndpoint
from .plan import WINDOW, Cell
from .timing import drive, serve

CTRL = 2        # tag of control messages, apart from the data's


class _Ctrl:
    def __init__(self, comm):
        self.comm, self.peer = comm, 1 - comm.Get_rank()

    def send(self, obj):
        self.comm.send(obj, dest=self.peer, tag=CTRL)

    def recv(self):
        return self.comm.recv(source=self.peer, tag=CTRL)


def main():
    comm = MPI.COMM_WORLD
    ctrl = _Ctrl(comm)
    if comm.Get_rank() == 0:
        spec = json.loads(sys.stdin.read())
        ctrl.send(spec)
    else:
        spec = ctrl.recv()
    cells = [Cell(*c) for c in spec["cells"]]
    plain = [c for c in cells if c.test != "msgrate"]
    windowed = [c for c in cells if c.test == "msgrate"]
    if plain:
        _run(comm, ctrl, MpiEndpoint(MPI, comm, max(c.size for c in plain)), plain, spec["budget"])
    if windowed:
        _run(comm, ctrl, MpiWindowEndpoint(MPI, comm, max(c.size for c in windowed), WINDOW), windowed, spec["budget"])


def _run(comm, ctrl, t, cells, budget):
    """One endpoint's cells: rank 0 drives them, rank 1 serves."""
    try:
        if comm.Get_rank() == 0:
            drive(t, ctrl, cells, budget, _report)
        else:
            serve(t, ctrl)
    finally:
        t.close()


def _report(cell, median, minimum):
    print(json.dumps({"cell": list(cell), "median": median, "min": minimum}), flush=True)


if __name__ == "__main__":
    main()
