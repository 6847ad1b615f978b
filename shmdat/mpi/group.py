"""mpi4py's Group: an ordered set of processes, held as the engine's (world) ranks. Local
calls only; `Comm.Create(group)` makes a communicator of one (shmdat/mpi/comm.py).

As mpi4py's, a Group object is a handle: `Group(g)` is another handle to g's group (equal
to it), `Group()` a null one (equal to GROUP_NULL, false), and `Free()` makes the handle
null. GROUP_EMPTY is the group of no process."""

from . import errors, handles, unimplemented
from .errors import Exception as MPIException
from .matching import PROC_NULL

UNDEFINED = -32766
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3   # Compare's answers (MPICH's values);
#                                                   CONGRUENT is for communicators only


class Group(handles.Numbered, unimplemented.Missing):
    """MPI_Group: `_ranks` maps the group's ranks to the engine's (None: a null handle);
    `_me` is this process's engine rank (its group rank is UNDEFINED if it is not a
    member); handles to the same group share `_group` (what == compares)."""

    _unimplemented = unimplemented.GROUP
    _numbers = handles.Numbers(handles.GROUP["null"], handles.GROUP["first"])
    _error = errors.ERR_GROUP

    def __init__(self, group=None):
        """mpi4py's Group(group=None): a null handle, or another handle to `group`'s group."""
        if group is None:
            self._ranks = self._me = self._group = None
        elif isinstance(group, Group):
            self._ranks, self._me, self._group = group._ranks, group._me, group._group
        else:
            raise TypeError(f"expected a Group, not {type(group).__name__}")

    @classmethod
    def _of(cls, ranks, me):
        """A new group of the engine's `ranks` (in that order), seen from engine rank `me`."""
        group = cls.__new__(cls)
        group._ranks, group._me, group._group = tuple(ranks), me, object()
        return group

    def __eq__(self, other):
        if not isinstance(other, Group):
            return NotImplemented
        return other._group is self._group

    __hash__ = None

    def __bool__(self):
        return self._group is not None

    def _identity(self):
        return self._group

    def __reduce__(self):
        """pickle: GROUP_NULL and GROUP_EMPTY (and handles to them) by name, as mpi4py; any
        other group is ValueError."""
        for name, predefined in (("GROUP_NULL", GROUP_NULL), ("GROUP_EMPTY", GROUP_EMPTY)):
            if self == predefined:
                return name if self is predefined else (type(self), (predefined,))
        raise ValueError("cannot serialize a Group (as mpi4py)")

    def _members(self):
        """The group's engine ranks; MPI.Exception ERR_GROUP on a null handle."""
        if self._ranks is None:
            raise MPIException(errors.ERR_GROUP, "the group is MPI.GROUP_NULL")
        return self._ranks

    def Get_size(self):
        return len(self._members())

    def Get_rank(self):
        """MPI_Group_rank: this process's rank in the group, UNDEFINED if not a member."""
        ranks = self._members()
        return ranks.index(self._me) if self._me in ranks else UNDEFINED

    @property
    def size(self):
        return self.Get_size()

    @property
    def rank(self):
        return self.Get_rank()

    def _engine_ranks(self, ranks):
        """The engine's ranks of the group's `ranks`; MPI.Exception ERR_RANK for one out of
        range or repeated."""
        members = self._members()
        if len(set(ranks)) != len(ranks):
            raise MPIException(errors.ERR_RANK, f"ranks {list(ranks)} repeat one")
        for r in ranks:
            if not isinstance(r, int) or not 0 <= r < len(members):
                raise MPIException(errors.ERR_RANK, f"rank {r!r} (group size {len(members)})")
        return [members[r] for r in ranks]

    def _new(self, ranks, other=None):
        """A new group of engine `ranks`, seen from this process (known to either group)."""
        return Group._of(ranks, self._me if self._me is not None else getattr(other, "_me", None))

    def Dup(self):
        """MPI_Group_dup: a new group of the same processes in the same order."""
        return self._new(self._members())

    def Incl(self, ranks):
        """MPI_Group_incl: the group of `ranks`, in that order. MPI.Exception ERR_RANK."""
        return self._new(self._engine_ranks(ranks))

    def Excl(self, ranks):
        """MPI_Group_excl: the group without `ranks`, in this group's order. ERR_RANK."""
        gone = set(self._engine_ranks(ranks))
        return self._new([r for r in self._members() if r not in gone])

    def Range_incl(self, ranks):
        """MPI_Group_range_incl: Incl of the ranks of (first, last, stride) triplets, each
        from first to last inclusive. MPI.Exception ERR_ARG (stride 0), ERR_RANK."""
        return self.Incl(_ranges(ranks))

    def Range_excl(self, ranks):
        """MPI_Group_range_excl: Excl of the ranks of (first, last, stride) triplets."""
        return self.Excl(_ranges(ranks))

    @classmethod
    def Union(cls, group1, group2):
        """MPI_Group_union: group1's processes, then group2's that are not in group1."""
        first = group1._members()
        return group1._new(first + tuple(r for r in group2._members() if r not in first), group2)

    @classmethod
    def Intersection(cls, group1, group2):
        """MPI_Group_intersection: group1's processes that are in group2, in group1's order."""
        second = set(group2._members())
        return group1._new([r for r in group1._members() if r in second], group2)

    Intersect = Intersection       # mpi4py's older name

    @classmethod
    def Difference(cls, group1, group2):
        """MPI_Group_difference: group1's processes that are not in group2, in its order."""
        second = set(group2._members())
        return group1._new([r for r in group1._members() if r not in second], group2)

    def Translate_ranks(self, ranks=None, group=None):
        """MPI_Group_translate_ranks: the ranks in `group` (None: COMM_WORLD's group, as
        mpi4py) of this group's `ranks` (all if None): UNDEFINED for one not in `group`,
        PROC_NULL for PROC_NULL. ERR_RANK."""
        ranks = range(len(self._members())) if ranks is None else ranks
        world = group is None       # then a world rank is the engine's rank itself
        into = {} if world else {r: i for i, r in enumerate(group._members())}
        translated = []
        for r in ranks:
            engine_rank = PROC_NULL if r == PROC_NULL else self._engine_ranks([r])[0]
            translated.append(engine_rank if world or r == PROC_NULL
                              else into.get(engine_rank, UNDEFINED))
        return translated

    def Compare(self, group):
        """MPI_Group_compare: IDENT (the same ranks in the same order), SIMILAR (in another
        order) or UNEQUAL."""
        mine, theirs = self._members(), group._members()
        if theirs == mine:
            return IDENT
        return SIMILAR if sorted(theirs) == sorted(mine) else UNEQUAL

    def Free(self):
        """MPI_Group_free: the handle becomes null (GROUP_NULL); GROUP_EMPTY stays itself."""
        self._members()
        if self is not GROUP_EMPTY:
            self._ranks = self._me = self._group = None


def _ranges(triplets):
    """The ranks of MPI's (first, last, stride) triplets, each from first to last inclusive."""
    ranks = []
    for first, last, stride in triplets:
        if stride == 0:
            raise MPIException(errors.ERR_ARG, f"a range's stride is 0: {(first, last, stride)}")
        ranks.extend(range(first, last + (1 if stride > 0 else -1), stride))
    return ranks


GROUP_NULL = Group()
GROUP_EMPTY = Group._of((), None)
Group._constants = (GROUP_EMPTY,)
Group._numbers.predefine([(GROUP_EMPTY, handles.GROUP["EMPTY"])])
