"""shmdat.mpi's Cartesian topologies (Comm.Create_cart, Cartcomm), by real launches: the
grid's coordinates, ranks, shifts and sub-grids on 7 ranks (6 in the grid, one left
out), checked against values worked out here and, where MPICH is installed, line for
line against the same program under mpiexec; the neighbour collectives on open, periodic
and doubly-neighboured grids (the same rank before and after) likewise; and a halo
exchange on a periodic grid checked against numpy. Graph topologies (Comm.Create_graph,
Graphcomm): dims, neighbours, the neighbour collectives over a ring with a doubled edge,
Dup, a graph over fewer ranks than the communicator's, line for line against mpiexec; and
each malformed graph refused."""

import pytest

from tests import mpi_launch

GRID = """
import os
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
out = [("consts", MPI.CART, MPI.GRAPH, MPI.DIST_GRAPH, comm.Get_topology(), comm.is_topo)]
for kind in (MPI.Topocomm, MPI.Cartcomm):
    try:
        kind(comm)                          # a handle of a kind comm is not
        out.append(("no error",))
    except TypeError:
        pass
cart = comm.Create_cart([3, 2], periods=[True, False])
if cart == MPI.COMM_NULL:
    out.append(("null",))
else:
    out.append(("cart", type(cart).__name__, isinstance(cart, MPI.Intracomm),
                isinstance(cart, MPI.Topocomm), cart.Get_topology(), cart.is_topo, cart.size))
    out.append(("topo", cart.Get_dim(), cart.ndim, cart.topo, cart.dims, cart.periods, cart.coords))
    out.append(("coords", [cart.Get_coords(r) for r in range(cart.size)],
                cart.Get_cart_rank([1, 1]), cart.Get_cart_rank([4, 1]), cart.Get_cart_rank([-1, 0])))
    out.append(("shift", cart.Shift(0, 1), cart.Shift(1, 1), cart.Shift(0, -2), cart.Shift(1, 2)))
    for bad in (lambda: cart.Get_cart_rank([1, 5]), lambda: cart.Get_coords(99),
                lambda: cart.Shift(5, 1), lambda: cart.Get_cart_rank([1]), lambda: cart.Sub([1])):
        try:
            bad()
            out.append(("no error",))
        except MPI.Exception as e:
            out.append(("MPI.Exception", e.Get_error_class()))
        except ValueError:
            out.append(("ValueError",))
    sub = cart.Sub([False, True])
    out.append(("sub", type(sub).__name__, sub.size, sub.rank, sub.topo,
                sub.allreduce(rank), sub.Compare(comm)))
    dup = cart.Dup()
    out.append(("dup", type(dup).__name__, dup.topo, dup.Compare(cart), MPI.Cartcomm(cart) == cart))
    none = cart.Sub([False, False])
    out.append(("none", none.size, none.topo))
    for c in (sub, dup, none):
        c.Free()
    cart.Free()
zero = comm.Create_cart([])
out.append(("zero", zero == MPI.COMM_NULL or (zero.size, zero.topo)))
try:
    comm.Create_cart([size + 1])
except MPI.Exception as e:
    out.append(("too many", e.Get_error_class()))
os.write(1, f"{rank} {out}\\n".encode())
"""


def test_a_grid_of_six_on_seven_ranks(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 7, GRID))
    assert len(lines) == 7
    rank0 = lines[0]
    assert "('cart', 'Cartcomm', True, True, 2, True, 6)" in rank0
    assert "('topo', 2, 2, ([3, 2], [1, 0], [0, 0]), [3, 2], [1, 0], [0, 0])" in rank0
    assert "('coords', [[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1]], 3, 3, 4)" in rank0
    assert "('shift', (4, 2), (-1, 1), (4, 2), (-1, -1))" in rank0
    assert ("('MPI.Exception', 12), ('MPI.Exception', 6), ('MPI.Exception', 12), "
            "('ValueError',), ('ValueError',)") in rank0
    assert "('sub', 'Cartcomm', 2, 0, ([2], [0], [0]), 1, 3)" in rank0       # 0 + 1, UNEQUAL
    assert "('dup', 'Cartcomm', ([3, 2], [1, 0], [0, 0]), 1, True)" in rank0  # CONGRUENT
    assert "('none', 1, ([], [], []))" in rank0
    assert "('zero', (1, ([], [], [])))" in rank0 and "('too many', 12)" in rank0
    assert lines[6].startswith("6 [('consts', 2, 1, 3, -32766, False), ('null',), ('zero', True)")


