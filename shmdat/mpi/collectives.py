"""Collective algorithms, on a communicator's collective channel (its own context, so they
never match point-to-point messages). No rank-0 star: binomial trees for bcast, reduce,
gather and scatter; recursive doubling for allreduce; a ring for allgather; pairwise
exchange for alltoall and reduce_scatter_block. Each is correct for every size. Buffers are
byte memoryviews; reductions go through a value codec (numpy arrays or pickled objects)."""

import pickle

import numpy as np

from .errors import Exception as MPIException

TAG = 0    # every collective message: the channel's context sets them apart, the per-pair
#            FIFO order (every rank runs the collectives in the same order) does the rest


class Channel:
    """A communicator's collective traffic: `rank`, `size`, and sends and receives on the
    collective context, to and from the communicator's ranks (`ranks` maps them to the
    engine's). Waiting raises MPI.Exception if a message did not fit its buffer (the ranks
    disagree on a size)."""

    def __init__(self, engine, context, rank, ranks):
        self.engine, self.context, self.rank, self.size = engine, context, rank, len(ranks)
        self.ranks = ranks

    def send(self, dest, view):
        return self.engine.send(self.ranks[dest], self.context, TAG, view)

    def recv(self, source, buf=None):
        return self.engine.post_recv(self.context, self.ranks[source], TAG, buf)

    def wait(self, ops):
        self.engine.wait(ops)
        for op in ops:
            if op.error:
                raise MPIException(op.error, f"a collective's message of {op.nbytes} bytes from "
                                   f"rank {op.source} into {len(op.buf)}: the ranks' sizes differ")


class Arrays:
    """Reduction values that are numpy arrays of one shape, combined in place with a
    predefined op; received into one scratch array. The op is tried on the dtype at once,
    so every rank raises before any message if it does not apply (MPI.Exception ERR_OP)."""

    def __init__(self, op, like):
        self.op, self.scratch = op, np.empty_like(like)
        self.scratch_bytes = as_bytes(self.scratch)
        op.reduce_into(self.scratch[:0], self.scratch[:0])

    def pack(self, value):
        return as_bytes(value)

    def post_recv(self, channel, source):
        return channel.recv(source, self.scratch_bytes)

    def unpack(self, op):
        return self.scratch

    def combine(self, value, theirs, theirs_first):
        self.op.reduce_into(value, theirs)     # predefined ops commute
        return value

    def assign(self, value, theirs):
        value[...] = theirs
        return value


class Objects:
    """Reduction values that are Python objects, sent pickled, combined by calling the op
    (an MPI.Op or any callable) in rank order."""

    def __init__(self, op):
        self.op = op

    def pack(self, value):
        return memoryview(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))

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


def bcast(ch, root, buf):
    """Binomial broadcast of root's bytes `buf`: received into `buf` (a writable byte
    memoryview of the right size) or, if None, into new bytes; returns the payload."""
    vrank = (ch.rank - root) % ch.size
    parent, children = tree(vrank, ch.size)
    if parent is not None:
        op = ch.recv(_absolute(parent, root, ch.size), buf)
        ch.wait([op])
        if buf is None:
            buf = memoryview(op.data)
    ch.wait([ch.send(_absolute(c, root, ch.size), buf) for c, _ in reversed(children)])
    return buf


def reduce(ch, root, value, codec):
    """Binomial reduction: the reduced value at root, None elsewhere."""
    vrank = (ch.rank - root) % ch.size
    parent, children = tree(vrank, ch.size)
    for c, _ in children:
        op = codec.post_recv(ch, _absolute(c, root, ch.size))
        ch.wait([op])
        value = codec.combine(value, codec.unpack(op), False)
    if parent is None:
        return value
    ch.wait([ch.send(_absolute(parent, root, ch.size), codec.pack(value))])
    return None


def allreduce(ch, value, codec):
    """Recursive doubling over the largest power of two <= size; the `rem` ranks above it
    first fold into their odd neighbours (even ranks below 2 * rem wait for the result)."""
    rank, size = ch.rank, ch.size
    pof2 = 1 << (size.bit_length() - 1)
    rem = size - pof2
    if rank < 2 * rem and rank % 2 == 0:
        ch.wait([ch.send(rank + 1, codec.pack(value))])
        op = codec.post_recv(ch, rank + 1)
        ch.wait([op])
        return codec.assign(value, codec.unpack(op))
    if rank < 2 * rem:
        op = codec.post_recv(ch, rank - 1)
        ch.wait([op])
        value = codec.combine(value, codec.unpack(op), True)
        newrank = rank // 2
    else:
        newrank = rank - rem
    mask = 1
    while mask < pof2:
        partner = newrank ^ mask
        partner = partner * 2 + 1 if partner < rem else partner + rem
        op = codec.post_recv(ch, partner)
        ch.wait([op, ch.send(partner, codec.pack(value))])
        value = codec.combine(value, codec.unpack(op), partner < rank)
        mask <<= 1
    if rank < 2 * rem:
        ch.wait([ch.send(rank - 1, codec.pack(value))])
    return value


