"""Cartesian and graph topologies (MPI_Cart_*, MPI_Graph_*): Comm.Create_cart and
Comm.Create_graph, mpi4py's Topocomm, Cartcomm and Graphcomm (reorder is a hint: ranks keep
their order), distributed graphs (Comm.Create_dist_graph_adjacent, Comm.Create_dist_graph,
Distgraphcomm), and the neighbour collectives, blocking and non-blocking (the persistent
ones: persistent.py; the w-forms: wcollectives.py).

A Cartesian rank's neighbours are, dimension by dimension, the one before and the one
after (Shift(d, 1)); PROC_NULL ones take no part. A graph rank's neighbours are its edges in
order. A neighbour collective is one round on a collective channel (the blocking one's tag,
or a non-blocking one's own): every receive posted, then every send, all with the channel's
tag, so a receiver tells the blocks of one sender apart by their order (MPI's messages
between two ranks do not overtake). The sends go in the order of the receiver's slots: on a
grid, a block for the neighbour after lands in that rank's slot "before", so when both
neighbours are one rank (a periodic dimension of 1 or 2) each block still lands where MPI
says; on a graph, several edges between two ranks match in edge order."""

import math
import operator

from . import errors, unimplemented
from .comm import COMM_NULL, Comm, _blocking, _nonblocking, equal_blocks
from .datatypes import message, vector
from .errors import Exception as MPIException
from .group import UNDEFINED
from .info import INFO_NULL
from .matching import PROC_NULL
from .pickler import pickle

CART, GRAPH, DIST_GRAPH = 2, 1, 3        # MPI_Topo_test's answers, MPICH's numbers