@mpi_launch.needs_mpiexec
def test_the_same_grid_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 7, GRID)


HALO = """
import os
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
dims = MPI.Compute_dims(comm.size, 2)
cart = comm.Create_cart(dims, periods=[True, True])
row, col = cart.coords
n = 4                                       # each rank's block of a (dims * n) field
field = np.arange(dims[0] * n * dims[1] * n, dtype=np.float64).reshape(dims[0] * n, dims[1] * n)
block = np.zeros((n + 2, n + 2))
block[1:-1, 1:-1] = field[row * n:(row + 1) * n, col * n:(col + 1) * n]
for axis in (0, 1):
    lo, hi = cart.Shift(axis, 1)            # (the neighbour before, the one after)
    if axis == 0:
        send_lo, send_hi = block[1, 1:-1].copy(), block[-2, 1:-1].copy()
    else:
        send_lo, send_hi = block[1:-1, 1].copy(), block[1:-1, -2].copy()
    got_hi, got_lo = np.empty(n), np.empty(n)
    cart.Sendrecv(send_lo, lo, 0, got_hi, hi, 0)
    cart.Sendrecv(send_hi, hi, 1, got_lo, lo, 1)
    if axis == 0:
        block[-1, 1:-1], block[0, 1:-1] = got_hi, got_lo
    else:
        block[1:-1, -1], block[1:-1, 0] = got_hi, got_lo
rows = np.roll(field, 1, 0), np.roll(field, -1, 0)
cols = np.roll(field, 1, 1), np.roll(field, -1, 1)
mine = np.s_[row * n:(row + 1) * n, col * n:(col + 1) * n]
assert (block[0, 1:-1] == rows[0][mine][0]).all() and (block[-1, 1:-1] == rows[1][mine][-1]).all()
assert (block[1:-1, 0] == cols[0][mine][:, 0]).all() and (block[1:-1, -1] == cols[1][mine][:, -1]).all()
total = cart.Sub([False, True]).allreduce(block[1:-1, 1:-1].sum())     # along the row
assert total == field[row * n:(row + 1) * n].sum(), (total, row)
os.write(1, f"rank {comm.rank}: 4 checks\\n".encode())
"""


def test_a_halo_exchange_on_a_periodic_grid(tmp_path):
    for n in (4, 6):
        r = mpi_launch.launch_mpi4py(tmp_path, n, HALO)
        mpi_launch.check_every_rank_agrees(r, n)


@mpi_launch.needs_mpiexec
def test_the_halo_exchange_under_mpiexec(tmp_path):
    mpi_launch.check_every_rank_agrees(mpi_launch.launch_mpiexec(tmp_path, 4, HALO), 4)


NEIGHBOURS = """
import os
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
out = []
for dims, periods in (([size], [True]), ([size], [False]), ([2, size // 2], [True, False]),
                      ([1, size], [True, True])):
    cart = comm.Create_cart(dims, periods)
    out.append(("edges", cart.degrees, cart.indegree, cart.outdegree, cart.inoutedges))
    out.append(("objects", cart.neighbor_allgather(("r", rank)),
                cart.neighbor_alltoall([(rank, i) for i in range(cart.outdegree)])))
    n = cart.indegree
    recv = np.full(2 * n, -1, "i")
    cart.Neighbor_allgather(np.array([rank * 10, rank * 10 + 1], "i"), recv)
    out.append(("Neighbor_allgather", recv.tolist()))
    recv = np.full(n, -1, "i")
    cart.Neighbor_alltoall(np.array([rank * 100 + i for i in range(n)], "i"), recv)
    out.append(("Neighbor_alltoall", recv.tolist()))
    cart.Free()
os.write(1, f"{rank} {out}\\n".encode())
"""


