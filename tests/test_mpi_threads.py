"""THREAD_MULTIPLE: threads of one rank call shmdat.mpi at once (real launches; the same
program, its import changed, passes under mpi4py + MPICH)."""

import shutil
import subprocess
import sys

import pytest

from tests import mpi_launch

PROGRAM = """
import sys
import threading
import numpy as np
from shmdat.mpi import MPI

world = MPI.COMM_WORLD
rank, size = world.rank, world.size
right, left = (rank + 1) % size, (rank - 1) % size
assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
failures = []


def small(t):
    try:
        for i in range(150):
            got = world.sendrecv((rank, t, i), dest=right, sendtag=t, source=left, recvtag=t)
            assert got == (left, t, i), got
    except BaseException as e:
        failures.append(repr(e))


def large(t):
    try:
        out = np.empty(50_000)
        for i in range(20):
            req = world.Irecv(out, source=left, tag=t)
            world.Send(np.full(50_000, rank * 1000.0 + i), dest=right, tag=t)
            req.Wait()
            assert (out == left * 1000 + i).all(), out[:3]
    except BaseException as e:
        failures.append(repr(e))


def from_itself():
    try:          # completed by this rank's own send, not by an event of the EVD
        assert world.recv(source=rank, tag=77) == ("self", rank)
    except BaseException as e:
        failures.append(repr(e))


threads = [threading.Thread(target=small, args=(t,)) for t in range(3)]
threads.append(threading.Thread(target=large, args=(9,)))
threads.append(threading.Thread(target=from_itself))
for thread in threads:
    thread.start()
dup = world.Dup()               # meanwhile this thread: collectives on a communicator of its own
for i in range(20):
    assert dup.allreduce(rank + i) == size * (size - 1) // 2 + size * i
world.send(("self", rank), dest=rank, tag=77)
for thread in threads:
    thread.join(60)
assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
assert not failures, failures
world.Barrier()
sys.stdout.write(f"ok {rank}\\n")      # one write: ranks share the pipe
"""


def _ok(stdout, n):
    return sorted(stdout.split("\n")[:-1]) == [f"ok {r}" for r in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_threads_call_at_once(tmp_path, n):
    """Four threads per rank exchange small (eager) and large (rendezvous) messages with
    their neighbours on one communicator, told apart by tags, while the main thread runs
    collectives on a Dup: every message arrives where it belongs, no thread is stuck."""
    r = mpi_launch.launch(tmp_path, n, PROGRAM)
    assert r.returncode == 0 and _ok(r.stdout, n), r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="mpiexec is not installed")
def test_the_same_program_under_mpi4py(tmp_path):
    pytest.importorskip("mpi4py")
    prog = mpi_launch.write(tmp_path, mpi_launch.as_mpi4py(PROGRAM))
    r = subprocess.run(["mpiexec", "-n", "3", sys.executable, prog], capture_output=True,
                       text=True, timeout=mpi_launch.TIMEOUT)
    assert r.returncode == 0 and _ok(r.stdout, 3), r.stdout + r.stderr
