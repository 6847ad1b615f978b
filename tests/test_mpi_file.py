"""shmdat.mpi's MPI-IO (MPI.File, shmdat/mpi/file.py), by real launches: opening (amodes,
MODE_CREATE, MODE_EXCL, MODE_APPEND, MODE_DELETE_ON_CLOSE, MODE_SEQUENTIAL), the file's size,
group, hints and handles, views of derived filetypes, every form of data access (explicit
offsets, individual and shared pointers, ordered; blocking, nonblocking, collective, split),
the statuses, the error handlers, and the errors as MPICH gives them. The programs import
mpi4py and run under `shmdat run --mpi4py` and under mpiexec with MPICH alike: their lines
must be the same."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, SAY, assert_same_as_mpiexec, check_every_rank_agrees, launch

HEAD = """
import os, pickle, tempfile
import numpy as np
from mpi4py import MPI
""" + SAY + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size
here = world.bcast(tempfile.mkdtemp(prefix="filetest", dir=os.path.dirname(__file__))
                   if rank == 0 else None)
mine = os.path.join(here, f"mine{rank}")


def show(what, f):
    say(rank, what, outcome(f))
"""

# Opening, the file's properties and handles, and the errors of every call, on COMM_SELF
# files of each rank's own.
ERRORS = HEAD + """
S = MPI.COMM_SELF
RDWR_CREATE = MPI.MODE_RDWR | MPI.MODE_CREATE
say("constants", MPI.MODE_RDONLY, MPI.MODE_RDWR, MPI.MODE_WRONLY, MPI.MODE_CREATE, MPI.MODE_EXCL,
    MPI.MODE_DELETE_ON_CLOSE, MPI.MODE_UNIQUE_OPEN, MPI.MODE_SEQUENTIAL, MPI.MODE_APPEND,
    MPI.SEEK_SET, MPI.SEEK_CUR, MPI.SEEK_END, MPI.DISPLACEMENT_CURRENT, MPI.DISP_CUR,
    MPI.MAX_DATAREP_STRING)
for amode in (MPI.MODE_RDONLY | MPI.MODE_CREATE, MPI.MODE_RDWR | MPI.MODE_WRONLY, 0,
              MPI.MODE_RDONLY | MPI.MODE_EXCL, RDWR_CREATE | MPI.MODE_SEQUENTIAL):
    show(f"open amode {amode}", lambda: MPI.File.Open(S, mine, amode))
show("open missing", lambda: MPI.File.Open(S, mine, MPI.MODE_RDONLY))
show("open empty name", lambda: MPI.File.Open(S, "", MPI.MODE_RDONLY))
show("open in no dir", lambda: MPI.File.Open(S, here + "/no/such", RDWR_CREATE))
show("delete missing", lambda: MPI.File.Delete(mine))
show("open bad comm", lambda: MPI.File.Open(None, mine, RDWR_CREATE))
show("open bad amode", lambda: MPI.File.Open(S, mine, "r"))
show("open bad name", lambda: MPI.File.Open(S, 3.5, RDWR_CREATE))
say("null", MPI.FILE_NULL.toint(), MPI.FILE_NULL.py2f(), bool(MPI.FILE_NULL),
    MPI.File() == MPI.FILE_NULL, pickle.loads(pickle.dumps(MPI.FILE_NULL)) is MPI.FILE_NULL,
    MPI.File.fromint(0) == MPI.FILE_NULL)

f = MPI.File.Open(S, mine, RDWR_CREATE)
say("open", bool(f), f != MPI.FILE_NULL, MPI.File(f) == f, MPI.File.fromint(f.toint()) == f,
    MPI.File.f2py(f.py2f()) == f, MPI.File.fromhandle(f.handle) == f, f.amode, f.size,
    f.atomicity, f.group_size, f.group_rank, MPI.Group.Compare(f.group, S.group) == MPI.IDENT)
show("open excl existing", lambda: MPI.File.Open(S, mine, RDWR_CREATE | MPI.MODE_EXCL))
show("pickle", lambda: pickle.dumps(f))
show("hash", lambda: hash(f))
show("bad File()", lambda: MPI.File(3))
disp, etype, ftype, datarep = f.Get_view()
say("view", disp, etype == MPI.BYTE, ftype == MPI.BYTE, datarep)
show("info", lambda: type(f.Get_info()) is MPI.Info)
show("set info", lambda: f.Set_info(MPI.Info.Create({"access_style": "read_once"})))
show("set info bad", lambda: f.Set_info(None))
for name, call in (("seek -1", lambda: f.Seek(-1)), ("seek whence 7", lambda: f.Seek(0, 7)),
                   ("seek_shared -1", lambda: f.Seek_shared(-1)),
                   ("set_size -1", lambda: f.Set_size(-1)),
                   ("preallocate -1", lambda: f.Preallocate(-1)),
                   ("byte offset -1", lambda: f.Get_byte_offset(-1)),
                   ("write_at -1", lambda: f.Write_at(-1, b"x")),
                   ("read_at -1", lambda: f.Read_at(-1, bytearray(1)))):
    show(name, call)

# Reads past the end: fewer bytes, the status's count says (source and tag left as they were,
# UNDEFINED in a request's).
a = np.arange(10, dtype="i4")
b = np.zeros(20, dtype="i4")
st = MPI.Status()
f.Write(a, st)
say("write status", st.source, st.tag, st.error, st.Get_count(MPI.INT), f.Get_position())
f.Read_at(0, b, st)
say("read past end", st.source, st.tag, st.Get_count(MPI.INT), st.Get_count(MPI.BYTE),
    st.Get_elements(MPI.INT), b.tolist())
f.Read_at(100, b, st)
say("read far past end", st.Get_count(MPI.INT))
request = f.Iread_at(4, b)
request.Wait(st)
say("iread", st.source, st.tag, st.error, st.Get_count(MPI.INT), request == MPI.REQUEST_NULL)
f.Read(b[:2], st)
say("read at the end", st.Get_count(MPI.INT), f.Get_position())
show("write a read-only buffer", lambda: f.Read(b"abcd"))

# Views: errors, and what Get_view, Get_byte_offset, Get_type_extent and SEEK_END give.
show("part of an etype", lambda: (f.Set_view(0, MPI.INT), f.Write_at(0, [bytearray(3), MPI.BYTE])))
vector = MPI.INT.Create_vector(2, 1, 3).Commit()
for name, view in (("filetype not of etypes", (0, MPI.INT, MPI.SHORT)),
                   ("vector of shorts", (0, MPI.INT, MPI.SHORT.Create_vector(2, 1, 2).Commit())),
                   ("not committed", (0, MPI.INT, MPI.INT.Create_vector(2, 1, 2))),
                   ("datarep foo", (0, MPI.INT, MPI.INT, "foo")),
                   ("datarep internal", (0, MPI.INT, MPI.INT, "internal")),
                   ("disp -1", (-1, MPI.INT)), ("disp DISP_CUR", (MPI.DISP_CUR, MPI.INT)),
                   ("null etype", (0, MPI.DATATYPE_NULL, MPI.INT)),
                   ("bad etype", (0, "i", MPI.INT)),
                   ("resized", (0, MPI.INT, MPI.INT.Create_resized(-4, 8).Commit())),
                   ("overlapping", (0, MPI.BYTE, MPI.INT.Create_resized(0, 2).Commit())),
                   ("decreasing", (0, MPI.INT, MPI.Datatype.Create_struct(
                       [1, 1], [4, 0], [MPI.INT, MPI.INT]).Commit())),
                   ("negative", (8, MPI.INT, MPI.INT.Create_hindexed([1], [-4]).Commit())),
                   ("vector", (4, MPI.INT, vector))):
    show(name, lambda: f.Set_view(*view))
disp, etype, ftype, datarep = f.Get_view()
say("view", disp, etype == MPI.INT, ftype.Get_extent(), ftype.is_predefined, datarep)
ftype.Free()
say("offsets", [f.Get_byte_offset(i) for i in range(5)], f.Get_type_extent(vector),
    f.Get_type_extent(MPI.DOUBLE))
f.Seek(1, MPI.SEEK_END)
say("seek end", f.Get_position(), f.Get_size())

show("type extent null", lambda: f.Get_type_extent(MPI.DATATYPE_NULL))
f.Set_view(0, MPI.BYTE)

# Arguments' types, as mpi4py converts them.
for name, call in (("open info None", lambda: MPI.File.Open(S, mine, RDWR_CREATE, None)),
                   ("view info None", lambda: f.Set_view(0, MPI.BYTE, None, "native", None)),
                   ("view etype None", lambda: f.Set_view(0, None)),
                   ("view datarep None", lambda: f.Set_view(0, MPI.BYTE, MPI.BYTE, None)),
                   ("view datarep bytes", lambda: f.Set_view(0, MPI.BYTE, MPI.BYTE, b"native")),
                   ("type extent None", lambda: f.Get_type_extent(None)),
                   ("seek float", lambda: f.Seek(1.5)), ("seek whence str", lambda: f.Seek(0, "x")),
                   ("atomicity 2", lambda: (f.Set_atomicity(2), f.Get_atomicity())[1]),
                   ("write None", lambda: f.Write(None)),
                   ("write_at float", lambda: f.Write_at(0.0, b"abc")),
                   ("errhandler None", lambda: f.Set_errhandler(None)),
                   ("call errhandler str", lambda: f.Call_errhandler("x")),
                   ("call errhandler SUCCESS", lambda: f.Call_errhandler(0)),
                   ("delete info None", lambda: MPI.File.Delete(mine, None)),
                   ("register 1", lambda: MPI.Register_datarep(1, None, None, None))):
    show(name, call)
f.Set_atomicity(False)

# Split collectives: one at a time; any end ends it.
show("begin", lambda: f.Read_at_all_begin(0, b))
show("second begin", lambda: f.Read_at_all_begin(0, b))
show("read meanwhile", lambda: f.Read_at(0, b))
show("another kind's end", lambda: f.Write_at_all_end(b))
show("end", lambda: f.Read_at_all_end(b))
show("read_all_end alone", lambda: f.Read_all_end(b))
show("ordered_end alone", lambda: f.Read_ordered_end(b))
say("errhandler", f.Get_errhandler() == MPI.ERRORS_RETURN)
show("close", lambda: f.Close())
say("closed", f == MPI.FILE_NULL, bool(f), f.toint())
for name in ("Close", "Get_size", "Get_amode", "Get_group", "Get_info", "Get_view", "Sync",
             "Get_position", "Get_atomicity"):
    show(f"{name} of a closed file", getattr(f, name))
show("read of a closed file", lambda: f.Read(b))
show("errhandler of FILE_NULL", lambda: MPI.FILE_NULL.Get_errhandler() == MPI.ERRORS_RETURN)
show("free FILE_NULL", lambda: MPI.FILE_NULL.free())

# Access modes.
f = MPI.File.Open(S, mine, MPI.MODE_RDONLY)
for name, call in (("Write", f.Write), ("Write_all", f.Write_all), ("Iwrite", f.Iwrite),
                   ("Write_shared", f.Write_shared), ("Write_ordered", f.Write_ordered),
                   ("Write_all_begin", f.Write_all_begin),
                   ("Write_ordered_begin", f.Write_ordered_begin)):
    show(f"{name} of read-only", lambda: call(a))
show("Write_at of read-only", lambda: f.Write_at(0, a))
show("Write_at_all_begin of read-only", lambda: f.Write_at_all_begin(0, a))
show("Set_size of read-only", lambda: f.Set_size(0))
show("Preallocate of read-only", lambda: f.Preallocate(100))
f.Close()
f = MPI.File.Open(S, mine, MPI.MODE_WRONLY)
# (ROMIO, which opens it for reading too, reads through the shared pointer nevertheless
# but in Read_shared: not compared.)
for name, call in (("Read", f.Read), ("Read_all", f.Read_all), ("Iread", f.Iread),
                   ("Read_shared", f.Read_shared), ("Read_all_begin", f.Read_all_begin)):
    show(f"{name} of write-only", lambda: call(b))
show("Read_at of write-only", lambda: f.Read_at(0, b))
f.Close()
f = MPI.File.Open(S, mine, MPI.MODE_WRONLY | MPI.MODE_SEQUENTIAL)
for name, call in (("Read_at", lambda: f.Read_at(0, b)), ("Seek", lambda: f.Seek(0)),
                   ("Read", lambda: f.Read(b)), ("Get_position", f.Get_position),
                   ("Write", lambda: f.Write(a)), ("Write_shared", lambda: f.Write_shared(a)),
                   ("Write_at", lambda: f.Write_at(0, a)),
                   ("Iwrite_shared", lambda: f.Iwrite_shared(a).Wait()),
                   ("Seek_shared", lambda: f.Seek_shared(0)),
                   ("Get_position_shared", f.Get_position_shared),
                   ("Read_shared", lambda: f.Read_shared(b)),
                   ("Set_view 0", lambda: f.Set_view(0, MPI.INT)),
                   ("Set_view DISP_CUR", lambda: f.Set_view(MPI.DISP_CUR, MPI.INT)),
                   ("Get_view", lambda: f.Get_view()[0]),
                   ("Get_byte_offset", lambda: f.Get_byte_offset(0)),
                   ("Set_size", lambda: f.Set_size(0)), ("Preallocate", lambda: f.Preallocate(8)),
                   ("Write_ordered", lambda: f.Write_ordered(a)), ("Sync", f.Sync)):
    show(f"sequential {name}", call)
f.Close()
f = MPI.File.Open(S, mine, MPI.MODE_RDWR | MPI.MODE_APPEND)
say("append", f.Get_position(), f.Get_position_shared(), f.Get_size())
f.Write(np.int32(7))
say("appended", f.Get_size())
f.Preallocate(10)
say("preallocate smaller", f.Get_size())
f.Preallocate(200)
say("preallocate", f.Get_size())
f.Set_size(12)
say("set_size", f.Get_size())
f.Close()
# external32: big endian, the same sizes (INT, DOUBLE, a float complex, SHORT).
f = MPI.File.Open(S, mine, MPI.MODE_RDWR | MPI.MODE_DELETE_ON_CLOSE)
f.Set_size(0)
f.Set_view(0, MPI.INT, MPI.INT, "external32")
for data, datatype in ((np.array([1, 2, 3], "i4"), MPI.INT), (np.array([1.5], "f8"), MPI.DOUBLE),
                       (np.array([1 + 2j], "c8"), MPI.C_FLOAT_COMPLEX)):
    f.Write(data, st)
    say("external32 write", st.Get_count(datatype), f.Get_position())
say("external32", f.Get_view()[3], f.Get_type_extent(MPI.INT), f.Get_type_extent(vector),
    f.Get_type_extent(MPI.DOUBLE), open(mine, "rb").read().hex())
b3, d1, c1 = np.zeros(3, "i4"), np.zeros(1, "f8"), np.zeros(1, "c8")
f.Read_at(0, b3, st)
f.Read_at(3, d1)
f.Read_at(5, c1)
say("external32 read", b3.tolist(), st.Get_count(MPI.INT), d1.tolist(), c1.tolist())
f.Set_view(4, MPI.INT, MPI.INT.Create_vector(2, 1, 2).Commit(), "external32")
f.Write_at(0, np.array([9, 8, 7, 6], "i4"))
f.Set_view(0, MPI.SHORT, MPI.SHORT, "external32")
s4 = np.zeros(4, "i2")
f.Read_at(0, s4)
say("external32 view", open(mine, "rb").read().hex(), s4.tolist())
f.Close()
f = MPI.File.Open(S, mine, RDWR_CREATE)
f.Close()
show("delete", lambda: MPI.File.Delete(mine))
show("delete again", lambda: MPI.File.Delete(mine))
f = MPI.File.Open(S, mine, RDWR_CREATE | MPI.MODE_DELETE_ON_CLOSE)
f.Close()
say("deleted on close", os.path.exists(mine))
show("register datarep", lambda: MPI.Register_datarep("dummy", None, None, lambda t: t.extent))
show("register it again", lambda: MPI.Register_datarep("dummy", None, None, lambda t: t.extent))
world.Barrier()
if rank == 0:
    os.rmdir(here)
"""