def gather(ch, root, block, out):
    """Binomial gather of every rank's `block` (bytes of one size) into root's `out`, in rank
    order. A rank's subtree's blocks travel together."""
    size, width = ch.size, len(block)
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    mine = memoryview(bytearray(width * (1 + sum(count for _, count in children))))
    mine[:width] = block
    ch.wait([ch.recv(_absolute(c, root, size), _blocks(mine, c - vrank, width, count))
             for c, count in children])
    if parent is not None:
        ch.wait([ch.send(_absolute(parent, root, size), mine)])
        return
    cut = (size - root) * width        # relative rank i is rank (i + root) % size
    out[root * width:] = mine[:cut]
    out[:root * width] = mine[cut:]


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
        ch.wait([ch.recv(_absolute(parent, root, size), mine)])
    ch.wait([ch.send(_absolute(c, root, size), _blocks(mine, c - vrank, width, count))
             for c, count in reversed(children)])
    if out is not None:
        out[:] = mine[:width]


def allgather(ch, out, width):
    """Ring allgather: `out` holds size blocks of `width` bytes, this rank's in place; in
    size - 1 steps each rank passes its left neighbour's latest block to the right."""
    rank, size = ch.rank, ch.size
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        sent, got = (rank - step) % size, (rank - step - 1) % size
        ch.wait([ch.recv(left, _blocks(out, got, width)),
                 ch.send(right, _blocks(out, sent, width))])


def alltoall(ch, blocks, out, width):
    """Pairwise exchange: in step k rank r sends its block for r + k and receives the one
    from r - k (mod size)."""
    rank, size = ch.rank, ch.size
    _blocks(out, rank, width)[:] = _blocks(blocks, rank, width)
    for step in range(1, size):
        dest, source = (rank + step) % size, (rank - step) % size
        ch.wait([ch.recv(source, _blocks(out, source, width)),
                 ch.send(dest, _blocks(blocks, dest, width))])


def reduce_scatter_block(ch, blocks, acc, codec):
    """Pairwise exchange: rank r reduces into `acc` (its own block of `blocks`, copied) the
    block every other rank holds for r, taking one per step."""
    rank, size = ch.rank, ch.size
    width = len(blocks) // size
    for step in range(1, size):
        dest, source = (rank + step) % size, (rank - step) % size
        op = codec.post_recv(ch, source)
        ch.wait([op, ch.send(dest, _blocks(blocks, dest, width))])
        acc = codec.combine(acc, codec.unpack(op), False)
    return acc


def allgather_objects(ch, obj):
    """Ring allgather of Python objects, as allgather."""
    rank, size = ch.rank, ch.size
    values = [None] * size
    values[rank] = obj
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        sent, got = (rank - step) % size, (rank - step - 1) % size
        op = ch.recv(left)
        ch.wait([op, ch.send(right, _pickled(values[sent]))])
        values[got] = pickle.loads(op.data)
    return values


def alltoall_objects(ch, objs):
    """Pairwise exchange of Python objects, as alltoall."""
    rank, size = ch.rank, ch.size
    values = [None] * size
    values[rank] = objs[rank]
    for step in range(1, size):
        dest, source = (rank + step) % size, (rank - step) % size
        op = ch.recv(source)
        ch.wait([op, ch.send(dest, _pickled(objs[dest]))])
        values[source] = pickle.loads(op.data)
    return values


def gather_objects(ch, root, obj):
    """Binomial gather of Python objects: the list at root, None elsewhere."""
    size = ch.size
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    ops = [ch.recv(_absolute(c, root, size)) for c, _ in children]
    ch.wait(ops)
    values = [obj]
    for op in ops:
        values += pickle.loads(op.data)
    if parent is not None:
        ch.wait([ch.send(_absolute(parent, root, size), _pickled(values))])
        return None
    return values[size - root:] + values[:size - root]


def scatter_objects(ch, root, objs):
    """Binomial scatter of root's sequence of size objects: this rank's one."""
    size = ch.size
    vrank = (ch.rank - root) % size
    parent, children = tree(vrank, size)
    if parent is None:
        values = list(objs[root:]) + list(objs[:root])
    else:
        op = ch.recv(_absolute(parent, root, size))
        ch.wait([op])
        values = pickle.loads(op.data)
    ch.wait([ch.send(_absolute(c, root, size), _pickled(values[c - vrank:c - vrank + count]))
             for c, count in reversed(children)])
    return values[0]


def _pickled(obj):
    return memoryview(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))
