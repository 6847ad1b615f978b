"""`mpi4py.MPI` on shmdat.mpi: every public name of shmdat.mpi.MPI (the same objects:
importing either initializes the rank once), and the private hook that mpi4py's own
pure-Python modules call."""

from functools import partial as _partial

from shmdat.mpi import MPI as _MPI
from shmdat.mpi.MPI import *  # noqa: F401,F403 (the namespace)

# Names the star import left out: shmdat.mpi.MPI answers them itself (mpi4py's names it
# lacks raise NotImplementedCall naming the call). A partial, so that the namespace holds
# no module, as mpi4py's (its test_doc walks the modules it finds).
__getattr__ = _partial(getattr, _MPI)
del _MPI


def _set_abort_status(status):
    """mpi4py's hook, called by `python -m mpi4py` (mpi4py.run) when the program raises
    or exits non-zero, so that mpi4py aborts the job at exit. Nothing to do here: under
    shmdat run, a rank that exits non-zero ends the whole job with its status."""