def test_neighbour_collectives(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 4, NEIGHBOURS))
    rank0 = lines[0]
    # A ring of 4: before 3, after 1; the open line: no one before rank 0.
    assert "('edges', (2, 2), 2, 2, ([3, 1], [3, 1]))" in rank0
    assert "('Neighbor_allgather', [30, 31, 10, 11]), ('Neighbor_alltoall', [301, 100])" in rank0
    assert "('objects', [None, ('r', 1)], [None, (1, 0)])" in rank0
    # 2 x 2, periodic in the first dimension: rank 2 is both before and after rank 0 there,
    # and what it sent "after" lands in the "before" block.
    assert "('Neighbor_alltoall', [201, 200, -1, 102])" in rank0


@mpi_launch.needs_mpiexec
def test_the_neighbour_collectives_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 4, NEIGHBOURS)


GRAPH = """import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
index, edges = [], []                   # a ring, and (from 3 ranks) a second edge 0-1
for r in range(size):
    edges += [(r - 1) % size, (r + 1) % size] + ([1 - r] if r in (0, 1) and size > 2 else [])
    index.append(len(edges))
g = comm.Create_graph(index, edges)
say(rank, type(g).__name__, g.Get_topology() == MPI.GRAPH, g.is_topo, g.Get_dims(), g.nnodes, g.nedges,
    g.Get_neighbors_count(rank), g.Get_neighbors(rank), g.neighbors, g.degrees, g.inoutedges,
    g.Get_topo() == (index, edges), outcome(lambda: g.Get_neighbors(size)))
recv = np.full(2 * g.indegree, -1, "i4")
g.Neighbor_allgather(np.full(2, rank, "i4"), recv)
say(rank, "allgather", recv.tolist())
recv = np.full(g.indegree, -1, "i4")
g.Neighbor_alltoall(np.arange(g.outdegree, dtype="i4") + 100 * rank, recv)
say(rank, "alltoall", recv.tolist())
say(rank, "objects", g.neighbor_allgather(rank), g.neighbor_alltoall([(rank, i) for i in range(g.outdegree)]))
d = g.Dup()
say(rank, "dup", type(d).__name__, d.Get_topo() == g.Get_topo(), MPI.Graphcomm(g).neighbors)
small = comm.Create_graph([1, 2], [1, 0])
say(rank, "small", small == MPI.COMM_NULL if rank >= 2 else (small.Get_size(), small.neighbors))
"""


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [2, 3, 4])
def test_graph_topologies_as_under_mpiexec(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, GRAPH)


def test_a_graph_that_is_not_one_is_refused(tmp_path):
    body = """import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
for index, edges in (([1, 2, 3], [1, 0, 0]), ([2, 1], [1, 0]), ([1, 2], [1, 5]), ([1, 3], [1, 0]), ([], [0])):
    say(outcome(lambda: comm.Create_graph(index, edges)) == ("MPI", MPI.ERR_ARG))
"""
    # (more nodes than ranks, an index that decreases, an edge to no node, an index that
    # does not end at the edges, edges with no node: on both ranks, before any message)
    assert mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 2, body)) == ["True"] * 10


NEIGHBOURS_V = """import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
for topo in (comm.Create_cart([size], periods=[True]), comm.Create_graph(
        [2 * (r + 1) for r in range(size)], sum([[(r - 1) % size, (r + 1) % size] for r in range(size)], []))):
    n = topo.indegree
    send = np.full(1, rank, "i4")
    recv = np.full(2 * n, -1, "i4")
    topo.Neighbor_allgatherv(send, [recv, ([1] * n, [2 * i for i in range(n)]), MPI.INT])
    say(rank, type(topo).__name__, "allgatherv", recv.tolist())
    scounts = [i + 1 for i in range(topo.outdegree)]
    sdispls = [sum(scounts[:i]) for i in range(topo.outdegree)]
    sendv = np.arange(sum(scounts), dtype="i4") + 100 * rank
    rcounts = [2, 1]                    # (a ring: the one before sends its block 1, the one after its block 0)
    rdispls = [sum(rcounts[:i]) for i in range(n)]
    recvv = np.full(sum(rcounts), -1, "i4")
    topo.Neighbor_alltoallv([sendv, (scounts, sdispls), MPI.INT], [recvv, (rcounts, rdispls), MPI.INT])
    say(rank, type(topo).__name__, "alltoallv", recvv.tolist())
"""


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [3, 4])
def test_the_v_neighbour_collectives_as_under_mpiexec(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, NEIGHBOURS_V)


