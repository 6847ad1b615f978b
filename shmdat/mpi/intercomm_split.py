"""MPI_Comm_split on an intercommunicator (Intercomm.Split): collective over both groups;
each member gets the intercommunicator of the members of its color in its own group and in
the other, each group ordered by (key, rank); COMM_NULL for UNDEFINED, or when the other
group has no member of that color (MPI's rule)."""

from . import errors
from .comm import COMM_NULL, UNDEFINED, _claim
from .errors import Exception as MPIException
from .intercomm import Intercomm


def _check(entries, group):
    """TypeError for a color or key that is no int, MPI.Exception ERR_ARG for a negative
    color other than UNDEFINED (raised on every member alike: each has every entry)."""
    for rank, (color, key) in enumerate(entries):
        if not isinstance(color, int) or not isinstance(key, int):
            raise TypeError(f"Split: rank {rank} of the {group} group gave color {color!r}, "
                            f"key {key!r}: ints are due")
        if color < 0 and color != UNDEFINED:
            raise MPIException(errors.ERR_ARG, f"Split: rank {rank} of the {group} group "
                               f"gave color {color}")


def _members(entries, color, ranks):
    """The engine ranks of `color`'s members among `entries` (one per rank of `ranks`),
    ordered by (key, rank)."""
    return [ranks[rank] for _, rank in sorted((key, rank) for rank, (c, key) in
                                                enumerate(entries) if c == color)]


def Split(self, color=0, key=0):
    """MPI_Comm_split on an Intercomm (collective over both groups): the intercommunicator of
    this color's members of both groups (a new context, the largest next free id of every
    member); COMM_NULL for color UNDEFINED or a color the other group has not. TypeError for
    a color or key that is no int, MPI.Exception ERR_ARG for a negative color (every rank of
    both groups raises)."""
    mine = self._local.allgather((color, key))
    context = self._local._new_context()
    theirs, their_context = self._exchange((mine, context))
    context = max(context, their_context)
    _claim(context, 4)      # (an Intercomm takes 4 ids: its local group's communicator too)
    _check(mine, "local")
    _check(theirs, "remote")
    if color == UNDEFINED:
        return COMM_NULL
    remote = _members(theirs, color, self._remote_ranks)
    if not remote:
        return COMM_NULL
    return Intercomm(self._engine, context, _members(mine, color, self._local_ranks), remote)


Intercomm.Split = Split