class Topocomm(Comm):
    """mpi4py's Topocomm: a communicator with a topology (Cartesian, graph or distributed
    graph)."""

    _unimplemented = unimplemented.CARTCOMM

    def __new__(cls, comm=None, *args, **kwargs):
        """mpi4py's Topocomm(comm), Cartcomm(comm): another handle to `comm`, which must
        have that kind of topology (TypeError otherwise)."""
        kind = next(c for c in cls.__mro__ if c in (Cartcomm, Graphcomm, Distgraphcomm, Topocomm))
        if isinstance(comm, Comm) and comm and not isinstance(comm, kind):   # (a subclass's: its
            raise TypeError(f"expected a {kind.__name__}, got {type(comm).__name__}")  # kind)
        return super().__new__(cls, comm, *args, **kwargs)

    # The neighbour collectives, over inoutedges (each topology's own).

    inedges = property(lambda self: self.inoutedges[0])
    outedges = property(lambda self: self.inoutedges[1])
    indegree = property(lambda self: self.degrees[0])
    outdegree = property(lambda self: self.degrees[1])

    def _exchange(self, ch, sends, receives):
        """Send sends[i] to outgoing neighbour i and receive from incoming neighbour i into
        receives[i] (a writable byte view, or None: into new bytes), on `ch`: the blocking
        channel (returns the receives' ops, None for PROC_NULL) or a non-blocking one
        (started). MPI.Exception ERR_TRUNCATE if a block does not fit."""
        return ch.run(self._rounds(ch, sends, receives))

    def _rounds(self, ch, sends, receives):
        """The exchange's one round: every receive posted, then the sends in `_send_order`
        (one tag: a neighbour's blocks from this rank come in the order it posted them)."""
        incoming, outgoing = self.inoutedges
        got = [None if rank == PROC_NULL else ch.recv(rank, receives[i])
               for i, rank in enumerate(incoming)]
        yield [op for op in got if op is not None] + \
            [ch.send(outgoing[i], sends[i]) for i in self._send_order() if outgoing[i] != PROC_NULL]
        return got

    def _neighbor_allgather(self, ch, sendbuf, recvbuf):
        """MPI_Neighbor_allgather: this rank's sendbuf to every neighbour, block i of
        recvbuf from neighbour i (untouched for PROC_NULL). Buffer errors as Allgather."""
        n = self.indegree
        view = message(sendbuf, False)[0]
        self._exchange(ch, [view] * self.outdegree,
                       equal_blocks(message(recvbuf, True, n)[0], n) if n else [])

    def _neighbor_alltoall(self, ch, sendbuf, recvbuf):
        """MPI_Neighbor_alltoall: block i of sendbuf to neighbour i, block i of recvbuf
        from neighbour i (untouched for PROC_NULL). Buffer errors as Alltoall."""
        n, m = self.degrees
        self._exchange(ch, equal_blocks(message(sendbuf, False, m)[0], m) if m else [],
                       equal_blocks(message(recvbuf, True, n)[0], n) if n else [])

    def _neighbor_allgatherv(self, ch, sendbuf, recvbuf):
        """MPI_Neighbor_allgatherv: this rank's sendbuf to every neighbour, from neighbour i
        into block i of recvbuf (a v-spec: `[buf, counts, displs, T]`, as Allgatherv's)."""
        n = self.indegree
        view = message(sendbuf, False)[0]
        self._exchange(ch, [view] * self.outdegree, vector(recvbuf, True, n)[0] if n else [])

    def _neighbor_alltoallv(self, ch, sendbuf, recvbuf):
        """MPI_Neighbor_alltoallv: block i of sendbuf to neighbour i, block i of recvbuf from
        neighbour i (v-specs, as Alltoallv's)."""
        n, m = self.degrees
        self._exchange(ch, vector(sendbuf, False, m)[0] if m else [],
                       vector(recvbuf, True, n)[0] if n else [])

    Neighbor_allgather = _blocking(_neighbor_allgather)
    Ineighbor_allgather = _nonblocking(_neighbor_allgather)
    Neighbor_alltoall = _blocking(_neighbor_alltoall)
    Ineighbor_alltoall = _nonblocking(_neighbor_alltoall)
    Neighbor_allgatherv = _blocking(_neighbor_allgatherv)
    Ineighbor_allgatherv = _nonblocking(_neighbor_allgatherv)
    Neighbor_alltoallv = _blocking(_neighbor_alltoallv)
    Ineighbor_alltoallv = _nonblocking(_neighbor_alltoallv)

    def neighbor_allgather(self, sendobj):
        """The object of each neighbour (None for PROC_NULL), as mpi4py's."""
        data = memoryview(pickle.dumps(sendobj))
        with self._lock("neighbor_allgather"):
            return self._objects(self._exchange(self._channel, [data] * self.outdegree,
                                                [None] * self.indegree))

    def neighbor_alltoall(self, sendobj):
        """sendobj[i] to neighbour i; the object each neighbour sent this rank (None for
        PROC_NULL). ValueError unless sendobj has outdegree items."""
        sendobj = list(sendobj)
        if len(sendobj) != self.outdegree:
            raise ValueError(f"expecting {self.outdegree} items, got {len(sendobj)}")
        sends = [memoryview(pickle.dumps(obj)) for obj in sendobj]
        with self._lock("neighbor_alltoall"):
            return self._objects(self._exchange(self._channel, sends, [None] * self.indegree))

    @staticmethod
    def _objects(ops):
        return [None if op is None else pickle.loads(op.data) for op in ops]


