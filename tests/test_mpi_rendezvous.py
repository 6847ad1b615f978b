"""shmdat.mpi's large messages, by real launches: a rendezvous send copied into the bounce
arena completes at once and its data is what was sent, however the sender's buffer changes
after; sends too large for the arena, or finding it full, are read from the user's buffer;
a rank that finalizes waits until its peers have read what it sent, and never waits on a
peer that finalizes without receiving. The correct programs also run under mpiexec."""

import pytest

from shmdat.mpi.memory import BOUNCE_BYTES, BOUNCE_LIMIT
from tests import mpi_launch
from tests.mpi_launch import PIDS, leftovers, pids


launch = mpi_launch.launch_mpi4py   # (the programs import mpi4py, as under mpiexec)

HEAD = PIDS + f"""
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
BOUNCE_BYTES, BOUNCE_LIMIT = {BOUNCE_BYTES}, {BOUNCE_LIMIT}
"""

# Rank 0 sends, then overwrites each buffer at once; rank 1 receives only after rank 0's
# sends have all returned (rank 0 tells it by a small message sent after them). Sizes: the
# smallest rendezvous, a bounced MiB and the largest bounced message; then, non-blocking,
# one too large for the arena and more sends than the arena holds. (Not a portable MPI
# program: it relies on shmdat.mpi buffering what fits in the arena, which MPI allows.)
OVERWRITE = HEAD + """
sizes = [1 << 16, 1 << 20, BOUNCE_LIMIT]
many = BOUNCE_BYTES // (1 << 20) + 4
def data(i, n):
    return np.random.default_rng(i).integers(0, 255, n, np.uint8)
if rank == 0:
    for i, n in enumerate(sizes):
        a = data(i, n)
        comm.Send(a, dest=1, tag=i)
        a[:] = 0                            # the receiver must still get data(i, n)
    arrays = [data(99, BOUNCE_LIMIT + 8)] + [data(100 + i, 1 << 20) for i in range(many)]
    reqs = [comm.Isend(a, dest=1, tag=99 + i) for i, a in enumerate(arrays)]
    comm.send("sent", dest=1, tag=999)
    for r, a in zip(reqs, arrays):
        r.Wait()
        a[:] = 0
    assert comm.recv(source=1, tag=998) == "received"
else:
    assert comm.recv(source=0, tag=999) == "sent"
    for i in reversed(range(many)):         # (the last ones first: matched out of order)
        b = np.empty(1 << 20, np.uint8)
        comm.Recv(b, source=0, tag=100 + i)
        assert (b == data(100 + i, 1 << 20)).all(), i
    for i, n in enumerate(sizes + [BOUNCE_LIMIT + 8]):
        b = np.empty(n, np.uint8)
        comm.Recv(b, source=0, tag=99 if i == len(sizes) else i)
        assert (b == data(99 if i == len(sizes) else i, n)).all(), n
    comm.send("received", dest=0, tag=998)
print(f"rank {rank} ok", flush=True)
"""


def test_a_sent_buffer_changed_after_the_send_returns_is_received_as_sent(tmp_path):
    r = launch(tmp_path, 2, OVERWRITE)
    assert r.returncode == 0, r.stderr
    assert "rank 0 ok" in r.stdout and "rank 1 ok" in r.stdout
    assert leftovers(pids(r.stdout)) == []


# Rank 0 sends and finalizes; rank 1 posts its receive only after rank 2 has heard that
# rank 0 has sent: rank 0's exit must wait until rank 1 has read the data.
SEND_AND_EXIT = HEAD + """
if rank == 0:
    req = comm.Isend(np.arange(1 << 17, dtype=np.float64), dest=1)
    comm.send("sent", dest=2)
    req.Wait()
elif rank == 2:
    comm.send(comm.recv(source=0), dest=1)
else:
    assert comm.recv(source=2) == "sent"
    b = np.empty(1 << 17)
    comm.Recv(b, source=0)
    assert (b == np.arange(1 << 17)).all()
    print("received", flush=True)
"""


def test_a_rank_that_finalizes_after_a_send_waits_until_it_is_read(tmp_path):
    r = launch(tmp_path, 3, SEND_AND_EXIT)
    assert r.returncode == 0, r.stderr
    assert "received" in r.stdout
    assert leftovers(pids(r.stdout)) == []


@mpi_launch.needs_mpiexec
def test_send_and_exit_under_mpiexec(tmp_path):
    r = mpi_launch.launch_mpiexec(tmp_path, 3, SEND_AND_EXIT)
    assert r.returncode == 0, r.stderr
    assert "received" in r.stdout


@pytest.mark.parametrize("nbytes", [1 << 20, BOUNCE_LIMIT + 8])
def test_ranks_that_finalize_with_sends_nobody_received_do_not_wait_on_each_other(tmp_path, nbytes):
    # Erroneous (MPI wants every send matched before MPI_Finalize), but it must end: each
    # rank's finalize answers the other's unmatched rendezvous.
    r = launch(tmp_path, 2, HEAD + f"""
req = comm.Isend(np.ones({nbytes}, np.uint8), dest=1 - rank)
comm.Barrier()
print(f"rank {{rank}} done", flush=True)
""")
    assert r.returncode == 0, r.stderr
    assert "rank 0 done" in r.stdout and "rank 1 done" in r.stdout
    assert leftovers(pids(r.stdout)) == []


def test_a_receive_from_a_rank_that_has_finalized_raises(tmp_path):
    # Rank 1 finalizes while rank 0 still waits for a message from it that never comes
    # (a rendezvous send of rank 0's, unmatched, keeps rank 1's peer waiting in no way).
    r = launch(tmp_path, 2, HEAD + """
if rank == 0:
    comm.Isend(np.ones(1 << 20, np.uint8), dest=1)
    try:
        comm.recv(source=1)
    except MPI.Exception as e:
        print("raised:", e.Get_error_class() == MPI.ERR_OTHER, "rank 1 has finalized" in str(e),
              flush=True)
""")
    assert r.returncode == 0, r.stderr
    assert "raised: True True" in r.stdout
    assert leftovers(pids(r.stdout)) == []


def test_sends_held_for_a_rank_that_dies_free_their_room_in_the_arena(tmp_path):
    # Rank 1 ends without finalizing (status 0: the launcher lets rank 0 go on) with rank 0's
    # bounced sends unread: once rank 0 learns it has gone, their blocks are free again.
    r = launch(tmp_path, 2, HEAD + """
import os
from shmdat.mpi.MPI import _engine as engine
if rank == 0:
    for _ in range(3):
        comm.Isend(np.ones(1 << 20, np.uint8), dest=1, tag=5).Wait()
    assert engine.bounce.in_use == 3
    comm.send("sent", dest=1, tag=6)
    try:
        comm.recv(source=1)
    except MPI.Exception as e:
        print("gone:", "rank 1 has gone" in str(e), engine.bounce.in_use, flush=True)
else:
    assert comm.recv(source=0, tag=6) == "sent"
    os._exit(0)
""")
    assert r.returncode == 0, r.stderr
    assert "gone: True 0" in r.stdout
    assert leftovers(pids(r.stdout)) == []
