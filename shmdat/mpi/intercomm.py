"""Intercommunicators (mpi4py's Intercomm) and Comm.Create_intercomm (MPI_Intercomm_create).

An intercommunicator joins two disjoint groups: a rank's own (the local group: Get_rank,
Get_size, Get_group) and the other (the remote group: Get_remote_size, Get_remote_group).
Point-to-point names ranks of the remote group: Comm's calls serve as they are, through the
remote group's engine ranks (`_remote_ranks`, what Comm._engine_rank translates by) and
`_rank_of` (the engine's ranks -> remote ranks, for statuses).

Contexts: an intercommunicator agreed on context c (the largest next free id of both
groups' members) uses c for point-to-point, c + 1 for its collectives' messages between
the groups (`_channel`: a collectives.Channel whose ranks are the remote group's), and
c + 2 for `_local`, an intracommunicator of the local group that runs the collectives'
local parts (c + 3 its own collectives). Each group has its own `_local` on the same ids:
the groups are disjoint, so their messages never meet.

Collectives are MPI's intercommunicator ones, made of the local group's own collectives
plus messages between the two leaders (local rank 0 of each group) or, for Alltoall, between
every pair. A rooted collective's root group passes root=ROOT at the root and PROC_NULL at
its other members; the other group passes the root's rank in the remote group. Allreduce
gives each group the reduction of the other group's values. The v-collectives, scans,
non-blocking collectives, Split, Create, topologies and windows on an intercommunicator are
NotImplementedCall naming the call, never a wrong answer."""

import numpy as np

from . import attributes, collectives, errors, unimplemented
from .collectives import Arrays, Channel, Objects
from .comm import UNEQUAL, Comm, _claim, equal_blocks
from .datatypes import IN_PLACE, message
from .errors import Exception as MPIException
from .group import CONGRUENT, IDENT, SIMILAR, Group
from .matching import PROC_NULL
from .ops import SUM
from .pickler import pickle

ROOT = -3       # MPI_ROOT (MPICH's value): the root of a rooted intercommunicator collective
LEADER = 0      # the local rank that speaks for its group in the collectives