class Cartcomm(Topocomm):
    """A communicator over a grid of `dims` (periodic where `periods` says): mpi4py's
    Cartcomm. Made by Comm.Create_cart (and Sub, Dup); Cartcomm(cart) is another handle."""

    _topology = CART

    def __init__(self, engine, context=None, ranks=None, name="", dims=(), periods=()):
        super().__init__(engine, context, ranks, name)
        if not isinstance(engine, Comm):
            self._dims, self._periods = list(dims), [int(bool(p)) for p in periods]

    @classmethod
    def _over(cls, comm, dims, periods):
        """The Cartcomm of the new communicator `comm` (its context and ranks)."""
        return cls(comm._engine, comm._context, comm._ranks, comm._name, dims, periods)

    def Get_dim(self):
        """MPI_Cartdim_get: the number of dimensions."""
        return len(self._dims)

    dim = ndim = property(Get_dim)

    def Get_topo(self):
        """MPI_Cart_get: (dims, periods as 0/1, this rank's coordinates)."""
        return list(self._dims), list(self._periods), self.Get_coords(self._rank)

    topo = property(Get_topo)
    dims = property(lambda self: list(self._dims))
    periods = property(lambda self: list(self._periods))
    coords = property(lambda self: self.Get_coords(self._rank))

    def Get_cart_rank(self, coords):
        """MPI_Cart_rank: the rank at `coords` (wrapped in periodic dimensions).
        ValueError if there are not ndim of them; MPI.Exception ERR_ARG for one outside a
        dimension that is not periodic."""
        coords = [operator.index(c) for c in coords]
        if len(coords) != len(self._dims):
            raise ValueError(f"{len(coords)} coordinates for {len(self._dims)} dimensions")
        rank = 0
        for c, d, periodic in zip(coords, self._dims, self._periods):
            if periodic:
                c %= d
            elif not 0 <= c < d:
                raise MPIException(errors.ERR_ARG, f"coordinate {c} outside [0, {d})")
            rank = rank * d + c
        return rank

    def Get_coords(self, rank):
        """MPI_Cart_coords: the coordinates of `rank`. MPI.Exception ERR_RANK if it is not
        a rank of this communicator."""
        rank = operator.index(rank)
        if not 0 <= rank < self._size:
            raise MPIException(errors.ERR_RANK, f"rank {rank} (size {self._size})")
        coords = []
        for d in reversed(self._dims):
            rank, c = divmod(rank, d)
            coords.append(c)
        return coords[::-1]

    def Shift(self, direction, disp):
        """MPI_Cart_shift: (source, dest), the ranks `disp` steps back and forward along
        `direction` (PROC_NULL past the edge of a dimension that is not periodic).
        MPI.Exception ERR_ARG for a direction that is not a dimension."""
        direction, disp = operator.index(direction), operator.index(disp)
        if not 0 <= direction < len(self._dims):
            raise MPIException(errors.ERR_ARG, f"direction {direction} of {len(self._dims)} "
                               "dimensions")
        coords = self.Get_coords(self._rank)
        return (self._neighbour(coords, direction, -disp),
                self._neighbour(coords, direction, disp))

    def _neighbour(self, coords, direction, step):
        d = self._dims[direction]
        c = coords[direction] + step
        if self._periods[direction]:
            c %= d
        elif not 0 <= c < d:
            return PROC_NULL
        return self.Get_cart_rank(coords[:direction] + [c] + coords[direction + 1:])

    def Sub(self, remain_dims):
        """MPI_Cart_sub (collective): the grid of the dimensions `remain_dims` keeps, one
        per point of the others. ValueError if there are not ndim flags."""
        remain = [bool(r) for r in remain_dims]
        if len(remain) != len(self._dims):
            raise ValueError(f"{len(remain)} flags for {len(self._dims)} dimensions")
        coords = self.Get_coords(self._rank)
        color = 0
        for c, d, keep in zip(coords, self._dims, remain):
            if not keep:
                color = color * d + c
        sub = self.Split(color, self._rank)
        return Cartcomm._over(sub, [d for d, keep in zip(self._dims, remain) if keep],
                              [p for p, keep in zip(self._periods, remain) if keep])

    def Dup(self, info=None):
        """MPI_Comm_dup: the same grid on a new context."""
        return Cartcomm._over(Comm.Dup(self, info), self._dims, self._periods)

    # Neighbours: before and after in each dimension.

    @property
    def inoutedges(self):
        """(incoming, outgoing) neighbours: the same list, before and after in each
        dimension in turn (PROC_NULL past an open edge)."""
        neighbours = []
        for direction in range(len(self._dims)):
            neighbours.extend(self.Shift(direction, 1))
        return neighbours, neighbours

    degrees = property(lambda self: (2 * len(self._dims), 2 * len(self._dims)))

    def _send_order(self):
        """Block i lands in the receiver's slot i ^ 1 (this rank is the neighbour after
        its neighbour before): sent in the order of those slots, a rank that is both
        neighbours (a periodic dimension of 1 or 2) matches each block where MPI puts it."""
        return [i ^ 1 for i in range(2 * len(self._dims))]


