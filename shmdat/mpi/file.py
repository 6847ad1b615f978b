"""mpi4py's File: MPI-IO (MPI 4.1 chapter 14) on the machine's ordinary POSIX files. Every
process of the group opens the file itself and moves its own data with pread and pwrite at
the bytes its view selects (shmdat/mpi/fileview.py); the processes share the page cache, so
what one writes the others read at once (MPI's consistency asks no more of Sync than fsync).
The shared file pointer is a hidden file under an fcntl lock (shmdat/mpi/sharedfp.py).

Collective calls that change what every process sees (Open, Close, Set_view, Set_size,
Preallocate, Seek_shared, the ordered reads and writes) agree on the file's communicator (a
Dup of the one given); the other collective forms (*_all, their begin/end and I* forms) move
each process's data as the independent forms do, as MPI allows. The nonblocking forms are
done when they return: their Request is complete. Errors are MPICH's (ROMIO's) classes."""

import contextlib
import errno
import fcntl
import operator
import os
import threading

import numpy as np

from . import errors, filedatarep, fileview, handles, sharedfp, unimplemented
from .comm import UNDEFINED, Comm, Request
from .datatypes import BYTE, Datatype
from .errhandler import ErrorHandling, handle_error, handled_class, plain_class
from .errors import Exception as MPIException
from .fileview import View, check
from .info import INFO_NULL, Info
from .sharedfp import SharedPointer

# MPICH's values, as mpi4py over MPICH has them.
MODE_CREATE, MODE_RDONLY, MODE_WRONLY, MODE_RDWR = 1, 2, 4, 8
MODE_DELETE_ON_CLOSE, MODE_UNIQUE_OPEN, MODE_EXCL = 16, 32, 64
MODE_APPEND, MODE_SEQUENTIAL = 128, 256
SEEK_SET, SEEK_CUR, SEEK_END = 600, 602, 604
DISPLACEMENT_CURRENT = DISP_CUR = -54278278
MAX_DATAREP_STRING = 128

SIEVE_SPAN = 1 << 22    # pieces are sieved through a span of up to 4 MiB (or twice their bytes)
_registered = {}        # Register_datarep's: name -> (read_fn, write_fn, extent_fn)

# An OSError's errno -> the error class, as ROMIO maps them (anything else: ERR_IO).
_OS_ERRORS = {errno.ENOENT: errors.ERR_NO_SUCH_FILE, errno.EEXIST: errors.ERR_FILE_EXISTS,
              errno.EACCES: errors.ERR_ACCESS, errno.EPERM: errors.ERR_ACCESS,
              errno.EROFS: errors.ERR_READ_ONLY, errno.ENOSPC: errors.ERR_NO_SPACE,
              errno.EDQUOT: errors.ERR_QUOTA, errno.ENAMETOOLONG: errors.ERR_BAD_FILE,
              errno.EISDIR: errors.ERR_BAD_FILE, errno.ENOTDIR: errors.ERR_BAD_FILE}

# The kinds of data access: explicit offset, individual pointer, shared pointer, ordered.
_AT, _INDIVIDUAL, _SHARED, _ORDERED = range(4)


def _fail(error_class, detail):
    raise MPIException(error_class, detail)


def _os_error(exc):
    return MPIException(_OS_ERRORS.get(exc.errno, errors.ERR_IO), str(exc))


def _integer(value):
    """A C integer argument as mpi4py converts one: an int, a float truncated; TypeError for
    anything else."""
    return int(value) if isinstance(value, float) else operator.index(value)


def _offset(value, what):
    """An MPI_Offset argument (_integer), MPI.Exception ERR_ARG if negative."""
    value = _integer(value)
    if value < 0:
        _fail(errors.ERR_ARG, f"{what} {value} is negative")
    return value


def _check_amode(amode):
    """MPI_File_open's rule (MPI.Exception ERR_AMODE): one of RDONLY, WRONLY, RDWR; RDONLY
    with neither CREATE nor EXCL; SEQUENTIAL not with RDWR."""
    access = [mode for mode in (MODE_RDONLY, MODE_WRONLY, MODE_RDWR) if amode & mode]
    if len(access) != 1 or amode & MODE_RDONLY and amode & (MODE_CREATE | MODE_EXCL) \
            or amode & MODE_RDWR and amode & MODE_SEQUENTIAL:
        _fail(errors.ERR_AMODE, f"amode {amode}")