class Intercomm(Comm):
    """MPI's intercommunicator: a local and a remote group of the engine's ranks, on a
    context of its own (see the module's docstring)."""

    _unimplemented = unimplemented.INTERCOMM
    _inter = True
    _low = None     # Accept's side True, Connect's False (dynproc.py): Merge's tie-break

    def __init__(self, engine, context=None, local_ranks=None, remote_ranks=None, name=""):
        if isinstance(engine, Comm):    # (Intercomm(comm): Comm.__new__ made the handle)
            return
        self._engine, self._context, self._name = engine, context, name
        self._local_ranks, self._remote_ranks = list(local_ranks), list(remote_ranks)
        self._rank, self._size = self._local_ranks.index(engine.rank), len(self._local_ranks)
        self._remote_size = len(self._remote_ranks)
        self._rank_of = {PROC_NULL: PROC_NULL, **{r: i for i, r in enumerate(self._remote_ranks)}}
        self._channel = Channel(engine, context + 1, self._rank, self._remote_ranks)
        self._local = Comm(engine, context + 2, self._local_ranks)
        self._attrs = attributes.Attributes()      # (Intercomm(comm) shares them)
        self._locks = {}        # mpi4py's _comm_lock_table (Comm._lock)

    # The groups.

    def Is_inter(self):
        return True

    def Is_intra(self):
        return False

    is_inter = property(Is_inter)
    is_intra = property(Is_intra)

    def Get_group(self):
        """MPI_Comm_group: the local group."""
        return Group._of(self._local_ranks, self._engine.rank)

    def Get_remote_group(self):
        """MPI_Comm_remote_group: the remote group (this process is not in it)."""
        return Group._of(self._remote_ranks, self._engine.rank)

    def Get_remote_size(self):
        """MPI_Comm_remote_size."""
        return self._remote_size

    group = property(Get_group)
    remote_group = property(Get_remote_group)
    remote_size = property(Get_remote_size)

    def Compare(self, comm):
        """MPI_Comm_compare: IDENT (the same communicator), CONGRUENT (an intercommunicator
        of the same local and remote groups, in the same orders), SIMILAR (of the same
        groups in other orders) or UNEQUAL (an intracommunicator too). MPI.Exception
        ERR_COMM if `comm` is COMM_NULL or no communicator."""
        if not isinstance(comm, Comm) or not comm:
            raise MPIException(errors.ERR_COMM, f"Compare with {comm!r}")
        if comm._context == self._context:
            return IDENT
        if not comm._inter:
            return UNEQUAL
        pairs = ((comm._local_ranks, self._local_ranks), (comm._remote_ranks, self._remote_ranks))
        if all(theirs == mine for theirs, mine in pairs):
            return CONGRUENT
        return SIMILAR if all(sorted(theirs) == sorted(mine) for theirs, mine in pairs) \
            else UNEQUAL

    # Communicators.

    def _exchange(self, obj):
        """(Collective over both groups) the remote group's `obj` for this group's: the
        leaders swap theirs (every member of a group gives the same) and each gives its
        group what it got."""
        theirs = None
        if self._rank == LEADER:
            theirs = pickle.loads(self._swap(_pickled(obj)).data)
        return self._local.bcast(theirs, LEADER)

    def Dup(self, info=None):
        """MPI_Comm_dup (collective over both groups): the same groups on a new context (the
        largest next free id of both groups' members), and the attributes the keyvals'
        copy_fn give. MPI.Exception ERR_OTHER if a copy_fn raised."""
        mine = self._local._new_context()
        context = max(mine, self._exchange(mine))
        _claim(context, 4)
        dup = Intercomm(self._engine, context, self._local_ranks, self._remote_ranks)
        dup._attrs = self._attrs.copied(self)
        dup._low = self._low
        return dup

    def Merge(self, high=False):
        """MPI_Intercomm_merge (collective over both groups): an intracommunicator of both
        groups, each in its order, the group that passed `high` False first (if both passed
        the same, the group whose rank 0 has the lower world rank, as MPICH)."""
        high = bool(high)
        mine = self._local._new_context()
        theirs, their_high = self._exchange((mine, high))
        context = max(mine, theirs)
        _claim(context)
        if high != their_high:
            first = not high
        elif self._low is not None:     # (Accept/Connect: the engines' ranks tell nothing)
            first = self._low
        else:
            first = self._local_ranks[0] < self._remote_ranks[0]
        ranks = self._local_ranks + self._remote_ranks if first else \
            self._remote_ranks + self._local_ranks
        return Comm(self._engine, context, ranks)

    def Free(self):
        """MPI_Comm_free: as an intracommunicator's (each delete_fn, then COMM_NULL), and
        its local group's communicator goes too."""
        local = self._local
        super().Free()
        local.Free()

    # Collectives: root rules, and the leaders' messages.

    def _root(self, root):
        """Which part this rank has in a rooted collective: ROOT (the root), PROC_NULL (the
        root's group, not the root), or the root's rank in the remote group (the other
        group). MPI.Exception ERR_ROOT for anything else."""
        if root == ROOT or root == PROC_NULL or \
                isinstance(root, int) and 0 <= root < self._remote_size:
            return root
        raise MPIException(errors.ERR_ROOT, f"root {root!r} on an Intercomm (remote size "
                           f"{self._remote_size}; ROOT or PROC_NULL in the root's group)")

    def _swap(self, view, into=None):
        """(A leader) send byte view `view` to the remote leader and receive its message
        into `into` (None: new bytes), both posted before either is waited for; the
        receive's op."""
        ch = self._channel
        recv = ch.recv(LEADER, into)
        ch.wait([recv, ch.send(LEADER, view)])
        return recv

    def _send(self, remote, view):
        ch = self._channel
        ch.wait([ch.send(remote, view)])

    def _recv(self, remote, into=None):
        ch = self._channel
        op = ch.recv(remote, into)
        ch.wait([op])
        return op

    def Barrier(self):
        """MPI_Barrier: no member returns before every member of both groups has called it
        (a local barrier, the leaders swap, a local barrier)."""
        self._local.Barrier()
        if self._rank == LEADER:
            self._swap(_EMPTY)
        self._local.Barrier()

    barrier = Barrier

    def Bcast(self, buf, root=ROOT):
        """MPI_Bcast: the root's `buf` to every member of the other group (through its
        leader, then a local broadcast). MPI.Exception ERR_ROOT, buffer errors, ERR_TRUNCATE
        if the sizes differ."""
        root = self._root(root)
        if root == ROOT:
            self._send(LEADER, message(buf, False)[0])
        elif root != PROC_NULL:
            view = message(buf, True)[0]
            if self._rank == LEADER:
                self._recv(root, view)
            collectives.bcast(self._local._channel, LEADER, view)

    def Gather(self, sendbuf, recvbuf, root=ROOT):
        """MPI_Gather: every member of the other group's block, in its rank order, into the
        root's `recvbuf` (remote-size blocks; `sendbuf` not used at the root). MPI.Exception
        ERR_ROOT, ERR_TRUNCATE."""
        root = self._root(root)
        if root == ROOT:
            self._recv(LEADER, message(recvbuf, True, self._remote_size)[0])
        elif root != PROC_NULL:
            block = _send_buffer(sendbuf)
            out = memoryview(bytearray(len(block) * self._size)) if self._rank == LEADER else None
            collectives.gather(self._local._channel, LEADER, block, out)
            if self._rank == LEADER:
                self._send(root, out)

    def Scatter(self, sendbuf, recvbuf, root=ROOT):
        """MPI_Scatter: block i of the root's `sendbuf` (remote-size blocks) to member i of
        the other group (`recvbuf` not used at the root). MPI.Exception ERR_ROOT,
        ERR_TRUNCATE."""
        root = self._root(root)
        if root == ROOT:
            self._send(LEADER, message(sendbuf, False, self._remote_size)[0])
        elif root != PROC_NULL:
            out = message(recvbuf, True)[0]
            blocks = None
            if self._rank == LEADER:
                blocks = memoryview(bytearray(len(out) * self._size))
                self._recv(root, blocks)
            collectives.scatter(self._local._channel, LEADER, blocks, out)

    def Allgather(self, sendbuf, recvbuf):
        """MPI_Allgather: every member of the other group's block, in its rank order, into
        `recvbuf` (remote-size blocks). MPI.Exception ERR_BUFFER for IN_PLACE, ERR_TRUNCATE."""
        block = _send_buffer(sendbuf)
        out = message(recvbuf, True, self._remote_size)[0]
        gathered = memoryview(bytearray(len(block) * self._size)) if self._rank == LEADER \
            else None
        collectives.gather(self._local._channel, LEADER, block, gathered)
        if self._rank == LEADER:
            self._swap(gathered, out)
        collectives.bcast(self._local._channel, LEADER, out)

    def Alltoall(self, sendbuf, recvbuf):
        """MPI_Alltoall: block i of `sendbuf` to member i of the other group, block i of
        `recvbuf` from it (remote-size blocks each; every pair exchanges directly).
        MPI.Exception ERR_BUFFER for IN_PLACE, ERR_TRUNCATE."""
        sends = _send_buffer(sendbuf, self._remote_size)
        out = message(recvbuf, True, self._remote_size)[0]
        ch, n = self._channel, self._remote_size
        recvs = [ch.recv(i, piece) for i, piece in enumerate(equal_blocks(out, n))]
        ch.wait(recvs + [ch.send(i, piece) for i, piece in enumerate(equal_blocks(sends, n))])

    def Reduce(self, sendbuf, recvbuf, op=SUM, root=ROOT):
        """MPI_Reduce: the reduction of the other group's `sendbuf`s into the root's
        `recvbuf` (`sendbuf` not used at the root). MPI.Exception ERR_ROOT, ERR_OP,
        ERR_TRUNCATE."""
        root = self._root(root)
        if root == ROOT:
            view, _, datatype = message(recvbuf, True)
            op.check(datatype.dtype)    # (ERR_OP here too, not a wait for what never comes)
            self._recv(LEADER, view)
        elif root != PROC_NULL:
            value = self._local_reduction(sendbuf, op)
            if self._rank == LEADER:
                self._send(root, collectives.as_bytes(value))

    def Allreduce(self, sendbuf, recvbuf, op=SUM):
        """MPI_Allreduce: the reduction of the OTHER group's `sendbuf`s into `recvbuf` (a
        local reduction to the leader, the leaders swap, a local broadcast). MPI.Exception
        ERR_BUFFER for IN_PLACE, ERR_OP, ERR_TRUNCATE."""
        value = self._local_reduction(sendbuf, op)
        out = message(recvbuf, True)[0]
        if self._rank == LEADER:
            self._swap(collectives.as_bytes(value), out)
        collectives.bcast(self._local._channel, LEADER, out)

    def _local_reduction(self, sendbuf, op):
        """The local group's reduction of its `sendbuf`s (a numpy array) at the leader;
        elsewhere a spoiled copy of this rank's."""
        view, _, datatype = message(_send_spec(sendbuf), False)
        value = np.frombuffer(view, datatype.dtype).copy()
        collectives.reduce(self._local._channel, LEADER, value, Arrays(op, value, datatype))
        return value

    # Collectives on Python objects (pickle).

    def bcast(self, obj, root=ROOT):
        """The root's object to every member of the other group; None in the root's group."""
        with self._lock("bcast"):
            root = self._root(root)
            if root == ROOT:
                self._send(LEADER, _pickled(obj))
            elif root != PROC_NULL:
                data = self._recv(root).data if self._rank == LEADER else None
                return pickle.loads(collectives.bcast(self._local._channel, LEADER,
                                                      None if data is None else memoryview(data)))
            return None

    def gather(self, sendobj, root=ROOT):
        """The other group's objects, as a list in its rank order, at the root; None
        elsewhere."""
        with self._lock("gather"):
            root = self._root(root)
            if root == ROOT:
                return pickle.loads(self._recv(LEADER).data)
            if root != PROC_NULL:
                objs = collectives.gather_objects(self._local._channel, LEADER, sendobj)
                if self._rank == LEADER:
                    self._send(root, _pickled(objs))
            return None

    def scatter(self, sendobj, root=ROOT):
        """The root's sequence of remote-size objects, one to each member of the other
        group; None in the root's group. ValueError for another length."""
        with self._lock("scatter"):
            root = self._root(root)
            if root == ROOT:
                self._send(LEADER, _pickled(collectives.items(sendobj, self._remote_size)))
            elif root != PROC_NULL:
                objs = pickle.loads(self._recv(root).data) if self._rank == LEADER else None
                return collectives.scatter_objects(self._local._channel, LEADER, objs)
            return None

    def allgather(self, sendobj):
        """The other group's objects, as a list in its rank order."""
        with self._lock("allgather"):
            objs = collectives.gather_objects(self._local._channel, LEADER, sendobj)
            return self._exchange(objs)

    def alltoall(self, sendobj):
        """sendobj[i] to member i of the other group; the list of what each member of the
        other group sent here. ValueError if `sendobj` has not remote-size items."""
        with self._lock("alltoall"):
            n = self._remote_size
            sendobj = collectives.items(sendobj, n)
            ch = self._channel
            recvs = [ch.recv(i) for i in range(n)]
            ch.wait(recvs + [ch.send(i, _pickled(obj)) for i, obj in enumerate(sendobj)])
            return [pickle.loads(op.data) for op in recvs]

    def reduce(self, sendobj, op=SUM, root=ROOT):
        """The other group's objects combined with `op` in its rank order, at the root; None
        elsewhere."""
        root = self._root(root)
        if root == ROOT:
            return pickle.loads(self._recv(LEADER).data)
        if root != PROC_NULL:
            value = collectives.reduce(self._local._channel, LEADER,
                                       collectives.copied(sendobj), Objects(op))
            if self._rank == LEADER:
                self._send(root, _pickled(value))
        return None

    def allreduce(self, sendobj, op=SUM):
        """The OTHER group's objects combined with `op` in its rank order."""
        value = collectives.reduce(self._local._channel, LEADER, collectives.copied(sendobj),
                                   Objects(op))
        return self._exchange(value)


