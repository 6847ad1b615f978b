"""shmdat.mpi's v-collectives, Reduce_scatter, Scan/Exscan and user ops by real launches at
N = 1, 2, 3, 4, 7, 8: every buffer spec form mpi4py takes, odd and zero counts, gapped and
reversed displacements, every root, IN_PLACE, eager and rendezvous sizes, every predefined op
and commutative and non-commutative user ops (applied in rank order), long Allreduce vectors
(reduce-scatter + allgather); each rank checks against NumPy computed in one process (each
rank can compute every rank's input); the errors. One launch per N runs every check. The same
program, its import changed, runs under mpi4py + MPICH."""

import pytest

from tests.mpi_launch import FAILS, check_every_rank_agrees, launch

PROGRAM = FAILS + """
import functools, os
import numpy as np
from shmdat.mpi import MPI
from shmdat.mpi import collectives
collectives.ALLREDUCE_LARGE = ALLREDUCE_LARGE = 4096   # long-vector Allreduce at test sizes
from shmdat.mpi.engine import EAGER_LIMIT
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
roots = sorted({0, size // 2, size - 1})
LARGE = EAGER_LIMIT // 8 + 3                  # int64 elements: a rendezvous block
checks = 0

def data(r, n, dtype=np.int64, salt=0):
    # Small integers (also as floats): exact whatever the order of a reduction.
    values = np.random.default_rng([r, n, salt]).integers(-4, 6, n)
    return (values > 0) if dtype == bool else values.astype(dtype)

def expect(ufunc, n, dtype, ranks, salt=0):
    return functools.reduce(lambda a, b: ufunc(a, b).astype(dtype),
                            [data(r, n, dtype, salt) for r in ranks])

def counts_for(scale, salt=0):
    # Odd counts, some zero, different on every rank.
    return [(3 * r + 1 + salt) % 5 * scale for r in range(size)]

def gapped(counts):
    # Displacements in reverse rank order with a gap of 2 before each block.
    displs, at = [0] * size, 0
    for r in reversed(range(size)):
        displs[r], at = at + 2, at + 2 + counts[r]
    return displs, at

# A point-to-point receive that no collective message may match.
early = comm.irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)

# Gatherv, Scatterv, Allgatherv: every spec form, every root, eager and rendezvous blocks.
for scale in (1, LARGE):
    counts = counts_for(scale)
    displs, length = gapped(counts)
    packed = np.concatenate([data(r, counts[r]) for r in range(size)])
    def placed(out):
        return np.concatenate([out[displs[r]:displs[r] + counts[r]] for r in range(size)])
    specs = [lambda out: [out, counts, displs, MPI.INT64_T],
             lambda out: [out, (counts, displs), MPI.INT64_T],
             lambda out: [out, (counts, displs)]]
    for root in roots:
        for i, spec in enumerate(specs):
            out = np.full(length, -9, np.int64)
            comm.Gatherv(data(rank, counts[rank]), spec(out) if rank == root else None, root)
            if rank == root:
                assert (placed(out) == packed).all(), ("Gatherv", scale, root, i)
                assert (out[[d - 1 for d in displs]] == -9).all(), "a gap was written"
            src = np.full(length, -9, np.int64)
            for r in range(size):
                src[displs[r]:displs[r] + counts[r]] = data(r, counts[r])
            mine = np.zeros(counts[rank], np.int64)
            comm.Scatterv(spec(src) if rank == root else None, [mine, MPI.INT64_T], root)
            assert (mine == data(rank, counts[rank])).all(), ("Scatterv", scale, root, i)
            checks += 2
        # [buf, counts]: packed; IN_PLACE at root.
        out = np.zeros(len(packed), np.int64)
        if rank == root:
            out[sum(counts[:root]):sum(counts[:root + 1])] = data(root, counts[root])
        comm.Gatherv(MPI.IN_PLACE if rank == root else data(rank, counts[rank]),
                     [out, counts] if rank == root else None, root=root)
        assert rank != root or (out == packed).all(), ("Gatherv in place", scale, root)
        mine = np.zeros(counts[rank], np.int64)
        comm.Scatterv([packed, counts] if rank == root else None,
                      MPI.IN_PLACE if rank == root else mine, root=root)
        assert rank == root or (mine == data(rank, counts[rank])).all(), ("Scatterv in place",)
        checks += 2
    for i, spec in enumerate(specs):
        out = np.full(length, -9, np.int64)
        comm.Allgatherv(data(rank, counts[rank]), spec(out))
        assert (placed(out) == packed).all(), ("Allgatherv", scale, i)
        checks += 1
    out = np.zeros(len(packed), np.int64)
    out[sum(counts[:rank]):sum(counts[:rank + 1])] = data(rank, counts[rank])
    comm.Allgatherv(MPI.IN_PLACE, [out, counts, MPI.INT64_T])
    assert (out == packed).all(), ("Allgatherv in place", scale)
    # A bare buffer: its elements split as evenly as possible, the first ranks one more.
    n = size * scale + size // 2
    even = [n // size + (r < n % size) for r in range(size)]
    out = np.zeros(n, np.int64)
    comm.Allgatherv(data(rank, even[rank]), out)
    assert (out == np.concatenate([data(r, even[r]) for r in range(size)])).all()
    # Strided: one count and one displacement for all.
    out = np.full(size * (scale + 1), -9, np.int64)
    comm.Allgatherv(data(rank, scale), [out, (scale, scale + 1), MPI.INT64_T])
    assert (out.reshape(size, scale + 1)[:, :scale] ==
            np.array([data(r, scale) for r in range(size)])).all(), ("strided", scale)
    assert (out.reshape(size, scale + 1)[:, scale] == -9).all()
    checks += 3

    # Alltoallv: rank i sends (i + 2 j) % 4 * scale elements to j, gapped displacements.
    def block(i, j):
        return data(i, (i + 2 * j) % 4 * scale, np.float64, salt=100 + j)
    scounts = [(rank + 2 * j) % 4 * scale for j in range(size)]
    rcounts = [(i + 2 * rank) % 4 * scale for i in range(size)]
    sdispls, slength = gapped(scounts)
    rdispls, rlength = gapped(rcounts)
    send = np.zeros(slength)
    for j in range(size):
        send[sdispls[j]:sdispls[j] + scounts[j]] = block(rank, j)
    out = np.full(rlength, -9.0)
    comm.Alltoallv([send, (scounts, sdispls), MPI.DOUBLE], [out, rcounts, rdispls, MPI.DOUBLE])
    for i in range(size):
        assert (out[rdispls[i]:rdispls[i] + rcounts[i]] == block(i, rank)).all(), ("A2Av", i)
    assert (out[[d - 1 for d in rdispls]] == -9).all()
    # IN_PLACE: send and receive counts are the same; the blocks come from recvbuf.
    same = [(rank + j) % 3 * scale for j in range(size)]
    buf = np.concatenate([data(rank, same[j], salt=200 + j) for j in range(size)])
    comm.Alltoallv(MPI.IN_PLACE, [buf, same])
    want = [data(i, same[i], salt=200 + rank) for i in range(size)]
    assert (buf == np.concatenate(want)).all(), ("Alltoallv in place", scale)
    checks += 3

# User ops: 2x2 integer matrix products mod 1009 (associative, not commutative), as numpy
# arrays of int64 quadruples; and a commutative one (sum mod 1009).
P = 1009
def matmul(invec, inoutvec, datatype):
    assert datatype.Get_size() == 8
    a = np.frombuffer(invec, np.int64).reshape(-1, 2, 2)
    b = np.frombuffer(inoutvec, np.int64).reshape(-1, 2, 2)
    b[...] = np.matmul(a, b) % P
def addmod(invec, inoutvec, datatype):
    b = np.frombuffer(inoutvec, np.int64)
    b[...] = (np.frombuffer(invec, np.int64) + b) % P
MATMUL = MPI.Op.Create(matmul, commute=False)
ADDMOD = MPI.Op.Create(addmod, commute=True)
assert not MATMUL.Is_commutative() and ADDMOD.Is_commutative() and MPI.SUM.Is_commutative()

def mats(r, k, salt=0):
    return np.random.default_rng([r, k, salt, 7]).integers(0, P, 4 * k).astype(np.int64)
def matprod(ranks, k, salt=0):
    out = np.tile(np.eye(2, dtype=np.int64), (k, 1, 1))
    for r in ranks:
        out = np.matmul(out, mats(r, k, salt).reshape(-1, 2, 2)) % P
    return out.reshape(-1)
def addsum(ranks, k, salt=0):
    return sum(mats(r, k, salt) for r in ranks) % P
inout = mats(1, 3)
MATMUL.Reduce_local([mats(0, 3), MPI.INT64_T], [inout, MPI.INT64_T])   # inout = in op inout
assert (inout == matprod([0, 1], 3)).all()
inout = np.ones(3)
MPI.MAX.Reduce_local(np.arange(3.0), inout)
assert inout.tolist() == [1, 1, 2]
checks += 2

for k in (3, ALLREDUCE_LARGE // 32 + 5):     # the larger: reduce-scatter + allgather (ADDMOD)
    for op, want in ((MATMUL, matprod), (ADDMOD, addsum)):
        out = np.zeros(4 * k, np.int64)
        comm.Allreduce([mats(rank, k), MPI.INT64_T], [out, MPI.INT64_T], op=op)
        assert (out == want(range(size), k)).all(), ("Allreduce user op", op, k)
        for root in roots:
            out = np.zeros(4 * k, np.int64)
            comm.Reduce([mats(rank, k, 1), MPI.INT64_T], [out, MPI.INT64_T], op=op, root=root)
            assert rank != root or (out == want(range(size), k, 1)).all(), ("Reduce", root)
        out = mats(rank, k, 2)
        comm.Scan(MPI.IN_PLACE, [out, MPI.INT64_T], op=op)
        assert (out == want(range(rank + 1), k, 2)).all(), ("Scan user op", k)
        out = np.full(4 * k, -1, np.int64)
        comm.Exscan([mats(rank, k, 3), MPI.INT64_T], [out, MPI.INT64_T], op=op)
        assert (out == (want(range(rank), k, 3) if rank else -1)).all(), ("Exscan user op", k)
        checks += 3 + len(roots)
    # Reduce_scatter with a non-commutative op: blocks of whole matrices.
    rc = [4 * ((r + k) % 3) for r in range(size)]
    total = sum(rc) // 4
    out = np.zeros(rc[rank], np.int64)
    comm.Reduce_scatter([mats(rank, total, 4), MPI.INT64_T], [out, MPI.INT64_T], rc, op=MATMUL)
    lo = sum(rc[:rank])
    assert (out == matprod(range(size), total, 4)[lo:lo + rc[rank]]).all(), ("RS matmul", k)
    checks += 1

# Reduce_scatter, Scan, Exscan with every predefined op on its dtypes; IN_PLACE.
ARITH = [np.float64, np.int32, np.float32, np.int64]
CASES = [(MPI.SUM, np.add, ARITH + [np.complex128]), (MPI.PROD, np.multiply, ARITH),
         (MPI.MIN, np.minimum, ARITH), (MPI.MAX, np.maximum, ARITH),
         (MPI.LAND, np.logical_and, [np.int32, bool]), (MPI.LOR, np.logical_or, [np.int32, bool]),
         (MPI.LXOR, np.logical_xor, [np.int32, bool]),
         (MPI.BAND, np.bitwise_and, [np.int32, np.uint8, np.int64]),
         (MPI.BOR, np.bitwise_or, [np.int32, np.uint8]), (MPI.BXOR, np.bitwise_xor, [np.int64])]
rc = counts_for(1, salt=1)
lo, total = sum(rc[:rank]), sum(rc)
for op, ufunc, dtypes in CASES:
    for i, dtype in enumerate(dtypes):         # the forms take turns over an op's dtypes
        want = expect(ufunc, total, dtype, range(size))[lo:lo + rc[rank]]
        out = np.zeros(rc[rank], dtype)
        if i % 3 == 0:
            comm.Reduce_scatter(data(rank, total, dtype), out, rc, op=op)
        elif i % 3 == 1:                        # recvcounts from every rank's recvbuf
            comm.Reduce_scatter(data(rank, total, dtype), out, op=op)
        else:
            buf = data(rank, total, dtype)
            comm.Reduce_scatter(MPI.IN_PLACE, buf, rc, op=op)
            out = buf[:rc[rank]]
        assert (out == want).all(), ("Reduce_scatter", op, dtype, i % 3)
        out = np.zeros(7, dtype)
        comm.Scan(data(rank, 7, dtype, 5), out, op=op)
        assert (out == expect(ufunc, 7, dtype, range(rank + 1), 5)).all(), ("Scan", op, dtype)
        buf = data(rank, 7, dtype, 6)
        if i % 2 == 0:
            comm.Exscan(MPI.IN_PLACE, buf, op=op)      # rank 0's stays as it was
        else:
            buf = np.zeros(7, dtype) if rank else buf
            comm.Exscan(data(rank, 7, dtype, 6), buf, op=op)
        assert (buf == (expect(ufunc, 7, dtype, range(rank), 6) if rank else
                        data(0, 7, dtype, 6))).all(), ("Exscan", op, dtype, i % 2)
        checks += 3
# MAXLOC and MINLOC on (value, index) pairs: ties go to the smaller index.
pair = np.dtype([("value", "f8"), ("index", "i4")], align=True)
def pairs(r, n):
    out = np.zeros(n, pair)
    out["value"], out["index"] = data(r, n, np.float64, 11) % 3, r
    return out
def best(pick, ranks, n):
    return [pick(((pairs(r, n)["value"][k], -r if pick is max else r) for r in ranks))
            for k in range(n)]
for op, pick in ((MPI.MAXLOC, max), (MPI.MINLOC, min)):
    def want(ranks, n):
        return [(v, -i if pick is max else i) for v, i in best(pick, ranks, n)]
    out = np.zeros(5, pair)
    comm.Scan([pairs(rank, 5), MPI.DOUBLE_INT], [out, MPI.DOUBLE_INT], op=op)
    assert out.tolist() == want(range(rank + 1), 5), ("Scan", op)
    out = np.zeros(rc[rank], pair)
    comm.Reduce_scatter([pairs(rank, total), MPI.DOUBLE_INT], [out, MPI.DOUBLE_INT], rc, op=op)
    assert out.tolist() == want(range(size), total)[lo:lo + rc[rank]], ("RS", op)
    checks += 2
for n in (5, LARGE):                      # Reduce_scatter_block and Scan, rendezvous sizes
    out = np.zeros(n, np.int64)
    comm.Reduce_scatter_block(data(rank, size * n, salt=7), out, op=MPI.SUM)
    assert (out == expect(np.add, size * n, np.int64, range(size), 7)[rank * n:][:n]).all()
    out = np.zeros(n)
    comm.Scan([data(rank, n, np.float64, 8), MPI.DOUBLE], [out, MPI.DOUBLE], op=MPI.MAX)
    assert (out == expect(np.maximum, n, np.float64, range(rank + 1), 8)).all(), ("Scan", n)
    checks += 2

# Long Allreduce vectors (reduce-scatter + allgather on 3 or more ranks) with predefined
# ops, odd lengths, eager and rendezvous blocks.
for n in (ALLREDUCE_LARGE // 8 + 1, size * LARGE + 3):
    for op, ufunc in ((MPI.SUM, np.add), (MPI.MAX, np.maximum)):
        out = np.zeros(n)
        comm.Allreduce(data(rank, n, np.float64, 9), out, op=op)
        assert (out == expect(ufunc, n, np.float64, range(size), 9)).all(), ("long", n, op)
        buf = data(rank, n, np.int64, 10)
        comm.Allreduce(MPI.IN_PLACE, buf, op=op)
        assert (buf == expect(ufunc, n, np.int64, range(size), 10)).all(), ("long in place",)
        checks += 2

# Object scan and exscan, and object reductions with user ops, in rank order.
CAT = MPI.Op.Create(lambda a, b, datatype: a + b)      # on objects: called with None
assert comm.scan([rank]) == list(range(rank + 1))
assert comm.exscan([rank]) == (list(range(rank)) if rank else None)
assert comm.scan(rank + 1, op=MPI.PROD) == np.prod(np.arange(1, rank + 2))
assert comm.exscan(rank, op=MPI.MAX) == (rank - 1 if rank else None)
assert comm.scan(str(rank), op=CAT) == "".join(map(str, range(rank + 1)))
assert comm.exscan(str(rank), op=CAT) == ("".join(map(str, range(rank))) if rank else None)
assert comm.allreduce((rank,), op=CAT) == tuple(range(size))
big = list(range(EAGER_LIMIT))                            # its pickle goes by rendezvous
assert comm.scan([big] if rank == 0 else [rank], op=MPI.SUM) == [big] + list(range(1, rank + 1))
for root in roots:
    assert comm.reduce([rank], op=CAT, root=root) == (list(range(size)) if rank == root else None)
    assert comm.reduce([rank], root=root) == (list(range(size)) if rank == root else None)
    checks += 2
checks += 8

# Op.Free.
temp = MPI.Op.Create(addmod, commute=True)
temp.Free()
assert not temp

# Errors, raised on every rank.
x = np.zeros(4 * size, np.int64)
checks += fails(MPI.ERR_OP, temp.Is_commutative)
checks += fails(MPI.ERR_OP, comm.Allreduce, np.ones(4), np.zeros(4), op=temp)
checks += fails(MPI.ERR_OP, MPI.SUM.Free)
checks += fails(MPI.ERR_OP, comm.Scan, np.ones(3), np.zeros(3), op=MPI.BAND)
checks += fails(MPI.ERR_OP, comm.Reduce_scatter, np.ones(size), np.zeros(1), [1] * size,
                op=MPI.LXOR)
checks += fails(ValueError, comm.Allgatherv, x[:1], [x, [1] * (size + 1)])
checks += fails(ValueError, comm.Allgatherv, x[:1], [x, 1, 2, 3, MPI.INT64_T])
checks += fails(ValueError, comm.Reduce_scatter, x[:size + 1], x[:1], [1] * size)
checks += fails(ValueError, comm.Reduce_scatter, x[:size], x[:2], [1] * size)
checks += fails(ValueError, comm.Scan, np.ones(3), np.zeros(2))
checks += fails(ValueError, MPI.SUM.Reduce_local, np.ones(3), np.zeros(2))
checks += fails(TypeError, comm.Reduce_scatter, MPI.IN_PLACE, x)
checks += fails(MPI.ERR_COUNT, comm.Allgatherv, x[:0], [x, [0] * (size - 1) + [-1]])
if MPI.__name__.startswith("shmdat"):     # MPICH aborts the job on these, or goes on
    two = [2] * size
    checks += fails(MPI.ERR_ARG, comm.Allgatherv, x[:0], [x, 0, [-1] * size, MPI.INT64_T])
    checks += fails(MPI.ERR_COUNT, comm.Allgatherv, x[:1], [x, [len(x) + 1] * size])
    checks += fails(MPI.ERR_COUNT, comm.Reduce_scatter, MPI.IN_PLACE, x[:0],
                    [0] * (size - 1) + [-1])
    checks += fails(TypeError, MPI.Op.Create, 5)
    checks += fails(MPI.ERR_TRUNCATE, comm.Allgatherv, x[:2], [x, [1] * size])
    checks += fails(MPI.ERR_TRUNCATE, comm.Alltoallv, [x, two], [x.copy(), [1] * size])
    checks += fails(MPI.ERR_TRUNCATE, comm.Scatterv, [x, two] if rank == 0 else None, x[:1])
    if rank == 0:                         # only root learns that blocks were too long
        checks += fails(MPI.ERR_TRUNCATE, comm.Gatherv, x[:2], [x.copy(), [1] * size])
    else:
        comm.Gatherv(x[:2], None)
        checks += 1

# None of the collective traffic matched the point-to-point receive posted first.
assert not early.test()[0]
comm.Barrier()
comm.send(("p2p", rank), dest=(rank + 1) % size, tag=3)
assert early.wait() == ("p2p", (rank - 1) % size)
os.write(1, f"rank {rank}: {checks} checks\\n".encode())    # one write: the ranks share the pipe
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8])
def test_v_collectives_scan_and_user_ops_against_numpy(tmp_path, n):
    r = launch(tmp_path, n, PROGRAM, timeout=110)
    check_every_rank_agrees(r, n)
