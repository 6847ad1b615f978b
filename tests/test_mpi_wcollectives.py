"""shmdat.mpi's w-collectives by real launches: Alltoallw, Ialltoallw, Alltoallw_init on
COMM_WORLD at N = 1, 2, 3, 4, 7 and on an intercommunicator, and Neighbor_alltoallw and its
I- and init forms on Cartesian, graph and distributed graph communicators. Every block has
its own count, byte displacement and datatype (named, derived without gaps, derived with
gaps), blocks lie in reverse order with gaps between them, eager and rendezvous sizes,
IN_PLACE, MPI.BOTTOM with absolute addresses; each rank checks what it got against the
values every rank can compute, and the gaps untouched. The w-spec forms and the errors run
under mpi4py + MPICH too and print the same lines."""

import pytest

from tests.mpi_launch import (FAILS, SAY, as_mpi4py, assert_same_as_mpiexec,
                              check_every_rank_agrees, launch, needs_mpiexec)

PROGRAM = FAILS + """
import os
import numpy as np
from shmdat.mpi import MPI
from shmdat.mpi.engine import EAGER_LIMIT
world = MPI.COMM_WORLD
LARGE = EAGER_LIMIT // 8 + 3               # int64 elements: a rendezvous block
T = MPI.INT64_T
GAPPED = T.Create_resized(0, 16).Commit()  # an int64 every 16 bytes: packed on the wire
WHOLE = T.Create_contiguous(1).Commit()    # derived, no gaps: sent from the buffer itself
TYPES = [T, GAPPED, WHOLE]
checks = 0

def value(g, r, j, n):
    # What rank r of group g sends to rank (or neighbour) j: n int64s.
    return ((g * 64 + r) * 64 + j) * 2**24 + np.arange(n)

def layout(counts, types):
    # Byte displacements of blocks in reverse order, 8 bytes apart; the buffer's int64s.
    displs, at = [0] * len(counts), 8
    for j in reversed(range(len(counts))):
        displs[j] = at
        at += counts[j] * types[j].Get_extent()[1] + 8
    return displs, at // 8

def block(buf, count, displ, datatype):
    # The int64s `count` elements of `datatype` at byte displ of buf are.
    step = datatype.Get_extent()[1] // 8
    return buf[displ // 8:displ // 8 + count * step:step]

def fill(counts, types, g, r):
    displs, length = layout(counts, types)
    buf = np.full(length, -1, np.int64)
    for j, (count, datatype) in enumerate(zip(counts, types)):
        block(buf, count, displs[j], datatype)[:] = value(g, r, j, count)
    return buf, displs

def untouched(buf, counts, displs, types):
    # Everything outside the blocks is still -1.
    mask = np.ones(len(buf), bool)
    for count, displ, datatype in zip(counts, displs, types):
        step = datatype.Get_extent()[1] // 8
        mask[displ // 8:displ // 8 + count * step:step] = False
    return (buf[mask] == -1).all()

def run(mode, call, comm, sendmsg, recvmsg):
    # The blocking call, its I-form or its init form (started twice; once in place, where a
    # second start would swap the blocks back).
    if mode == "blocking":
        getattr(comm, call)(sendmsg, recvmsg)
    elif mode == "nonblocking":
        getattr(comm, "I" + call.lower())(sendmsg, recvmsg).Wait()
    else:
        request = getattr(comm, call + "_init")(sendmsg, recvmsg)
        for _ in range(1 if sendmsg is MPI.IN_PLACE else 2):
            request.Start()
            request.Wait()
        request.Free()

def spec(buf, counts, displs, types, form):
    if form == "bottom":
        base = MPI.Get_address(buf)
        return [MPI.BOTTOM, (counts, [base + d for d in displs]), types]
    if form == "4":
        return [buf, counts, displs, types]
    return (buf, (counts, displs), types)

def alltoallw(comm, g, scale, mode, form, in_place=False):
    # Rank r sends count(r, j) elements to j; its block for j has type TYPES[(r + 2j) % 3],
    # the receiver's for r TYPES[(j + r) % 3]: the types differ, the signatures agree.
    # IN_PLACE needs the counts symmetric.
    global checks
    r, n = comm.Get_rank(), comm.Get_remote_size() if comm.Is_inter() else comm.Get_size()
    count = (lambda a, b: ((a + b) % 3 + (a == b)) * scale) if in_place else \\
        (lambda a, b: ((a + 2 * b) % 4) * scale)
    rtypes = [TYPES[(j + r) % 3] for j in range(n)]
    rcounts = [count(j, r) for j in range(n)]
    if in_place:
        recv, rdispls = fill(rcounts, rtypes, g, r)
        run(mode, "Alltoallw", comm, MPI.IN_PLACE, spec(recv, rcounts, rdispls, rtypes, form))
    else:
        stypes = [TYPES[(r + 2 * j) % 3] for j in range(n)]
        send, sdispls = fill([count(r, j) for j in range(n)], stypes, g, r)
        rdispls, length = layout(rcounts, rtypes)
        recv = np.full(length, -1, np.int64)
        run(mode, "Alltoallw", comm, spec(send, [count(r, j) for j in range(n)], sdispls,
                                          stypes, form),
            spec(recv, rcounts, rdispls, rtypes, form))
    other = 1 - g if comm.Is_inter() else g
    for j in range(n):
        got = block(recv, rcounts[j], rdispls[j], rtypes[j])
        assert (got == value(other, j, r, rcounts[j])).all(), (mode, form, j)
    assert untouched(recv, rcounts, rdispls, rtypes)
    checks += 1

for scale in (1, LARGE):
    for mode in ("blocking", "nonblocking", "persistent"):
        for form in ("3", "4", "bottom"):
            alltoallw(world, 0, scale, mode, form)
            alltoallw(world, 0, scale, mode, form, in_place=True)

# An intercommunicator: the even ranks and the odd ones, each block to a member of the other.
if world.size > 1:
    half = world.Split(world.rank % 2, world.rank)
    inter = half.Create_intercomm(0, world, 1 - world.rank % 2)
    for mode in ("blocking", "nonblocking", "persistent"):
        for scale in (1, LARGE):
            alltoallw(inter, world.rank % 2, scale, mode, "3")
    checks += fails(TypeError, inter.Alltoallw, MPI.IN_PLACE,
                    [np.zeros(4), [T] * inter.remote_size])
    inter.Free()
    half.Free()

# Neighbour forms: the result of Neighbor_alltoall of the same values, each block through
# its own datatype and place.
def topologies():
    n, r = world.size, world.rank
    yield world.Create_cart([n], periods=[True])
    yield world.Create_cart([n], periods=[False])
    index = np.cumsum([2] * n).tolist()
    yield world.Create_graph(index, [x for i in range(n) for x in ((i + 1) % n, (i - 1) % n)])
    yield world.Create_dist_graph_adjacent([(r + 1) % n, (r + 3) % n, r],
                                           [(r - 1) % n, (r - 3) % n, r])

for topo in topologies():
    sources, destinations = topo.inoutedges
    for scale in (1, LARGE):
        c = 2 * scale
        ref = np.full((len(sources), c), -1, np.int64)
        topo.Neighbor_alltoall(np.array([value(0, topo.rank, j, c)
                                         for j in range(len(destinations))], np.int64), ref)
        stypes = [TYPES[j % 3] for j in range(len(destinations))]
        rtypes = [TYPES[(j + 1) % 3] for j in range(len(sources))]
        for mode in ("blocking", "nonblocking", "persistent"):
            for form in ("3", "bottom"):
                send, sdispls = fill([c] * len(destinations), stypes, 0, topo.rank)
                rdispls, length = layout([c] * len(sources), rtypes)
                recv = np.full(length, -1, np.int64)
                run(mode, "Neighbor_alltoallw", topo,
                    spec(send, [c] * len(destinations), sdispls, stypes, form),
                    spec(recv, [c] * len(sources), rdispls, rtypes, form))
                for i in range(len(sources)):
                    assert (block(recv, c, rdispls[i], rtypes[i]) == ref[i]).all(), (topo, mode, i)
                assert untouched(recv, [c] * len(sources), rdispls, rtypes)
                checks += 1
    topo.Free()

# Errors MPICH does not report (it reads or writes where it is told): a block before or
# beyond its buffer; a block longer than its receive (MPICH: ERR_IN_STATUS, as its
# Alltoallv's; here ERR_TRUNCATE, as Alltoallv's); on COMM_NULL.
n = world.size
x = np.zeros(4 * n, np.int64)
def w(buf, count, displ):
    # A w-spec of one count, byte displacement and T for every rank.
    return [buf, ([count] * n, [displ] * n), [T] * n]

checks += fails(MPI.ERR_ARG, world.Alltoallw, w(x, 1, -8), w(x.copy(), 1, 0))
checks += fails(MPI.ERR_COUNT, world.Alltoallw, w(x, 1, 8 * len(x)), w(x.copy(), 1, 0))
checks += fails(MPI.ERR_COUNT, world.Ialltoallw, w(x, 1, 0), w(x.copy(), len(x) + 1, 0))
checks += fails(MPI.ERR_TRUNCATE, world.Alltoallw, w(x, 2, 0), w(x.copy(), 1, 0))
checks += fails(MPI.ERR_COMM, MPI.COMM_NULL.Alltoallw, [x, [T] * n], [x, [T] * n])
checks += fails(MPI.ERR_COMM, MPI.COMM_NULL.Alltoallw_init, [x, [T] * n], [x, [T] * n])
world.Barrier()
os.write(1, f"rank {world.rank}: {checks} checks\\n".encode())
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_w_collectives_against_numpy(tmp_path, n):
    r = launch(tmp_path, n, PROGRAM, timeout=110)
    check_every_rank_agrees(r, n)


# The w-spec forms mpi4py takes and the errors it and MPICH give: the same lines as
# mpi4py + MPICH print.
COMPARED = """
import os
import numpy as np
from shmdat.mpi import MPI
""" + SAY + """
c = MPI.COMM_WORLD
r, n = c.rank, c.size
I = MPI.INT
s = np.arange(4 * n, dtype="i") + 100 * r
d = np.full(4 * n, -1, "i")
v = I.Create_vector(2, 1, 2)
steps = list(range(0, 16 * n, 16))

