"""`from shmdat.mpi import MPI`: mpi4py's MPI namespace on shmdat. Importing it initializes
this rank, as importing mpi4py.MPI does: it opens an IA, wires up with the job's other
ranks (shmdat/mpi/wireup.py) and closes everything at exit."""

# Functions, not modules, are imported: the namespace holds mpi4py's names and no module
# (mpi4py's test_doc walks every module it finds there, and the modules import each other).
from atexit import register as _at_exit, unregister as _not_at_exit
from operator import index as _index
from socket import gethostname as _gethostname
from threading import current_thread as _current_thread
from time import get_clock_info as _get_clock_info, perf_counter as _perf_counter

from shmdat import __version__ as _shmdat_version

from . import datatypes, errors, handles
from .wireup import connect_all as _connect_all, exchange as _exchange, \
    launch_info as _launch_info
from .bsend import attach as _attach, detach as _detach, flush as _flush
from .unimplemented import MODULE as _UNIMPLEMENTED, missing as _missing
from .iflush import request as _iflush_request    # (sets Comm's and Session's Iflush_buffer)
from .comm import (APPNUM, COMM_NULL, CONGRUENT, IDENT, IO, KEYVAL_INVALID,  # noqa: F401
                   LASTUSEDCODE, REQUEST_NULL, SELF_CONTEXT, SIMILAR, TAG_UB, UNDEFINED, UNEQUAL,
                   UNIVERSE_SIZE, WORLD_CONTEXT, WTIME_IS_GLOBAL, Comm, Prequest, Request,
                   Status)
F_SOURCE, F_TAG, F_ERROR, F_STATUS_SIZE = (Status.F_SOURCE, Status.F_TAG,  # (MPICH's)
                                           Status.F_ERROR, Status.F_STATUS_SIZE)
from .bsend import BSEND_OVERHEAD, BUFFER_AUTOMATIC, BufferAutomaticType  # noqa: F401
from .buffer import buffer
from .datatypes import (BOTTOM, COMBINER_CONTIGUOUS, COMBINER_DUP,  # noqa: F401
                        COMBINER_HINDEXED, COMBINER_HINDEXED_BLOCK, COMBINER_HVECTOR,
                        COMBINER_INDEXED, COMBINER_INDEXED_BLOCK, COMBINER_NAMED,
                        COMBINER_RESIZED, COMBINER_STRUCT, COMBINER_SUBARRAY, COMBINER_VECTOR,
                        DATATYPE_NULL, IN_PLACE, ORDER_C, ORDER_F, Aint_add, Aint_diff,
                        BottomType, Datatype, Get_address)
ORDER_FORTRAN = ORDER_F
from .datatypes import (COMBINER_DARRAY, COMBINER_F90_COMPLEX,  # noqa: F401
                        COMBINER_F90_INTEGER, COMBINER_F90_REAL, COMBINER_VALUE_INDEX,
                        DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC, DISTRIBUTE_DFLT_DARG,
                        DISTRIBUTE_NONE, TYPECLASS_COMPLEX, TYPECLASS_INTEGER, TYPECLASS_LOGICAL,
                        TYPECLASS_REAL, _typealign, _typecode)
from .dims import Compute_dims  # noqa: F401
from . import dynproc
from .dynproc import (MAX_PORT_NAME, Close_port, Lookup_name, Open_port,  # noqa: F401
                      Publish_name, Unpublish_name)
from .engine import Engine
from .errhandler import (ERRHANDLER_NULL, ERRORS_ABORT, ERRORS_ARE_FATAL,  # noqa: F401
                         ERRORS_RETURN, Errhandler)
from .errors import (SUCCESS, Add_error_class, Add_error_code,  # noqa: F401
                     Add_error_string, Exception, Get_error_class, Get_error_string)
from .file import (DISP_CUR, DISPLACEMENT_CURRENT, FILE_NULL,  # noqa: F401
                   MAX_DATAREP_STRING, MODE_APPEND, MODE_CREATE, MODE_DELETE_ON_CLOSE,
                   MODE_EXCL, MODE_RDONLY, MODE_RDWR, MODE_SEQUENTIAL, MODE_UNIQUE_OPEN,
                   MODE_WRONLY, SEEK_CUR, SEEK_END, SEEK_SET, File, Register_datarep)
from .grequest import Grequest
from .group import GROUP_EMPTY, GROUP_NULL, Group  # noqa: F401
from .info import INFO_ENV, INFO_NULL, MAX_INFO_KEY, MAX_INFO_VAL, Info  # noqa: F401
from .comm import Intracomm  # noqa: F401
from .intercomm import ROOT, Intercomm  # noqa: F401
from .matching import ANY_SOURCE, ANY_TAG, PROC_NULL  # noqa: F401
from .message import MESSAGE_NO_PROC, MESSAGE_NULL, Message  # noqa: F401
from .pickler import Pickle, pickle  # noqa: F401
from . import persistent  # noqa: F401  (sets Comm's and Topocomm's *_init)
from . import ulfm  # noqa: F401  (sets Comm's Revoke, Agree, Shrink, ...)
from .lowlevel import _addressof, _handleof, _sizeof  # noqa: F401
from .commctx import (_comm_lock, _comm_lock_table, _commctx_inter,  # noqa: F401
                      _commctx_intra)
