"""`from shmdat.mpi import MPI`: mpi4py's MPI namespace on shmdat. Importing it initializes
this rank, as importing mpi4py.MPI does: it opens an IA, wires up with the job's other
ranks (shmdat/mpi/wireup.py) and closes everything at exit."""

import atexit
import socket
import time

from . import datatypes, errors, wireup
from .comm import TAG_UB, UNDEFINED, Comm, Request, Status  # noqa: F401 (the namespace)
from .datatypes import IN_PLACE, Datatype  # noqa: F401
from .engine import Engine
from .errors import (ERR_ARG, ERR_BUFFER, ERR_COMM, ERR_COUNT, ERR_INTERN,  # noqa: F401
                     ERR_OP, ERR_OTHER, ERR_RANK, ERR_ROOT, ERR_TAG, ERR_TRUNCATE, ERR_TYPE,
                     SUCCESS, Exception)
from .matching import ANY_SOURCE, ANY_TAG, PROC_NULL  # noqa: F401
from .errors import (ERR_DISP, ERR_RMA_RANGE, ERR_RMA_SYNC, ERR_SIZE,  # noqa: F401
                     ERR_WIN)
from .win import (INFO_NULL, LOCK_EXCLUSIVE, LOCK_SHARED, MODE_NOCHECK,  # noqa: F401
                  MODE_NOPRECEDE, MODE_NOPUT, MODE_NOSTORE, MODE_NOSUCCEED, NO_OP, REPLACE,
                  Info, Win)
from .ops import (BAND, BOR, BXOR, LAND, LOR, LXOR, MAX, MAXLOC, MIN, MINLOC,  # noqa: F401
                  PROD, SUM, Op)

globals().update(datatypes.NAMED)     # MPI.BYTE, MPI.INT, MPI.DOUBLE, ...


def Wtime():
    """MPI_Wtime: seconds since an arbitrary moment, from a monotonic clock."""
    return time.perf_counter()


def Wtick():
    return time.get_clock_info("perf_counter").resolution


def Get_processor_name():
    return socket.gethostname()


def _init():
    rank, size, sock = wireup.launch_info()
    engine = Engine(rank, size)
    atexit.register(engine.close)
    if sock is not None:
        wireup.connect_all(engine, wireup.exchange(sock, rank, engine.ia.address,
                                                   engine.psp.conn_qual))
    return engine


_engine = _init()
COMM_WORLD = Comm(_engine, 0, _engine.rank, _engine.size)
Win._engine = _engine      # a window takes this rank's engine (COMM_SELF's too) from here
del errors