def attempt(name, call, *args):
    d[:] = -1
    say(r, name, outcome(lambda: call(*args)), d.tolist())

attempt("pairs", c.Alltoallw, [s, ([2] * n, [8 * i for i in range(n)]), [I] * n],
        [d, ([2] * n, [8 * i for i in range(n)]), [I] * n])
attempt("four", c.Alltoallw, [s, [1] * n, [4 * i for i in range(n)], [I] * n],
        [d, [1] * n, [8 * i for i in range(n)], [I] * n])
at = [I.Create_indexed([1], [i]).Commit() for i in range(n)]    # (the int at index i)
attempt("two", c.Alltoallw, [s, at[::-1]], [d, at])
def w(buf, counts, displs, types):
    return [buf, (counts, displs), types]

two, zero, ints = [2] * n, [0] * n, [I] * n
apart = [8 * i for i in range(n)]
attempt("short counts", c.Alltoallw, w(s, two + [2], zero, ints), w(d, two, zero, ints))
attempt("one type", c.Alltoallw, [s, ([2] * n, [0] * n), I], [d, ([2] * n, [0] * n), I])
attempt("typecodes", c.Alltoallw, w(s, two, zero, ["i"] * n), w(d, two, zero, ["i"] * n))
attempt("one count", c.Alltoallw, [s, (2, [0] * n), [I] * n], [d, (2, [0] * n), [I] * n])
attempt("no displs", c.Alltoallw, [s, [2] * n, None, [I] * n], [d, [2] * n, None, [I] * n])
attempt("five items", c.Alltoallw, [s, two, zero, ints, 1], [d, two, zero, ints])
attempt("float displs", c.Alltoallw, w(s, two, [0.0] * n, ints), w(d, two, zero, ints))
attempt("read-only", c.Alltoallw, w(s, two, zero, ints), w(bytes(16 * n), two, zero, ints))
attempt("negative count", c.Alltoallw, w(s, [-1] * n, zero, ints), w(d, [-1] * n, zero, ints))
attempt("not committed", c.Alltoallw, w(s, [1] * n, zero, [v] * n), w(d, [1] * n, zero, [v] * n))
attempt("null type", c.Alltoallw, [s, ([1] * n, [0] * n), [MPI.DATATYPE_NULL] * n],
        [d, ([1] * n, [0] * n), [MPI.DATATYPE_NULL] * n])