from .session import MAX_PSET_NAME_LEN, MAX_STRINGTAG_LEN, SESSION_NULL, Session  # noqa: F401
from . import isendrecv  # noqa: F401  (sets Comm's Isendrecv, Isendrecv_replace)
from . import partitioned  # noqa: F401  (sets Comm's Psend_init, Precv_init, Prequest's Pready...)
from . import wcollectives  # noqa: F401  (sets Alltoallw and Neighbor_alltoallw, their forms)
from . import create_group  # noqa: F401  (sets Comm.Create_group)
from . import dynamic  # noqa: F401  (sets Win.Create_dynamic)
from . import subclass  # noqa: F401  (a subclass's Dup gives the subclass)
from . import intercomm_v  # noqa: F401  (sets Intercomm's Gatherv, Scatterv, Allgatherv, ...)
from . import intercomm_split  # noqa: F401  (sets Intercomm.Split)
from .topology import (CART, DIST_GRAPH, GRAPH, UNWEIGHTED, WEIGHTS_EMPTY,  # noqa: F401
                       Cartcomm, Distgraphcomm, Graphcomm, Topocomm)
from .shared import (COMM_TYPE_HW_GUIDED, COMM_TYPE_HW_UNGUIDED,  # noqa: F401
                     COMM_TYPE_RESOURCE_GUIDED, COMM_TYPE_SHARED)
from .ops import (BAND, BOR, BXOR, LAND, LOR, LXOR, MAX, MAXLOC, MIN, MINLOC,  # noqa: F401
                  OP_NULL, PROD, SUM, Op)
from .win import (LOCK_EXCLUSIVE, LOCK_SHARED, MODE_NOCHECK,  # noqa: F401
                  MODE_NOPRECEDE, MODE_NOPUT, MODE_NOSTORE, MODE_NOSUCCEED, NO_OP, REPLACE,
                  WIN_BASE, WIN_CREATE_FLAVOR, WIN_DISP_UNIT, WIN_FLAVOR, WIN_FLAVOR_ALLOCATE,
                  WIN_FLAVOR_CREATE, WIN_FLAVOR_DYNAMIC, WIN_FLAVOR_SHARED, WIN_MODEL,
                  WIN_NULL, WIN_SEPARATE, WIN_SIZE, WIN_UNIFIED, Win)

globals().update(errors.NAMES)       # MPI.ERR_ARG, ..., MPI.ERR_LASTCODE
globals().update(datatypes.NAMED)     # MPI.BYTE, MPI.INT, MPI.DOUBLE, ...
globals().update(datatypes.ALIASES)   # MPI.UNSIGNED_INT, MPI.SINT32_T, ...

THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
# The engine's entry points hold its lock; one thread at a time waits on the EVD and hands
# the others what it handles (shmdat/mpi/engine.py): threads may call at once.
_THREAD_LEVEL = THREAD_MULTIPLE


def Wtime():
    """MPI_Wtime: seconds since an arbitrary moment, from a monotonic clock."""
    return _perf_counter()


def Wtick():
    return _get_clock_info("perf_counter").resolution


def Get_processor_name():
    return _gethostname()


_allocated = {}         # id -> the memory Alloc_mem gave and Free_mem has not taken back


def Alloc_mem(size, info=INFO_NULL):
    """MPI_Alloc_mem: `size` bytes of memory (zeroed), an MPI.buffer. MPI.Exception ERR_ARG
    for a negative size; TypeError for a size that is not an int."""
    size = _index(size)
    if size < 0:
        raise Exception(ERR_ARG, f"Alloc_mem of {size} bytes")
    memory = buffer.allocate(size, True)
    _allocated[id(memory)] = memory
    return memory


def Free_mem(memory):
    """MPI_Free_mem: give back memory Alloc_mem gave; the buffer is released (empty, address
    0). MPI.Exception ERR_ARG for anything else (or memory given back already)."""
    if _allocated.get(id(memory)) is not memory:
        raise Exception(ERR_ARG, "Free_mem of memory that Alloc_mem did not give")
    del _allocated[id(memory)]
    memory.release()


def Attach_buffer(buf):
    """MPI_Buffer_attach: `buf` (a writable buffer; BUFFER_AUTOMATIC or None: automatic) for
    buffered sends (Bsend, ...). MPI.Exception ERR_OTHER if one is attached already,
    ERR_BUFFER if it is smaller than BSEND_OVERHEAD; BufferError if read-only."""
    _attach(None, buf)


