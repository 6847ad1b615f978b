"""Small collectives by RDMA writes into flag slots: a communicator's Barrier and its
Allreduce of at most SLOT_PAYLOAD bytes run the algorithms of collectives.py on a
FlagChannel, whose send is an RDMA write into the receiver's slot for the sender and whose
receive watches that slot's stamp in local memory. No receive to post, no message to
match, no completion to reap (the writes are SUPPRESSed): the receiver's cost is reading
a word. Only shmdat's public DAT API.

Each rank has one provider LMR: an inbox of size x 2 slots (one per source and epoch
parity), each payload then an 8-byte stamp, and an outbox of the same shape its writes
come from. A collective is one epoch (counted per communicator, the same on every rank);
a send writes the payload, then the stamp = the epoch (two writes: the stamp lands after
the payload, as writes on one connection are placed in order), and the receive is done
once its stamp reads the epoch. A slot of one parity is reused two epochs later, when its
reader has read it: a rank cannot finish a barrier or an allreduce before every rank has
begun it, so no writer is more than one epoch ahead of any reader. The outbox slot a
write came from is reused two epochs later too, when that write has long been placed."""

import os
import time

import numpy as np

from shmdat import MemPriv, RmrTriplet

from . import collectives, errors
from .collectives import Channel
from .errors import Exception as MPIException

SLOT_PAYLOAD = 64                   # bytes: an Allreduce up to this size takes the flag slots
SLOT = SLOT_PAYLOAD + 8             # the payload, then the stamp
POLL_SECONDS = 0.002                # a waiting rank spins this long, then naps (as the engine)
LOOK_SECONDS = 50e-6                # meanwhile it runs the engine's progress this often
NAP_US = 1000                       # a nap: the EVD's wait, then the slots are looked at again
PRIVILEGES = MemPriv.LOCAL_READ | MemPriv.LOCAL_WRITE | MemPriv.REMOTE_WRITE


class FlagOp:
    """A receive from one source's slot in this epoch: `done` once its stamp reads the
    epoch (the payload is then copied into `buf`)."""
    __slots__ = ("ch", "source", "offset", "epoch", "buf", "_done")
    error = 0

    def __init__(self, ch, source, buf):
        self.ch, self.source, self.buf, self._done = ch, source, buf, False
        self.epoch = ch.epoch
        self.offset = (source * 2 + (ch.epoch & 1)) * SLOT

    @property
    def done(self):
        if not self._done and self.ch.stamps[(self.offset + SLOT_PAYLOAD) >> 3] == self.epoch:
            if self.buf is not None:
                n = len(self.buf)
                self.buf[:] = self.ch.view[self.offset:self.offset + n]
            self._done = True
        return self._done


class _Sent:
    """A send's op: done at once (the outbox slot stays untouched for two epochs)."""
    done, error = True, 0


_SENT = _Sent()


class FlagChannel(Channel):
    """A communicator's channel for its small blocking collectives (see the module's
    docstring). Made collectively by `open` (every rank of the communicator, in the same
    call); `begin()` starts each collective's epoch; `close()` frees the LMR."""

    def __init__(self, channel):
        super().__init__(channel.engine, channel.context, channel.rank, channel.ranks)
        engine = self.engine
        self.lmr = engine.ia.lmr_create(engine.pz, 2 * 2 * self.size * SLOT, PRIVILEGES)
        buffer = self.lmr.buffer
        self.view = memoryview(buffer)
        self.stamps = np.frombuffer(buffer, np.int64)     # the inbox's words (stamps among them)
        self.outbox = 2 * self.size * SLOT
        self.out_stamps = self.stamps[self.outbox >> 3:]
        self.epoch = 0
        self.peers = None                   # the RmrTriplets of the other ranks' inboxes
        self.writes = {}                    # (dest, parity, offset, n) -> (local_iov, RmrTriplet)

    @classmethod
    def open(cls, channel):
        """The FlagChannel of the communicator whose collective channel is `channel`:
        collective (the ranks exchange their inboxes' RmrTriplets over `channel`)."""
        ch = cls(channel)
        mine = ch.lmr.rmr_triplet(0, ch.outbox).pack()
        ch.peers = [RmrTriplet.unpack(t) for t in collectives.allgather_objects(channel, mine)]
        return ch

    def _write(self, dest, parity, offset, n):
        """The local_iov and RmrTriplet of a write of `n` bytes at `offset` of this rank's
        slot at `dest`, from the outbox's slot for (dest, parity): made once."""
        key = (dest, parity, offset, n)
        write = self.writes.get(key)
        if write is None:
            peer = self.peers[dest]
            at = (self.rank * 2 + parity) * SLOT + offset
            write = self.writes[key] = (
                [self.lmr.triplet(self.outbox + (dest * 2 + parity) * SLOT + offset, n)],
                RmrTriplet(peer.rmr_context, peer.target_address + at, n))
        return write

    def begin(self):
        self.epoch += 1

    def close(self):
        self.lmr.free()

    def send(self, dest, view):
        """Write `view` (at most SLOT_PAYLOAD bytes), then the epoch's stamp, into `dest`'s
        slot for this rank."""
        parity = self.epoch & 1
        out = (dest * 2 + parity) * SLOT
        engine, rank = self.engine, self.ranks[dest]
        n = len(view)
        if n:
            self.view[self.outbox + out:self.outbox + out + n] = view
            engine.write_flag(rank, *self._write(dest, parity, 0, n))
        self.out_stamps[(out + SLOT_PAYLOAD) >> 3] = self.epoch
        engine.write_flag(rank, *self._write(dest, parity, SLOT_PAYLOAD, 8))
        return _SENT

    def recv(self, source, buf=None):
        return FlagOp(self, source, buf)

    def wait(self, ops):
        """Spin on the slots, running the engine's progress every LOOK_SECONDS (a peer's
        messages handled, a peer gone noticed), then nap on the EVD between looks;
        MPI.Exception if a source has gone or finalized before writing."""
        engine = self.engine
        look = end = 0.0
        while True:
            for op in ops:
                if not op.done:
                    break
            else:
                return
            now = time.monotonic()
            if now >= look:
                engine.progress()
                self._check_sources(ops)
                if not end:
                    end = now + POLL_SECONDS
                look = now + LOOK_SECONDS
            if now >= end:
                engine.nap(NAP_US)
            elif engine.yield_when_idle:
                os.sched_yield()

    def _check_sources(self, ops):
        self.engine.check_revoked(self.context)
        for op in ops:
            if not op.done:
                rank = self.ranks[op.source]
                peer = self.engine.peers[rank]
                if peer.gone or peer.closing:       # (finalized first, then its connection ends)
                    why = "has finalized" if peer.closing else f"has gone ({peer.gone})"
                    raise MPIException(errors.ERR_OTHER if peer.closing else
                                       errors.ERR_PROC_FAILED, f"rank {rank} {why} before its "
                                       "part of this collective")
