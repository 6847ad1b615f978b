"""shmdat.mpi error handlers and error codes, by real launches: ERRORS_RETURN (every
communicator's and window's first handler, as under mpi4py), a user's handler called with the
communicator and the error, after which the call returns, as under mpi4py with MPICH, ERRORS_ARE_FATAL ending the whole job with the error class as its status,
a handler that raises ending it too; handles (Get_errhandler, Free, pickle, toint/fromint,
mpi4py's 32 user handlers); MPI.Exception compared as its code; Add_error_class/_code/_string
and LASTUSEDCODE. PROGRAM runs unchanged under mpi4py + MPICH too (the import aside)."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, PIDS, launch

PROGRAM = FAILS + """
import os
import pickle
from shmdat.mpi import MPI

world = MPI.COMM_WORLD
comm = world.Dup()
checks = 0

# The predefined handles, and a communicator's first handler.
assert not MPI.ERRHANDLER_NULL and MPI.ERRORS_RETURN and MPI.ERRORS_ARE_FATAL
assert MPI.ERRORS_RETURN != MPI.ERRORS_ARE_FATAL and MPI.Errhandler() == MPI.ERRHANDLER_NULL
for eh in (MPI.ERRORS_RETURN, MPI.ERRORS_ARE_FATAL):
    assert pickle.loads(pickle.dumps(eh)) is eh
    copy = pickle.loads(pickle.dumps(MPI.Errhandler(eh)))
    assert copy == eh and copy is not eh
    assert MPI.Errhandler.fromint(eh.toint()) == eh
first = comm.Get_errhandler()
assert first == MPI.ERRORS_RETURN
first.Free()
assert first == MPI.ERRHANDLER_NULL and MPI.ERRORS_RETURN   # the constant is untouched
checks += fails(MPI.ERR_ERRHANDLER, comm.Set_errhandler, MPI.ERRHANDLER_NULL)
checks += fails(MPI.ERR_ERRHANDLER, MPI.Errhandler().Free)
checks += fails(TypeError, comm.Set_errhandler, "ERRORS_RETURN")
checks += fails(MPI.ERR_COMM, MPI.COMM_NULL.Get_errhandler)

# A user's handler: called with the communicator and the error; the call then returns None
# (its results undefined), as mpi4py's over MPICH; MPI.Exception is not raised.
seen = []
def handler(c, code):
    seen.append((c == comm, MPI.Get_error_class(code)))
eh = MPI.Comm.Create_errhandler(handler)
assert eh and eh != MPI.ERRORS_RETURN
comm.Set_errhandler(eh)
got = comm.Get_errhandler()
assert got == eh
got.Free()                                 # (a handle got is the program's to free)
assert comm.Send(b"x", dest=world.size + 3) is None
comm.Iprobe(source=0, tag=-7)           # (what it returns is undefined)
comm.Call_errhandler(MPI.ERR_OTHER)
assert seen == [(True, MPI.ERR_RANK), (True, MPI.ERR_TAG), (True, MPI.ERR_OTHER)], seen
assert comm.allreduce(1) == world.size     # calls that succeed are as before
comm.Set_errhandler(MPI.ERRORS_RETURN)
checks += fails(MPI.ERR_RANK, comm.Send, b"x", dest=world.size + 3)
assert len(seen) == 3                      # no longer called
comm.Call_errhandler(MPI.ERR_OTHER)        # ERRORS_RETURN: nothing happens
eh.Free()
assert eh == MPI.ERRHANDLER_NULL
# A communicator takes a window's or a file's handler and calls it (as MPICH's); a window
# refuses another kind's (ERR_ARG).
wseen = []
weh = MPI.Win.Create_errhandler(lambda obj, code: wseen.append(MPI.Get_error_class(code)))
comm.Set_errhandler(weh)
comm.Call_errhandler(MPI.ERR_OTHER)
feh = MPI.File.Create_errhandler(lambda obj, code: wseen.append(-code))
comm.Set_errhandler(feh)
comm.Call_errhandler(MPI.ERR_TAG)
assert wseen == [MPI.ERR_OTHER, -MPI.ERR_TAG], wseen
comm.Set_errhandler(MPI.ERRORS_RETURN)
win = MPI.Win.Create(None, comm=MPI.COMM_SELF)
checks += fails(MPI.ERR_ARG, win.Set_errhandler, feh)
win.Free()
weh.Free()
feh.Free()
with_eh = world.Dup()                      # a new communicator starts with ERRORS_RETURN
got = with_eh.Get_errhandler()
assert got == MPI.ERRORS_RETURN
got.Free()
with_eh.Free()

