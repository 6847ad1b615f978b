"""Collective algorithms, on a communicator's collective channel (its own context, so they
never match point-to-point messages). No rank-0 star: binomial trees for bcast, reduce,
gather(v) and scatter(v); recursive doubling for allreduce and scan; a ring for allgather(v);
pairwise exchange for alltoall(v) and reduce_scatter; reduce-scatter + allgather for long
allreduce vectors. Each is correct for every size, and applies an op that does not commute in
rank order. Buffers are byte memoryviews; reductions go through a value codec (numpy arrays
or pickled objects)."""

import functools

import numpy as np

from . import errors
from .datatypes import staged
from .errors import Exception as MPIException
from .pickler import pickle

TAG = 0    # every blocking collective's messages: the channel's context sets them apart, the
#            per-pair FIFO order (every rank runs the collectives in the same order) does the
#            rest. A non-blocking one may be under way with others: each has its own tag,
#            NONBLOCKING_TAG, NONBLOCKING_TAG - 1, ... (the same on every rank: the same order)
NONBLOCKING_TAG = -2    # (ANY_TAG is -1; negative tags are the collective context's own)
TAGS = 1 << 30          # non-blocking tags in use at once, at most
ALLREDUCE_LARGE = 16 << 20     # bytes: from here Allreduce on 3 or more ranks is reduce-scatter
#                                + allgather (measured: docs/design/mpi.md; on 2 it never won)


class Channel:
    """A communicator's collective traffic: `rank`, `size`, and sends and receives on the
    collective context, to and from the communicator's ranks (`ranks` maps them to the
    engine's). Waiting raises MPI.Exception if a message did not fit its buffer (the ranks
    disagree on a size)."""

    def __init__(self, engine, context, rank, ranks, tag=TAG):
        self.engine, self.context, self.rank, self.size = engine, context, rank, len(ranks)
        self.ranks, self.tag = ranks, tag
        self._scratch = bytearray()
        self._started = 0           # non-blocking collectives started on this channel
        self.schedule = None        # a non-blocking channel's collective, once started
        self.flags = None           # the channel of its small blocking collectives, made at
        #                             the first (flags.FlagChannel: Comm._flags)
        self.unpacks = []           # the collective's receive buffers of a derived datatype
        #                             with gaps: their unpacks, run by finish()

    def buffer(self, spec, writable, blocks=1):
        """A collective's buffer spec, as datatypes.message reads it; a derived datatype with
        gaps staged (datatypes.staged): placed in the user's buffer by finish()."""
        return staged(spec, writable, blocks, self.unpacks)

    def finish(self):
        """The collective has ended well: its staged receive buffers are placed."""
        unpacks, self.unpacks = self.unpacks, []
        for unpack in unpacks:
            unpack()

    def nonblocking(self):
        """A channel for one non-blocking collective: its own tag and scratch (others may run
        meanwhile), and `run` starts the collective's rounds instead of waiting for them."""
        self._started += 1
        return NonblockingChannel(self.engine, self.context, self.rank, self.ranks,
                                  NONBLOCKING_TAG - self._started % TAGS)

    def run(self, steps):
        """Run a collective's rounds (`steps`, a generator of each round's ops, returning the
        result) to the end: its result."""
        try:
            ops = next(steps)
            while True:
                self.wait(ops)
                ops = steps.send(None)
        except StopIteration as end:
            return end.value

    def scratch(self, like):
        """An array shaped as the numpy array `like`, in memory the channel keeps for its
        reductions' receives: reused (MPI runs one collective at a time on a communicator),
        so its pages are touched once and its registration stays in the engine's cache,
        where a new array per call cost a registration and page faults per call."""
        if len(self._scratch) < like.nbytes:
            self._scratch = bytearray(like.nbytes)
        return np.frombuffer(self._scratch, like.dtype, like.size).reshape(like.shape)

    def send(self, dest, view):
        return self.engine.send(self.ranks[dest], self.context, self.tag, view)

    def recv(self, source, buf=None):
        return self.engine.post_recv(self.context, self.ranks[source], self.tag, buf)

    def wait(self, ops):
        self.engine.wait(ops)
        _check(ops)


class NonblockingChannel(Channel):
    """The channel of one non-blocking collective (Channel.nonblocking)."""

    def run(self, steps):
        """Start the collective: its first rounds now, the others as the engine progresses
        (Schedule); returns None (the Schedule is `schedule`)."""
        self.schedule = self.engine.start(Schedule(steps))