class Graphcomm(Topocomm):
    """A communicator over a graph: rank r's neighbours are edges[index[r - 1]:index[r]]
    (mpi4py's Graphcomm). Made by Comm.Create_graph (and Dup); Graphcomm(graph) is another
    handle."""

    _topology = GRAPH

    def __init__(self, engine, context=None, ranks=None, name="", index=(), edges=()):
        super().__init__(engine, context, ranks, name)
        if not isinstance(engine, Comm):
            self._index, self._edges = list(index), list(edges)

    def Get_dims(self):
        """MPI_Graphdims_get: (nodes, edges)."""
        return len(self._index), len(self._edges)

    dims = property(Get_dims)
    nnodes = property(lambda self: len(self._index))
    nedges = property(lambda self: len(self._edges))

    def Get_topo(self):
        """MPI_Graph_get: (index, edges)."""
        return list(self._index), list(self._edges)

    topo = property(Get_topo)
    index = property(lambda self: list(self._index))
    edges = property(lambda self: list(self._edges))

    def Get_neighbors_count(self, rank):
        """MPI_Graph_neighbors_count. MPI.Exception ERR_RANK if `rank` is not a node."""
        start, end = self._span(rank)
        return end - start

    def Get_neighbors(self, rank):
        """MPI_Graph_neighbors: `rank`'s neighbours in order. MPI.Exception ERR_RANK."""
        start, end = self._span(rank)
        return self._edges[start:end]

    def _span(self, rank):
        rank = operator.index(rank)
        if not 0 <= rank < len(self._index):
            raise MPIException(errors.ERR_RANK, f"rank {rank} ({len(self._index)} nodes)")
        return (self._index[rank - 1] if rank else 0), self._index[rank]

    nneighbors = property(lambda self: self.Get_neighbors_count(self._rank))
    neighbors = property(lambda self: self.Get_neighbors(self._rank))

    @property
    def inoutedges(self):
        """(incoming, outgoing) neighbours: this rank's edges, both ways."""
        neighbours = self.Get_neighbors(self._rank)
        return neighbours, neighbours

    degrees = property(lambda self: (self.nneighbors, self.nneighbors))

    def _send_order(self):
        """Edge order: several edges between two ranks match in order."""
        return range(self.nneighbors)

    def Dup(self, info=None):
        """MPI_Comm_dup: the same graph on a new context."""
        dup = Comm.Dup(self, info)
        return Graphcomm(dup._engine, dup._context, dup._ranks, dup._name, self._index, self._edges)



class Distgraphcomm(Topocomm):
    """A communicator over a distributed graph: each rank knows only its own edges, in from
    `sources` and out to `destinations` (weighted or not), mpi4py's Distgraphcomm. Made by
    Comm.Create_dist_graph_adjacent, Comm.Create_dist_graph (and Dup)."""

    _topology = DIST_GRAPH

    def __init__(self, engine, context=None, ranks=None, name="", sources=(), destinations=(),
                 weights=None):
        super().__init__(engine, context, ranks, name)
        if not isinstance(engine, Comm):
            self._sources, self._destinations = list(sources), list(destinations)
            self._weights = weights     # None, or (sourceweights, destweights)

    def Get_dist_neighbors_count(self):
        """MPI_Dist_graph_neighbors_count: (indegree, outdegree, weighted)."""
        return len(self._sources), len(self._destinations), self._weights is not None

    def Get_dist_neighbors(self):
        """MPI_Dist_graph_neighbors: (sources, destinations, (sourceweights, destweights)
        or None if unweighted)."""
        weights = None if self._weights is None else tuple(list(w) for w in self._weights)
        return list(self._sources), list(self._destinations), weights

    @property
    def inoutedges(self):
        return list(self._sources), list(self._destinations)

    degrees = property(lambda self: (len(self._sources), len(self._destinations)))

    def _send_order(self):
        """Destination order: the k-th of several edges from one rank to another matches the
        k-th of the receiver's edges from it (messages between two ranks do not overtake)."""
        return range(len(self._destinations))

    def Dup(self, info=None):
        """MPI_Comm_dup: the same edges on a new context."""
        dup = Comm.Dup(self, info)
        return Distgraphcomm(dup._engine, dup._context, dup._ranks, dup._name, self._sources,
                             self._destinations, self._weights)


class _Weights(int):
    """mpi4py's UNWEIGHTED and WEIGHTS_EMPTY (ints, as over MPICH), told apart by identity."""

    def __new__(cls, value, name):
        self = super().__new__(cls, value)
        self._name = name
        return self

    def __repr__(self):
        return f"MPI.{self._name}"


UNWEIGHTED, WEIGHTS_EMPTY = _Weights(-4, "UNWEIGHTED"), _Weights(-5, "WEIGHTS_EMPTY")


