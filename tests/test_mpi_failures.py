"""shmdat.mpi when things go wrong: a rank that raises, one SIGKILLed mid-run, one that
exits early; exit statuses; nothing of the job left in /dev/shm; no rank blocked."""

import subprocess
import sys

import pytest

from tests.mpi_launch import PIDS, TIMEOUT, env, launch, leftovers, pids, write

HEAD = PIDS + """
import os, signal, sys
from shmdat.mpi import MPI
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
"""


def test_a_rank_that_raises_fails_the_launch_with_its_traceback(tmp_path):
    # Rank 1 raises; ranks 0 and 2 are blocked in receives that nothing will match.
    r = launch(tmp_path, 3, HEAD + """
comm.Barrier()
if rank == 1:
    raise ValueError("boom in rank 1")
comm.recv(source=MPI.ANY_SOURCE, tag=99)
""")
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "ValueError: boom in rank 1" in r.stderr
    assert len(pids(r.stdout)) == 3
    assert leftovers(pids(r.stdout)) == []


def test_a_rank_sigkilled_mid_run_ends_the_job(tmp_path):
    r = launch(tmp_path, 3, HEAD + """
import numpy as np
buf = np.zeros(1 << 16)
for i in range(50):
    if rank == 2 and i == 20:
        os.kill(os.getpid(), signal.SIGKILL)
    req = comm.Irecv(buf, source=(rank - 1) % size)
    comm.Send(np.full(1 << 16, float(i)), dest=(rank + 1) % size)
    req.Wait()
""")
    assert r.returncode == 128 + 9
    assert len(pids(r.stdout)) == 3
    assert leftovers(pids(r.stdout)) == []


def test_a_receive_from_a_rank_that_has_exited_raises_instead_of_blocking(tmp_path):
    # No launcher help here: rank 1 exits cleanly (status 0) without sending, and rank 0's
    # receive from it must fail on its own: rank 1's finalize said so (its BYE comes before
    # its connection ends).
    r = launch(tmp_path, 2, HEAD + """
if rank == 0:
    try:
        comm.recv(source=1)
    except MPI.Exception as e:
        print("rank 0:", e.Get_error_class() == MPI.ERR_OTHER, e, flush=True)
""")
    assert r.returncode == 0, r.stderr
    assert "rank 0: True" in r.stdout and "rank 1 has finalized" in r.stdout
    assert leftovers(pids(r.stdout)) == []


def test_exit_status_of_the_failing_rank(tmp_path):
    # The others wait on ANY_SOURCE, which live ranks could still match: only the launcher
    # ends them. (Waiting on rank 3 itself, they could fail too, at about the same time.)
    r = launch(tmp_path, 4, HEAD + """
comm.Barrier()
if rank == 3:
    sys.exit(5)
comm.recv(source=MPI.ANY_SOURCE)
""")
    assert r.returncode == 5
    assert leftovers(pids(r.stdout)) == []


def test_a_clean_job_leaves_nothing_and_exits_0(tmp_path):
    r = launch(tmp_path, 4, HEAD + """
comm.send(rank, dest=(rank + 1) % size)
assert comm.recv() == (rank - 1) % size
""")
    assert r.returncode == 0, r.stderr
    assert leftovers(pids(r.stdout)) == []


def test_a_singleton_without_the_launcher(tmp_path):
    # As MPI's singleton init: size 1, sends to itself; a receive nothing can match fails.
    prog = write(tmp_path, HEAD + """
import numpy as np
assert (rank, size) == (0, 1)
req = comm.isend({"me": 0}, dest=0, tag=3)
assert comm.recv(source=0, tag=3) == {"me": 0}
req.wait()
a, b = np.arange(100_000.0), np.zeros(100_000)
r = comm.Irecv(b, source=0)
comm.Send(a, dest=0)
r.Wait()
assert (a == b).all()
comm.Barrier()
try:
    comm.recv(source=0)
except MPI.Exception as e:
    print("would block:", e)
""")
    r = subprocess.run([sys.executable, prog], capture_output=True, text=True, timeout=TIMEOUT,
                       env={k: v for k, v in env().items() if not k.startswith("SHMDAT_MPI")})
    assert r.returncode == 0, r.stderr
    assert "would block: " in r.stdout
    assert leftovers(pids(r.stdout)) == []


def test_a_rank_that_exits_before_the_wire_up_does_not_hold_the_others(tmp_path):
    # Rank 1 never imports MPI and exits 0: the others' import fails at once (no table will
    # come) instead of waiting out the wire-up's timeout.
    r = launch(tmp_path, 3, PIDS + """
import os
if os.environ["SHMDAT_MPI_RANK"] != "1":
    from shmdat.mpi import MPI
""")
    assert r.returncode == 1
    assert "the launcher sent no wire-up table" in r.stderr
    assert leftovers(pids(r.stdout)) == []


def test_abort_ends_the_job_with_its_code(tmp_path):
    r = launch(tmp_path, 3, HEAD + """
comm.Barrier()
if rank == 1:
    comm.Abort(7)
comm.recv(source=1)
""")
    assert r.returncode == 7
    assert "rank 1 called Abort(7)" in r.stderr
    assert len(pids(r.stdout)) == 3
    assert leftovers(pids(r.stdout)) == []


@pytest.mark.parametrize("body", [
    # Rank 2's reduction op raises midway through the recursive doubling.
    """
def add(a, b):
    if rank == 2:
        raise ValueError("boom in rank 2's op")
    return a + b
comm.allreduce([rank], op=add)
""",
    # The root raises instead of broadcasting: the others wait in the tree.
    """
import numpy as np
buf = np.zeros(1 << 16)
if rank == 2:
    raise ValueError("boom in rank 2, the root")
comm.Bcast(buf, root=2)
"""])
def test_a_rank_that_raises_inside_a_collective_ends_the_job(tmp_path, body):
    r = launch(tmp_path, 4, HEAD + "comm.Barrier()\n" + body)
    assert r.returncode == 1
    assert "Traceback" in r.stderr and "ValueError: boom in rank 2" in r.stderr
    assert len(pids(r.stdout)) == 4
    assert leftovers(pids(r.stdout)) == []


def test_waitany_completes_a_live_request_when_another_waits_on_a_rank_gone(tmp_path):
    # Rank 1 exits without sending (its finalize tells the others); rank 2 sends to rank 0
    # once it knows rank 1 will not send.
    # Rank 0's Waitany must return rank 2's message, whenever it notices rank 1's end.
    r = launch(tmp_path, 3, HEAD + """
if rank == 0:
    reqs = [comm.irecv(source=1), comm.irecv(source=2)]
    print("waitany:", MPI.Request.waitany(reqs), flush=True)
    try:
        reqs[0].wait()
    except MPI.Exception as e:
        print("then:", "rank 1 has finalized" in str(e), flush=True)
elif rank == 2:
    try:
        comm.recv(source=1)
    except MPI.Exception:
        comm.send("from 2", dest=0)
""")
    assert r.returncode == 0, r.stderr
    assert "waitany: (1, 'from 2')" in r.stdout and "then: True" in r.stdout
    assert leftovers(pids(r.stdout)) == []
