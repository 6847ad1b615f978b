"""Fault tolerance, ULFM (shmdat/mpi/ulfm.py): a rank SIGKILLed under `shmdat run
--disable-auto-cleanup` while the others go on (ERR_PROC_FAILED, ERR_PROC_FAILED_PENDING,
Get_failed, Ack_failed, Agree, Shrink, Revoke after a failure), Revoke's ERR_REVOKED at every
rank, Agree, Iagree, Shrink, Ishrink on intra- and intercommunicators; the calls MPICH has
(without failures) print the same lines under mpi4py + MPICH."""

import pytest

from tests import mpi_launch
from tests.mpi_launch import FAILS, PIDS, SAY, launch, leftovers, pids

FAILURE = PIDS + """
import os, signal
import numpy as np
from shmdat.mpi import MPI
""" + FAILS + SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
dead = size - 1
comm.Barrier()
if rank == dead:
    os.kill(os.getpid(), signal.SIGKILL)
b = np.zeros(1)
fails(MPI.ERR_PROC_FAILED, comm.Recv, b, source=dead)      # (waits until the failure is seen)
fails(MPI.ERR_PROC_FAILED, comm.Recv, b, source=MPI.ANY_SOURCE, tag=5)
pending = comm.Irecv(b, source=MPI.ANY_SOURCE, tag=5)
fails(MPI.ERR_PROC_FAILED_PENDING, pending.Wait)
fails(MPI.ERR_PROC_FAILED, comm.Probe, MPI.ANY_SOURCE, 5)
fails(MPI.ERR_PROC_FAILED, comm.Send, b, dest=dead)
fails(MPI.ERR_PROC_FAILED, comm.Isend, b, dest=dead)
fails(MPI.ERR_PROC_FAILED, comm.Barrier)
failed = comm.Get_failed()
say(rank, "failed", failed.Translate_ranks(list(range(failed.Get_size())), comm.Get_group()))
fails(MPI.ERR_PROC_FAILED, comm.Agree, 1)     # a failure not acknowledged
say(rank, "acked", comm.Ack_failed(0), comm.Ack_failed(), comm.Ack_failed(0))
say(rank, "agree", comm.Agree(rank | 6))
# Acknowledged: the pending ANY_SOURCE receive completes with a live rank's message.
comm.Send(np.full(1, rank + 10.0), dest=1 - rank, tag=5)
pending.Wait()
say(rank, "pending got", b[0])
shrunk = comm.Shrink()
ishrunk, request = comm.Ishrink()
request.Wait()
say(rank, "shrunk", shrunk.Get_rank(), shrunk.Get_size(), shrunk.allreduce(rank + 1),
    ishrunk.Get_size(), MPI.Comm.Compare(shrunk, ishrunk))
# Revoke after a failure: rank 1's receive under way fails, and everything later on comm.
later = comm.Irecv(b, source=0, tag=77)
shrunk.Barrier()
if rank == 0:
    comm.Revoke()
else:
    fails(MPI.ERR_REVOKED, later.Wait)
fails(MPI.ERR_REVOKED, comm.Recv, b, source=1 - rank, tag=78)
fails(MPI.ERR_REVOKED, comm.Send, b, MPI.PROC_NULL)
fails(MPI.ERR_REVOKED, comm.bcast, 1)
say(rank, "revoked", comm.Is_revoked(), shrunk.Is_revoked(), comm.Agree(1),
    comm.Shrink().Get_size(), comm.Get_failed().Get_size())
shrunk.Barrier()
say(rank, "done")
"""


def test_a_rank_killed_under_disable_auto_cleanup(tmp_path):
    r = launch(tmp_path, 3, FAILURE, launcher=("--disable-auto-cleanup", "--"))
    assert r.returncode == 128 + 9, r.stderr      # the failed rank's status, once all ended
    lines = sorted(line for line in r.stdout.splitlines() if not line.startswith("pid "))
    assert lines == sorted(f"{k} {what}" for k in (0, 1) for what in (
        "failed [2]", "acked 0 1 1", "agree 6", f"pending got {11 - k}.0", "shrunk %d 2 3 2 1" % k,
        "revoked True False 1 2 1", "done")), r.stderr
    assert leftovers(pids(r.stdout)) == []


def test_without_the_flag_a_killed_rank_still_ends_the_job(tmp_path):
    r = launch(tmp_path, 3, FAILURE)
    assert r.returncode == 128 + 9
    assert " done" not in r.stdout
    assert leftovers(pids(r.stdout)) == []


def test_the_flag_changes_nothing_for_a_clean_job_or_abort(tmp_path):
    body = PIDS + """
from shmdat.mpi import MPI
comm = MPI.COMM_WORLD
if comm.allreduce(1) == 3 and comm.rank == 1:
    comm.Abort(4)
