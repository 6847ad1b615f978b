"""Unchanged mpi4py programs (issue 14, point 5): `shmdat run --mpi4py` and `python -m
shmdat.mpi --mpi4py` make `from mpi4py import MPI` give shmdat.mpi in the ranks. Every
program runs in real processes; the same program runs under mpiexec (mpi4py + MPICH)
where both are installed, and must print the same.

mpi4py's own demo programs run too when SHMDAT_MPI4PY_DEMOS names the demo/ directory of
an unpacked mpi4py source distribution (`pip download mpi4py --no-binary :all: --no-deps`);
otherwise that test is skipped.
"""

import importlib.util
import os
import subprocess
import sys

import pytest

from shmdat.bench.runner import find_mpiexec
from tests.mpi_launch import ROOT, TIMEOUT, env, launch, needs_mpiexec, write

# shmdat.mpi's launcher.SHIM_DIR (not imported here: `import shmdat` must not show `mpi`,
# tests/test_public_names.py).
SHIM_DIR = os.path.join(ROOT, "shmdat", "mpi", "shim")

REAL_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_real_mpi4py = pytest.mark.skipif(not REAL_MPI4PY, reason="mpi4py is not installed")

# Point to point, object and buffer collectives; rank 0 says which MPI it ran on.
PROGRAM = """
    import sys

    import numpy as np
    import mpi4py
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    data = comm.bcast({"n": 7} if rank == 0 else None, root=0)
    total = comm.allreduce(rank + data["n"], op=MPI.SUM)
    a = np.arange(4, dtype="d") * (rank + 1)
    b = np.empty(4)
    comm.Allreduce([a, MPI.DOUBLE], [b, MPI.DOUBLE], op=MPI.MAX)
    got = comm.sendrecv(f"from {rank}", dest=(rank + 1) % size, source=(rank - 1) % size)
    comm.Barrier()
    out = f"rank {rank} of {size}: total {total} max {b.tolist()} got {got!r}\\n"
    if rank == 0:
        out += f"on shmdat: {getattr(mpi4py, '__shmdat__', False)}\\n"
    sys.stdout.write(out)           # one write: the ranks share the pipe
    sys.stdout.flush()
"""
EXPECTED = [
    "rank 0 of 3: total 24 max [0.0, 3.0, 6.0, 9.0] got 'from 2'",
    "rank 1 of 3: total 24 max [0.0, 3.0, 6.0, 9.0] got 'from 0'",
    "rank 2 of 3: total 24 max [0.0, 3.0, 6.0, 9.0] got 'from 1'",
]


def run(argv, timeout=TIMEOUT, **kw):
    kw.setdefault("env", env())
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)


def shmdat_run(n, *command, **kw):
    """`shmdat run -n n --mpi4py -- command...`, this tree's shmdat first on the path."""
    return run([sys.executable, "-m", "shmdat", "run", "-n", str(n), "--mpi4py", "--", *command],
               **kw)


@pytest.mark.parametrize("how", ["shmdat run", "python -m shmdat.mpi"])
def test_an_unchanged_mpi4py_program_runs_on_shmdat_mpi(tmp_path, how):
    prog = write(tmp_path, PROGRAM)
    if how == "shmdat run":
        r = shmdat_run(3, sys.executable, prog)
    else:
        r = run([sys.executable, "-m", "shmdat.mpi", "--mpi4py", "-n", "3", prog])
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["on shmdat: True", *EXPECTED]


@needs_mpiexec
def test_the_same_program_under_mpiexec_prints_the_same(tmp_path):
    prog = write(tmp_path, PROGRAM)
    r = run([find_mpiexec(), "-n", "3", sys.executable, prog])
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["on shmdat: False", *EXPECTED]


