"""Comm.Create_group (MPI_Comm_create_group, MPI 4.1 section 7.4.2): a communicator of a
group's members, made by them alone (the communicator's other ranks take no part).

The members agree on a context id as Comm.Create does (the largest next free id of each),
by an allreduce among themselves on the communicator's collective context: on a channel of
the group's ranks whose tag is made of the caller's `tag`, never the blocking collectives'
(0) nor the non-blocking ones' (negative), so it meets no other collective of the
communicator."""

import operator

from . import collectives, comm, errors
from .collectives import Channel, Objects
from .comm import COMM_NULL, Comm, _claim, _invalid, _NullComm
from .errors import Exception as MPIException
from .group import UNDEFINED, Group
from .intercomm import Intercomm
from .ops import MAX


def Create_group(self, group, tag=0):
    """MPI_Comm_create_group (collective over `group`'s members only, each giving the same
    group and tag): a communicator of the members in the group's order; COMM_NULL at a
    caller that is not a member (GROUP_EMPTY's callers too). TypeError if `group` is no
    Group or `tag` no integer (mpi4py's `int tag`); MPI.Exception ERR_GROUP for GROUP_NULL
    or a group with ranks this communicator has not, ERR_TAG for a tag outside 0..TAG_UB."""
    if not isinstance(group, Group):
        raise TypeError(f"expected a Group, not {type(group).__name__}")
    members = list(group._members())
    self._check_tag(operator.index(tag))
    if not set(members) <= set(self._ranks):
        raise MPIException(errors.ERR_GROUP, "Create_group: the group has ranks that "
                           f"{self._name or 'this communicator'} has not")
    rank = group.Get_rank()
    if rank == UNDEFINED:
        return COMM_NULL
    # (1 + tag, wrapped into the positive tags: only tags 0 and TAG_UB share one)
    ch = Channel(self._engine, self._context + 1, rank, members, tag=1 + tag % comm._TAG_MAX)
    context = collectives.allreduce(ch, comm._next_context, Objects(MAX))
    _claim(context)
    return Comm(self._engine, context, members)


class _IntracommOnly:
    """Intercomm's Create_group: absent, as in mpi4py (whose is Intracomm's). Looking it up,
    on the class or an object, fails here; Python then asks the class's __getattr__, which
    raises NotImplementedCall naming it (unimplemented.INTERCOMM lists it)."""

    def __get__(self, obj, cls):
        raise AttributeError("Create_group")


Comm.Create_group = Create_group
Intercomm.Create_group = _IntracommOnly()
_NullComm.Create_group = _invalid("Create_group")