class Schedule:
    """A non-blocking collective under way: the generator of its rounds and the ops of the
    round under way. The engine advances it whenever it makes progress (and a test or wait of
    its request does); `done` at its end, with `exception` if it raised (the request's wait
    raises it, as the blocking call would)."""

    def __init__(self, steps):
        self.steps, self.ops, self.done, self.error, self.exception = steps, (), False, 0, None

    def advance(self):
        """Resume the collective as far as its rounds are done; True once it has ended."""
        while not self.done and all(op.done for op in self.ops):
            try:
                _check(self.ops)
                self.ops = self.steps.send(None)
            except StopIteration:
                self.done = True
            except Exception as e:      # (any: raised again at the wait)
                self.exception, self.done = e, True
        return self.done


def _check(ops):
    """MPI.Exception if a round's message did not fit its buffer (the ranks' sizes differ)."""
    for op in ops:
        if op.error:
            raise MPIException(op.error, f"a collective's message of {op.nbytes} bytes from "
                               f"rank {op.source} into {len(op.buf)}: the ranks' sizes differ")


def _collective(steps):
    """`steps(ch, ...)`, a generator yielding each round's ops (and returning the result),
    as a collective: run by `ch` (blocking, or started on a non-blocking channel); `.steps`
    is the generator itself, for a collective made of others."""
    @functools.wraps(steps)
    def collective(ch, *args):
        return ch.run(steps(ch, *args))
    collective.steps = steps
    return collective


class Arrays:
    """Reduction values that are numpy arrays of one shape, combined in place with the op
    (its `datatype` goes to a user op); received into the channel's scratch array. The op is checked
    against the dtype at once, so every rank raises before any message if it does not apply
    (MPI.Exception ERR_OP). `commute`: whether the algorithms may combine in any order."""

    def __init__(self, op, like, datatype):
        op.check(like.dtype)
        self.op, self.datatype, self.commute = op, datatype, op.Is_commutative()
        self.like = like
        self.scratch = self.scratch_bytes = None      # the channel's, at the first receive

    def pack(self, value):
        return as_bytes(value)

    def post_recv(self, channel, source):
        if self.scratch is None:
            self.scratch = channel.scratch(self.like)
            self.scratch_bytes = as_bytes(self.scratch)
        return channel.recv(source, self.scratch_bytes)

    def unpack(self, op):
        return self.scratch

    def combine(self, value, theirs, theirs_first):
        """value = theirs op value, or value op theirs; in `value` (theirs may be spoiled)."""
        if theirs_first or self.commute:
            self.op.reduce_local(theirs, value, self.datatype)
        else:
            self.op.reduce_local(value, theirs, self.datatype)
            value[...] = theirs
        return value

    def assign(self, value, theirs):
        value[...] = theirs
        return value


class Objects:
    """Reduction values that are Python objects, sent pickled, combined by calling the op
    (an MPI.Op or any callable of two) always in rank order, as mpi4py does (SUM of lists is
    their concatenation in rank order)."""

    commute = False

    def __init__(self, op):
        self.op = op

    def pack(self, value):
        return _pickled(value)

    def post_recv(self, channel, source):
        return channel.recv(source)

    def unpack(self, op):
        return pickle.loads(op.data)

    def combine(self, value, theirs, theirs_first):
        return self.op(theirs, value) if theirs_first else self.op(value, theirs)

    def assign(self, value, theirs):
        return theirs


def as_bytes(array):
    return memoryview(array).cast("B")


def tree(vrank, size):
    """A binomial tree rooted at relative rank 0: (parent or None, children), each child
    as (its relative rank, the ranks in its subtree), smallest subtree first. A subtree is
    the contiguous range [child, child + count)."""
    children = []
    mask = 1
    while mask < size:
        if vrank & mask:
            return vrank - mask, children
        if vrank + mask < size:
            children.append((vrank + mask, min(mask, size - vrank - mask)))
        mask <<= 1
    return None, children


def _blocks(view, first, width, count=1):
    """Blocks first .. first + count - 1 of `view`, blocks of `width` bytes."""
    return view[first * width:(first + count) * width]


def _absolute(vrank, root, size):
    return (vrank + root) % size


@_collective
def barrier(ch):
    """Dissemination barrier: in round k each rank sends an empty message to rank + 2^k and
    receives one from rank - 2^k; ceil(log2 size) rounds. (One message per pair and barrier,
    as the distances differ mod size: one tag serves every round.)"""
    step = 1
    while step < ch.size:
        yield [ch.send((ch.rank + step) % ch.size, _EMPTY), ch.recv((ch.rank - step) % ch.size)]
        step *= 2


_EMPTY = memoryview(b"")