# The error handlers of files: FILE_NULL's is Open's and Delete's, and a user's handler
# runs instead of the exception (the call returns); a communicator's cannot be set on a file.
ERRHANDLERS = HEAD + """
S = MPI.COMM_SELF
def handler(f, code):
    say(rank, "handler", type(f).__name__, f == MPI.FILE_NULL, MPI.Get_error_class(code))
eh = MPI.File.Create_errhandler(handler)
say("default", MPI.FILE_NULL.Get_errhandler() == MPI.ERRORS_RETURN)
MPI.FILE_NULL.Set_errhandler(eh)
show("open missing", lambda: MPI.File.Open(S, mine, MPI.MODE_RDONLY) == MPI.FILE_NULL)
show("delete missing", lambda: MPI.File.Delete(mine))
f = MPI.File.Open(S, mine, MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE)
show("a new file's", lambda: f.Get_errhandler() == MPI.ERRORS_RETURN)    # (mpi4py sets it)
show("seek", lambda: f.Seek(-1))
f.Call_errhandler(MPI.ERR_IO)
MPI.FILE_NULL.Call_errhandler(MPI.ERR_IO)
show("FILE_NULL's call", lambda: [MPI.FILE_NULL.Get_size()] and None)    # (its result: undefined)
show("a comm's handler", lambda: f.Set_errhandler(MPI.Comm.Create_errhandler(handler)))
show("a null handler", lambda: f.Set_errhandler(MPI.ERRHANDLER_NULL))
show("no handler", lambda: f.Set_errhandler(None))
f.Set_errhandler(eh)
show("user's", lambda: f.Get_errhandler() == eh)
show("seek with the user's", lambda: f.Seek(-1))
show("read_at with the user's", lambda: f.Read_at(-1, bytearray(1)))
MPI.FILE_NULL.Set_errhandler(MPI.ERRORS_RETURN)
f.Close()
show("a closed file's is FILE_NULL's", lambda: f.Get_errhandler() == MPI.ERRORS_RETURN)
show("a closed file's call", lambda: f.Get_size())
eh.Free()
world.Barrier()
if rank == 0:
    os.rmdir(here)
"""