def create_intercomm(self, local_leader, peer_comm, remote_leader, tag=0):
    """MPI_Intercomm_create (collective over this intracommunicator's members and the other
    group's): an Intercomm of this group and the one whose leader is rank `remote_leader`
    of `peer_comm`. The leaders (`local_leader` of each group) swap their groups and context
    proposals on `peer_comm` with `tag`. TypeError for a leader or tag that is not an int or
    a `peer_comm` that is no intracommunicator; MPI.Exception ERR_RANK for a local_leader
    out of range, ERR_TAG; at the leader, ERR_RANK for a remote_leader out of peer_comm or
    in this group, raised on every rank of this group (the other group's leader then waits
    for a message that does not come, as under MPICH)."""
    for name, value in (("local_leader", local_leader), ("remote_leader", remote_leader),
                        ("tag", tag)):
        if not isinstance(value, int):
            raise TypeError(f"Create_intercomm: {name} must be an int, not "
                            f"{type(value).__name__}")
    if not isinstance(peer_comm, Comm) or not peer_comm or peer_comm._inter:
        raise TypeError(f"Create_intercomm: peer_comm must be an intracommunicator, not "
                        f"{peer_comm!r}")
    if not 0 <= local_leader < self._size:
        raise MPIException(errors.ERR_RANK, f"local_leader {local_leader} (size {self._size})")
    self._check_tag(tag)
    mine = self._new_context()
    answer = None
    if self._rank == local_leader:
        try:
            answer = (*_leaders_swap(self, peer_comm, remote_leader, tag, mine), None)
        except MPIException as e:       # (given to the whole group, which raises it too)
            answer = (None, None, (e.Get_error_class(), e.detail))
    remote_ranks, theirs, error = self.bcast(answer, local_leader)
    if error is not None:
        raise MPIException(*error)
    context = max(mine, theirs)
    _claim(context, 4)
    return Intercomm(self._engine, context, self._ranks, remote_ranks)


