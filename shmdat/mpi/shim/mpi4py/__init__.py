"""`mpi4py`, answered by shmdat.mpi.

`shmdat run --mpi4py` (and `python -m shmdat.mpi --mpi4py`) puts the directory
holding this package first on the ranks' PYTHONPATH; it is not installed as a
package of its own. `from mpi4py import MPI` gives shmdat.mpi's MPI namespace
(MPI.py here). Where a real mpi4py is installed further down the path, its
pure-Python modules (`mpi4py.run` behind `python -m mpi4py`, `mpi4py.bench`,
`mpi4py.util`, `mpi4py.futures`) are found in its directory and run on
shmdat.mpi, as far as shmdat.mpi has the calls they make; without one they are
ModuleNotFoundError. There is no `get_include`, `get_config` or `profile`: they
describe a C MPI library.
"""

import importlib.machinery
import os
import sys

__version__ = "4.1.2"      # the mpi4py release whose API shmdat.mpi follows
__shmdat__ = True           # how a program (or a test) tells this mpi4py from the real one
__all__ = ["MPI"]

_HERE = os.path.dirname(os.path.abspath(__file__))


def _installed_mpi4py():
    """The directories of a real mpi4py further down sys.path ([] if there is none)."""
    ours = os.path.realpath(os.path.dirname(_HERE))
    rest = [p for p in sys.path if os.path.realpath(p or os.curdir) != ours]
    spec = importlib.machinery.PathFinder.find_spec(__name__, rest)
    return list(spec.submodule_search_locations or []) if spec else []


# Ours first: our MPI.py, never the real one's compiled MPI, answers `mpi4py.MPI`.
__path__ = [_HERE, *_installed_mpi4py()]


class Rc:
    """`mpi4py.rc`: the options a program sets before importing MPI. They are kept,
    with mpi4py's defaults, but not acted on: a rank of shmdat.mpi initializes at
    `import MPI` whatever they say (MPI.Init is then a no-op, as in mpi4py once
    initialized). A name mpi4py's rc lacks is a TypeError, as in mpi4py."""

    initialize = True
    threads = True
    thread_level = "multiple"
    finalize = None
    fast_reduce = True
    recv_mprobe = True
    irecv_bufsz = 32768
    errors = "exception"

    def __init__(self, **kwargs):
        self(**kwargs)

    def __setattr__(self, name, value):
        if not hasattr(type(self), name) or name.startswith("_"):
            raise TypeError(f"mpi4py.rc has no option {name!r}")
        super().__setattr__(name, value)

    def __call__(self, **kwargs):
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __repr__(self):
        return f"<{__name__}.rc>"


rc = Rc()
sys.modules[__name__ + ".rc"] = rc     # `import mpi4py.rc` gives it too, as in mpi4py
