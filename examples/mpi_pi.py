# Collectives on shmdat.mpi: rank 0 broadcasts the number of intervals, every rank sums its
# share of the midpoint rule for pi, Reduce adds the shares at rank 0, allgather tells every
# rank who took part. Run it with `shmdat run -n 4 python examples/mpi_pi.py` (or, unchanged
# but for the import, under mpi4py: `mpiexec -n 4 python examples/mpi_pi.py`).
import numpy as np

from shmdat.mpi import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()

n = np.array(1_000_000 if rank == 0 else 0, dtype=np.int64)
comm.Bcast([n, MPI.INT64_T], root=0)
x = (np.arange(rank, int(n), size) + 0.5) / n
share = np.array(np.sum(4.0 / (1.0 + x * x)) / n)
pi = np.zeros(1) if rank == 0 else None
comm.Reduce([share, MPI.DOUBLE], pi, op=MPI.SUM, root=0)
ranks = comm.allgather(rank)
if rank == 0:
    print(f"pi ~ {pi[0]:.10f} (error {abs(pi[0] - np.pi):.1e}) from ranks {ranks}")