def test_without_the_flag_mpi4py_is_not_the_shim(tmp_path):
    r = launch(tmp_path, 2, """
        import os
        try:
            import mpi4py
            found = str(getattr(mpi4py, "__shmdat__", False))
        except ImportError as e:
            found = type(e).__name__
        os.write(1, f"{found}\\n".encode())          # one write: the ranks share the pipe
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["False" if REAL_MPI4PY else "ModuleNotFoundError"] * 2


def test_mpi4py_MPI_has_shmdat_mpis_objects_and_mpi4pys_package_names(tmp_path):
    prog = write(tmp_path, """
        import mpi4py

        mpi4py.rc.threads = False                       # set before MPI, as programs do
        mpi4py.rc(thread_level="funneled", initialize=True)
        for bad in ("mpi4py.rc.nonsense = 1", "mpi4py.rc(nonsense=1)"):
            try:
                exec(bad)
                print("accepted", bad)
            except TypeError as e:
                print("TypeError:", e)
        from mpi4py import MPI
        import shmdat.mpi.MPI as ours

        print(mpi4py.__version__, mpi4py.rc.threads, mpi4py.rc.thread_level, repr(mpi4py.rc))
        print(MPI.COMM_WORLD is ours.COMM_WORLD, MPI.Comm is ours.Comm, MPI.SUM is ours.SUM,
              MPI.DOUBLE is ours.DOUBLE, MPI.Exception is ours.Exception)
        print(MPI.__file__, mpi4py.__file__)
        print(MPI.COMM_WORLD.Get_size(), hasattr(mpi4py, "get_include"))
    """)
    r = shmdat_run(1, sys.executable, prog)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "TypeError: mpi4py.rc has no option 'nonsense'",
        "TypeError: mpi4py.rc has no option 'nonsense'",
        "4.1.2 False funneled <mpi4py.rc>",
        "True True True True True",
        f"{os.path.join(SHIM_DIR, 'mpi4py', 'MPI.py')} {os.path.join(SHIM_DIR, 'mpi4py', '__init__.py')}",
        "1 False",
    ]


def test_without_a_real_mpi4py_its_pure_python_modules_are_missing(tmp_path):
    # The real mpi4py (if any) taken off the path before `import mpi4py` (shmdat.mpi and
    # numpy are imported first, from wherever they are).
    prog = write(tmp_path, f"""
        import os, sys
        import shmdat.mpi.MPI
        sys.path[:] = [p for p in sys.path if p == {SHIM_DIR!r}
                       or not os.path.isdir(os.path.join(p, "mpi4py"))]
        import mpi4py
        from mpi4py import MPI
        print(mpi4py.__path__ == [{os.path.join(SHIM_DIR, "mpi4py")!r}], MPI.COMM_WORLD.Get_size())
        import mpi4py.bench
    """)
    r = shmdat_run(1, sys.executable, prog)
    assert r.returncode == 1
    assert r.stdout == "True 1\n"
    assert "ModuleNotFoundError: No module named 'mpi4py.bench'" in r.stderr


@needs_real_mpi4py
def test_python_m_mpi4py_runs_a_script_and_its_failure_ends_the_job(tmp_path):
    prog = write(tmp_path, PROGRAM)
    r = shmdat_run(3, sys.executable, "-m", "mpi4py", prog)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["on shmdat: True", *EXPECTED]
    # mpi4py.run calls MPI._set_abort_status; the launcher ends the job with the status.
    failing = write(tmp_path, """
        from mpi4py import MPI
        if MPI.COMM_WORLD.Get_rank() == 1:
            raise ValueError("rank 1 failed")
        MPI.COMM_WORLD.recv(source=1)                  # would wait for ever
    """, name="failing.py")
    r = shmdat_run(3, sys.executable, "-m", "mpi4py", failing)
    assert r.returncode == 1
    assert "ValueError: rank 1 failed" in r.stderr and "AttributeError" not in r.stderr


@needs_real_mpi4py
def test_python_m_mpi4py_bench_ringtest():
    r = shmdat_run(2, sys.executable, "-m", "mpi4py.bench", "ringtest", "-l", "100", "-n", "1024")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("time for 100 loops = ") and "(2 processes, 1024 bytes)" in r.stdout


DEMOS = os.environ.get("SHMDAT_MPI4PY_DEMOS")
# mpi4py's demos that shmdat.mpi runs (docs/design/mpi.md lists the others and what they
# miss): (path in demo/, ranks, stdin).
RUNNING_DEMOS = [
    ("helloworld.py", 3, ""),
    ("compute-pi/cpi-cco.py", 3, "100\n"),
    ("mpi-ref-v1/ex-2.01.py", 2, ""),
    ("mpi-ref-v1/ex-2.08.py", 2, ""),
    ("mpi-ref-v1/ex-2.16.py", 3, ""),
    ("mpi-ref-v1/ex-2.29.py", 3, ""),
]


@pytest.mark.skipif(not DEMOS, reason="SHMDAT_MPI4PY_DEMOS does not name mpi4py's demo/ directory")
@pytest.mark.parametrize("path, n, stdin", RUNNING_DEMOS)
def test_mpi4pys_demos_run_unchanged(path, n, stdin):
    demo = os.path.join(DEMOS, path)
    # Whole lines (print's text and newline as one write), as under mpiexec by default.
    quiet = {k: v for k, v in env().items() if k != "PYTHONUNBUFFERED"}
    r = shmdat_run(n, sys.executable, demo, cwd=os.path.dirname(demo), input=stdin, env=quiet)
    assert r.returncode == 0, r.stderr
    if mpi_available() is None:
        m = run([find_mpiexec(), "-n", str(n), sys.executable, demo], cwd=os.path.dirname(demo),
                input=stdin, env=quiet)
        assert m.returncode == 0, m.stderr
        assert sorted(r.stdout.splitlines()) == sorted(m.stdout.splitlines())
