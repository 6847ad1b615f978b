"""Launching a small shmdat.mpi program for a test: written to tmp_path, run with
`shmdat run -n N` (this tree's shmdat first on the path), bounded."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from shmdat.bench.runner import find_mpiexec, mpi_available

ROOT = str(pathlib.Path(__file__).resolve().parent.parent)
TIMEOUT = 60        # below pytest-timeout's 120 s, so a hang fails the test, not the worker
PIDS = "import os; os.write(1, f'pid {os.getpid()}\\n'.encode())\n"   # a program's first line, if
#                                                              the test looks for leftovers


# A test program's check that a call raises, put in front of the programs that check errors:
# MPI.Exception with the error class `error`, or `error` itself where it is a Python exception
# class (ValueError, TypeError, BufferError: what mpi4py raises before calling MPI). Returns 1, for the
# programs that count their checks.
FAILS = """
def fails(error, call, *args, **kw):
    try:
        call(*args, **kw)
    except MPI.Exception as e:
        assert e.Get_error_class() == error, (call, e, error)
    except (ValueError, TypeError, BufferError, KeyError) as e:
        assert isinstance(error, type) and isinstance(e, error), (call, e, error)
    else:
        raise AssertionError(f"{call}{args} did not fail with {error}")
    return 1
"""

# A test program's helpers for printing what its calls gave, put after its imports of os and
# mpi4py's MPI: say() prints a line in one write (ranks share stdout), outcome(f) is
# ("ok", f()) or what f raised: ("MPI", error class) or (exception name,).
SAY = """
def say(*items):
    os.write(1, (" ".join(str(i) for i in items) + "\\n").encode())
def outcome(f):
    try:
        return ("ok", f())
    except MPI.Exception as e:
        return ("MPI", e.Get_error_class())
    except Exception as e:
        return (type(e).__name__,)
"""


def write(tmp_path, body, name="prog.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def env():
    return dict(os.environ, PYTHONPATH=ROOT)


def launch(tmp_path, n, body, *args, launcher=("--",), timeout=TIMEOUT, **kw):
    """Run `body` on n ranks; the CompletedProcess (stdout, stderr as text)."""
    prog = write(tmp_path, body)
    return subprocess.run([sys.executable, "-m", "shmdat", "run", "-n", str(n), *launcher,
                           sys.executable, prog, *args], capture_output=True, text=True,
                          timeout=timeout, env=env(), **kw)


# The same programs under mpi4py + MPICH: their checks are MPI's, not shmdat's.
needs_mpiexec = pytest.mark.skipif(mpi_available() is not None, reason=f"{mpi_available()}")


def as_mpi4py(body):
    """A program written on shmdat.mpi (`from shmdat.mpi import MPI`) made to import mpi4py's
    MPI instead, to be run under mpiexec."""
    return body.replace("from shmdat.mpi import MPI", "from mpi4py import MPI")


def launch_mpiexec(tmp_path, n, body):
    """Run `body` under MPICH's `mpiexec -n n` (mpi4py's own MPI); the CompletedProcess."""
    prog = write(tmp_path, body)
    return subprocess.run([find_mpiexec(), "-n", str(n), sys.executable, prog], capture_output=True,
                          text=True, timeout=TIMEOUT)


def launch_mpi4py(tmp_path, n, body, **kw):
    """Run `body`, a program that imports mpi4py, on n ranks of shmdat.mpi (`shmdat run
    --mpi4py`, the shim)."""
    return launch(tmp_path, n, body, launcher=("--mpi4py", "--"), **kw)


def lines_of(r, sort=True):
    """The lines a launch printed (sorted: ranks print in any order); it must have exited 0."""
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    return sorted(lines) if sort else lines


def assert_same_as_mpiexec(tmp_path, n, body):
    """`body` (importing mpi4py) prints the same lines on n ranks of shmdat.mpi as under
    MPICH's mpiexec."""
    ours = lines_of(launch_mpi4py(tmp_path, n, body))
    assert ours == lines_of(launch_mpiexec(tmp_path, n, body))


def pids(stdout):
    """The pids the ranks printed with PIDS."""
    return [int(line.split()[-1]) for line in stdout.splitlines() if line.startswith("pid ")]


def leftovers(pids):
    """Names in /dev/shm that belong to one of `pids`."""
    marks = [f".{pid}." for pid in pids]
    return [name for name in os.listdir("/dev/shm") if any(m in name for m in marks)]


def check_every_rank_agrees(r, n):
    """A launch of a program whose ranks each print one line `rank R: C checks`: it passed
    on all n ranks, silently, and every rank made the same checks."""
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    lines = sorted(r.stdout.splitlines())
    assert [line.split(":")[0] for line in lines] == [f"rank {i}" for i in range(n)]
    assert len({line.split(":")[1] for line in lines}) == 1     # the same checks everywhere