def Detach_buffer():
    """MPI_Buffer_detach: once every buffered send has left, the buffer attached
    (BUFFER_AUTOMATIC if automatic, an empty bytearray if none is)."""
    return _detach(None, _engine)


def Flush_buffer():
    """MPI_Buffer_flush: wait until every buffered send has left."""
    _flush(None, _engine)


def Iflush_buffer():
    """MPI_Buffer_iflush (MPI 4.1): a Request done once every buffered send under way now
    has left (shmdat/mpi/iflush.py)."""
    return _iflush_request(None, _engine)


VERSION, SUBVERSION = 3, 1         # the MPI standard's version, as Get_version()
memory = buffer                    # mpi4py's name for it before mpi4py 4


def Is_thread_main():
    """MPI_Is_thread_main: whether this is the thread that initialized (imported MPI)."""
    return _current_thread() is _main_thread


def Pcontrol(level):
    """MPI_Pcontrol: a profiling hint; there is no profiling layer to tell."""


def __getattr__(name):
    """mpi4py's names that are not here (unimplemented.MODULE): NotImplementedCall."""
    _missing("MPI", _UNIMPLEMENTED, name)


def Get_version():
    """MPI_Get_version: the MPI standard whose calls shmdat.mpi follows (a subset of them)."""
    return 3, 1


def Get_library_version():
    return f"shmdat.mpi {_shmdat_version}: mpi4py's API on shmdat's DAT API (MPI 3.1 subset)"


def get_vendor():
    """mpi4py's get_vendor: ('shmdat', shmdat's version as a tuple of ints)."""
    return "shmdat", tuple(int(part) for part in _shmdat_version.split("."))


def Init():
    """MPI_Init: importing this module initialized already, so nothing to do (a program
    written for mpi4py with rc.initialize = False runs). MPI.Exception ERR_OTHER after
    Finalize."""
    Init_thread()


def Init_thread(required=THREAD_MULTIPLE):
    """MPI_Init_thread: as Init; returns the thread level provided (`required`, up to
    THREAD_MULTIPLE)."""
    if _finalized:
        raise Exception(ERR_OTHER, "MPI_Init after MPI_Finalize")
    return min(required, _THREAD_LEVEL)


def Query_thread():
    """MPI_Query_thread: the thread level provided."""
    return _THREAD_LEVEL


def Is_initialized():
    return True


def Is_finalized():
    return _finalized


def Finalize():
    """MPI_Finalize: delete COMM_SELF's attributes, then COMM_WORLD's (their delete_fn, as
    MPICH: libraries hang their clean-up there), wait for this rank's outstanding sends,
    close its IA; no MPI call may follow. MPI.Exception ERR_OTHER if called twice."""
    global _finalized
    if _finalized:
        raise Exception(ERR_OTHER, "MPI_Finalize called twice")
    _finalized = True
    _not_at_exit(_delete_attributes)
    _not_at_exit(_engine.close)
    try:
        _delete_attributes()
    finally:
        _engine.close()


def _delete_attributes():
    """Finalize's first step (also at exit: registered after the engine's close, so run
    before it)."""
    try:
        COMM_SELF._attrs.clear(COMM_SELF)
    finally:
        COMM_WORLD._attrs.clear(COMM_WORLD)


def _init():
    rank, size, sock = _launch_info()
    engine = Engine(rank, size)
    _at_exit(engine.close)
    if sock is not None:
        _connect_all(engine, _exchange(sock, rank, engine.ia.address, engine.psp.conn_qual))
    return engine


_main_thread = _current_thread()
_engine = _init()
_finalized = False
COMM_WORLD = Comm(_engine, WORLD_CONTEXT, range(_engine.size), "MPI_COMM_WORLD")
COMM_SELF = Comm(_engine, SELF_CONTEXT, [_engine.rank], "MPI_COMM_SELF")
Comm._constants = (COMM_WORLD, COMM_SELF)     # (their integer handles: shmdat/mpi/handles.py)
Comm._numbers.predefine([(COMM_WORLD, handles.COMM["WORLD"]), (COMM_SELF, handles.COMM["SELF"])])
Win.COMM_SELF = COMM_SELF   # Win.Create's and Allocate's default communicator
Message.COMM_SELF = COMM_SELF   # where MESSAGE_NO_PROC's receives from PROC_NULL run
Grequest.COMM_SELF = COMM_SELF  # whose engine generalized requests wait in
dynproc.init(_engine, COMM_WORLD, COMM_SELF)   # (a spawned process connects to its parents)
del dynproc
Session.COMM_WORLD = COMM_WORLD  # the job's ranks and engine, for sessions' groups
_at_exit(_delete_attributes)
# The modules imported for what importing them sets (Comm's methods, ...) or for the lines
# above leave the namespace, as mpi4py's has none.
del create_group, datatypes, dynamic, errors, handles, isendrecv, partitioned, \
    intercomm_split, intercomm_v, persistent, subclass, ulfm, wcollectives
