"""Behaviours that mpi4py's own unit tests found wrong or missing in shmdat.mpi (see
tools/mpi4py_suite.py), each checked here by a program of our own written from what mpi4py
+ MPICH do. The program runs unchanged under `shmdat run --mpi4py` and, when both are
installed, under MPICH's mpiexec with the real mpi4py: the same checks pass on both."""

import shutil
import subprocess
import sys

import pytest

from tests import mpi_launch

PROGRAM = mpi_launch.FAILS.replace("def fails", "from mpi4py import MPI\n\n\ndef fails") + """
import os

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = 0

# MPI.DATATYPE_NULL: false, named, no size or extent.
null = MPI.DATATYPE_NULL
assert not null and null == MPI.DATATYPE_NULL and null != MPI.INT and MPI.INT != null
assert null.Get_name() == "MPI_DATATYPE_NULL"
checks += fails(MPI.ERR_TYPE, null.Get_size) + fails(MPI.ERR_TYPE, null.Get_extent)
checks += fails(MPI.ERR_TYPE, lambda: null.size) + fails(MPI.ERR_TYPE, lambda: null.extent)

# mpi4py's other names of the named datatypes, its `name` property, KEYVAL_INVALID.
assert MPI.UNSIGNED_INT == MPI.UNSIGNED and MPI.SIGNED_INT == MPI.INT
assert MPI.SINT64_T == MPI.INT64_T and MPI.INT_INT == MPI.TWOINT and MPI.BOOL == MPI.C_BOOL
assert MPI.INT.name == MPI.INT.Get_name() == "MPI_INT"
assert MPI.C_LONG_DOUBLE_COMPLEX.Get_size() == 32
assert MPI.APPNUM != MPI.KEYVAL_INVALID
checks += fails(MPI.ERR_KEYVAL, comm.Get_attr, MPI.KEYVAL_INVALID)

os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # one write: the ranks share the pipe
"""


def test_under_shmdat(tmp_path):
    r = mpi_launch.launch(tmp_path, 2, PROGRAM, launcher=("--mpi4py", "--"))
    mpi_launch.check_every_rank_agrees(r, 2)


def _mpi4py():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return shutil.which("mpiexec") is not None


@pytest.mark.skipif(not _mpi4py(), reason="mpi4py and mpiexec are not installed")
def test_the_same_program_under_mpi4py(tmp_path):
    """The checks are MPI's and mpi4py's, not shmdat's: mpi4py + MPICH passes them too."""
    prog = mpi_launch.write(tmp_path, PROGRAM)
    r = subprocess.run(["mpiexec", "-n", "2", sys.executable, prog], capture_output=True,
                       text=True, timeout=mpi_launch.TIMEOUT)
    mpi_launch.check_every_rank_agrees(r, 2)
