"""Fault tolerance, MPI's ULFM (User-Level Failure Mitigation) as mpi4py names it: Comm.Revoke,
Is_revoked, Get_failed, Ack_failed, Agree, Iagree, Shrink, Ishrink. A rank's death is noticed
by the engine (its connection breaks: shmdat/mpi/engine.py), which then fails what needs that
rank with ERR_PROC_FAILED; a job goes on after a failure only under
`shmdat run --disable-auto-cleanup` (else the launcher ends it, as mpiexec does).

Agree and Shrink are one agreement (`Agreement`): every live rank of the communicator floods
what it knows, {engine rank: value}, to the others for ROUNDS rounds, a round's receive from a
rank that fails meanwhile given up. Whatever ROUNDS - 1 failures or fewer happen during the
call, one round has none, after which every live rank knows the same values (FloodSet's
argument): the flag they AND, the ranks that took part (the survivors, for Shrink) and the
largest next free context id (Shrink's new communicator's) are the same at every rank. Its
messages go on the communicator's fault-tolerance context, FT_BASE + its context id, which
Revoke leaves alone (ULFM: agreement and shrink work on a revoked communicator)."""

import functools
import operator
import struct

from . import comm as _comm
from . import errors
from .comm import Comm, Request, Status, _claim, _invalid, _NullComm
from .errors import Exception as MPIException
from .group import Group
from .intercomm import Intercomm

FT_BASE = 1 << 30       # + a communicator's context id: its agreements' context
ROUNDS = 3              # flooding rounds: uniform whatever two failures happen meanwhile
_agreements = {}        # context -> agreements begun on it (their tags follow on)


def _everyone(comm):
    """The engine ranks of every process of `comm` (both groups of an Intercomm)."""
    if comm._inter:
        return list(comm._local_ranks) + list(comm._remote_ranks)
    return list(comm._ranks)


def _failed(comm):
    """The engine ranks of `comm`'s processes that have failed, in the order noticed."""
    members = set(_everyone(comm))
    return [r for r in comm._engine.failed if r in members]


class Agreement:
    """An agreement under way (run by the engine as a non-blocking collective: `advance()` at
    each event): ROUNDS rounds in which each rank sends `known` to every other live one and
    adds what they sent. `done` at the end; `known` is then the same at every live rank."""

    ops = ()            # (what the engine's wait checks: a failure never stops an agreement)
    error, exception = 0, None

    def __init__(self, comm, value):
        engine = self.engine = comm._engine
        context = comm._context
        begun = _agreements.get(context, 0)
        _agreements[context] = begun + 1
        self.context, self.tag = FT_BASE + context, begun * ROUNDS
        self.ranks = [r for r in _everyone(comm) if r != engine.rank]
        self.known = {engine.rank: value}
        self.round, self.done = 0, False
        self._start_round()

    def _start_round(self):
        engine, tag = self.engine, self.tag + self.round
        self.recvs = {r: engine.post_recv(self.context, r, tag, None)
                      for r in self.ranks if not engine.peers[r].gone}
        items = [n for pair in self.known.items() for n in pair]
        body = memoryview(struct.pack(f"<{len(items)}q", *items))
        for r in self.recvs:
            try:
                engine.send(r, self.context, tag, body)
            except MPIException as e:       # (it failed meanwhile: its receive is given up)
                if e.error_code != errors.ERR_PROC_FAILED:
                    raise

    def advance(self):
        """Go on as far as the rounds' receives have come (or their ranks have failed);
        True once the last round has ended."""
        engine = self.engine
        while not self.done:
            if any(not op.done and not engine.peers[r].gone for r, op in self.recvs.items()):
                return False
            for op in self.recvs.values():
                if op.done:
                    items = struct.unpack(f"<{len(op.data) // 8}q", op.data)
                    self.known.update(zip(items[::2], items[1::2]))
                else:
                    engine.cancel(op)
            self.round += 1
            if self.round == ROUNDS:
                self.done = True
            else:
                self._start_round()
        return True


class _AgreementRequest(Request):
    """The Request of Iagree and Ishrink: its status is empty; at completion `finish(known)`
    runs (it places the result, and raises what the call raises)."""

    def __init__(self, agreement, finish):
        super().__init__(agreement.engine, None, agreement)
        self._finish_with = finish

    def _fill(self, status):
        if status is not None:
            Status.__init__(status)

    def _finish(self, status):
        self._active = False
        self._fill(status)
        self._finish_with(self._op.known)


def _agreement(comm, value, finish):
    """Start an agreement on `comm` with this rank's `value`: its Request."""
    return _AgreementRequest(comm._engine.start(Agreement(comm, value)), finish)


def _check_acknowledged(comm, known):
    """MPI.Exception ERR_PROC_FAILED if a process of `comm` took no part in the agreement and
    its failure has not been acknowledged here (Ack_failed)."""
    acked = comm._engine.acked.get(comm._context, ())
    missing = [r for r in _everyone(comm) if r not in known and r not in acked]
    if missing:
        raise MPIException(errors.ERR_PROC_FAILED, f"rank {missing[0]} (of the engine) has "
                           "failed and no Ack_failed acknowledged it")


