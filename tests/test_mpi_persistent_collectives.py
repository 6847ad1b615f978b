"""MPI-4 persistent collectives (Comm.Barrier_init ... Exscan_init): each made once, started
several times with its send buffers changed between starts, every result compared with what
numpy computes from every rank's contribution; the IN_PLACE forms; Startall of several with
a blocking and a non-blocking collective in between; a derived datatype with gaps; an init
that does not wait for the other ranks; the errors (at init as MPICH: ERR_ROOT, ERR_OP;
Start while active or after Free: ERR_REQUEST). The program runs unchanged under
`shmdat run --mpi4py` and under MPICH's mpiexec."""

import pytest

from tests import mpi_launch

PROGRAM = mpi_launch.FAILS.replace("def fails", "from mpi4py import MPI\n\n\ndef fails") + """
import os

import numpy as np

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
STARTS = 3
checks = 0


def part(start, r, n=3, dtype="i4"):
    # What rank r contributes at the given start: different for every rank and every start.
    return (np.arange(n) + 10 * r + 100 * start).astype(dtype)


def every(start, n=3, dtype="i4"):
    return [part(start, r, n, dtype) for r in range(size)]


def starts(request, fill, check):
    # Start the request STARTS times, its buffers filled anew before each; check after each.
    global checks
    for start in range(STARTS):
        fill(start)
        request.Start()
        request.Wait()
        check(start)
        checks += 1
    request.Free()


def equal(got, want):
    assert np.array_equal(got, want), (got, want)


def fill(buf, value):
    buf[...] = value


request = comm.Barrier_init()
starts(request, lambda s: None, lambda s: None)

for root in range(size):
    buf = np.empty(3, "i4")
    starts(comm.Bcast_init(buf, root),
           lambda s: fill(buf, part(s, root) if rank == root else -1),
           lambda s: equal(buf, part(s, root)))

    send = np.empty(3, "i4")
    recv = np.empty((size, 3), "i4") if rank == root else None
    starts(comm.Gather_init(send, recv, root),
           lambda s: (fill(send, part(s, rank)), rank == root and fill(recv, -1)),
           lambda s: rank != root or equal(recv, every(s)))

    counts = [r + 1 for r in range(size)]
    sendv = np.empty(rank + 1, "i4")
    recvv = np.empty(sum(counts), "i4") if rank == root else None
    starts(comm.Gatherv_init(sendv, [recvv, counts] if rank == root else None, root),
           lambda s: (fill(sendv, part(s, rank, rank + 1)), rank == root and fill(recvv, -1)),
           lambda s: rank != root or equal(recvv, np.concatenate(
               [part(s, r, r + 1) for r in range(size)])))

    send = np.empty((size, 3), "i4") if rank == root else None
    recv = np.empty(3, "i4")
    starts(comm.Scatter_init(send, recv, root),
           lambda s: (rank == root and fill(send, every(s)), fill(recv, -1)),
           lambda s: equal(recv, part(s, rank)))

    sendv = np.empty(sum(counts), "i4") if rank == root else None
    recvv = np.empty(rank + 1, "i4")
    starts(comm.Scatterv_init([sendv, counts] if rank == root else None, recvv, root),
           lambda s: (rank == root and fill(sendv, np.concatenate(
               [part(s, r, r + 1) for r in range(size)])), fill(recvv, -1)),
           lambda s: equal(recvv, part(s, rank, rank + 1)))

    send, recv = np.empty(3), np.empty(3) if rank == root else None
    starts(comm.Reduce_init(send, recv, MPI.SUM, root),
           lambda s: (fill(send, part(s, rank, dtype="f8")), rank == root and fill(recv, -1)),
           lambda s: rank != root or equal(recv, np.sum(every(s, dtype="f8"), axis=0)))

    # IN_PLACE at root.
    recv = np.empty((size, 3), "i4") if rank == root else None
    send = MPI.IN_PLACE if rank == root else np.empty(3, "i4")
    starts(comm.Gather_init(send, recv, root),
           lambda s: (fill(recv, -1), fill(recv[root], part(s, root))) if rank == root
           else fill(send, part(s, rank)),
           lambda s: rank != root or equal(recv, every(s)))
    send = np.empty((size, 3), "i4") if rank == root else None
    recv = MPI.IN_PLACE if rank == root else np.empty(3, "i4")
    starts(comm.Scatter_init(send, recv, root),
           lambda s: fill(send, every(s)) if rank == root else fill(recv, -1),
           lambda s: equal(send[root] if rank == root else recv, part(s, rank)))
    acc = np.empty(3, "i4")
    starts(comm.Reduce_init(MPI.IN_PLACE if rank == root else acc, acc if rank == root else None,
                            MPI.MAX, root),
           lambda s: fill(acc, part(s, rank)),
           lambda s: rank != root or equal(acc, np.max(every(s), axis=0)))

send, recv = np.empty(3, "i4"), np.empty((size, 3), "i4")
starts(comm.Allgather_init(send, recv),
       lambda s: (fill(send, part(s, rank)), fill(recv, -1)),
       lambda s: equal(recv, every(s)))
starts(comm.Allgather_init(MPI.IN_PLACE, recv),
       lambda s: (fill(recv, -1), fill(recv[rank], part(s, rank))),
       lambda s: equal(recv, every(s)))

counts = [r + 1 for r in range(size)]
sendv, recvv = np.empty(rank + 1, "i4"), np.empty(sum(counts), "i4")
starts(comm.Allgatherv_init(sendv, [recvv, counts]),
       lambda s: (fill(sendv, part(s, rank, rank + 1)), fill(recvv, -1)),
       lambda s: equal(recvv, np.concatenate([part(s, r, r + 1) for r in range(size)])))


def to(s, source, dest, n=2):
    # What rank `source` sends rank `dest` at a start of the all-to-alls.
    return np.full(n, 1000 * s + 10 * source + dest, "i4")


send, recv = np.empty((size, 2), "i4"), np.empty((size, 2), "i4")
starts(comm.Alltoall_init(send, recv),
       lambda s: (fill(send, [to(s, rank, d) for d in range(size)]), fill(recv, -1)),
       lambda s: equal(recv, [to(s, r, rank) for r in range(size)]))
starts(comm.Alltoall_init(MPI.IN_PLACE, recv),
       lambda s: fill(recv, [to(s, rank, d) for d in range(size)]),
       lambda s: equal(recv, [to(s, r, rank) for r in range(size)]))

# Alltoallv: rank r sends d + 1 elements to rank d.
sendcounts, recvcounts = [d + 1 for d in range(size)], [rank + 1] * size
sendv, recvv = np.empty(sum(sendcounts), "i4"), np.empty(sum(recvcounts), "i4")
starts(comm.Alltoallv_init([sendv, sendcounts], [recvv, recvcounts]),
       lambda s: (fill(sendv, np.concatenate([to(s, rank, d, d + 1) for d in range(size)])),
                  fill(recvv, -1)),
       lambda s: equal(recvv, np.concatenate([to(s, r, rank, rank + 1) for r in range(size)])))

for op, reduce in ((MPI.SUM, np.sum), (MPI.MAX, np.max), (MPI.PROD, np.prod)):
    send, recv = np.empty(3), np.empty(3)
    starts(comm.Allreduce_init(send, recv, op),
           lambda s: (fill(send, part(s, rank, dtype="f8")), fill(recv, -1)),
           lambda s: equal(recv, reduce(every(s, dtype="f8"), axis=0)))
acc = np.empty(3, "i4")
starts(comm.Allreduce_init(MPI.IN_PLACE, acc, MPI.SUM),
       lambda s: fill(acc, part(s, rank)),
       lambda s: equal(acc, np.sum(every(s), axis=0)))

send, recv = np.empty(2 * size, "i4"), np.empty(2, "i4")
starts(comm.Reduce_scatter_block_init(send, recv, MPI.SUM),
       lambda s: (fill(send, part(s, rank, 2 * size)), fill(recv, -1)),
       lambda s: equal(recv, np.sum(every(s, 2 * size), axis=0)[2 * rank:2 * rank + 2]))
whole = np.empty(2 * size, "i4")
starts(comm.Reduce_scatter_block_init(MPI.IN_PLACE, whole, MPI.SUM),
       lambda s: fill(whole, part(s, rank, 2 * size)),
       lambda s: equal(whole[:2], np.sum(every(s, 2 * size), axis=0)[2 * rank:2 * rank + 2]))

total = sum(counts)
first = sum(counts[:rank])
send, recv = np.empty(total, "i4"), np.empty(rank + 1, "i4")
for given in (counts, None):        # (None: gathered once, at init)
    starts(comm.Reduce_scatter_init(send, recv, given, MPI.SUM),
           lambda s: (fill(send, part(s, rank, total)), fill(recv, -1)),
           lambda s: equal(recv, np.sum(every(s, total), axis=0)[first:first + rank + 1]))

send, recv = np.empty(3, "i4"), np.empty(3, "i4")
starts(comm.Scan_init(send, recv, MPI.SUM),
       lambda s: (fill(send, part(s, rank)), fill(recv, -1)),
       lambda s: equal(recv, np.sum(every(s)[:rank + 1], axis=0)))
starts(comm.Exscan_init(send, recv, MPI.SUM),
       lambda s: (fill(send, part(s, rank)), fill(recv, -1)),
       lambda s: rank == 0 or equal(recv, np.sum(every(s)[:rank], axis=0)))
starts(comm.Scan_init(MPI.IN_PLACE, recv, MPI.MAX),
       lambda s: fill(recv, part(s, rank)),
       lambda s: equal(recv, np.max(every(s)[:rank + 1], axis=0)))
starts(comm.Exscan_init(MPI.IN_PLACE, recv, MPI.SUM),
       lambda s: fill(recv, part(s, rank)),
       lambda s: rank == 0 or equal(recv, np.sum(every(s)[:rank], axis=0)))

# A derived datatype with gaps: every other int, the others left as they were.
every_other = MPI.INT.Create_vector(3, 1, 2).Commit()
strided = np.empty(6, "i4")
starts(comm.Bcast_init([strided, 1, every_other], 0),
       lambda s: fill(strided, np.arange(6) + 100 * s if rank == 0 else -1),
       lambda s: equal(strided, np.arange(6) + 100 * s if rank == 0 else
                       [0 + 100 * s, -1, 2 + 100 * s, -1, 4 + 100 * s, -1]))

# Startall of several, a blocking and a non-blocking collective between Start and Wait.
barrier = comm.Barrier_init()
summed, gathered, cast = np.empty(2), np.empty(size, "i4"), np.empty(4, "i4")
contribution, mine = np.empty(2), np.empty(1, "i4")
requests = [barrier, comm.Allreduce_init(contribution, summed, MPI.SUM),
            comm.Allgather_init(mine, gathered), comm.Bcast_init(cast, size - 1)]
for s in range(STARTS):
    fill(contribution, rank + s)
    fill(mine, 10 * rank + s)
    fill(cast, part(s, 0, 4) if rank == size - 1 else -1)
    MPI.Prequest.Startall(requests)
    assert comm.allreduce(rank + s) == sum(r + s for r in range(size))
    ibcast = np.full(1, s if rank == 0 else -1, "i4")
    comm.Ibcast(ibcast, 0).Wait()
    MPI.Request.Waitall(requests[::-1])
    equal(ibcast, [s])
    equal(summed, [sum(r + s for r in range(size))] * 2)
    equal(gathered, [10 * r + s for r in range(size)])
    equal(cast, part(s, 0, 4))
    checks += 1
while not barrier.Test():       # (a completed persistent request is inactive: Test is True)
    pass
for r in requests:
    r.Free()

# The init sends nothing: rank 0 makes its request before the others reach theirs and tells
# them only afterwards (an init that waited for the others would deadlock here).
send, recv = np.full(1, rank + 1.0), np.zeros(1)
if rank == 0:
    request = comm.Allreduce_init(send, recv, MPI.SUM)
    for other in range(1, size):
        comm.send("made", other)
else:
    assert comm.recv(source=0) == "made"
    request = comm.Allreduce_init(send, recv, MPI.SUM)
starts(request, lambda s: fill(send, rank + s), lambda s: equal(recv, [sum(
    r + s for r in range(size))]))

# The errors: at init as MPICH; Start of an active request, of a freed one: ERR_REQUEST.
checks += fails(MPI.ERR_ROOT, comm.Bcast_init, np.zeros(1), size)
checks += fails(MPI.ERR_ROOT, comm.Reduce_init, np.zeros(1), np.zeros(1), MPI.SUM, -1)
checks += fails(MPI.ERR_OP, comm.Allreduce_init, np.zeros(1), np.zeros(1), MPI.BAND)
request = comm.Allreduce_init(np.ones(1), np.zeros(1), MPI.SUM)
request.Start()
checks += fails(MPI.ERR_REQUEST, request.Start)
request.Wait()
request.Start()
request.Wait()
request.Free()
assert request == MPI.REQUEST_NULL
checks += fails(MPI.ERR_REQUEST, request.Start)
checks += fails(MPI.ERR_COMM, MPI.COMM_NULL.Barrier_init)
comm.Barrier()
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # one write: the ranks share the pipe
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_under_shmdat(tmp_path, n):
    r = mpi_launch.launch(tmp_path, n, PROGRAM, launcher=("--mpi4py", "--"))
    mpi_launch.check_every_rank_agrees(r, n)


@mpi_launch.needs_mpiexec
def test_the_same_program_under_mpi4py(tmp_path):
    """The checks are MPI's and mpi4py's, not shmdat's: mpi4py + MPICH passes them too."""
    r = mpi_launch.launch_mpiexec(tmp_path, 3, PROGRAM)
    mpi_launch.check_every_rank_agrees(r, 3)
