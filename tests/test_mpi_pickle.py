"""shmdat.mpi's MPI.pickle (mpi4py's): every object a rank sends and receives goes through
it, so a program swapping its serializer changes them all (point to point and collectives);
its protocol and threshold defaults as mpi4py's. The same program under mpiexec."""

from tests import mpi_launch

PROGRAM = """
import json, os, pickle
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = 0
pk = MPI.pickle
assert isinstance(pk, MPI.Pickle) and pk.PROTOCOL == pickle.HIGHEST_PROTOCOL
assert pk.THRESHOLD == 1024 ** 2 // 4
assert pk.loads(pk.dumps({"a": [1, 2]})) == {"a": [1, 2]}
checks += 3

# A serializer that writes JSON and counts its calls: tuples come back as lists, so the
# objects received show that it was used; every call sends and receives through it.
calls = []
def dumps(obj):
    calls.append("dumps")
    return json.dumps(obj).encode()
def loads(data):
    calls.append("loads")
    return json.loads(bytes(data).decode())
pk.__init__(dumps, loads)
assert pk.PROTOCOL is None
right, left = (rank + 1) % size, (rank - 1) % size
got = comm.sendrecv((rank, "x"), dest=right, source=left)
assert got == [left, "x"], got
assert comm.bcast((1, 2) if rank == 0 else None, root=0) == [1, 2]
# Every rank's result is a copy made by the serializer, its own contribution too.
assert comm.allgather((rank,)) == [[r] for r in range(size)]
assert comm.alltoall([(rank, r) for r in range(size)]) == [[r, rank] for r in range(size)]
assert comm.gather((rank,), root=1) == ([[r] for r in range(size)] if rank == 1 else None)
assert comm.scatter([(r,) for r in range(size)] if rank == 0 else None, root=0) == [rank]
assert comm.allreduce((rank,), op=MPI.SUM) == list(range(size))
assert comm.reduce((rank,), op=MPI.SUM, root=2) == (list(range(size)) if rank == 2 else None)
assert comm.scan((rank,)) == list(range(rank + 1))
assert comm.exscan((rank,)) == (list(range(rank)) if rank else None)
assert "dumps" in calls and "loads" in calls
checks += 11

# Back to the defaults: tuples are tuples again.
pk.__init__(protocol=2)
assert pk.PROTOCOL == 2
assert comm.sendrecv((rank,), dest=right, source=left) == (left,)
pk.__init__()
assert pk.PROTOCOL == pickle.HIGHEST_PROTOCOL
checks += 3

# Ready-mode persistent sends: as Send_init.
import numpy as np
out, got = np.full(4, rank, "i4"), np.empty(4, "i4")
req = comm.Rsend_init(out, right, 9)
comm.Barrier()
recv = comm.Irecv(got, left, 9)
comm.Barrier()              # (ready mode: the receive is posted before the send starts)
req.Start()
MPI.Request.Waitall([req, recv])
assert (got == left).all()
req.Free()
checks += 1
os.write(1, f"rank {rank}: {checks} checks\\n".encode())
"""


def test_mpi_pickle_under_shmdat_run(tmp_path):
    r = mpi_launch.launch_mpi4py(tmp_path, 3, PROGRAM)
    mpi_launch.check_every_rank_agrees(r, 3)


@mpi_launch.needs_mpiexec
def test_mpi_pickle_under_mpiexec(tmp_path):
    mpi_launch.check_every_rank_agrees(mpi_launch.launch_mpiexec(tmp_path, 3, PROGRAM), 3)
