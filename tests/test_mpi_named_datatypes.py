"""shmdat.mpi's named datatypes FLOAT16_T (MPICH's MPIX_C_FLOAT16: numpy's float16) and
PACKED (bytes no op applies to: ERR_OP, as MPICH), in sends and reductions, by real
launches; the same program under mpiexec, line for line."""

from tests import mpi_launch

PROGRAM = """import os
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
out = [MPI.FLOAT16_T.Get_size(), MPI.FLOAT16_T.Get_name(), MPI.PACKED.Get_size(), MPI.PACKED.Get_name(),
       MPI.Datatype.fromcode("e") == MPI.FLOAT16_T, MPI.Datatype.fromcode("f2") == MPI.FLOAT16_T]
a = np.arange(4, dtype=np.float16) + rank
b = np.empty_like(a)
comm.Allreduce(a, b)
out.append(b.tolist())
comm.Allreduce([a, MPI.FLOAT16_T], [b, MPI.FLOAT16_T], op=MPI.MAX)
out.append(b.tolist())
p = np.frombuffer(bytes(range(8)), np.uint8).copy()
q = np.zeros(8, np.uint8)
comm.Sendrecv([p, MPI.PACKED], (rank + 1) % size, 0, [q, MPI.PACKED], (rank - 1) % size, 0)
out.append(q.tolist())
try:
    comm.Allreduce([p, MPI.PACKED], [q, MPI.PACKED])
    out.append("no error")
except MPI.Exception as e:
    out.append(("err", e.Get_error_class()))
os.write(1, f"{rank} {out}\\n".encode())
"""


def _lines(r):
    assert r.returncode == 0, r.stderr
    return sorted(r.stdout.splitlines())


def test_float16_and_packed(tmp_path):
    lines = _lines(mpi_launch.launch(tmp_path, 2, PROGRAM, launcher=("--mpi4py", "--")))
    assert lines == [f"{rank} [2, 'MPIX_C_FLOAT16', 1, 'MPI_PACKED', True, True, "
                     "[1.0, 3.0, 5.0, 7.0], [1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3, 4, 5, 6, 7], "
                     "('err', 9)]" for rank in (0, 1)]


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpiexec(tmp_path):
    ours = _lines(mpi_launch.launch(tmp_path, 2, PROGRAM, launcher=("--mpi4py", "--")))
    assert ours == _lines(mpi_launch.launch_mpiexec(tmp_path, 2, PROGRAM))
