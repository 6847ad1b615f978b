"""shmdat.mpi's small blocking collectives through flag slots (shmdat/mpi/flags.py), by real
launches: Barrier and Allreduce up to SLOT_PAYLOAD bytes, epoch after epoch (the slots of
one parity reused every other collective), mixed with the message path (larger Allreduce,
Ibarrier) and with another communicator's slots; the same program under mpiexec. A rank
that is gone or has finalized fails the others' wait instead of hanging it."""

import pytest

from shmdat.mpi.flags import SLOT_PAYLOAD
from tests import mpi_launch
from tests.mpi_launch import PIDS, leftovers, pids

HEAD = f"""
import os
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
SLOT_PAYLOAD = {SLOT_PAYLOAD}
"""


launch = mpi_launch.launch_mpi4py   # (the programs import mpi4py, as under mpiexec)


EPOCHS = HEAD + """
half = comm.Split(rank % 2, rank)
counts = [0, 1, SLOT_PAYLOAD // 8 - 1, SLOT_PAYLOAD // 8, SLOT_PAYLOAD // 8 + 1]
checks = 0
for i in range(300):
    comm.Barrier()
    n = counts[i % len(counts)]
    mine = (np.arange(n) * (rank + 1) + i).astype(np.int64)
    out = np.empty(n, np.int64)
    comm.Allreduce(mine, out, op=MPI.SUM if i % 3 else MPI.MAX)
    every = [(np.arange(n) * (r + 1) + i).astype(np.int64) for r in range(size)]
    want = np.sum(every, axis=0) if i % 3 else np.max(every, axis=0) if n else every[0]
    assert (out == want).all(), (i, out, want)
    x = np.array([float(rank + i)])
    half.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
    assert x[0] == sum(r + i for r in range(rank % 2, size, 2)), (i, x)
    if i % 50 == 0:
        comm.Ibarrier().Wait()
        half.Barrier()
    checks += 3
os.write(1, f"rank {rank}: {checks} checks\\n".encode())
"""


@pytest.mark.parametrize("n", [2, 3, 5])
def test_barrier_and_small_allreduce_epoch_after_epoch(tmp_path, n):
    mpi_launch.check_every_rank_agrees(launch(tmp_path, n, EPOCHS), n)


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpiexec(tmp_path):
    mpi_launch.check_every_rank_agrees(mpi_launch.launch_mpiexec(tmp_path, 3, EPOCHS), 3)


@pytest.mark.parametrize("how, why, error", [("os._exit(0)", "has gone", "ERR_PROC_FAILED"),
                                             ("pass", "has finalized", "ERR_OTHER")])
def test_a_barrier_waiting_on_a_rank_that_ended_raises(tmp_path, how, why, error):
    # Rank 2 ends (without finalizing: it has failed, or finalizing) instead of entering the
    # second Barrier; the others' dissemination rounds wait on it, and must fail: rank 0's
    # first round waits on rank 2 itself, rank 1's on rank 0 (which may have failed first,
    # and finalized: rank 1's class is either).
    r = launch(tmp_path, 3, PIDS + HEAD + f"""
comm.Barrier()
if rank == 2:
    {how}
else:
    try:
        comm.Barrier()
    except MPI.Exception as e:
        said = "rank 2 {why}" in str(e) if rank == 0 else "has" in str(e)
        expected = (MPI.{error},) if rank == 0 else (MPI.ERR_OTHER, MPI.ERR_PROC_FAILED)
        os.write(1, f"rank {{rank}}: {{e.Get_error_class() in expected}} {{said}}\\n".encode())
""")
    assert "rank 0: True True" in r.stdout and "rank 1: True True" in r.stdout, (r.stdout, r.stderr)
    assert leftovers(pids(r.stdout)) == []