# mpi4py's limit: 32 user handlers of one kind (mpi4py never gives a freed one's place back;
# shmdat.mpi does, so the count made before RuntimeError differs by the one freed above).
made = []
try:
    for _ in range(33):
        made.append(MPI.Comm.Create_errhandler(handler))
    raise AssertionError("33 user handlers were made")
except RuntimeError:
    assert 31 <= len(made) <= 32, len(made)
for eh in made:
    eh.Free()
if MPI.get_vendor()[0] == "shmdat":      # (mpi4py's is an AttributeError: no __call__)
    checks += fails(TypeError, MPI.Comm.Create_errhandler, 5)

# MPI.Exception is its error code.
e = MPI.Exception(MPI.ERR_TAG)
assert e == MPI.ERR_TAG and int(e) == MPI.ERR_TAG and hash(e) == hash(MPI.ERR_TAG)
assert MPI.SUCCESS < e <= MPI.ERR_TAG < MPI.ERR_LASTCODE and e and not MPI.Exception(MPI.SUCCESS)
assert repr(e) == "MPI.Exception(4)" and str(e) == MPI.Get_error_string(MPI.ERR_TAG)
assert (e.error_code, e.error_class, e.error_string) == (4, 4, str(e))
assert MPI.Exception(-3) == MPI.ERR_UNKNOWN and isinstance(e, RuntimeError)

# Classes, codes and strings a program adds.
errclass = MPI.Add_error_class()
assert errclass > MPI.ERR_LASTCODE and world.Get_attr(MPI.LASTUSEDCODE) == errclass
assert MPI.Get_error_class(errclass) == errclass and MPI.Get_error_string(errclass) == ""
code = MPI.Add_error_code(errclass)
MPI.Add_error_string(code, "the sky fell")
assert MPI.Get_error_class(code) == errclass and MPI.Get_error_string(code) == "the sky fell"
assert MPI.Exception(code).Get_error_class() == errclass

comm.Free()
os.write(1, f"rank {world.rank}: {checks} checks\\n".encode())    # (one write: ranks share the pipe)
"""

FATAL = PIDS + """
from shmdat.mpi import MPI
world = MPI.COMM_WORLD
comm = world.Dup()
comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
if world.rank == 1:
    comm.Send(b"x", dest=world.size + 3)   # ends the job: ERR_RANK
world.Barrier()                            # the others wait here until the job ends
"""

RAISING_HANDLER = PIDS + """
from shmdat.mpi import MPI
world = MPI.COMM_WORLD
def handler(comm, code):
    raise ValueError("a bug in the handler")
world.Set_errhandler(MPI.Comm.Create_errhandler(handler))
if world.rank == 0:
    world.Send(b"x", dest=-9)
world.Barrier()
"""


@pytest.mark.parametrize("n", [1, 2])
def test_error_handlers_and_codes(tmp_path, n):
    r = launch(tmp_path, n, PROGRAM)
    mpi_launch.check_every_rank_agrees(r, n)
    assert r.stdout.endswith(": 7 checks\n")        # (the shmdat-only one too)


@pytest.mark.parametrize("program, status, says", [
    (FATAL, 6, "ERRORS_ARE_FATAL"),                             # 6: ERR_RANK
    (RAISING_HANDLER, 1, "exception in user-defined error handler"),
])
def test_a_fatal_error_ends_the_whole_job(tmp_path, program, status, says):
    r = launch(tmp_path, 3, program)
    assert r.returncode == status, r.stdout + r.stderr
    assert says in r.stderr
    assert mpi_launch.leftovers(mpi_launch.pids(r.stdout)) == []


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpi4py(tmp_path):
    """The checks are MPI's, not shmdat's: mpi4py + MPICH passes them too."""
    r = mpi_launch.launch_mpiexec(tmp_path, 2, mpi_launch.as_mpi4py(PROGRAM))
    mpi_launch.check_every_rank_agrees(r, 2)
