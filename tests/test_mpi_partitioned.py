"""shmdat.mpi's partitioned point to point (Comm.Psend_init, Precv_init, Prequest.Pready,
Pready_range, Pready_list, Parrived), by real launches at 1, 2 and 3 ranks: rounds of a ring
and of a rank with itself, the two sides cutting the buffer into different numbers of
partitions, Parrived false until every partition is ready and true after, eager and
rendezvous sizes, PROC_NULL, a truncated receive, the requests' statuses and life (Start,
Free, REQUEST_NULL), and that no ordinary receive (ANY_TAG's included) takes a partitioned
message. The errors program runs unchanged under mpi4py + MPICH and prints the same lines
(MPICH 5.0's partitioned rounds themselves abort in an assertion, so only the checks before a
round's data moves are compared)."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, SAY, check_every_rank_agrees, launch

ROUNDS = FAILS + """
import os
import numpy as np
from shmdat.mpi import MPI

comm = MPI.COMM_WORLD.Dup()
rank, size = comm.rank, comm.size
right, left = (rank + 1) % size, (rank - 1) % size
checks = 0

for count in (12, 300000):              # (eager, and a rendezvous of 1.2 MB)
    for sparts, rparts in ((1, 1), (3, 3), (4, 2), (2, 6)):
        for peer_out, peer_in in ((right, left), (rank, rank)):
            sbuf = np.zeros(count, "i")
            rbuf = np.full(count, -1, "i")
            send = comm.Psend_init(sbuf, sparts, peer_out, 5)
            recv = comm.Precv_init([rbuf, MPI.INT], rparts, peer_in, 5)
            for round_ in range(3):
                sbuf[:] = np.arange(count) + 1000 * rank + round_      # read at the round's end
                comm.Barrier()
                recv.Start()
                assert not any(recv.Parrived(i) for i in range(rparts))
                comm.Barrier()
                send.Start()
                for i in range(sparts - 1):
                    send.Pready(i)
                assert not any(recv.Parrived(i) for i in range(rparts))
                comm.Barrier()      # (each rank has looked before any last partition is ready)
                send.Pready_list([sparts - 1])
                while not recv.Parrived(rparts - 1):
                    pass
                assert all(recv.Parrived(i) for i in range(rparts))
                status = MPI.Status()
                recv.Wait(status)
                send.Wait()
                expected = np.arange(count) + 1000 * peer_in + round_
                assert (rbuf == expected).all(), (count, sparts, rparts, round_)
                assert (status.source, status.tag, status.Get_count(MPI.INT)) == (peer_in, 5, count)
                assert send and recv and recv.Parrived(0)     # (inactive: true)
                checks += 1
            send.Free()
            recv.Free()
            assert send == MPI.REQUEST_NULL and recv == MPI.REQUEST_NULL

# Pready_range, and the requests' calls of Prequest: Startall, Waitall, Testall.
sbuf, rbuf = np.arange(8, dtype="d") + rank, np.zeros(8)
send = comm.Psend_init(sbuf, 4, right, 6)
recv = comm.Precv_init(rbuf, 4, left, 6)
MPI.Prequest.Startall([recv, send])
send.Pready_range(0, 1)
send.Pready_range(2, 3)
MPI.Request.Waitall([send, recv])
assert (rbuf == np.arange(8) + left).all()
MPI.Prequest.Startall([recv, send])
send.Pready_list(np.arange(4))
while not MPI.Request.Testall([send, recv]):
    pass
checks += 1
# toint/fromint give the same kind of request back (Pready works through it)
send.Start()
MPI.Prequest.fromint(send.toint()).Pready_range(0, 3)
recv.Start()
recv.Wait()
send.Wait()
send.Free()
recv.Free()
checks += 1

# PROC_NULL: a round done at its Start (its partitions may still be marked ready).
send = comm.Psend_init(sbuf, 2, MPI.PROC_NULL, 0)
recv = comm.Precv_init(rbuf, 2, MPI.PROC_NULL, 0)
send.Start()
recv.Start()
assert recv.Parrived(1)
send.Pready(0)
status = MPI.Status()
recv.Wait(status)
send.Wait()
assert (status.source, status.tag, status.Get_count()) == (MPI.PROC_NULL, MPI.ANY_TAG, 0)
checks += 1