def _and(known):
    flag = -1
    for value in known.values():
        flag &= value
    return flag


def Agree(self, flag):
    """MPIX_Comm_agree (collective, fault tolerant, also on a revoked communicator): the AND
    of the int `flag` of every rank that took part, the same at each. TypeError for a flag
    that is not an int; MPI.Exception ERR_PROC_FAILED (after agreeing) if a process failed
    and its failure was not acknowledged (Ack_failed)."""
    known = []
    _agreement(self, operator.index(flag), known.append).Wait()
    _check_acknowledged(self, known[0])
    return _and(known[0])


def Iagree(self, flag):
    """MPIX_Comm_iagree: Agree as a Request; `flag` is a writable buffer of one C int, which
    gets the result at completion (whose wait raises what Agree raises). TypeError if it is
    no buffer, ValueError if not one int's size."""
    view = memoryview(flag)
    if view.nbytes != 4:
        raise ValueError("flag: expecting int buffer of length one")
    view = view.cast("B").cast("i")

    def finish(known):
        view[0] = _and(known)       # (ANDs of C ints are C ints)
        _check_acknowledged(self, known)
    return _agreement(self, view[0], finish)


def _shrunk(comm, known):
    """The communicator of `comm`'s processes that took part in the agreement `known` (of
    each rank's next free context id), on the largest of those ids."""
    context = max(known.values())
    engine = comm._engine
    if comm._inter:
        _claim(context, 4)
        return Intercomm(engine, context, [r for r in comm._local_ranks if r in known],
                         [r for r in comm._remote_ranks if r in known])
    _claim(context)
    return Comm(engine, context, [r for r in comm._ranks if r in known])


def Shrink(self):
    """MPIX_Comm_shrink (collective, fault tolerant, also on a revoked communicator): a new
    communicator of this one's processes that have not failed, in the same order (the same at
    every survivor: they agree on it)."""
    result = []
    _agreement(self, _comm._next_context,
               lambda known: result.append(_shrunk(self, known))).Wait()
    return result[0]


def Ishrink(self):
    """MPIX_Comm_ishrink: (the new communicator, a Request); the communicator is COMM_NULL
    until the request completes, then Shrink's."""
    shrunk = Comm()

    def finish(known):
        new = _shrunk(self, known)
        shrunk.__class__ = type(new)
        shrunk.__dict__.update(new.__dict__)
    return shrunk, _agreement(self, _comm._next_context, finish)


def Revoke(self):
    """MPIX_Comm_revoke: every operation under way or to come on this communicator fails
    with ERR_REVOKED, at every rank of it (they are told; Agree, Shrink, Get_failed and
    Ack_failed still work)."""
    ids = 4 if self._inter else 2       # (an Intercomm's local communicator too)
    self._engine.revoke(self._context, ids, _everyone(self))


def Is_revoked(self):
    """MPIX_Comm_is_revoked: whether this rank knows the communicator to be revoked."""
    return self._context in self._engine.revoked


def Get_failed(self):
    """MPIX_Comm_get_failed: the group of this communicator's processes (both groups of an
    Intercomm) known here to have failed, in the order noticed."""
    return Group._of(_failed(self), self._engine.rank)


def Ack_failed(self, num_to_ack=None):
    """MPIX_Comm_ack_failed: acknowledge the first `num_to_ack` failed processes of
    Get_failed (None: all), so that ANY_SOURCE receives no longer fail for them (and Agree
    does not raise); returns how many are acknowledged. TypeError for a count not an int."""
    failed = _failed(self)
    count = len(failed) if num_to_ack is None else operator.index(num_to_ack)
    acked = self._engine.acked.setdefault(self._context, set())
    acked.update(failed[:max(count, 0)])
    return len(acked)


def _unless_revoked(method):
    """Comm's `method`, which fails with ERR_REVOKED on a revoked communicator before it
    begins."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        self._engine.check_revoked(self._context)
        return method(self, *args, **kwargs)
    return call


# The object collectives (and Dup, Split, ..., which run one) check too: on one rank they send
# nothing, so the engine's check would not see it. (Buffer collectives check in comm.py.)
for _name in ("bcast", "scatter", "gather", "allgather", "alltoall", "reduce", "allreduce",
              "scan", "exscan"):
    setattr(Comm, _name, _unless_revoked(getattr(Comm, _name)))

# Comm's, and an Intercomm's as they are (both groups take part: _everyone).
for _call in (Revoke, Is_revoked, Get_failed, Ack_failed, Agree, Iagree, Shrink, Ishrink):
    setattr(Comm, _call.__name__, _call)
    setattr(Intercomm, _call.__name__, _call)
    setattr(_NullComm, _call.__name__, _invalid(_call.__name__))   # (ERR_COMM on COMM_NULL)
del _call
