"""mpi4py's names that shmdat.mpi lacks: NotImplementedCall naming the call (also an
AttributeError, so hasattr() is False), never a wrong answer; and the small calls of the
namespace (VERSION, Intracomm, Is_thread_main, Pcontrol, error strings, Get_attr)."""

import pytest

from tests.mpi_launch import launch

PROGRAM = """
import sys, threading
from shmdat.mpi import MPI
from shmdat.mpi.unimplemented import NotImplementedCall

comm = MPI.COMM_WORLD


def not_implemented(obj, owner, name):
    try:
        getattr(obj, name)
    except NotImplementedError as e:
        assert isinstance(e, AttributeError) and type(e) is NotImplementedCall, type(e)
        assert str(e) == f"{owner}.{name} is not implemented by shmdat.mpi", str(e)
    else:
        raise AssertionError(f"{owner}.{name} was found")
    assert not hasattr(obj, name) and getattr(obj, name, "default") == "default"


for obj, owner, name in ((MPI, "MPI", "Get_abi_version"), (MPI, "MPI", "Remove_error_class"),
                         (MPI, "MPI", "MAX_OBJECT_NAME"), (MPI.Intercomm, "Intercomm", "Create_group")):
    not_implemented(obj, owner, name)
for obj, name in ((MPI, "Bsendx"), (comm, "no_such_call")):   # a typo: a plain AttributeError
    try:
        getattr(obj, name)
    except AttributeError as e:
        assert not isinstance(e, NotImplementedError), e
    else:
        raise AssertionError(name)

assert (MPI.VERSION, MPI.SUBVERSION) == MPI.Get_version()
assert isinstance(comm, MPI.Intracomm) and not comm.is_inter and comm.is_intra
assert MPI.Is_thread_main()
other = []
thread = threading.Thread(target=lambda: other.append(MPI.Is_thread_main()))
thread.start()
thread.join(10)
assert other == [False], other
assert MPI.Pcontrol(1) is None
# mpi4py's Comm(comm): another handle to the same communicator, also from a subclass.


class Mine(MPI.Intracomm):
    def __new__(cls, comm=None):
        return super().__new__(cls, comm)


for alias in (MPI.Intracomm(comm), Mine(comm)):
    assert (alias.rank, alias.size) == (comm.rank, comm.size)
    assert alias.allreduce(2) == 2 * comm.size
# Predefined attributes: keys, not values, as in mpi4py (a tag above TAG_UB's value is refused).
assert comm.Get_attr(MPI.TAG_UB) == 2**31 - 1 and MPI.TAG_UB != 2**31 - 1
comm.send("top", dest=0, tag=comm.Get_attr(MPI.TAG_UB))
assert comm.recv(source=0, tag=2**31 - 1) == "top"
assert comm.Get_attr(MPI.UNIVERSE_SIZE) == comm.size
assert (comm.Get_attr(MPI.APPNUM), comm.Get_attr(MPI.WTIME_IS_GLOBAL)) == (0, 0)
assert comm.Get_attr(MPI.IO) == MPI.ANY_SOURCE
for call, args in ((comm.Get_attr, (12345,)), (comm.send, (0, 0, 2**31))):
    try:
        call(*args)
    except MPI.Exception as e:
        assert e.Get_error_class() == (MPI.ERR_KEYVAL if call == comm.Get_attr else MPI.ERR_TAG)
    else:
        raise AssertionError(call)
assert MPI.Get_error_class(MPI.ERR_RANK) == MPI.ERR_RANK
assert MPI.Get_error_string(MPI.ERR_RANK) == "Invalid rank"
sys.stdout.write("ok\\n")
"""


def test_unimplemented_names_and_the_small_calls(tmp_path):
    r = launch(tmp_path, 1, PROGRAM)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr


def test_every_mpi4py_name_is_implemented_or_listed(tmp_path):
    """mpi4py 4.1.2's public names, namespace by namespace: each is here or in a table of
    shmdat/mpi/unimplemented.py (so none is a plain AttributeError), and no table lists a
    name that is implemented."""
    pytest.importorskip("mpi4py")
    r = launch(tmp_path, 1, """
        import sys
        from mpi4py import MPI as real
        from shmdat.mpi import MPI, unimplemented as u
        if sys.modules["mpi4py"].__version__ != "4.1.2":
            sys.stdout.write("other mpi4py\\n")
            sys.exit(0)
        world = MPI.COMM_WORLD
        for table, theirs, ours in ((u.MODULE, real, MPI), (u.COMM, real.Intracomm, world),
                                    (u.REQUEST, real.Prequest, MPI.Prequest),
                                    (u.WIN, real.Win, MPI.Win),
                                    (u.STATUS, real.Status, MPI.Status()),
                                    (u.DATATYPE, real.Datatype, MPI.DOUBLE.Dup()),   # (derived: its contents exist)
                                    (u.OP, real.Op, MPI.SUM), (u.GROUP, real.Group, world.group),
                                    (u.INFO, real.Info, MPI.INFO_NULL),
                                    (u.CARTCOMM, real.Cartcomm, world.Create_cart([1]))):
            for name in dir(theirs):
                if not name.startswith("_"):
                    assert hasattr(ours, name) != (name in table), (theirs, name)
        sys.stdout.write("ok\\n")
    """.replace("\n        ", "\n"))
    assert r.returncode == 0, r.stdout + r.stderr
    if r.stdout == "other mpi4py\n":
        pytest.skip("the tables are mpi4py 4.1.2's")
    assert r.stdout == "ok\n", r.stdout + r.stderr