def _leaders_swap(comm, peer_comm, remote_leader, tag, context):
    """(The local leader) this group's engine ranks and context proposal for the remote
    leader's, swapped on `peer_comm` with `tag`. MPI.Exception ERR_RANK for a remote leader
    out of peer_comm or in this group."""
    engine_rank = peer_comm._engine_rank(remote_leader, "remote_leader")
    if engine_rank == PROC_NULL or engine_rank in comm._ranks:
        raise MPIException(errors.ERR_RANK, f"remote_leader {remote_leader} is "
                           + ("PROC_NULL" if engine_rank == PROC_NULL else "in the local group"))
    return peer_comm.sendrecv((list(comm._ranks), context), remote_leader, tag,
                              source=remote_leader, recvtag=tag)


def _send_buffer(spec, blocks=1):
    """A collective's send buffer spec as bytes; MPI.Exception ERR_BUFFER for IN_PLACE (or
    None), which an intercommunicator's collectives do not take."""
    return message(_send_spec(spec), False, blocks)[0]


def _send_spec(spec):
    if spec is None or spec is IN_PLACE:
        raise MPIException(errors.ERR_BUFFER, "IN_PLACE on an Intercomm")
    return spec


def _pickled(obj):
    return memoryview(pickle.dumps(obj))


_EMPTY = memoryview(b"")