# Data access in every form on one file of all the ranks, with views of derived filetypes.
ACCESS = HEAD + """
name = os.path.join(here, "shared")
amode = MPI.MODE_RDWR | MPI.MODE_CREATE | MPI.MODE_DELETE_ON_CLOSE
f = MPI.File.Open(world, name, amode)
g = f.Get_group()
say(rank, "group", g.size, g.rank)
N = 5
mine = np.arange(N, dtype="i8") + 100 * rank
got = np.zeros(N, dtype="i8")
st = MPI.Status()


def everything():
    world.Barrier()
    whole = np.zeros(N * size, dtype="i8")
    if rank == 0:
        f.Read_at(0, whole)
    return world.bcast(whole.tolist())


f.Set_view(0, MPI.INT64_T)
# Explicit offsets, each form: rank r's block at r * N.
for i, (write, read) in enumerate(((f.Write_at, f.Read_at), (f.Write_at_all, f.Read_at_all))):
    write(rank * N, mine + i)
    world.Barrier()
    read(((rank + 1) % size) * N, got, st)
    say(rank, "at", i, got.tolist(), st.Get_count(MPI.INT64_T))
    world.Barrier()
f.Iwrite_at(rank * N, mine + 2).Wait()
f.Iwrite_at_all(rank * N, mine + 3).Wait()
world.Barrier()
f.Iread_at_all(((rank + 1) % size) * N, got).Wait(st)
say(rank, "iat", got.tolist(), st.Get_count(MPI.INT64_T))
world.Barrier()
f.Write_at_all_begin(rank * N, mine + 4)
f.Write_at_all_end(mine + 4, st)
say(rank, "split at", st.Get_count(MPI.INT64_T))
world.Barrier()
f.Read_at_all_begin(((rank + 1) % size) * N, got)
f.Read_at_all_end(got, st)
say(rank, "split at read", got.tolist(), st.Get_count(MPI.INT64_T))
world.Barrier()
# Individual pointers.
f.Seek(rank * N)
f.Write_all(mine + 5)
say(rank, "pointer", f.Get_position(), f.Get_byte_offset(f.Get_position()))
f.Seek(-N, MPI.SEEK_CUR)
f.Iwrite(mine[:2] + 6).Wait()
f.Iwrite_all(mine[2:] + 6).Wait()
f.Write_all_begin(mine[:0])
f.Write_all_end(mine[:0])
world.Barrier()
f.Seek(((rank + 1) % size) * N)
f.Read_all_begin(got[:3])
f.Read_all_end(got[:3])
f.Iread(got[3:4]).Wait()
f.Iread_all(got[4:]).Wait()
say(rank, "individual", got.tolist(), f.Get_position())
f.Seek(0, MPI.SEEK_END)
say(rank, "end", f.Get_position())
# The shared pointer: each write somewhere, all of them in the file once.
f.Seek_shared(0)
f.Write_shared(mine + 7)
f.Iwrite_shared(mine + 8).Wait()
world.Barrier()         # (MPICH's Get_position_shared here may say 0 on a loaded machine)
blocks = np.zeros((2 * size, N), dtype="i8")
if rank == 0:
    f.Read_at(0, blocks)
blocks = sorted(world.bcast(blocks.tolist()))
say(rank, "shared writes", blocks == sorted(list(range(100 * r + k, 100 * r + k + N))
                                            for r in range(size) for k in (7, 8)))
f.Seek_shared(0)
f.Read_shared(got)
say(rank, "read shared", got[1] - got[0], f.Get_position_shared() >= N)
# Ordered: in rank order, the pointer past them all. (ROMIO's Seek_shared does not wait for
# the processes' shared accesses before it: a barrier first.)
world.Barrier()
f.Seek_shared(0, MPI.SEEK_SET)
f.Write_ordered(mine + 9)
say(rank, "ordered", f.Get_position_shared(), everything())
f.Seek_shared(N, MPI.SEEK_SET)
f.Write_ordered_begin(mine[:rank])
f.Write_ordered_end(mine[:rank])
say(rank, "ordered split", f.Get_position_shared(), everything())
f.Seek_shared(0)
f.Read_ordered(got, st)
say(rank, "read ordered", got.tolist(), st.Get_count(MPI.INT64_T))
world.Barrier()
f.Seek_shared(0)
f.Read_ordered_begin(got[:2])
f.Read_ordered_end(got[:2], st)
say(rank, "read ordered split", got[:2].tolist(), st.Get_count(MPI.INT64_T))
world.Barrier()
f.Seek_shared(1, MPI.SEEK_END)
f.Seek_shared(-1, MPI.SEEK_CUR)
say(rank, "seek_shared end", f.Get_position_shared())
f.Set_atomicity(True)
say(rank, "atomic", f.Get_atomicity())
f.Write_at(rank, np.int64(-rank))
f.Set_atomicity(False)
f.Set_size(0)

# Views: rank r sees every size-th int of the file from r (a vector), written as a 2-D
# block of a subarray; a struct, a hindexed and a resized filetype too.
ints = np.arange(12, dtype="i4") + 1000 * rank
column = MPI.INT.Create_vector(12, 1, size).Create_resized(0, 12 * size * 4).Commit()
f.Set_view(rank * 4, MPI.INT, column)
f.Write_all(ints)
world.Barrier()
f.Set_view(0, MPI.INT)
whole = np.zeros(12 * size, dtype="i4")
f.Read_all(whole)
say(rank, "columns", whole.tolist())
f.Set_view(rank * 4, MPI.INT, column)
f.Seek(3)
f.Read(got.view("i4")[:4])
say(rank, "column read", got.view("i4")[:4].tolist(), f.Get_position(), f.Get_byte_offset(5))
f.Set_size(0)
rows = MPI.INT.Create_subarray([2 * size, 3], [2, 3], [2 * rank, 0]).Commit()
f.Set_view(8, MPI.INT, rows)
f.Write_all(ints[:6])
f.Write_all(ints[6:])
world.Barrier()
f.Set_view(8, MPI.INT)
whole = np.zeros(12 * size, dtype="i4")
f.Read_all(whole)
say(rank, "subarray", whole.tolist(), f.Get_size())
f.Set_view(8, MPI.INT, rows)
back = np.zeros(12, dtype="i4")
f.Read_all(back)
say(rank, "subarray back", (back == ints).all())
struct = MPI.Datatype.Create_struct([1, 2], [4, 12], [MPI.INT, MPI.INT]).Commit()
hindexed = MPI.INT.Create_hindexed([2, 1], [0, 12]).Create_resized(0, 24).Commit()
for name, ftype in (("struct", struct), ("hindexed", hindexed)):
    f.Set_size(0)
    f.Set_view(0, MPI.INT)
    if rank == 0:           # (the holes keep what was there)
        f.Write(np.full(20, -7, dtype="i4"))
    f.Set_view(0, MPI.INT, ftype)
    if rank == 0:
        f.Write(np.arange(7, dtype="i4") + 1)
    world.Barrier()
    f.Set_view(0, MPI.INT)
    whole = np.zeros(20, dtype="i4")
    f.Read_at(0, whole, st)
    say(rank, name, whole.tolist(), st.Get_count(MPI.INT), ftype.extent)
    world.Barrier()
# A derived memory datatype: every other int of the buffer.
f.Set_size(0)
f.Set_view(0, MPI.INT)
every_other = MPI.INT.Create_vector(3, 1, 2).Commit()
if rank == 0:
    f.Write([ints, 1, every_other])
world.Barrier()
back = np.full(6, -1, dtype="i4")
f.Read_at(0, [back, 1, every_other], st)
say(rank, "memory vector", back.tolist(), st.Get_count(every_other), st.Get_count(MPI.INT))
for t in (column, rows, struct, hindexed, every_other):
    t.Free()
f.Close()
say(rank, "closed", os.path.exists(name))

# mpi4py's tutorial's two examples: a contiguous Write_at_all, a vector view's Write_all.
tutorial = os.path.join(here, "tutorial")
fh = MPI.File.Open(world, tutorial, MPI.MODE_WRONLY | MPI.MODE_CREATE)
buffer = np.full(10, rank, dtype=np.int64)
fh.Write_at_all(rank * buffer.nbytes, buffer)
fh.Set_view(MPI.INT.Get_size() * rank, filetype=MPI.INT.Create_vector(10, 1, size).Commit())
fh.Write_all(np.full(10, rank, dtype="i"))
fh.Close()
world.Barrier()
if rank == 0:
    with open(tutorial, "rb") as written:
        say("tutorial", written.read().hex())
    os.unlink(tutorial)
world.Barrier()
if rank == 0:
    os.rmdir(here)
"""