attempt("empty blocks anywhere", c.Alltoallw, w(s, zero, [-4] * n, ints),
        w(d, zero, [10**6] * n, ints))
v.Commit()
attempt("send vector", c.Alltoallw, w(s, [1] * n, steps, [v] * n), w(d, two, apart, ints))
attempt("receive vector", c.Alltoallw, w(s, two, apart, ints), w(d, [1] * n, steps, [v] * n))
d[:] = np.arange(4 * n) + 100 * r
c.Alltoallw(MPI.IN_PLACE, [d, ([1] * n, steps), [v] * n])
say(r, "in place", d.tolist())
c.Alltoallw(None, [d, ([1] * n, steps), [v] * n])
say(r, "None in place", d.tolist())
d[:] = -1
c.Ialltoallw([s, ([1] * n, steps), [v] * n], [d, ([1] * n, steps), [v] * n]).Wait()
say(r, "Ialltoallw", d.tolist())
p = c.Alltoallw_init(w(s, [1] * n, steps, [v] * n),
                     w(MPI.BOTTOM, [1] * n, [MPI.Get_address(d) + x for x in steps], [v] * n))
for k in range(2):
    s += 1
    p.Start()
    p.Wait()
    say(r, "Alltoallw_init", k, d.tolist())
p.Free()
cart = c.Create_cart([n], periods=[True])
d[:] = -1
cart.Neighbor_alltoallw([s, ([1, 2], [0, 8]), [I, I]], [d, ([2, 1], [8, 0]), [I, I]])
say(r, "Neighbor_alltoallw", d.tolist())
cart.Ineighbor_alltoallw([s, ([1, 1], [0, 4]), [v, v]], [d, ([2, 2], [0, 8]), [I, I]]).Wait()
say(r, "Ineighbor_alltoallw", d.tolist())
p = cart.Neighbor_alltoallw_init([s, ([1, 1], [0, 8]), [I, I]], [d, ([1, 1], [4, 0]), [I, I]])
p.Start()
p.Wait()
p.Free()
say(r, "Neighbor_alltoallw_init", d.tolist())
say(r, "short", outcome(lambda: cart.Neighbor_alltoallw(w(s, [1], [0], [I]),
                                                        w(d, [1, 1], [0, 4], [I, I]))))
cart.Free()
v.Free()
"""


@needs_mpiexec
@pytest.mark.parametrize("n", [1, 2, 3])
def test_w_spec_forms_and_errors_as_mpi4py_with_mpich(tmp_path, n):
    assert_same_as_mpiexec(tmp_path, n, as_mpi4py(COMPARED))