# Non-blocking and persistent neighbour collectives (stop 24): Ineighbor_allgather(v) and
# Ineighbor_alltoall(v), all four under way at once, and Neighbor_*_init started several
# times with the send buffers changed between starts, each giving what the blocking call gives
# on the same data, on open, periodic and doubly-neighboured grids (one rank before and after:
# a periodic dimension of 1 or 2) and on a graph with a doubled edge given as mpi4py's
# adjacency arrays (an index with a leading 0); the results line for line as under mpiexec.
NEIGHBOURS_NB = mpi_launch.FAILS.replace("def fails", "import os\nimport numpy as np\n"
                                         "from mpi4py import MPI\n\n\ndef fails") + \
    mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
checks = 0
index, edges = [0], []                  # a ring, and (from 3 ranks) a second edge 0-1
for r in range(size):
    edges += [(r - 1) % size, (r + 1) % size] + ([1 - r] if r in (0, 1) and size > 2 else [])
    index.append(len(edges))
topologies = [comm.Create_cart([size], [True]), comm.Create_cart([size], [False]),
              comm.Create_cart([1, size], [True, True]),
              comm.Create_cart([2, size // 2], [True, False]) if size % 2 == 0 else MPI.COMM_NULL,
              comm.Create_graph(index, edges),
              # distributed graphs: in from the two ranks before, out to the two after; and
              # two edges to the rank after (weighted), so one pair has repeated edges
              comm.Create_dist_graph_adjacent([(rank - 2) % size, (rank - 1) % size],
                                              [(rank + 1) % size, (rank + 2) % size]),
              comm.Create_dist_graph_adjacent([(rank - 1) % size] * 2, [(rank + 1) % size] * 2,
                                              [1, 2], [3, 4])]


def buffers(topo, start):
    # The send and receive buffers of the four calls, the sends filled for this start: block i
    # of an all-to-all (to neighbour i) holds i + 1 elements on a grid (so the receiver's slot
    # i takes (i ^ 1) + 1: the neighbour after sent it its block "before"), 2 on a graph; the
    # v-receives leave a gap of one element after each block.
    n, m = topo.indegree, topo.outdegree
    grid = topo.Get_topology() == MPI.CART
    scounts = [i + 1 if grid else 2 for i in range(m)]
    rcounts = [(i ^ 1) + 1 if grid else 2 for i in range(n)]
    rdispls = [sum(rcounts[:i]) + i for i in range(n)]
    mine = np.array([rank, start], "i4")
    blocks = np.arange(2 * m, dtype="i4").reshape(m, 2) + 100 * rank + 1000 * start
    sendv = np.arange(sum(scounts), dtype="i4") + 100 * rank + 1000 * start
    return ([mine, np.full((n, 2), -1, "i4")],
            [mine, [np.full(3 * n, -1, "i4"), ([2] * n, [3 * i for i in range(n)]), MPI.INT]],
            [blocks, np.full((n, 2), -1, "i4")],
            [[sendv, scounts], [np.full(sum(rcounts) + n, -1, "i4"), (rcounts, rdispls), MPI.INT]])


def results(calls):
    return [(r[0] if isinstance(r, list) else r).tolist() for _, r in calls]


NAMES = ("allgather", "allgatherv", "alltoall", "alltoallv")
for t, topo in enumerate(topologies):
    if topo == MPI.COMM_NULL:
        continue
    blocking = buffers(topo, 0)
    for name, (send, recv) in zip(NAMES, blocking):
        getattr(topo, "Neighbor_" + name)(send, recv)
    nonblocking = buffers(topo, 0)
    MPI.Request.Waitall([getattr(topo, "Ineighbor_" + name)(send, recv)
                         for name, (send, recv) in zip(NAMES, nonblocking)])
    assert results(nonblocking) == results(blocking), (results(nonblocking), results(blocking))
    say(rank, t, type(topo).__name__, topo.inoutedges, results(blocking))
    checks += 1
    persistent = buffers(topo, 0)
    requests = [getattr(topo, f"Neighbor_{name}_init")(send, recv)
                for name, (send, recv) in zip(NAMES, persistent)]
    for start in range(3):
        fresh = buffers(topo, start)
        for (send, recv), (new_send, _) in zip(persistent, fresh):
            (send[0] if isinstance(send, list) else send)[...] = \\
                new_send[0] if isinstance(new_send, list) else new_send
            (recv[0] if isinstance(recv, list) else recv)[...] = -1
        MPI.Prequest.Startall(requests)
        MPI.Request.Waitall(requests)
        for name, (send, recv) in zip(NAMES, fresh):
            getattr(topo, "Neighbor_" + name)(send, recv)
        assert results(persistent) == results(fresh), (start, results(persistent), results(fresh))
        checks += 1
    requests[0].Start()
    checks += fails(MPI.ERR_REQUEST, requests[0].Start)     # (active)
    if topo.indegree:   # (a receive buffer that is not indegree blocks: at init, as mpi4py)
        checks += fails(ValueError, topo.Neighbor_allgather_init, np.zeros(2, "i4"),
                        np.zeros(2 * topo.indegree + 1, "i4"))
    requests[0].Wait()
    for request in requests:
        request.Free()
    topo.Free()
say(f"rank {rank}: {checks} checks")
"""


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_nonblocking_and_persistent_neighbour_collectives(tmp_path, n):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, n, NEIGHBOURS_NB))
    checks = [line for line in lines if line.startswith("rank ")]
    assert [line.split(":")[0] for line in checks] == [f"rank {i}" for i in range(n)]
    assert len({line.split(":")[1] for line in checks}) == 1


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("n", [2, 3, 4])
def test_nonblocking_and_persistent_neighbour_collectives_as_under_mpiexec(tmp_path, n):
    mpi_launch.assert_same_as_mpiexec(tmp_path, n, NEIGHBOURS_NB)


# Distributed graphs: what each rank is told of its edges, made adjacent or from edges any
# rank gives (compared with MPICH as sets: MPI leaves the order of a general graph's edges
# to the implementation), the constructors' errors, handles.
DIST_GRAPHS = """
import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
topo = comm.Create_dist_graph_adjacent([(rank - 1) % size] * 2, [(rank + 1) % size, rank],
                                       [5, 6], [7, 8])
say(rank, "adjacent", topo.Get_dist_neighbors_count(), topo.Get_dist_neighbors(),
    topo.topology == MPI.DIST_GRAPH, topo.is_topo, topo.degrees, topo.inedges, topo.outedges)
dup = topo.Dup()
say(rank, "dup", type(dup).__name__, dup.Get_dist_neighbors())
say(rank, "handle", MPI.Distgraphcomm(topo) == topo, outcome(lambda: MPI.Distgraphcomm(comm)),
    outcome(lambda: MPI.Graphcomm(topo)))
dup.Free()
topo.Free()
for sources, destinations, sw, dw in (([], [], MPI.WEIGHTS_EMPTY, MPI.WEIGHTS_EMPTY),
                                      (None, None, None, None),
                                      ([rank], None, MPI.UNWEIGHTED, None)):
    topo = comm.Create_dist_graph_adjacent(sources, destinations, sw, dw)
    say(rank, "degenerate", topo.Get_dist_neighbors_count(), topo.Get_dist_neighbors())
    topo.Free()
topo = comm.Create_dist_graph([rank], [2], [(rank + 1) % size, (rank + 2) % size], [1, 2])
count, (sources, destinations, (sw, dw)) = topo.Get_dist_neighbors_count(), topo.Get_dist_neighbors()
say(rank, "general", count, sorted(zip(sources, sw)), sorted(zip(destinations, dw)))
say(rank, "edges", topo.neighbor_allgather(rank) == sources)
topo.Free()
given = comm.Create_dist_graph(list(range(size)) if rank == 0 else [],
                               [1] * size if rank == 0 else [],
                               [(r + 1) % size for r in range(size)] if rank == 0 else [])
say(rank, "all from rank 0", given.Get_dist_neighbors())
given.Free()
say(rank, "errors", outcome(lambda: comm.Create_dist_graph([0], [-1], [])),
    outcome(lambda: comm.Create_dist_graph([0], [2], [0])),
    outcome(lambda: comm.Create_dist_graph_adjacent([0], [0], MPI.WEIGHTS_EMPTY, MPI.WEIGHTS_EMPTY)),
    outcome(lambda: comm.Create_dist_graph_adjacent([0], [0], [1, 2], [1])),
    outcome(lambda: comm.Create_dist_graph_adjacent(["a"], [0])))
"""


@pytest.mark.parametrize("n", [1, 2, 3])
def test_distributed_graphs(tmp_path, n):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, n, DIST_GRAPHS))
    after, before = 1 % n, (n - 1) % n
    assert (f"0 adjacent (2, 2, True) ([{before}, {before}], [{after}, 0], ([5, 6], [7, 8])) "
            f"True True (2, 2) [{before}, {before}] [{after}, 0]") in lines
    assert "0 dup Distgraphcomm" in " ".join(lines)
    assert "0 handle True ('TypeError',) ('TypeError',)" in lines
    assert "0 degenerate (0, 0, True) ([], [], ([], []))" in lines
    assert "0 degenerate (1, 0, False) ([0], [], None)" in lines
    assert f"0 general (2, 2, True) {sorted([(before, 1), ((0 - 2) % n, 2)])} " \
           f"{sorted([(after, 1), (2 % n, 2)])}" in lines
    assert f"0 all from rank 0 ([{before}], [{after}], None)" in lines
    assert "0 errors ('ValueError',) ('ValueError',) ('ValueError',) ('ValueError',) " \
           "('TypeError',)" in lines


@mpi_launch.needs_mpiexec
def test_distributed_graphs_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 3, DIST_GRAPHS)


def test_a_distributed_graph_refuses_ranks_outside_and_negative_weights(tmp_path):
    # (MPICH makes the communicator, and fails later or never: erroneous by MPI's text)
    r = mpi_launch.launch_mpi4py(tmp_path, 2, """
        import os
        from mpi4py import MPI
        """ + mpi_launch.SAY.replace("\n", "\n        ") + """
        comm = MPI.COMM_WORLD
        say(comm.rank, outcome(lambda: comm.Create_dist_graph_adjacent([2], [0])),
            outcome(lambda: comm.Create_dist_graph([0], [1], [-1])),
            outcome(lambda: comm.Create_dist_graph_adjacent([0], [0], [-1], [1])))
        """)
    assert mpi_launch.lines_of(r) == [f"{rank} ('MPI', 6) ('MPI', 6) ('MPI', 12)" for rank in (0, 1)]



# Cart_map and Graph_map: the rank each process would have (ranks keep their order), as
# MPICH answers; periods given as one bool for every dimension, as mpi4py takes them.
MAPS = """
import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
say(rank, "cart", comm.Cart_map([1]), comm.Cart_map([size]), comm.Cart_map([size, 1], [True, False]),
    comm.Cart_map([1], True), comm.Cart_map([]), comm.Cart_map([-1]))
say(rank, "graph", comm.Graph_map([1], [0]), comm.Graph_map([0, 1], [0]), comm.Graph_map(list(range(1, size + 1)), [0] * size))
cart = comm.Create_cart([size, 1], True)
say(rank, "periods", cart.periods, cart.Get_rank() == comm.Cart_map([size, 1], True))
cart.Free()
say(rank, "errors", outcome(lambda: comm.Cart_map([size + 1])),
    outcome(lambda: comm.Graph_map([1] * (size + 1), [0])),
    outcome(lambda: comm.Cart_map([1], [True, True])), outcome(lambda: comm.Cart_map(["a"])))
"""


@pytest.mark.parametrize("n", [1, 3])
def test_cart_map_and_graph_map(tmp_path, n):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, n, MAPS))
    undefined = -32766
    assert f"0 cart 0 0 0 0 0 {undefined}" in lines
    assert f"{n - 1} graph {0 if n == 1 else undefined} {0 if n == 1 else undefined} {n - 1}" in lines
    assert "0 periods [1, 1] True" in lines
    assert "0 errors ('MPI', 11) ('MPI', 12) ('ValueError',) ('TypeError',)" in lines


@mpi_launch.needs_mpiexec
def test_cart_map_and_graph_map_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 3, MAPS)