PROGRAMS = {"errors": (ERRORS, 2), "errhandlers": (ERRHANDLERS, 1), "access": (ACCESS, 3)}


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("name", PROGRAMS)
def test_file_as_under_mpich(tmp_path, name):
    program, n = PROGRAMS[name]
    assert_same_as_mpiexec(tmp_path, n, program)


# What only shmdat.mpi's side can show: the shared pointer's files all removed (they go to
# the temporary directory, made private here), File.fromint of a closed file, what is not
# implemented, collective opens that fail everywhere, handles and requests.
EXTRAS = FAILS + """
import os, tempfile
import numpy as np
from shmdat.mpi import MPI
from shmdat.mpi.unimplemented import NotImplementedCall

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
here = os.path.join(os.path.dirname(__file__), "files")
pointers = os.path.join(os.path.dirname(__file__), "pointers")
if rank == 0:
    os.mkdir(here)
    os.mkdir(pointers)
world.Barrier()
tempfile.tempdir = pointers         # (where the shared pointers' files go)
name = os.path.join(here, "data")
RDWR_CREATE = MPI.MODE_RDWR | MPI.MODE_CREATE
checks = 0

# Collective opens: different amodes, MODE_EXCL on a file that exists, an intercommunicator.
if size > 1:
    checks += fails(MPI.ERR_NOT_SAME, MPI.File.Open, world, name,
                    RDWR_CREATE if rank else MPI.MODE_RDONLY)
f = MPI.File.Open(world, name, RDWR_CREATE | MPI.MODE_EXCL)
checks += fails(MPI.ERR_FILE_EXISTS, MPI.File.Open, world, name, RDWR_CREATE | MPI.MODE_EXCL)
if size > 1:
    inter = world.Split(rank % 2).Create_intercomm(0, world, 1 - rank % 2)
    checks += fails(TypeError, MPI.File.Open, inter, name, RDWR_CREATE)
    inter.Free()
    checks += 1
checks += fails(MPI.ERR_COMM, MPI.File.Open, MPI.COMM_NULL, name, RDWR_CREATE)
checks += fails(TypeError, MPI.File.Open, world, name, RDWR_CREATE, None)

# Handles: another handle closes it too; integer handles of a closed file name none.
number = f.toint()
g = MPI.File(f)
assert g == f and g is not f and MPI.File.fromint(number) == f
g.Close()
assert not f and f == MPI.FILE_NULL and f.toint() == 0
checks += fails(MPI.ERR_FILE, MPI.File.fromint, number)
checks += fails(MPI.ERR_FILE, MPI.File.fromint, 12345)
checks += fails(MPI.ERR_FILE, f.Close)
f = MPI.File.Open(world, name, RDWR_CREATE, MPI.Info.Create({"access_style": "read_once"}))
info = f.Get_info()
assert dict(info.items()) == {"access_style": "read_once"}, info.items()
f.Set_info(MPI.Info.Create({"striping_factor": "4"}))
assert sorted(f.info.keys()) == ["access_style", "striping_factor"]
f.free()
assert not f
MPI.FILE_NULL.free()
checks += 1

# Not implemented: external32 and registered representations in a view.
f = MPI.File.Open(world, name, RDWR_CREATE | MPI.MODE_DELETE_ON_CLOSE)
MPI.Register_datarep("mine", None, None, lambda datatype: datatype.extent)
f.Set_view(0, MPI.INT, MPI.INT, "external32")
for call, args in ((f.Set_view, (0, MPI.INT, MPI.INT, "mine")),
                   (f.Set_view, (0, MPI.LONG, MPI.LONG, "external32")),
                   (f.Set_view, (0, MPI.INT, MPI.WCHAR.Create_contiguous(2).Commit(),
                                 "external32")),
                   (f.Get_type_extent, (MPI.LONG,)),
                   (f.Write, (np.zeros(2, "i8"),)),
                   (f.Write, ([np.zeros(4, "i4"), 1, MPI.INT.Create_vector(2, 1, 2).Commit()],)),
                   (f.Read, (np.zeros(2, "i8"),))):
    try:
        call(*args)
    except NotImplementedCall as e:
        assert "datarep" in str(e) or "external32" in str(e), e
    else:
        raise AssertionError((call, args))
checks += fails(MPI.ERR_DUP_DATAREP, MPI.Register_datarep, "mine", None, None, None)
checks += fails(TypeError, MPI.Register_datarep, 1, None, None, None)
checks += fails(TypeError, f.Set_view, 0, MPI.INT, MPI.INT, 1)

# Requests: complete at once, as any completion call sees them.
f.Set_view(0, MPI.INT)
data = np.arange(4, dtype="i4") + 10 * rank
requests = [f.Iwrite_at(4 * rank, data[:2]), f.Iwrite_at_all(4 * rank + 2, data[2:])]
assert MPI.Request.Testall(requests)
world.Barrier()
back = np.zeros(4 * size, dtype="i4")
requests = [f.Iread_at(0, back[:4 * size - 1]), f.Iread_shared(back[4 * size - 1:])]
statuses = [MPI.Status(), MPI.Status()]
MPI.Request.Waitall(requests, statuses)
assert back[:-1].tolist() == [10 * r + i for r in range(size) for i in range(4)][:-1], back
assert [s.Get_count(MPI.INT) for s in statuses] == [4 * size - 1, 1]
assert all(r == MPI.REQUEST_NULL for r in requests)
checks += 1

# A view's datatypes are its own: the program frees its handles, and Get_view's.
world.Barrier()
f.Set_size(0)
vector = MPI.INT.Create_vector(2, 1, size)
column = vector.Create_resized(0, 4 * 2 * size).Commit()
vector.Free()
f.Set_view(4 * rank, MPI.INT, column)
column.Free()
_, etype, ftype, _ = f.Get_view()
assert ftype.Get_extent() == (0, 4 * 2 * size) and not ftype.is_predefined
ftype.Free()
f.Write_all(np.array([rank, rank + 100] * 2, dtype="i4"))
world.Barrier()
f.Set_view(0, MPI.INT)
whole = np.zeros(4 * size, dtype="i4")
f.Read_all(whole)
assert whole.tolist() == [r for r in range(size)] + [r + 100 for r in range(size)] + \\
    [r for r in range(size)] + [r + 100 for r in range(size)], whole
checks += 1

# A read through a view with holes stops at the end of the file, as a contiguous one does
# (ROMIO's strided read says it read them all, zeros past the end).
world.Barrier()
f.Set_size(0)
f.Set_view(0, MPI.INT)
if rank == 0:
    f.Write(np.arange(10, dtype="i4"))
world.Barrier()
f.Set_view(4, MPI.INT, MPI.INT.Create_vector(2, 1, 3).Commit())
got8 = np.full(8, -1, dtype="i4")
st = MPI.Status()
f.Read_at(0, got8, st)
assert st.Get_count(MPI.INT) == 5 and got8.tolist() == [1, 4, 5, 8, 9, -1, -1, -1], got8
f.Set_view(0, MPI.INT)
checks += 1

# Writes through interleaved views at once: each is sieved (read, changed, written back
# whole) under a lock on its span, so none loses another's ints.
world.Barrier()
f.Set_size(0)
cyclic = MPI.INT.Create_vector(1, 1, size).Create_resized(0, 4 * size).Commit()
f.Set_view(4 * rank, MPI.INT, cyclic)
world.Barrier()
for part in range(200):
    f.Write(np.arange(part * 20, (part + 1) * 20, dtype="i4") * size + rank)
world.Barrier()
f.Set_view(0, MPI.INT)
every = np.zeros(4000 * size, dtype="i4")
f.Read_at(0, every)
assert (every == np.arange(4000 * size)).all(), np.flatnonzero(every != np.arange(4000 * size))
cyclic.Free()
checks += 1

# A padded pair type goes without its padding (SHORT_INT: 6 bytes of 8), as MPI's type map.
world.Barrier()
f.Set_size(0)
pairs = np.zeros(2, dtype=[("v", "i2"), ("pad", "i2"), ("i", "i4")])
pairs["v"], pairs["i"] = [1, 2], [3, 4]
if rank == 0:
    f.Write_at(0, [pairs, MPI.SHORT_INT])
world.Barrier()
assert f.Get_size() == 12
got = np.zeros(2, dtype=pairs.dtype)
f.Read_at(0, [got, MPI.SHORT_INT], st)
assert got["v"].tolist() == [1, 2] and got["i"].tolist() == [3, 4] and st.Get_count(MPI.SHORT_INT) == 2
f.Iread_at(0, [got, MPI.SHORT_INT]).Wait(st)
assert st.Get_count(MPI.SHORT_INT) == 2
checks += 1

# Atomic mode: every access under an fcntl lock; MODE_APPEND starts the pointers at the end.
f.Set_atomicity(True)
f.Seek_shared(0, MPI.SEEK_END)
f.Write_shared(np.int32(rank))
world.Barrier()
assert f.Get_size() == 12 + 4 * size and f.Get_position_shared() == 3 + size
f.Close()
f = MPI.File.Open(world, name, MPI.MODE_WRONLY | MPI.MODE_CREATE | MPI.MODE_APPEND |
                  MPI.MODE_DELETE_ON_CLOSE)
assert f.Get_position() == f.Get_position_shared() == 0
f.Write_ordered(np.int8(rank))
f.Close()
checks += 1

world.Barrier()
assert not os.path.exists(name) and os.listdir(pointers) == [], os.listdir(pointers)
world.Barrier()
if rank == 0:
    os.rmdir(here)
    os.rmdir(pointers)
os.write(1, f"rank {rank}: {checks} checks\\n".encode())
"""


@pytest.mark.parametrize("n", [1, 3])
def test_file_extras(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, EXTRAS), n)


# FILE_NULL's handler is Open's: ERRORS_ARE_FATAL ends the job on a file that is missing.
FATAL = """
import os
from shmdat.mpi import MPI
MPI.FILE_NULL.Set_errhandler(MPI.ERRORS_ARE_FATAL)
MPI.File.Open(MPI.COMM_SELF, os.path.join(os.path.dirname(__file__), "missing"))
os.write(1, b"returned\\n")
"""


def test_open_fatal(tmp_path):
    r = launch(tmp_path, 2, FATAL)
    assert r.returncode != 0 and "returned" not in r.stdout
    assert "ERRORS_ARE_FATAL on a File: File does not exist" in r.stderr, r.stderr