def _ranks_of(values, size, what):
    """`values` (None: none) as a list of ranks of a communicator of `size`. TypeError for
    what is not ints; MPI.Exception ERR_RANK for one outside (MPICH takes it, then fails)."""
    ranks = [] if values is None else [operator.index(v) for v in values]
    if any(not 0 <= r < size for r in ranks):
        raise MPIException(errors.ERR_RANK, f"{what} {ranks} over {size} ranks")
    return ranks


def _weights_of(weights, count, what):
    """A weights argument: None (unweighted), or a list of `count` ints >= 0 (WEIGHTS_EMPTY:
    none, for no edges). ValueError for another length, as mpi4py; MPI.Exception ERR_ARG for a
    negative weight (MPI forbids it; MPICH takes it)."""
    if weights is None or weights is UNWEIGHTED:
        return None
    if weights is WEIGHTS_EMPTY:
        if count:
            raise ValueError("empty weights but nonzero degree")
        return []
    weights = [operator.index(w) for w in weights]
    if len(weights) != count:
        raise ValueError(f"{what}: expecting {count} items, got {len(weights)}")
    if any(w < 0 for w in weights):
        raise MPIException(errors.ERR_ARG, f"{what} {weights}: weights are >= 0")
    return weights


def create_dist_graph_adjacent(self, sources, destinations, sourceweights=None,
                               destweights=None, info=INFO_NULL, reorder=False):
    """MPI_Dist_graph_create_adjacent (collective): this rank's edges in from `sources`, out
    to `destinations` (None: none), weighted if either weights is given (MPI.UNWEIGHTED or
    None: not; MPI.WEIGHTS_EMPTY: weighted, with no edges). `reorder` and `info` are hints,
    not taken. Errors as _ranks_of's and _weights_of's."""
    sources = _ranks_of(sources, self._size, "sources")
    destinations = _ranks_of(destinations, self._size, "destinations")
    weights = (_weights_of(sourceweights, len(sources), "sourceweights"),
               _weights_of(destweights, len(destinations), "destweights"))
    context = self._new_context()
    return Distgraphcomm(self._engine, context, self._ranks, "", sources, destinations,
                         None if weights == (None, None) else tuple(w or [] for w in weights))


def create_dist_graph(self, sources, degrees, destinations, weights=None, info=INFO_NULL,
                      reorder=False):
    """MPI_Dist_graph_create (collective): edges given by any rank, sources[i] -> the next
    degrees[i] of `destinations` (with their weights); every rank learns its own (an
    allgather of all the edges), in from their sources in the order of the rank that gave
    them, out in the same order (MPI leaves the order to the implementation). ValueError for
    a negative degree or destinations not as many as the degrees add up to; errors as
    create_dist_graph_adjacent's otherwise."""
    sources = _ranks_of(sources, self._size, "sources")
    degrees = [operator.index(d) for d in degrees]
    if len(degrees) != len(sources) or any(d < 0 for d in degrees):
        raise ValueError(f"degrees {degrees} for {len(sources)} sources")
    destinations = _ranks_of(destinations, self._size, "destinations")
    if len(destinations) != sum(degrees):
        raise ValueError(f"expecting {sum(degrees)} destinations, got {len(destinations)}")
    weights = _weights_of(weights, len(destinations), "weights")
    edges = [(source, destination, 1 if weights is None else weights[k])
             for k, (source, destination) in enumerate(
                 zip([s for s, d in zip(sources, degrees) for _ in range(d)], destinations))]
    everyone = self.allgather((edges, weights is not None))
    mine = [edge for given, _ in everyone for edge in given]
    ins = [(s, w) for s, d, w in mine if d == self._rank]
    outs = [(d, w) for s, d, w in mine if s == self._rank]
    weighted = any(w for _, w in everyone)
    context = self._new_context()
    return Distgraphcomm(self._engine, context, self._ranks, "", [s for s, _ in ins],
                         [d for d, _ in outs],
                         ([w for _, w in ins], [w for _, w in outs]) if weighted else None)


