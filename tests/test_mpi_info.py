"""shmdat.mpi's MPI.Info (mpi4py's): the store, its mapping methods, handles, pickling,
INFO_NULL and INFO_ENV, Create_env, and MPICH's error classes; hints given to calls that take them are
accepted (and ignored, as MPI allows). The same program under mpiexec, line for line."""

from tests import mpi_launch

PROGRAM = """import pickle
from mpi4py import MPI
out = []
i = MPI.Info.Create({"a": "1", "b": "2"})
out.append(("basic", len(i), i.Get("a"), i.Get("zz"), i.Get_nkeys(), i.Get_nthkey(1), i.keys(), i.items(), "a" in i, bool(i), i == MPI.INFO_NULL))
def err(f):
    try:
        r = f(); return ("ok", r)
    except MPI.Exception as e:
        return ("MPI", e.Get_error_class())
    except Exception as e:
        return (type(e).__name__,)
out.append(("errs", err(lambda: i.Get_nthkey(5)), err(lambda: i.Delete("zz")), err(lambda: i.Set("k" * 300, "v")), err(lambda: i.Set("k", "v" * 2000)),
            err(lambda: MPI.INFO_NULL.Get("a")), err(lambda: MPI.INFO_NULL.Set("a", "b")), err(lambda: MPI.INFO_NULL.Free()), err(lambda: i.Set(1, "b")), err(lambda: i.Set("", "b"))))
d = i.Dup(); d["c"] = "3"
out.append(("dup", d.items(), i.items(), d == i, MPI.Info(i) == i))
out.append(("dict", i.pop("a"), i.pop("zz", "dflt"), err(lambda: i.pop("zz")), i.popitem(), len(i), i.get("q", "x"), list(iter(d))))
d.update({"x": "9"}, y="8"); out.append(("update", d.items()))
c = d.copy(); c.clear(); out.append(("clear", len(c), len(d), MPI.INFO_NULL.copy() == MPI.INFO_NULL, len(MPI.INFO_NULL), MPI.INFO_NULL.keys()))
out.append(("consts", MPI.MAX_INFO_KEY, MPI.MAX_INFO_VAL, MPI.INFO_NULL.toint(), MPI.INFO_ENV.toint(), MPI.INFO_ENV.keys()[:3], bool(MPI.INFO_ENV)))
out.append(("pickle", pickle.loads(pickle.dumps(MPI.INFO_NULL)) is MPI.INFO_NULL, pickle.loads(pickle.dumps(MPI.INFO_ENV)) is MPI.INFO_ENV, err(lambda: pickle.loads(pickle.dumps(d)).items())))
f = MPI.Info.Create(); f.Free(); out.append(("freed", f == MPI.INFO_NULL, bool(f)))
out.append(("env free", err(lambda: MPI.INFO_ENV.Free()), bool(MPI.INFO_ENV)))
envs = [MPI.Info.Create_env(a) for a in (None, [], "prog", ["python", "-x", "y"], ("python",))]
out.append(("create_env", [e.items() for e in envs], [e == MPI.INFO_ENV for e in envs], err(lambda: MPI.Info.Create_env([1]))))
for e in envs: e.Free()
win = MPI.Win.Allocate(8, info=MPI.Info.Create({"no_locks": "true"}))
win.Free()
mem = MPI.Alloc_mem(16, MPI.Info.Create([("alloc", "shm")]))
MPI.Free_mem(mem)
out.append(("hints taken",))
for o in out: print(o)
"""


def test_info_under_shmdat_run(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 1, PROGRAM), sort=False)
    assert lines[0] == ("('basic', 2, '1', None, 2, 'b', ['a', 'b'], [('a', '1'), ('b', '2')], "
                        "True, True, False)")
    assert lines[1] == ("('errs', ('MPI', 12), ('MPI', 31), ('MPI', 29), ('MPI', 30), ('MPI', 12), "
                        "('MPI', 12), ('MPI', 12), ('TypeError',), ('MPI', 29))")
    assert lines[-4] == "('freed', True, False)" and lines[-3] == "('env free', ('MPI', 28), True)"
    assert lines[-2] == ("('create_env', [[], [], [('command', 'prog')], [('command', 'python'), "
                         "('argv', '-x y')], [('command', 'python')]], [False, False, False, False, False], "
                         "('TypeError',))")
    assert lines[-1] == "('hints taken',)"


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, PROGRAM)