def _flags(amode):
    flags = {MODE_RDONLY: os.O_RDONLY, MODE_WRONLY: os.O_WRONLY, MODE_RDWR: os.O_RDWR}
    return next(f for mode, f in flags.items() if amode & mode)


def _create(path, flags, amode):
    """Rank 0's part of Open: the file opened (made with MODE_CREATE, only if new with
    MODE_EXCL) and the shared pointer's file made (at the end of the file with
    MODE_APPEND); (descriptor, the pointer's path). OSError, nothing left open."""
    fd = os.open(path, flags | (os.O_CREAT if amode & MODE_CREATE else 0)
                 | (os.O_EXCL if amode & MODE_EXCL else 0), 0o666)
    try:
        return fd, SharedPointer.create(os.fstat(fd).st_size if amode & MODE_APPEND else 0)
    except OSError:
        os.close(fd)
        raise


def _own(datatype):
    """The view's handle to `datatype` (a named one itself): the program may free its own."""
    return datatype if datatype.is_predefined else Datatype(datatype)


def _count(nbytes, datatype):
    """A status's count for `nbytes` bytes of `datatype`'s data (Get_count divides it by
    the datatype's wire size: a padded pair type's extent)."""
    elements, rest = divmod(nbytes, datatype.size) if datatype.size else (0, nbytes)
    return elements * datatype.wire_size + rest


def _set_count(status, nbytes, datatype):
    if status is not None:
        status.count, status.cancelled = _count(nbytes, datatype), False


class _Complete:
    """A nonblocking data access's operation: done when its call returned."""
    done, ops, error, source, tag = True, (), errors.SUCCESS, UNDEFINED, UNDEFINED

    def __init__(self, nbytes):
        self.nbytes = nbytes


class FileRequest(Request):
    """The complete Request of a nonblocking data access (Iread, Iwrite_at, ...): its status
    says the bytes moved; source and tag are UNDEFINED, as MPICH's."""

    def _fill(self, status):
        if status is not None:
            status._set(UNDEFINED, UNDEFINED, errors.SUCCESS, self._op.nbytes, False)