@_collective
def bcast(ch, root, buf):
    """Binomial broadcast of root's bytes `buf`: received into `buf` (a writable byte
    memoryview of the right size) or, if None, into new bytes; returns the payload."""
    vrank = (ch.rank - root) % ch.size
    parent, children = tree(vrank, ch.size)
    if parent is not None:
        op = ch.recv(_absolute(parent, root, ch.size), buf)
        yield ([op])
        if buf is None:
            buf = memoryview(op.data)
    yield ([ch.send(_absolute(c, root, ch.size), buf) for c, _ in reversed(children)])
    return buf


@_collective
def reduce(ch, root, value, codec):
    """Binomial reduction: the reduced value at root, None elsewhere. A tree combines a
    subtree's values in relative-rank order, so for an op that does not commute the tree is
    rooted at rank 0 (rank order) and rank 0 hands the result to root."""
    top = root if codec.commute else 0
    vrank = (ch.rank - top) % ch.size
    parent, children = tree(vrank, ch.size)
    for c, _ in children:
        op = codec.post_recv(ch, _absolute(c, top, ch.size))
        yield ([op])
        value = codec.combine(value, codec.unpack(op), False)
    if parent is not None:
        yield ([ch.send(_absolute(parent, top, ch.size), codec.pack(value))])
    elif top != root:
        yield ([ch.send(root, codec.pack(value))])
    if ch.rank == root and top != root:
        op = codec.post_recv(ch, top)
        yield ([op])
        return codec.assign(value, codec.unpack(op))
    return value if ch.rank == root else None


@_collective
def allreduce(ch, value, codec):
    """Recursive doubling over the largest power of two <= size; the `rem` ranks above it
    first fold into their odd neighbours (even ranks below 2 * rem wait for the result)."""
    rank, size = ch.rank, ch.size
    pof2 = 1 << (size.bit_length() - 1)
    rem = size - pof2
    if rank < 2 * rem and rank % 2 == 0:
        yield ([ch.send(rank + 1, codec.pack(value))])
        op = codec.post_recv(ch, rank + 1)
        yield ([op])
        return codec.assign(value, codec.unpack(op))
    if rank < 2 * rem:
        op = codec.post_recv(ch, rank - 1)
        yield ([op])
        value = codec.combine(value, codec.unpack(op), True)
        newrank = rank // 2
    else:
        newrank = rank - rem
    mask = 1
    while mask < pof2:
        partner = newrank ^ mask
        partner = partner * 2 + 1 if partner < rem else partner + rem
        op = codec.post_recv(ch, partner)
        yield ([op, ch.send(partner, codec.pack(value))])
        value = codec.combine(value, codec.unpack(op), partner < rank)
        mask <<= 1
    if rank < 2 * rem:
        yield ([ch.send(rank - 1, codec.pack(value))])
    return value


@_collective
def gather(ch, root, block, out):
    """Binomial gather of every rank's `block` (bytes of one size) into root's `out`, in rank
    order. A rank's subtree's blocks travel together."""
    size, width = ch.size, len(block)
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    mine = memoryview(bytearray(width * (1 + sum(count for _, count in children))))
    mine[:width] = block
    yield ([ch.recv(_absolute(c, root, size), _blocks(mine, c - vrank, width, count))
             for c, count in children])
    if parent is not None:
        yield ([ch.send(_absolute(parent, root, size), mine)])
        return
    cut = (size - root) * width        # relative rank i is rank (i + root) % size
    out[root * width:] = mine[:cut]
    out[:root * width] = mine[cut:]


@_collective
def scatter(ch, root, blocks, out):
    """Binomial scatter of root's `blocks` (size blocks, rank order) into every rank's `out`
    (one block; None at root keeps root's block where it is)."""
    size = ch.size
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    if parent is None:
        width = len(blocks) // size
        mine = memoryview(bytes(blocks[root * width:]) + bytes(blocks[:root * width]))
    else:
        width = len(out)
        mine = memoryview(bytearray(width * (1 + sum(count for _, count in children))))
        yield ([ch.recv(_absolute(parent, root, size), mine)])
    yield ([ch.send(_absolute(c, root, size), _blocks(mine, c - vrank, width, count))
             for c, count in reversed(children)])
    if out is not None:
        out[:] = mine[:width]


@_collective
def gatherv(ch, root, block, out):
    """Binomial gather of blocks of any size into root's `out` (size byte views, rank order;
    root's own `block` None if it is in place already). A subtree's blocks travel together,
    after their sizes, so no rank but root needs to know them. MPI.Exception ERR_TRUNCATE at
    root if a block is longer than its place in `out`."""
    size = ch.size
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    ops = [ch.recv(_absolute(c, root, size)) for c, _ in children]
    yield (ops)
    mine = [block]
    for (_, count), op in zip(children, ops):
        mine += _split(op.data, count)
    if parent is not None:
        yield ([ch.send(_absolute(parent, root, size), _with_sizes(mine))])
        return
    for v, got in enumerate(mine):
        if got is not None:
            place = out[_absolute(v, root, size)]
            place[:len(got)] = _fits(got, len(place))


