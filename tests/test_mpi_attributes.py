"""shmdat.mpi's attribute caching (mpi4py's Comm/Win/Datatype.Create_keyval, Set_attr,
Get_attr, Delete_attr, Free_keyval): values per object and keyval, what a Dup inherits
through copy_fn, delete_fn when a value is replaced, deleted or its object freed (also at
Finalize: COMM_SELF's, then COMM_WORLD's), nopython keyvals, and MPICH's error classes;
the same program under mpiexec, line for line. A callback that raises is ERR_OTHER with
its traceback on stderr."""

from tests import mpi_launch

PROGRAM = """import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank = comm.rank
out, deleted = [], []
k = MPI.Comm.Create_keyval(delete_fn=lambda o, kk, v: deleted.append(v))
k2 = MPI.Comm.Create_keyval()
out.append(("new", k != MPI.KEYVAL_INVALID, k2 != k, comm.Get_attr(k), outcome(lambda: comm.Delete_attr(k))))
comm.Set_attr(k, "a"); comm.Set_attr(k, "b")
out.append(("replaced", comm.Get_attr(k), list(deleted), MPI.Comm(comm).Get_attr(k)))
out.append(("errors", outcome(lambda: comm.Set_attr(MPI.TAG_UB, 5)), outcome(lambda: comm.Delete_attr(MPI.TAG_UB)),
            outcome(lambda: comm.Get_attr("x")), outcome(lambda: comm.Set_attr("x", 1)), outcome(lambda: comm.Get_attr(MPI.KEYVAL_INVALID)),
            outcome(lambda: comm.Get_attr(12345)), outcome(lambda: MPI.Comm.Free_keyval(MPI.KEYVAL_INVALID)),
            outcome(lambda: comm.Set_attr(MPI.Win.Create_keyval(), 1)), comm.Get_attr(MPI.TAG_UB) > 0))
s = comm.Split(0, 0)
d = comm.Dup()
out.append(("not inherited", s.Get_attr(k), d.Get_attr(k)))
kc = MPI.Comm.Create_keyval(copy_fn=lambda o, kk, v: v + "!", delete_fn=lambda o, kk, v: deleted.append(v))
kt = MPI.Comm.Create_keyval(copy_fn=True)
kn = MPI.Comm.Create_keyval(copy_fn=lambda o, kk, v: NotImplemented)
comm.Set_attr(kc, "x"); comm.Set_attr(kt, [1]); comm.Set_attr(kn, "n")
d2 = comm.Dup()
out.append(("inherited", d2.Get_attr(kc), d2.Get_attr(kt) is comm.Get_attr(kt), d2.Get_attr(kn)))
d2.Free()
out.append(("freed", list(deleted), MPI.Comm.Free_keyval(k2) == MPI.KEYVAL_INVALID))
held = comm.Dup()
kd = MPI.Comm.Create_keyval(copy_fn=lambda o, kk, v: v.Dup(), delete_fn=lambda o, kk, v: v.Free())
comm.Set_attr(kd, held)
c3 = comm.Dup(); inner = c3.Get_attr(kd)
out.append(("dup of a comm", inner != held, bool(inner)))
c3.Free(); comm.Delete_attr(kd)
out.append(("freed with it", inner == MPI.COMM_NULL, held == MPI.COMM_NULL))
kp = MPI.Comm.Create_keyval(nopython=True)
out.append(("nopython", outcome(lambda: comm.Set_attr(kp, "x")), outcome(lambda: (comm.Set_attr(kp, 5), comm.Get_attr(kp))[1])))
win = MPI.Win.Allocate(8, comm=comm)
kw = MPI.Win.Create_keyval(delete_fn=lambda o, kk, v: deleted.append(("win", v)))
win.Set_attr(kw, "w")
out.append(("win", win.Get_attr(kw), win.Get_attr(MPI.WIN_SIZE), outcome(lambda: win.Set_attr(MPI.WIN_SIZE, 1)), outcome(lambda: win.Get_attr(k))))
win.Free()
out.append(("win freed", deleted[-1], MPI.Win.Free_keyval(kw) == MPI.KEYVAL_INVALID))
kty = MPI.Datatype.Create_keyval()
MPI.INT.Set_attr(kty, 7)
out.append(("datatype", MPI.INT.Get_attr(kty), MPI.DOUBLE.Get_attr(kty), outcome(lambda: MPI.INT.Get_attr(k))))
MPI.INT.Delete_attr(kty)
out.append(("datatype deleted", MPI.INT.Get_attr(kty), MPI.Datatype.Free_keyval(kty) == MPI.KEYVAL_INVALID))
kf = MPI.Comm.Create_keyval(delete_fn=lambda o, kk, v: say(rank, "finalize deletes", v))
MPI.COMM_WORLD.Set_attr(kf, "world")
MPI.COMM_SELF.Set_attr(kf, "self")
for o in out:
    say(rank, o)
MPI.Finalize()
say(rank, "after Finalize")
"""

RAISING = """import sys
from mpi4py import MPI
comm = MPI.COMM_WORLD
def boom(o, k, v):
    raise ValueError("from the callback")
for what, kwargs in (("delete", dict(delete_fn=boom)), ("copy", dict(copy_fn=boom))):
    k = MPI.Comm.Create_keyval(**kwargs)
    comm.Set_attr(k, "v")
    try:
        if what == "delete":
            comm.Delete_attr(k)
        else:
            comm.Dup()
    except MPI.Exception as e:
        print(what, e.Get_error_class() == MPI.ERR_OTHER, flush=True)
    if what == "copy":
        comm.Delete_attr(k)
    MPI.Comm.Free_keyval(k)
"""


@mpi_launch.needs_mpiexec
def test_attributes_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, PROGRAM)


def test_finalize_deletes_comm_self_attributes_then_comm_world_ones(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 2, PROGRAM), sort=False)
    for rank in (0, 1):
        mine = [line for line in lines if line.startswith(f"{rank} ")]
        # COMM_SELF's attributes go first at Finalize, then COMM_WORLD's, and before it returns.
        assert mine[-3:] == [f"{rank} finalize deletes self", f"{rank} finalize deletes world",
                             f"{rank} after Finalize"], mine


def test_a_raising_callback_is_err_other_with_its_traceback(tmp_path):
    r = mpi_launch.launch_mpi4py(tmp_path, 1, RAISING)
    assert mpi_launch.lines_of(r, sort=False) == ["delete True", "copy True"]
    assert r.stderr.count("ValueError: from the callback") == 2


def test_a_freed_keyval_names_nothing_and_values_still_go_through_its_delete_fn(tmp_path):
    # MPICH answers with whatever memory holds (or crashes): shmdat.mpi says ERR_KEYVAL.
    body = """from mpi4py import MPI
comm = MPI.COMM_WORLD
k = MPI.Comm.Create_keyval(delete_fn=lambda o, kk, v: print("deleted", v))
d = comm.Dup()
d.Set_attr(k, "kept")
assert MPI.Comm.Free_keyval(k) == MPI.KEYVAL_INVALID
for call in (lambda: comm.Get_attr(k), lambda: comm.Set_attr(k, 1), lambda: comm.Delete_attr(k),
             lambda: MPI.Comm.Free_keyval(k)):
    try:
        call()
    except MPI.Exception as e:
        print(e.Get_error_class() == MPI.ERR_KEYVAL)
d.Free()
"""
    r = mpi_launch.launch_mpi4py(tmp_path, 1, body)
    assert mpi_launch.lines_of(r, sort=False) == ["True"] * 4 + ["deleted kept"]