def create_cart(self, dims, periods=None, reorder=False):
    """MPI_Cart_create (collective): a Cartcomm over the first prod(dims) ranks, row-major
    (`reorder` is a hint, not taken); COMM_NULL at the others. `periods` defaults to none
    periodic. ValueError if periods and dims differ in length; MPI.Exception ERR_DIMS for a
    negative dimension, ERR_ARG for more points than ranks."""
    dims = [operator.index(d) for d in dims]
    periods = _periods(periods, len(dims))
    if any(d < 0 for d in dims):
        raise MPIException(errors.ERR_DIMS, f"Create_cart with dims {dims}")
    points = math.prod(dims)
    if points > self._size:
        raise MPIException(errors.ERR_ARG, f"Create_cart: {points} points for {self._size} "
                           "ranks")
    context = self._new_context()
    if self._rank >= points:
        return COMM_NULL
    return Cartcomm(self._engine, context, self._ranks[:points], "", dims, periods)


def create_graph(self, index, edges, reorder=False):
    """MPI_Graph_create (collective): a Graphcomm over the first len(index) ranks (`reorder`
    is a hint, not taken); COMM_NULL at the others. As mpi4py's, an index that begins with 0
    and ends at len(edges) is the usual adjacency arrays' (node i's edges from index[i] to
    index[i + 1]): its 0 is dropped. MPI.Exception ERR_ARG for more nodes
    than ranks, an index that decreases or does not end at len(edges), or an edge to no
    node."""
    index, edges = _graph_arrays(index, edges)
    nodes = len(index)
    if nodes > self._size or any(b < a for a, b in zip([0] + index, index)) \
            or (index and index[-1] != len(edges)) or (not index and edges) \
            or any(not 0 <= e < nodes for e in edges):
        raise MPIException(errors.ERR_ARG, f"Create_graph: index {index}, edges {edges} over "
                           f"{self._size} ranks")
    context = self._new_context()
    if self._rank >= nodes:
        return COMM_NULL
    return Graphcomm(self._engine, context, self._ranks[:nodes], "", index, edges)


def cart_map(self, dims, periods=None):
    """MPI_Cart_map: this rank's rank in Create_cart(dims, periods), which keeps the ranks'
    order (reorder is not taken); UNDEFINED if it would have none. ValueError if periods and
    dims differ in length; MPI.Exception ERR_DIMS for more points than ranks (as MPICH)."""
    dims = [operator.index(d) for d in dims]
    _periods(periods, len(dims))
    points = math.prod(dims)
    if points > self._size:
        raise MPIException(errors.ERR_DIMS, f"Cart_map: {points} points for {self._size} ranks")
    return self._rank if self._rank < points else UNDEFINED


def graph_map(self, index, edges):
    """MPI_Graph_map: this rank's rank in Create_graph(index, edges) (the ranks' order kept),
    UNDEFINED if it would have none. MPI.Exception ERR_ARG for more nodes than ranks."""
    nodes = len(_graph_arrays(index, edges)[0])
    if nodes > self._size:
        raise MPIException(errors.ERR_ARG, f"Graph_map: {nodes} nodes for {self._size} ranks")
    return self._rank if self._rank < nodes else UNDEFINED


def _periods(periods, ndims):
    """A Cartesian topology's periods: None (none periodic), one bool for every dimension,
    or one per dimension (ValueError for another number), as mpi4py takes them."""
    if periods is None or isinstance(periods, bool):
        return [bool(periods)] * ndims
    periods = [bool(p) for p in periods]
    if len(periods) != ndims:
        raise ValueError(f"{len(periods)} periods for {ndims} dimensions")
    return periods


def _graph_arrays(index, edges):
    """(index, edges) as lists of ints; as mpi4py's, an index that begins with 0 and ends at
    len(edges) is the usual adjacency arrays' (CSR's): its 0 is dropped."""
    index, edges = [operator.index(i) for i in index], [operator.index(e) for e in edges]
    if index and index[0] == 0 and index[-1] == len(edges):
        index = index[1:]
    return index, edges


# Comm's methods, defined here where Cartcomm and Graphcomm are (comm.py, which this module
# builds on, cannot import them).
Comm.Create_cart = create_cart
Comm.Create_graph = create_graph
Comm.Cart_map = cart_map
Comm.Graph_map = graph_map
Comm.Create_dist_graph_adjacent = create_dist_graph_adjacent
Comm.Create_dist_graph = create_dist_graph