@_collective
def scatterv(ch, root, blocks, out):
    """Binomial scatter of root's `blocks` (size byte views of any size, rank order) into
    every rank's `out` (a byte view; None at root keeps its block where it is). A child gets
    its subtree's blocks together, after their sizes, and cuts them for its own children.
    MPI.Exception ERR_TRUNCATE if this rank's block is longer than `out`."""
    size = ch.size
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    if parent is None:
        mine = [blocks[_absolute(v, root, size)] for v in range(size)]
    else:
        op = ch.recv(_absolute(parent, root, size))
        yield ([op])
        mine = _split(op.data, 1 + sum(count for _, count in children))
    yield ([ch.send(_absolute(c, root, size), _with_sizes(mine[c - vrank:c - vrank + count]))
             for c, count in reversed(children)])
    if out is not None:
        out[:len(mine[0])] = _fits(mine[0], len(out))


def _with_sizes(views):
    """One message of byte views: their sizes (int64s), then their bytes."""
    sizes = np.array([len(v) for v in views], np.int64)
    return memoryview(b"".join([sizes.tobytes(), *views]))


def _split(data, count):
    """The `count` byte views of a _with_sizes message (views of `data`, no copy)."""
    data = memoryview(data)
    at, views = 8 * count, []
    for n in np.frombuffer(data[:at], np.int64).tolist():
        views.append(data[at:at + n])
        at += n
    return views


def _fits(view, room):
    """`view`, if it fits in `room` bytes; else MPI.Exception ERR_TRUNCATE."""
    if len(view) > room:
        raise MPIException(errors.ERR_TRUNCATE, f"a block of {len(view)} bytes into {room}")
    return view


@_collective
def allgatherv(ch, views, block=None):
    """Ring allgather: `views` are the size blocks (byte views, any sizes); this rank's
    `block` is copied into its own first (None: it is there already). In size - 1 steps each
    rank passes the block got last to the right. ERR_TRUNCATE if a block does not fit."""
    rank, size = ch.rank, ch.size
    if block is not None:
        views[rank][:len(block)] = _fits(block, len(views[rank]))
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        sent, got = (rank - step) % size, (rank - step - 1) % size
        yield ([ch.recv(left, views[got]), ch.send(right, views[sent])])


@_collective
def alltoallv(ch, sends, recvs):
    """Pairwise exchange: in step k rank r sends sends[r + k] to r + k and receives
    recvs[r - k] from r - k (mod size); its own block is copied."""
    rank, size = ch.rank, ch.size
    recvs[rank][:len(sends[rank])] = _fits(sends[rank], len(recvs[rank]))
    for step in range(1, size):
        dest, source = (rank + step) % size, (rank - step) % size
        yield ([ch.recv(source, recvs[source]), ch.send(dest, sends[dest])])


@_collective
def exchange(ch, sends, recvs):
    """One round: sends[i] to rank i and recvs[i] from rank i, for every i (an
    intercommunicator's channel: the ranks of the other group)."""
    yield ([ch.recv(i, view) for i, view in enumerate(recvs)] +
           [ch.send(i, view) for i, view in enumerate(sends)])


@_collective
def reduce_scatter(ch, send, counts, out, op, datatype):
    """Block i (counts[i] elements) of the reduction of every rank's numpy array `send` into
    rank i's `out` (a numpy array of counts[rank] elements; may alias `send`). A commutative
    op: pairwise exchange, rank r reducing what each other rank holds for r, one per step.
    Otherwise: a reduction in rank order to rank 0, then scatterv."""
    rank, size = ch.rank, ch.size
    bounds = np.concatenate([[0], np.cumsum(counts)])
    blocks = [send[bounds[i]:bounds[i + 1]] for i in range(size)]
    if not op.Is_commutative():
        acc = send.copy()
        yield from reduce.steps(ch, 0, acc, Arrays(op, acc, datatype))
        yield from scatterv.steps(ch, 0, [as_bytes(acc[bounds[i]:bounds[i + 1]])
                                          for i in range(size)] if rank == 0 else None,
                                  as_bytes(out))
        return
    acc = blocks[rank].copy()
    codec = Arrays(op, acc, datatype)
    for step in range(1, size):
        dest, source = (rank + step) % size, (rank - step) % size
        recv = codec.post_recv(ch, source)
        yield ([recv, ch.send(dest, as_bytes(blocks[dest]))])
        acc = codec.combine(acc, codec.unpack(recv), False)
    out[...] = acc


