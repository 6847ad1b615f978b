"""shmdat.mpi collectives by real launches at N = 1, 2, 3, 4, 7: every collective and
predefined op, checked on every rank against NumPy computed in one process (each rank can
compute every rank's input), eager and rendezvous sizes, roots, IN_PLACE; collective traffic
never matching point-to-point receives; errors. One launch per N runs every check."""

import pytest

from tests.mpi_launch import FAILS, check_every_rank_agrees, launch

PROGRAM = FAILS + """
import functools, os
import numpy as np
from shmdat.mpi import MPI
from shmdat.mpi.engine import EAGER_LIMIT
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
roots = sorted({0, size // 2, size - 1})
SMALL, LARGE = 5, EAGER_LIMIT // 4 + 3        # elements: eager, and rendezvous for 8 bytes

def data(r, n, dtype, salt=0):
    # Small integers (also as floats): exact whatever the order of a reduction.
    values = np.random.default_rng([r, n, salt]).integers(-4, 6, n)
    return (values > 0) if dtype == bool else values.astype(dtype)

def expect(ufunc, n, dtype, salt=0):
    return functools.reduce(lambda a, b: ufunc(a, b).astype(dtype),
                            [data(r, n, dtype, salt) for r in range(size)])

# A point-to-point receive that no collective message may match.
early = comm.irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)

ARITH = [np.float64, np.int32, np.float32, np.int64]
CASES = [(MPI.SUM, np.add, ARITH + [np.complex128]), (MPI.PROD, np.multiply, ARITH),
         (MPI.MIN, np.minimum, ARITH), (MPI.MAX, np.maximum, ARITH),
         (MPI.LAND, np.logical_and, [np.int32, bool]),
         (MPI.LOR, np.logical_or, [np.int32, bool]),
         (MPI.BAND, np.bitwise_and, [np.int32, np.uint8, np.int64]),
         (MPI.BOR, np.bitwise_or, [np.int32, np.uint8])]
checks = 0

# Bcast, eager and rendezvous, every root.
for root in roots:
    for n in (SMALL, LARGE):
        buf = data(root, n, np.float64) if rank == root else np.zeros(n)
        comm.Bcast([buf, MPI.DOUBLE], root=root)
        assert (buf == data(root, n, np.float64)).all(), (root, n)
        checks += 1

# Allreduce and Reduce: every op on its dtypes; IN_PLACE.
for op, ufunc, dtypes in CASES:
    for dtype in dtypes:
        want = expect(ufunc, SMALL, dtype)
        out = np.zeros(SMALL, dtype)
        comm.Allreduce(data(rank, SMALL, dtype), out, op=op)
        assert (out == want).all(), (op, dtype, out, want)
        inplace = data(rank, SMALL, dtype)
        comm.Allreduce(MPI.IN_PLACE, inplace, op=op)
        assert (inplace == want).all(), (op, dtype, "in place")
        root = roots[checks % len(roots)]
        out = np.zeros(SMALL, dtype) if rank == root else None
        comm.Reduce(data(rank, SMALL, dtype), out, op=op, root=root)
        assert rank != root or (out == want).all(), (op, dtype, root)
        checks += 3
for root in roots:
    for n in (SMALL, LARGE):
        want = expect(np.add, n, np.float64, salt=1)
        mine = data(rank, n, np.float64, salt=1)
        comm.Reduce(MPI.IN_PLACE if rank == root else mine, mine if rank == root else None,
                    op=MPI.SUM, root=root)
        assert rank != root or (mine == want).all(), (root, n)
        out = np.zeros(n)
        comm.Allreduce([data(rank, n, np.float64, salt=1), MPI.DOUBLE], [out, MPI.DOUBLE])
        assert (out == want).all(), n
        checks += 2

# MAXLOC and MINLOC on (value, index) pairs: ties go to the smaller index.
for op, pick in ((MPI.MAXLOC, max), (MPI.MINLOC, min)):
    for datatype, value in ((MPI.DOUBLE_INT, "f8"), (MPI.FLOAT_INT, "f4"), (MPI.TWOINT, "i4"),
                            (MPI.LONG_INT, "i8"), (MPI.SHORT_INT, "i2")):
        pair = np.dtype([("value", value), ("index", "i4")], align=True)
        assert pair.itemsize == datatype.Get_extent()[1]
        def pairs(r):
            out = np.zeros(SMALL, pair)
            out["value"], out["index"] = data(r, SMALL, value) % 3, r
            return out
        want = [pick((pairs(r)["value"][k], -r if pick is max else r) for r in range(size))
                for k in range(SMALL)]
        want = [(v, -i if pick is max else i) for v, i in want]
        out = np.zeros(SMALL, pair)
        comm.Allreduce([pairs(rank), datatype], [out, datatype], op=op)
        assert out.tolist() == want, (op, datatype, out, want)
        out = np.zeros(SMALL, pair)
        comm.Reduce([pairs(rank), datatype], [out, datatype], op=op, root=size - 1)
        assert rank != size - 1 or out.tolist() == want, (op, datatype, "Reduce")
        checks += 2

# Gather, Scatter, Allgather, Alltoall, Reduce_scatter_block: eager and rendezvous blocks.
for n in (SMALL, LARGE):
    everyone = np.concatenate([data(r, n, np.int32) for r in range(size)])
    for root in roots:
        out = np.zeros(size * n, np.int32) if rank == root else None
        comm.Gather(data(rank, n, np.int32), out, root=root)
        assert rank != root or (out == everyone).all(), ("Gather", n, root)
        if rank == root:       # IN_PLACE, and a recvbuf spec with the count per rank
            out = np.zeros(size * n + 2, np.int32)
            out[root * n:(root + 1) * n] = data(root, n, np.int32)
            comm.Gather(MPI.IN_PLACE, [out, n, MPI.INT], root=root)
            assert (out[:size * n] == everyone).all() and not out[size * n:].any()
        else:
            comm.Gather([data(rank, n, np.int32), MPI.INT], None, root=root)
        mine = np.zeros(n, np.int32)
        comm.Scatter(everyone if rank == root else None, mine, root=root)
        assert (mine == data(rank, n, np.int32)).all(), ("Scatter", n, root)
        if rank == root:
            comm.Scatter([everyone, MPI.INT], MPI.IN_PLACE, root=root)
        else:
            mine = np.zeros(n, np.int32)
            comm.Scatter(None, [mine, MPI.INT], root=root)
            assert (mine == data(rank, n, np.int32)).all(), ("Scatter in place", n, root)
        checks += 4
    out = np.zeros(size * n, np.int32)
    comm.Allgather(data(rank, n, np.int32), out)
    assert (out == everyone).all(), ("Allgather", n)
    out = np.zeros(size * n, np.int32)
    out[rank * n:(rank + 1) * n] = data(rank, n, np.int32)
    comm.Allgather(MPI.IN_PLACE, [out, MPI.INT])
    assert (out == everyone).all(), ("Allgather in place", n)
    send = np.concatenate([data(rank, n, np.float64, salt=10 + j) for j in range(size)])
    want = np.concatenate([data(i, n, np.float64, salt=10 + rank) for i in range(size)])
    out = np.zeros(size * n)
    comm.Alltoall(send, out)
    assert (out == want).all(), ("Alltoall", n)
    comm.Alltoall(MPI.IN_PLACE, send)
    assert (send == want).all(), ("Alltoall in place", n)
    send = np.concatenate([data(rank, n, np.int64, salt=20 + j) for j in range(size)])
    out = np.zeros(n, np.int64)
    comm.Reduce_scatter_block(send, out, op=MPI.MAX)
    assert (out == expect(np.maximum, n, np.int64, salt=20 + rank)).all(), ("RSB", n)
    comm.Reduce_scatter_block(MPI.IN_PLACE, [send, MPI.LONG], op=MPI.SUM)
    assert (send[:n] == expect(np.add, n, np.int64, salt=20 + rank)).all(), ("RSB in place", n)
    checks += 6

# Object collectives.
big = list(range(EAGER_LIMIT))                  # its pickle goes by rendezvous
for root in roots:
    assert comm.bcast({"root": root, "big": big} if rank == root else None, root=root) == \\
        {"root": root, "big": big}
    assert comm.scatter([(i, "x" * i) for i in range(size)] if rank == root else None,
                        root=root) == (rank, "x" * rank)
    got = comm.gather({"r": rank}, root=root)
    assert got == ([{"r": r} for r in range(size)] if rank == root else None), got
    assert comm.reduce(rank + 1, root=root) == (size * (size + 1) // 2 if rank == root else None)
    checks += 4
assert comm.allgather(("a", rank)) == [("a", r) for r in range(size)]
assert comm.alltoall([(rank, j) for j in range(size)]) == [(i, rank) for i in range(size)]
assert comm.allreduce(rank + 1) == size * (size + 1) // 2
assert comm.allreduce([rank]) == list(range(size))          # SUM of lists: rank order
assert comm.reduce([rank], root=0) == (list(range(size)) if rank == 0 else None)
assert comm.allreduce(rank % 3, op=MPI.MAX) == min(size - 1, 2)
assert comm.allreduce(rank + 2, op=MPI.PROD) == np.prod(np.arange(2, size + 2))
assert comm.allreduce(rank > 0, op=MPI.LOR) == (size > 1)
assert comm.allreduce(rank > 0, op=MPI.LAND) is False
assert comm.allreduce(1 << rank, op=MPI.BOR) == (1 << size) - 1
assert comm.allreduce((rank % 2, rank), op=MPI.MAXLOC) == ((1, 1) if size > 1 else (0, 0))
assert comm.allreduce((rank % 2, rank), op=MPI.MINLOC) == (0, 0)
assert comm.allreduce(str(rank), op=lambda a, b: a + b) == "".join(map(str, range(size)))
assert comm.allreduce({"big": big}, op=lambda a, b: a) == {"big": big}
checks += 14

# Errors: raised at once on every rank, before any message.
fails(MPI.ERR_OP, comm.Allreduce, np.ones(3), np.zeros(3), op=MPI.BAND)
fails(MPI.ERR_ROOT, comm.Bcast, np.zeros(3), root=size)
fails(MPI.ERR_ROOT, comm.bcast, 1, root=-1)
fails(MPI.ERR_TRUNCATE, comm.Allreduce, np.ones(3), np.zeros(2))
fails(MPI.ERR_OP, comm.Allreduce, np.ones(3), np.zeros(3), op=MPI.MAXLOC)
fails(MPI.ERR_OP, comm.Reduce, np.ones(3), np.zeros(3), op=MPI.LAND)     # MPI: not on floats
fails(MPI.ERR_OP, comm.Allreduce, np.ones(3, bool), np.zeros(3, bool), op=MPI.SUM)
fails(MPI.ERR_OP, comm.Reduce_scatter_block, np.ones(size, complex), np.zeros(1, complex),
      op=MPI.MAX)
checks += 8

# None of the collective traffic matched the point-to-point receive posted first.
assert not early.test()[0]
comm.Barrier()             # every rank has looked before any sends
comm.send(("p2p", rank), dest=(rank + 1) % size, tag=3)
st = MPI.Status()
assert early.wait(st) == ("p2p", (rank - 1) % size) and st.Get_tag() == 3
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # one write: the ranks share the pipe
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_every_collective_and_op_against_numpy(tmp_path, n):
    r = launch(tmp_path, n, PROGRAM, timeout=100)
    check_every_rank_agrees(r, n)
