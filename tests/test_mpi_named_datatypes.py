"""shmdat.mpi's named datatypes FLOAT16_T (MPICH's MPIX_C_FLOAT16: numpy's float16),
PACKED (bytes no op applies to: ERR_OP, as MPICH), AINT/OFFSET/COUNT, Fortran's and C++'s,
and the names MPICH has no type for (DATATYPE_NULL), in sends and reductions, by real
launches; the same programs under mpiexec, line for line."""

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


def test_float16_and_packed(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 2, PROGRAM))
    assert lines == [f"{rank} [2, 'MPIX_C_FLOAT16', 1, 'MPI_PACKED', True, True, "
                     "[1.0, 3.0, 5.0, 7.0], [1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3, 4, 5, 6, 7], "
                     "('err', 9)]" for rank in (0, 1)]


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, PROGRAM)


FORTRAN = """import os
import numpy as np
from mpi4py import MPI
names = "CHARACTER COMPLEX16 COMPLEX32 COMPLEX8 CXX_BOOL CXX_DOUBLE_COMPLEX CXX_FLOAT_COMPLEX CXX_LONG_DOUBLE_COMPLEX DOUBLE_PRECISION F_BOOL F_COMPLEX F_DOUBLE F_DOUBLE_COMPLEX F_FLOAT F_FLOAT_COMPLEX F_INT INTEGER INTEGER1 INTEGER2 INTEGER4 INTEGER8 LOGICAL REAL REAL16 REAL4 REAL8 AINT OFFSET COUNT BFLOAT16_T REAL2 LOGICAL1".split()
out = [(n, getattr(MPI, n).Get_size() if getattr(MPI, n) else None, getattr(MPI, n).Get_name() if getattr(MPI, n) else None, bool(getattr(MPI, n))) for n in names]
comm = MPI.COMM_WORLD
a = np.array([comm.rank + 1.5, 2.0]); b = np.empty(2)
comm.Allreduce([a, MPI.DOUBLE_PRECISION], [b, MPI.DOUBLE_PRECISION])
out.append(b.tolist())
i = np.array([comm.rank, 1], "i4"); j = np.empty(2, "i4")
comm.Allreduce([i, MPI.INTEGER], [j, MPI.INTEGER], op=MPI.MAX)
out.append(j.tolist())
l = np.array([1, comm.rank], "i4"); m = np.empty(2, "i4")
comm.Allreduce([l, MPI.LOGICAL], [m, MPI.LOGICAL], op=MPI.LAND)
out.append(m.tolist())
try:
    comm.Allreduce([np.zeros(2, "u1"), MPI.CHARACTER], [np.zeros(2, "u1"), MPI.CHARACTER])
    out.append("no error")
except MPI.Exception as e:
    out.append(e.Get_error_class())
out.append([MPI.Datatype.fromcode(c).Get_name() for c in "pnPN"])
os.write(1, f"{comm.rank} {out}\\n".encode())
"""


def test_fortran_and_other_named_datatypes(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 2, FORTRAN))
    rank0 = lines[0]
    assert "('CHARACTER', 1, 'MPI_CHARACTER', True)" in rank0
    assert "('F_INT', 4, 'MPI_INTEGER', True)" in rank0 and "('REAL16', 16, 'MPI_REAL16', True)" in rank0
    assert "('BFLOAT16_T', None, None, False)" in rank0             # DATATYPE_NULL, as MPICH
    assert rank0.endswith("[4.0, 4.0], [1, 1], [1, 0], 9, ['MPI_AINT', 'MPI_COUNT', "
                          "'MPI_UNSIGNED_LONG', 'MPI_UNSIGNED_LONG']]")


@mpi_launch.needs_mpiexec
def test_the_fortran_program_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, FORTRAN)