# A receive with room for less: ERR_TRUNCATE at its wait; the send completes.
send = comm.Psend_init(np.zeros(6, "i"), 2, right, 7)
recv = comm.Precv_init(np.zeros(3, "i"), 3, left, 7)
recv.Start()
send.Start()
send.Pready_range(0, 1)
checks += fails(MPI.ERR_TRUNCATE, recv.Wait)
send.Wait()

# No ordinary receive takes a partitioned message: an ANY_SOURCE, ANY_TAG receive posted
# before the round is still waiting after it, and gets the ordinary message that follows.
pending = comm.Irecv(np.zeros(1, "i"), MPI.ANY_SOURCE, MPI.ANY_TAG)
send = comm.Psend_init(np.zeros(4, "i"), 1, right, 0)
recv = comm.Precv_init(np.zeros(4, "i"), 1, left, 0)
recv.Start()
send.Start()
send.Pready(0)
recv.Wait()
send.Wait()
assert not pending.Test() and not comm.Iprobe()
comm.Barrier()                      # (every rank has looked before the ordinary message)
comm.Send(np.array([rank], "i"), right, 3)
status = MPI.Status()
pending.Wait(status)
assert (status.source, status.tag) == (left, 3)
checks += 2
comm.Free()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())   # (one write: ranks share stdout)
"""

ERRORS = """
import os
import numpy as np
from shmdat.mpi import MPI
""" + SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
right, left = (rank + 1) % size, (rank - 1) % size
sbuf, rbuf = np.arange(6, dtype="i"), np.zeros(6, "i")
send = comm.Psend_init(sbuf, 3, right, 5)
recv = comm.Precv_init(rbuf, 3, left, 5)
say(rank, "not started", outcome(lambda: send.Pready(0)), outcome(lambda: recv.Parrived(0)))
send.Start()
recv.Start()
for what, call in (("pready -1", lambda: send.Pready(-1)), ("pready 3", lambda: send.Pready(3)),
                   ("range", lambda: send.Pready_range(1, 3)), ("list", lambda: send.Pready_list([0, 3])),
                   ("parrived 3", lambda: recv.Parrived(3)), ("pready recv", lambda: recv.Pready(0)),
                   ("parrived send", lambda: send.Parrived(0)), ("range recv", lambda: recv.Pready_range(0, 1)),
                   ("list recv", lambda: recv.Pready_list([0])), ("start again", send.Start),
                   ("pready others", lambda: comm.Send_init(sbuf, MPI.PROC_NULL).Pready(0)),
                   ("parrived others", lambda: comm.Recv_init(rbuf, MPI.PROC_NULL).Parrived(0))):
    say(rank, what, outcome(call))
for what, call in (("partitions 0", lambda: comm.Psend_init(sbuf, 0, right)),
                   ("partitions -1", lambda: comm.Precv_init(rbuf, -1, left, 0)),
                   ("uneven", lambda: comm.Psend_init(sbuf, 4, right)),
                   ("any source", lambda: comm.Precv_init(rbuf, 3)),
                   ("any source 2", lambda: comm.Precv_init(rbuf, 3, MPI.ANY_SOURCE, 0)),
                   ("any tag", lambda: comm.Precv_init(rbuf, 3, left, MPI.ANY_TAG)),
                   ("dest", lambda: comm.Psend_init(sbuf, 3, size)),
                   ("source", lambda: comm.Precv_init(rbuf, 3, -5, 0)),
                   ("tag", lambda: comm.Psend_init(sbuf, 3, right, -3)),
                   ("tag_ub", lambda: comm.Psend_init(sbuf, 3, right, 2**29)),
                   ("readonly", lambda: comm.Precv_init(bytes(8), 2, left, 0)),
                   ("comm null", lambda: MPI.COMM_NULL.Psend_init(sbuf, 3, 0))):
    say(rank, what, outcome(call))
say(rank, "largest tag", outcome(lambda: comm.Psend_init(sbuf, 3, right, 2**29 - 1).Free()))
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_partitioned_rounds(tmp_path, n):
    check_every_rank_agrees(launch(tmp_path, n, ROUNDS), n)


def test_partitioned_errors(tmp_path):
    """(without mpiexec: shmdat.mpi's run, every line of it there)"""
    r = launch(tmp_path, 2, ERRORS)
    assert r.returncode == 0 and r.stderr == "", r.stderr


@mpi_launch.needs_mpiexec
def test_partitioned_errors_under_mpi4py(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, mpi_launch.as_mpi4py(ERRORS))