def _not_on_intercomm(name):
    """Comm's call `name`, which an Intercomm does not have here: NotImplementedCall."""
    def call(self, *args, **kwargs):
        raise unimplemented.NotImplementedCall(f"Intercomm.{name} is not implemented by "
                                               "shmdat.mpi")
    call.__name__ = call.__qualname__ = name
    return call


# Comm's calls that an Intercomm does not have: an intracommunicator's only (scans,
# topologies, Create_intercomm) and the intercommunicator collectives not built here.
NOT_ON_INTERCOMM = frozenset("""
    Cart_map Create Create_cart Create_dist_graph Create_dist_graph_adjacent
    Create_graph Create_intercomm Exscan Graph_map
    Iallgather Iallgatherv Iallreduce Ialltoall Ialltoallv Ibarrier Ibcast Iexscan Igather
    Igatherv Ireduce Ireduce_scatter Ireduce_scatter_block Iscan Iscatter Iscatterv
    Reduce_scatter Reduce_scatter_block Scan Split_type exscan scan
    Allgather_init Allgatherv_init Allreduce_init Alltoall_init Alltoallv_init Barrier_init
    Bcast_init Exscan_init Gather_init Gatherv_init Reduce_init Reduce_scatter_block_init
    Reduce_scatter_init Scan_init Scatter_init Scatterv_init
""".split())

for _name in NOT_ON_INTERCOMM:
    setattr(Intercomm, _name, _not_on_intercomm(_name))

Comm.Create_intercomm = create_intercomm
