# A ring on shmdat.mpi: every rank passes a Python object and a numpy array to its right
# neighbour. Run it with `shmdat run -n 4 python examples/mpi_ring.py` (or, unchanged but
# for the import, under mpi4py: `mpiexec -n 4 python examples/mpi_ring.py`).
import numpy as np

from shmdat.mpi import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size

comm.send({"hello from": rank}, dest=right, tag=1)
print(f"rank {rank} got {comm.recv(source=left, tag=1)}")

data = np.full(1 << 20, rank, dtype=np.float64)     # 8 MiB: goes by one RDMA read
incoming = np.empty_like(data)
request = comm.Irecv([incoming, MPI.DOUBLE], source=left, tag=2)
comm.Send([data, MPI.DOUBLE], dest=right, tag=2)
status = MPI.Status()
request.Wait(status)
print(f"rank {rank} got {status.Get_count(MPI.DOUBLE)} doubles of value {incoming[0]:.0f} "
      f"from rank {status.Get_source()}")