@_collective
def allreduce_large(ch, value, op, datatype):
    """Allreduce of a long numpy vector by reduce-scatter then allgather (Rabenseifner's
    scheme, here pairwise then ring): each rank sends 2 (size - 1) / size of the vector,
    not log2(size) times all of it. A commutative op only."""
    size = ch.size
    counts = [len(value) // size + (i < len(value) % size) for i in range(size)]
    bounds = np.concatenate([[0], np.cumsum(counts)])
    mine = value[bounds[ch.rank]:bounds[ch.rank + 1]]
    yield from reduce_scatter.steps(ch, value, counts, mine, op, datatype)
    yield from allgatherv.steps(ch, [as_bytes(value[bounds[i]:bounds[i + 1]])
                                     for i in range(size)])


@_collective
def scan(ch, partial, result, codec, inclusive):
    """Recursive doubling (MPICH's scan): in round k this rank swaps `partial`, the reduction
    of its aligned group of 2^k ranks, with rank ^ 2^k, and folds a lower partner's into
    `result` too. Inclusive: `result` holds this rank's value at first; exclusive: it gets
    the lower ranks' reduction (left as given at rank 0). `partial` is spoiled."""
    rank, size = ch.rank, ch.size
    filled = inclusive
    mask = 1
    while mask < size:
        partner = rank ^ mask
        if partner < size:
            recv = codec.post_recv(ch, partner)
            yield ([recv, ch.send(partner, codec.pack(partial))])
            theirs = codec.unpack(recv)
            if partner < rank:
                result = codec.combine(result, theirs, True) if filled else \
                    codec.assign(result, theirs)
                filled = True
                partial = codec.combine(partial, theirs, True)
            else:
                partial = codec.combine(partial, theirs, False)
        mask <<= 1
    return result


@_collective
def allgather_objects(ch, obj):
    """Ring allgather of Python objects, as allgather."""
    rank, size = ch.rank, ch.size
    values = [None] * size
    values[rank] = copied(obj)
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        sent, got = (rank - step) % size, (rank - step - 1) % size
        op = ch.recv(left)
        yield ([op, ch.send(right, _pickled(values[sent]))])
        values[got] = pickle.loads(op.data)
    return values


@_collective
def alltoall_objects(ch, objs):
    """Pairwise exchange of Python objects, as alltoall."""
    rank, size = ch.rank, ch.size
    values = [None] * size
    values[rank] = copied(objs[rank])
    for step in range(1, size):
        dest, source = (rank + step) % size, (rank - step) % size
        op = ch.recv(source)
        yield ([op, ch.send(dest, _pickled(objs[dest]))])
        values[source] = pickle.loads(op.data)
    return values


@_collective
def gather_objects(ch, root, obj):
    """Binomial gather of Python objects: the list at root, None elsewhere."""
    size = ch.size
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    ops = [ch.recv(_absolute(c, root, size)) for c, _ in children]
    yield (ops)
    values = [obj]
    for op in ops:
        values += pickle.loads(op.data)
    if parent is not None:
        yield ([ch.send(_absolute(parent, root, size), _pickled(values))])
        return None
    values[0] = copied(obj)
    return values[size - root:] + values[:size - root]


def items(sendobj, n):
    """The `n` objects of a scatter's or alltoall's `sendobj`, as mpi4py takes them: None is
    n Nones, else any iterable (a list of its items). ValueError unless it has n items."""
    objs = [None] * n if sendobj is None else list(sendobj)
    if len(objs) != n:
        raise ValueError(f"expecting {n} items, got {len(objs)}")
    return objs


@_collective
def scatter_objects(ch, root, objs):
    """Binomial scatter of root's sequence of size objects: this rank's one."""
    size = ch.size
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    if parent is None:
        values = list(objs[root:]) + list(objs[:root])
    else:
        op = ch.recv(_absolute(parent, root, size))
        yield ([op])
        values = pickle.loads(op.data)
    yield ([ch.send(_absolute(c, root, size), _pickled(values[c - vrank:c - vrank + count]))
             for c, count in reversed(children)])
    return copied(values[0]) if parent is None else values[0]


def _pickled(obj):
    return memoryview(pickle.dumps(obj))


def copied(obj):
    """`obj` as the other ranks get it: mpi4py gives every rank a copy made by MPI.pickle,
    of its own contribution too (a serializer that turns tuples into lists does so to all)."""
    return pickle.loads(pickle.dumps(obj))