class File(ErrorHandling, handles.SharedState, handles.Numbered, unimplemented.Missing):
    """MPI_File (mpi4py's File): Open, Close, Delete, the file's size, amode, group, hints,
    view, atomicity, Sync, and data access in every form (explicit offsets, individual and
    shared file pointers, ordered; blocking, nonblocking, collective, split collective).
    A handle whose file is closed, or File(), is null: equal to FILE_NULL."""

    _unimplemented = unimplemented.FILE
    _alive = "_fd"          # (SharedState: None in FILE_NULL, a closed file)
    # MPICH's integer handles of files: 0 for FILE_NULL, then from 4097 (as toint shows them).
    _numbers = handles.Numbers(0, 4097)
    _error = errors.ERR_FILE
    _kind = "File"

    def __new__(cls, file=None):
        return super().__new__(cls)     # (mpi4py's signature: a subclass's __new__ passes it)

    def __init__(self, file=None):
        """mpi4py's File(file=None): a null handle (equal to FILE_NULL, false), or another
        handle to `file`'s file, of this class (a subclass's too): the same state, so that
        a Close through either makes both null. TypeError for anything else."""
        if file is None:
            self._fd = None
        elif isinstance(file, File):
            self.__dict__ = file.__dict__
            if type(file) is not plain_class(type(file)):     # (a handler of the user's set)
                self.__class__ = handled_class(type(self))
        else:
            raise TypeError(f"expected a File, not {type(file).__name__}")

    def __reduce__(self):
        """pickle: FILE_NULL (and a null handle) only, as mpi4py; an open file is ValueError."""
        if self._fd is not None:
            raise ValueError("cannot serialize an open file: only FILE_NULL can be pickled")
        return "FILE_NULL" if self is FILE_NULL else (plain_class(type(self)), ())

    def _free_object(self):
        self.Close()        # (mpi4py's free: Close if not null)

    # Opening, closing, deleting.

    @classmethod
    def Open(cls, comm, filename, amode=MODE_RDONLY, info=INFO_NULL):
        """MPI_File_open (collective over the intracommunicator `comm`): the file at
        `filename` (a str, bytes or path) opened with `amode` (MODE_* or'ed). MPI.Exception
        ERR_COMM (COMM_NULL), ERR_NOT_SAME (the ranks gave different amodes), ERR_AMODE,
        ERR_NO_SUCH_FILE, ERR_FILE_EXISTS (MODE_EXCL), ERR_ACCESS, ERR_BAD_FILE, ERR_IO, ...
        (ROMIO's classes of the system's errors), through FILE_NULL's error handler (MPI's
        rule: no file yet); TypeError for arguments of the wrong type (an Intercomm too)."""
        if not isinstance(comm, Comm) or comm._inter:
            raise TypeError(f"expected an Intracomm, not {type(comm).__name__}")
        path = os.fspath(filename)
        amode = _integer(amode)
        if not isinstance(info, Info):
            raise TypeError(f"expected an Info, not {type(info).__name__}")
        try:
            return cls._open(comm, path, amode, info)
        except MPIException as exc:
            handle_error(FILE_NULL, exc)
            return cls()    # (a user's handler returned: FILE_NULL, as under MPICH)

    @classmethod
    def _open(cls, comm, path, amode, info):
        if not comm:
            _fail(errors.ERR_COMM, "File.Open on COMM_NULL")
        if len(set(comm.allgather(amode))) != 1:
            _fail(errors.ERR_NOT_SAME, "File.Open: the processes gave different amodes")
        _check_amode(amode)
        flags = _flags(amode)
        # Rank 0 makes the file (MODE_CREATE, MODE_EXCL) and the shared pointer's; then the
        # others open what it made.
        fd = error = outcome = None
        if comm.rank == 0:
            try:
                fd, shared_path = _create(path, flags, amode)
                outcome = (None, shared_path)
            except OSError as exc:
                error = _os_error(exc)
                outcome = (error.error_code, None)
        code, shared_path = comm.bcast(outcome, 0)
        if code is not None:
            raise error or MPIException(code, f"File.Open of {path!r} on rank 0")
        if comm.rank != 0:
            try:
                fd = os.open(path, flags)
            except OSError as exc:
                error = _os_error(exc)
        codes = comm.allgather(None if error is None else error.error_code)
        if any(codes):
            if fd is not None:
                os.close(fd)
            if comm.rank == 0:
                sharedfp.remove(shared_path)
            raise error or MPIException(next(c for c in codes if c),
                                        f"File.Open of {path!r} on another rank")
        self = cls.__new__(cls)
        self._fd, self._path, self._amode = fd, path, amode
        self._comm = comm.Dup()     # the file's own collectives
        self._hints = dict(info.items()) if info else {}
        self._atomic = False
        self._writing = threading.Lock()    # (_transfer: this process's threads' writes)
        self._view = View(0, BYTE, BYTE, "native")
        self._pointer = os.fstat(fd).st_size if amode & MODE_APPEND else 0
        self._shared = SharedPointer(shared_path)
        self._split = None          # a split collective's (bytes, datatype) until its end
        return self

    def Close(self):
        """MPI_File_close (collective): every process's handles become null (FILE_NULL);
        the shared pointer's file goes, the file too with MODE_DELETE_ON_CLOSE.
        MPI.Exception ERR_FILE (FILE_NULL, or closed already)."""
        self._check_live()
        comm = self._comm
        comm.Barrier()              # every process is done with the file and its pointer
        os.close(self._fd)
        self._shared.close()

        def remove():
            sharedfp.remove(self._shared.path)
            if self._amode & MODE_DELETE_ON_CLOSE:
                os.unlink(self._path)
        try:
            self._by_root(remove)
        finally:
            comm.Free()
            self._drop_errhandler()
            self.__class__ = plain_class(type(self))   # (errors on it: FILE_NULL's handler)
            self.__dict__.clear()
            self._fd = None

    @classmethod
    def Delete(cls, filename, info=INFO_NULL):
        """MPI_File_delete: remove the file at `filename`. MPI.Exception ERR_NO_SUCH_FILE,
        ERR_ACCESS, ERR_IO, ... through FILE_NULL's error handler."""
        path = os.fspath(filename)
        if not isinstance(info, Info):
            raise TypeError(f"expected an Info, not {type(info).__name__}")
        try:
            os.unlink(path)
        except OSError as exc:
            handle_error(FILE_NULL, _os_error(exc))

    # The file's size, mode, group and hints.

    def Set_size(self, size):
        """MPI_File_set_size (collective): the file cut or extended (with zeros) to `size`
        bytes. MPI.Exception ERR_FILE, ERR_ARG (negative), ERR_READ_ONLY (MODE_RDONLY),
        ERR_UNSUPPORTED_OPERATION (MODE_SEQUENTIAL, as ROMIO)."""
        self._check_writable(errors.ERR_READ_ONLY)
        self._check_random()
        size = _offset(size, "Set_size:")
        self._comm.Barrier()        # every process's writes are in before the file is cut
        self._by_root(lambda: os.ftruncate(self._fd, size))

    def Preallocate(self, size):
        """MPI_File_preallocate (collective): room for `size` bytes; a larger file stays as
        it is. MPI.Exception ERR_FILE, ERR_ARG (negative), ERR_IO (MODE_RDONLY, as ROMIO)."""
        self._check_writable(errors.ERR_IO)
        size = _offset(size, "Preallocate:")

        def grow():
            if size > os.fstat(self._fd).st_size:
                os.posix_fallocate(self._fd, 0, size)
        self._by_root(grow)

    def Get_size(self):
        """MPI_File_get_size: the file's bytes. MPI.Exception ERR_FILE."""
        self._check_live()
        return os.fstat(self._fd).st_size

    size = property(Get_size)

    def Get_amode(self):
        """MPI_File_get_amode: the amode Open was given. MPI.Exception ERR_FILE."""
        self._check_live()
        return self._amode

    amode = property(Get_amode)

    def Get_group(self):
        """MPI_File_get_group: a new Group of the processes that opened the file."""
        self._check_live()
        return self._comm.Get_group()

    group = property(Get_group)

    @property
    def group_size(self):
        self._check_live()
        return self._comm.size

    @property
    def group_rank(self):
        self._check_live()
        return self._comm.rank

    def Set_info(self, info):
        """MPI_File_set_info (collective): hints kept (none changes what the file does
        here). TypeError if `info` is no Info; MPI.Exception ERR_FILE."""
        self._check_live()
        if not isinstance(info, Info):
            raise TypeError(f"expected an Info, not {type(info).__name__}")
        if info:
            self._hints.update(info.items())

    def Get_info(self):
        """MPI_File_get_info: a new Info of the hints given (Open's, Set_info's, Set_view's)."""
        self._check_live()
        return Info.Create(self._hints)

    info = property(Get_info, Set_info)

    # Views.

    def Set_view(self, disp=0, etype=BYTE, filetype=None, datarep="native", info=INFO_NULL):
        """MPI_File_set_view (collective): the data this process sees from byte `disp`, in
        etypes, where copies of `filetype` (None: etype) tiled from there put them; both
        file pointers go back to 0. With MODE_SEQUENTIAL, `disp` must be DISP_CUR (the
        shared pointer's byte). MPI.Exception ERR_FILE, ERR_ARG (a negative disp, DISP_CUR
        without MODE_SEQUENTIAL or the reverse, a filetype not made of etypes),
        ERR_TYPE (null or not committed), ERR_UNSUPPORTED_DATAREP (a datarep that is not
        "native", "internal", "external32" (filedatarep.py) nor registered);
        NotImplementedCall for Register_datarep's representations, and external32 of types
        whose size changes there."""
        self._check_live()
        filetype = etype if filetype is None else filetype
        datarep = "native" if datarep is None else datarep
        datarep = datarep.decode() if isinstance(datarep, bytes) else datarep
        for value, kind in ((etype, Datatype), (filetype, Datatype), (datarep, str),
                            (info, Info)):
            if not isinstance(value, kind):
                raise TypeError(f"expected a{'n' * (kind is Info)} {kind.__name__}, "
                                f"not {type(value).__name__}")
        disp = _integer(disp)
        sequential = bool(self._amode & MODE_SEQUENTIAL)
        if (disp == DISP_CUR) != sequential or disp < 0 and disp != DISP_CUR:
            _fail(errors.ERR_ARG, f"Set_view: displacement {disp} (DISP_CUR is for "
                                  "MODE_SEQUENTIAL files, and only it)")
        check(etype, filetype)
        if datarep in _registered:
            raise unimplemented.NotImplementedCall(
                f"File.Set_view with the registered datarep {datarep!r} is not implemented "
                "by shmdat.mpi")
        if datarep not in (*filedatarep.NATIVE, filedatarep.EXTERNAL32):
            _fail(errors.ERR_UNSUPPORTED_DATAREP, f"Set_view: datarep {datarep!r}")
        filedatarep.check(datarep, etype, filetype)
        if info:
            self._hints.update(info.items())
        self._comm.Barrier()        # no process uses the shared pointer any more

        def reset():
            where = self._view.byte_offset(self._shared.get()) if sequential else None
            self._shared.set(0)
            return where
        where = self._by_root(reset)
        disp = where if sequential else disp
        self._view = View(disp, _own(etype), _own(filetype), datarep)
        self._pointer = 0

    def Get_view(self):
        """MPI_File_get_view: (disp, etype, filetype, datarep); a derived datatype as a new
        handle, for the program to free."""
        self._check_live()
        view = self._view
        return view.disp, _own(view.etype), _own(view.filetype), view.datarep

    def Get_byte_offset(self, offset):
        """MPI_File_get_byte_offset: the file byte where etype `offset` of the view lies.
        MPI.Exception ERR_FILE, ERR_ARG (negative), ERR_UNSUPPORTED_OPERATION
        (MODE_SEQUENTIAL)."""
        self._check_random()
        return self._view.byte_offset(_offset(offset, "Get_byte_offset: offset"))

    def Get_type_extent(self, datatype):
        """MPI_File_get_type_extent: `datatype`'s extent in the file (its own: the view's
        representations keep sizes). MPI.Exception ERR_FILE, ERR_TYPE (DATATYPE_NULL)."""
        self._check_live()
        if not isinstance(datatype, Datatype):
            raise TypeError(f"expected a Datatype, not {type(datatype).__name__}")
        if not datatype:
            _fail(errors.ERR_TYPE, "Get_type_extent of DATATYPE_NULL")
        filedatarep.check(self._view.datarep, datatype)
        return datatype.extent

    # File pointers.

    def Seek(self, offset, whence=SEEK_SET):
        """MPI_File_seek: the individual pointer to `offset` etypes from the view's start
        (SEEK_SET), the pointer (SEEK_CUR) or the end of the file (SEEK_END). MPI.Exception
        ERR_FILE, ERR_ARG (another whence, a position before the start),
        ERR_UNSUPPORTED_OPERATION (MODE_SEQUENTIAL)."""
        self._check_random()
        self._pointer = self._sought(offset, whence, lambda: self._pointer)

    def Get_position(self):
        """MPI_File_get_position: the individual pointer, in etypes of the view."""
        self._check_random()
        return self._pointer

    def Seek_shared(self, offset, whence=SEEK_SET):
        """MPI_File_seek_shared (collective, the same arguments everywhere): the shared
        pointer moved as Seek moves the individual one. Errors as Seek's."""
        self._check_random()
        offset, whence = _integer(offset), _integer(whence)     # (TypeError before the others)
        self._comm.Barrier()        # no process uses the shared pointer any more
        self._by_root(lambda: self._shared.set(self._sought(offset, whence, self._shared.get)))

    def Get_position_shared(self):
        """MPI_File_get_position_shared: the shared pointer, in etypes of the view."""
        self._check_random()
        return self._shared.get()

    def _sought(self, offset, whence, current):
        offset, whence = _integer(offset), _integer(whence)
        if whence == SEEK_CUR:
            offset += current()
        elif whence == SEEK_END:
            offset += self._view.end(os.fstat(self._fd).st_size)
        elif whence != SEEK_SET:
            _fail(errors.ERR_ARG, f"Seek: whence {whence!r}")
        if offset < 0:
            _fail(errors.ERR_ARG, f"Seek: to offset {offset}")
        return offset

    # Consistency.

    def Set_atomicity(self, flag):
        """MPI_File_set_atomicity (collective): in atomic mode each data access holds an
        fcntl lock on the file (shared to read, exclusive to write), so that accesses of
        the processes do not interleave. MPI.Exception ERR_FILE."""
        self._check_live()
        self._atomic = bool(flag)

    def Get_atomicity(self):
        self._check_live()
        return self._atomic

    atomicity = property(Get_atomicity, Set_atomicity)

    def Sync(self):
        """MPI_File_sync (collective): this process's writes to the storage device (fsync).
        MPI.Exception ERR_FILE, ERR_IO."""
        self._check_live()
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise _os_error(exc) from None

    # Data access: every form is one call of _access (its kind, the direction, the buffer,
    # an explicit offset), then its way of giving the result.

    def Read_at(self, offset, buf, status=None):
        """MPI_File_read_at: `buf` read from etype `offset` of the view (fewer bytes at the
        end of the file: the status's count says). MPI.Exception ERR_FILE, ERR_ACCESS
        (MODE_WRONLY), ERR_ARG (a negative offset), ERR_IO (not whole etypes),
        ERR_UNSUPPORTED_OPERATION (MODE_SEQUENTIAL); a buffer spec's errors."""
        _set_count(status, *self._access(_AT, False, buf, offset))

    def Write_at(self, offset, buf, status=None):
        """MPI_File_write_at: `buf` written from etype `offset` of the view. MPI.Exception as
        Read_at's, ERR_READ_ONLY (MODE_RDONLY) for ERR_ACCESS."""
        _set_count(status, *self._access(_AT, True, buf, offset))

    Read_at_all, Write_at_all = Read_at, Write_at

    def Iread_at(self, offset, buf):
        """MPI_File_iread_at: Read_at, its Request complete."""
        return self._request(*self._access(_AT, False, buf, offset))

    def Iwrite_at(self, offset, buf):
        """MPI_File_iwrite_at: Write_at, its Request complete."""
        return self._request(*self._access(_AT, True, buf, offset))

    Iread_at_all, Iwrite_at_all = Iread_at, Iwrite_at

    def Read(self, buf, status=None):
        """MPI_File_read: Read_at at the individual pointer, which moves past what was read."""
        _set_count(status, *self._access(_INDIVIDUAL, False, buf))

    def Write(self, buf, status=None):
        """MPI_File_write: Write_at at the individual pointer, which moves past it."""
        _set_count(status, *self._access(_INDIVIDUAL, True, buf))

    Read_all, Write_all = Read, Write

    def Iread(self, buf):
        return self._request(*self._access(_INDIVIDUAL, False, buf))

    def Iwrite(self, buf):
        return self._request(*self._access(_INDIVIDUAL, True, buf))

    Iread_all, Iwrite_all = Iread, Iwrite

    def Read_shared(self, buf, status=None):
        """MPI_File_read_shared: Read_at at the shared pointer, moved past the etypes asked
        for by this one process at a time. MPI.Exception as Read's (MODE_SEQUENTIAL
        allowed)."""
        _set_count(status, *self._access(_SHARED, False, buf))

    def Write_shared(self, buf, status=None):
        """MPI_File_write_shared: Write_at at the shared pointer, as Read_shared. ERR_IO on a
        MODE_RDONLY file (ROMIO's class)."""
        _set_count(status, *self._access(_SHARED, True, buf))

    def Iread_shared(self, buf):
        return self._request(*self._access(_SHARED, False, buf))

    def Iwrite_shared(self, buf):
        return self._request(*self._access(_SHARED, True, buf))

    def Read_ordered(self, buf, status=None):
        """MPI_File_read_ordered (collective): the processes read at the shared pointer one
        after another in rank order; the pointer moves past them all."""
        _set_count(status, *self._access(_ORDERED, False, buf))

    def Write_ordered(self, buf, status=None):
        """MPI_File_write_ordered (collective): as Read_ordered. ERR_IO on a MODE_RDONLY file
        (ROMIO's class)."""
        _set_count(status, *self._access(_ORDERED, True, buf))

    # Split collectives: the begin moves the data, the end gives its status. One may be
    # under way per file (MPI.Exception ERR_IO for a second begin, or an end without one);
    # as ROMIO, any end ends it.

    def Read_at_all_begin(self, offset, buf):
        self._begin(self._access(_AT, False, buf, offset, split=True))

    def Write_at_all_begin(self, offset, buf):
        self._begin(self._access(_AT, True, buf, offset, split=True))

    def Read_all_begin(self, buf):
        self._begin(self._access(_INDIVIDUAL, False, buf, split=True))

    def Write_all_begin(self, buf):
        self._begin(self._access(_INDIVIDUAL, True, buf, split=True))

    def Read_ordered_begin(self, buf):
        self._begin(self._access(_ORDERED, False, buf, split=True))

    def Write_ordered_begin(self, buf):
        self._begin(self._access(_ORDERED, True, buf, split=True))

    def Read_at_all_end(self, buf, status=None):
        self._end(buf, status, False)

    def Write_at_all_end(self, buf, status=None):
        self._end(buf, status, True)

    def Read_all_end(self, buf, status=None):
        self._end(buf, status, False)

    def Write_all_end(self, buf, status=None):
        self._end(buf, status, True)

    def Read_ordered_end(self, buf, status=None):
        self._end(buf, status, False)

    def Write_ordered_end(self, buf, status=None):
        self._end(buf, status, True)

    def _begin(self, result):
        if self._split is not None:
            _fail(errors.ERR_IO, "a split collective is under way on this file (its end "
                                 "first)")
        self._split = result

    def _end(self, buf, status, write):
        self._check_live()
        datarep = self._view.datarep        # (the spec's errors, as mpi4py's)
        filedatarep.outgoing(datarep, buf) if write else filedatarep.incoming(datarep, buf)
        if self._split is None:
            _fail(errors.ERR_IO, "no split collective is under way on this file")
        result, self._split = self._split, None
        _set_count(status, *result)

    def _request(self, nbytes, datatype):
        return FileRequest(self._comm._engine, None, _Complete(_count(nbytes, datatype)))

    def _access(self, kind, write, buf, offset=None, split=False):
        """Move the data of buffer spec `buf` to (write) or from the file: at etype `offset`
        (_AT), the individual pointer, the shared one, or in rank order; the pointer moved.
        (bytes moved, the buffer's datatype). A write to a MODE_RDONLY file is ERR_READ_ONLY,
        ERR_IO (ROMIO's) through the shared pointer or in a split collective's begin."""
        if write:
            self._check_writable(errors.ERR_IO if kind in (_SHARED, _ORDERED) or split
                                 else errors.ERR_READ_ONLY)
        else:
            self._check_live()
            if self._amode & MODE_WRONLY:
                _fail(errors.ERR_ACCESS, "a read of a MODE_WRONLY file")
        if kind in (_AT, _INDIVIDUAL):
            self._check_random()
        if kind == _AT:
            offset = _offset(offset, "offset")
        datarep = self._view.datarep
        data, datatype, unpack = (*filedatarep.outgoing(datarep, buf), None) if write \
            else filedatarep.incoming(datarep, buf)
        etypes, rest = divmod(len(data), self._view.esize)
        if rest:
            _fail(errors.ERR_IO, f"{len(data)} bytes are no whole number of etypes of "
                                 f"{self._view.esize} bytes")
        if kind == _INDIVIDUAL:
            offset = self._pointer
        elif kind == _SHARED:
            offset = self._shared.fetch_add(etypes)
        elif kind == _ORDERED:
            offset = self._ordered(etypes)
        nbytes = self._transfer(offset, data, write)
        if unpack is not None:
            unpack(nbytes)
        if kind == _INDIVIDUAL:
            self._pointer += -(-nbytes // self._view.esize)
        return nbytes, datatype

    def _ordered(self, etypes):
        """The offset of this process's part of an ordered access (the others' of lower rank
        before it); the shared pointer moved past them all."""
        counts = self._comm.allgather(etypes)
        base = self._shared.fetch_add(sum(counts)) if self._comm.rank == 0 else None
        return self._comm.bcast(base, 0) + sum(counts[:self._comm.rank])

    def _transfer(self, offset, data, write):
        """pwrite or pread `data` at the view's etype `offset` on; the bytes moved (a read
        stops at the end of the file). Many pieces within a span not much larger than the
        data are sieved, as ROMIO does: the span read once, the pieces taken out of it or
        put into it and written back whole. So that a write back never loses what another
        process wrote between, every write holds an fcntl lock on the bytes it spans (its
        threads take turns first: fcntl's locks are the process's); in atomic mode each
        access holds one on the whole file (shared to read)."""
        fd = self._fd
        where, lengths = self._view.segments(offset, len(data))
        if not len(where):
            return 0
        low = int(where.min())
        span = int((where + lengths).max()) - low
        sieve = len(where) > 1 and span <= max(SIEVE_SPAN, 2 * len(data)) \
            and not (write and self._amode & MODE_WRONLY)   # (a write-only file: no read)
        lock = (0, 0) if self._atomic else (span, low) if write else None
        with self._writing if write else contextlib.nullcontext():
            if lock:
                fcntl.lockf(fd, fcntl.LOCK_EX if write else fcntl.LOCK_SH, *lock)
            try:
                if sieve:
                    return self._sieved(low, span, where, lengths, data, write)
                return self._pieces(where, lengths, data, write)
            except OSError as exc:
                raise _os_error(exc) from None
            finally:
                if lock:
                    fcntl.lockf(fd, fcntl.LOCK_UN, *lock)

    def _pieces(self, where, lengths, data, write):
        """One pwrite or preadv per piece."""
        fd, moved = self._fd, 0
        for at, length in zip(where.tolist(), lengths.tolist()):
            piece = data[moved:moved + length]
            if write:
                while piece:
                    done = os.pwrite(fd, piece, at)
                    piece, at, moved = piece[done:], at + done, moved + done
            else:
                got = os.preadv(fd, [piece], at)
                moved += got
                if got < length:
                    break
        return moved

    def _sieved(self, low, span, where, lengths, data, write):
        """The pieces out of (or into) one read of the `span` bytes from `low` (written back
        whole for a write; past the end of the file they are zeros there). The bytes moved:
        a read's up to the first that lies past the end of the file."""
        chunk = bytearray(span)
        got = os.preadv(self._fd, [chunk], low)
        index = fileview.gather_index(where, lengths, low)
        if write:
            np.frombuffer(chunk, np.uint8)[index] = np.frombuffer(data, np.uint8)
            view = memoryview(chunk)
            while view:
                done = os.pwrite(self._fd, view, low)
                view, low = view[done:], low + done
            return len(data)
        past = np.flatnonzero(index >= got)
        moved = int(past[0]) if len(past) else len(index)
        np.frombuffer(data, np.uint8)[:moved] = np.frombuffer(chunk, np.uint8)[index[:moved]]
        return moved

    # Checks.

    def _check_live(self):
        if self._fd is None:
            _fail(errors.ERR_FILE, "the file is FILE_NULL (or closed)")

    def _check_writable(self, error_class):
        self._check_live()
        if self._amode & MODE_RDONLY:
            _fail(error_class, "a write to a MODE_RDONLY file")

    def _check_random(self):
        """Individual pointers and explicit offsets: not with MODE_SEQUENTIAL."""
        self._check_live()
        if self._amode & MODE_SEQUENTIAL:
            _fail(errors.ERR_UNSUPPORTED_OPERATION, "MODE_SEQUENTIAL files have only the "
                                                    "shared file pointer")

    def _by_root(self, call):
        """call() on the group's rank 0, its result (or its error, on every rank) given to
        all: what changes the file for everybody is done once."""
        comm = self._comm
        outcome = None
        if comm.rank == 0:
            try:
                outcome = (None, call())
            except MPIException as exc:
                outcome = (exc.error_code, str(exc))
            except OSError as exc:
                outcome = (_os_error(exc).error_code, str(exc))
        code, value = comm.bcast(outcome, 0)
        if code is not None:
            _fail(code, f"on rank 0: {value}")
        return value

    # Error handlers: a null handle's (a closed file's) are FILE_NULL's, as MPI_FILE_NULL's.

    def _handler_owner(self):
        return self if self._fd is not None else FILE_NULL

    def Get_errhandler(self):
        """MPI_File_get_errhandler: a new handle to the handler set (FILE_NULL's on a closed
        file), to Free when done."""
        return ErrorHandling.Get_errhandler(self._handler_owner())

    def Set_errhandler(self, errhandler):
        """MPI_File_set_errhandler (on FILE_NULL: the handler of errors with no file, Open's
        and Delete's). TypeError if `errhandler` is no Errhandler; MPI.Exception
        ERR_ERRHANDLER (null), ERR_ARG (a communicator's or window's handler, as MPICH)."""
        ErrorHandling.Set_errhandler(self._handler_owner(), errhandler)

    def Call_errhandler(self, errorcode):
        """MPI_File_call_errhandler: the handler set called with `errorcode` (an int:
        TypeError else)."""
        ErrorHandling.Call_errhandler(self._handler_owner(), _integer(errorcode))


FILE_NULL = File()
File._constants = (FILE_NULL,)


def Register_datarep(datarep, read_fn, write_fn, extent_fn):
    """MPI_Register_datarep: `datarep` named (a view cannot use it yet: Set_view raises
    NotImplementedCall). MPI.Exception ERR_DUP_DATAREP if the name was registered already;
    TypeError if it is no str."""
    if not isinstance(datarep, str):
        raise TypeError(f"expected a str, not {type(datarep).__name__}")
    if datarep in _registered:
        _fail(errors.ERR_DUP_DATAREP, f"Register_datarep: {datarep!r}")
    _registered[datarep] = (read_fn, write_fn, extent_fn)