comm.recv(source=1)
"""
    r = launch(tmp_path, 3, body, launcher=("--disable-auto-cleanup", "--"))
    assert r.returncode == 4
    assert leftovers(pids(r.stdout)) == []


# Revoke without failures: at every rank, operations under way and to come fail.
REVOKE = PIDS + """
import os
import numpy as np
from shmdat.mpi import MPI
""" + FAILS + SAY + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size
comm = world.Dup()
other = world.Dup()
b = np.zeros(4)
under_way = comm.Irecv(b, source=(rank + 1) % size, tag=1)
coll = comm.Ibarrier() if rank else None
world.Barrier()
if rank == 0:
    comm.Revoke()
    fails(MPI.ERR_REVOKED, under_way.Wait)
else:
    # Blocked (or not yet) when rank 0 revokes: either way ERR_REVOKED.
    fails(MPI.ERR_REVOKED, comm.Recv, b, source=0, tag=2)
    fails(MPI.ERR_REVOKED, under_way.Wait)
    fails(MPI.ERR_REVOKED, coll.Wait)
checks = 0
for call, args in [(comm.Barrier, ()), (comm.Send, ([None, 0, MPI.BYTE], MPI.PROC_NULL)),
                   (comm.Recv, ([None, 0, MPI.BYTE], MPI.PROC_NULL)), (comm.Isend, (b, 0)),
                   (comm.Irecv, (b,)), (comm.Probe, ()), (comm.Bcast, (b,)),
                   (comm.Allreduce, (MPI.IN_PLACE, b)), (comm.allgather, (1,)),
                   (comm.Ibcast, (b,)), (comm.Ssend, (b, 0)), (comm.send, (1, 0)),
                   (comm.Dup, ())]:
    checks += fails(MPI.ERR_REVOKED, call, *args)
say(rank, "checks", checks, comm.Is_revoked(), other.Is_revoked(), world.Is_revoked())
# Other communicators work; agreement and shrink work on the revoked one.
say(rank, "other", other.allreduce(rank), comm.Agree(7 if rank else 5),
    comm.Shrink().Get_size() == size, len(comm.Get_failed().Translate_ranks([])))
fails(MPI.ERR_COMM, MPI.COMM_NULL.Revoke)
fails(MPI.ERR_COMM, MPI.COMM_NULL.Agree, 1)
if size > 1:
    # An intercommunicator of the even and the odd ranks: revoked on both sides.
    local = world.Split(rank % 2, rank)
    inter = local.Create_intercomm(0, world, 1 - rank % 2)
    say(rank, "inter agree", inter.Agree(1 << rank | 1 << 8), inter.Shrink().Get_remote_size()
        == inter.Get_remote_size())
    world.Barrier()
    if rank == 1:
        inter.Revoke()
    fails(MPI.ERR_REVOKED, inter.Recv, b, source=0, tag=3)
    fails(MPI.ERR_REVOKED, inter.Barrier)
    say(rank, "inter revoked", inter.Is_revoked(), local.Is_revoked())
say(rank, "done")
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_revoke(tmp_path, n):
    r = launch(tmp_path, n, REVOKE)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for rank in range(n):
        assert f"{rank} checks 13 True False False" in lines
        assert f"{rank} other {n * (n - 1) // 2} {5 if n == 1 else 5} True 0" in lines
        if n > 1:
            assert f"{rank} inter agree {256} True" in lines
            assert f"{rank} inter revoked True False" in lines
        assert f"{rank} done" in lines
    assert leftovers(pids(r.stdout)) == []


# What MPICH has of ULFM (mpi4py over MPICH, without failures): Agree, Iagree, Shrink,
# Ishrink, Get_failed, Ack_failed, and the arguments' errors. Revoke is not MPICH's.
AGREE = """
import os, struct
from mpi4py import MPI
""" + SAY + """
world = MPI.COMM_WORLD
rank, size = world.rank, world.size
comm = world.Dup()
for flag in (0, 1, 0b1011, -1):
    say(rank, "agree", flag, comm.Agree(flag ^ (rank & 1) * 0b10))
say(rank, "agree self", MPI.COMM_SELF.Agree(rank + 4))
say(rank, "agree errors", outcome(lambda: comm.Agree("1")), outcome(lambda: comm.Iagree(0)),
    outcome(lambda: comm.Iagree(bytearray(8))))
flag = memoryview(MPI.buffer.allocate(struct.calcsize("i"))).cast("i")
for root in range(size):
    world.Barrier()
    flag[0] = 0b1011 if rank == root else 0b1101
    if rank == root:
        request = comm.Iagree(flag)
        done = request.Test()
        world.Barrier()
    else:
        world.Barrier()
        request = comm.Iagree(flag)
        done = False
    request.Wait()
    say(rank, "iagree", root, done if size > 1 else "-", flag[0])
shrunk = comm.Shrink()
ishrunk, request = comm.Ishrink()
say(rank, "ishrink", bool(request), request.Wait(), bool(request))
say(rank, "shrink", shrunk.Get_rank(), shrunk.Get_size(), ishrunk.Get_size(),
    MPI.Comm.Compare(shrunk, comm), shrunk.allreduce(rank), ishrunk.allreduce(1))
group = comm.Get_failed()
say(rank, "failed", group.Get_size(), MPI.Group.Compare(group, MPI.GROUP_EMPTY))
say(rank, "ack", comm.Ack_failed(), comm.Ack_failed(0), comm.Ack_failed(size), comm.Is_revoked())
say(rank, "done")
"""


@pytest.mark.parametrize("n", [1, 3])
def test_agree_and_shrink(tmp_path, n):
    r = mpi_launch.launch_mpi4py(tmp_path, n, AGREE)
    lines = mpi_launch.lines_of(r)
    assert f"0 agree 11 {11 if n == 1 else 9}" in lines
    assert ("0 iagree 0 - 11" if n == 1 else "0 iagree 0 False 9") in lines
    assert "0 shrink 0 %d %d 1 %d %d" % (n, n, n * (n - 1) // 2, n) in lines
    assert f"{n - 1} done" in lines


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [1, 3])
def test_agree_and_shrink_as_under_mpich(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, AGREE)
