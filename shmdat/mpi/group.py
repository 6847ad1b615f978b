"""mpi4py's Group: an ordered set of processes, held as the engine's (world) ranks. Local
calls only; `Comm.Create(group)` makes a communicator of one (shmdat/mpi/comm.py)."""

from . import errors, unimplemented
from .errors import Exception as MPIException
from .matching import PROC_NULL

UNDEFINED = -32766
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3   # Compare's answers (MPICH's values);
#                                                   CONGRUENT is for communicators only


class Group(unimplemented.Missing):
    """MPI_Group: `ranks` maps the group's ranks to the engine's; `me` is this process's
    engine rank (its group rank is UNDEFINED if it is not a member)."""

    _unimplemented = unimplemented.GROUP

    def __init__(self, ranks, me):
        self._ranks, self._me = tuple(ranks), me

    def __reduce__(self):
        raise ValueError("cannot serialize a Group (as mpi4py)")

    def Get_size(self):
        return len(self._ranks)

    def Get_rank(self):
        """MPI_Group_rank: this process's rank in the group, UNDEFINED if not a member."""
        return self._ranks.index(self._me) if self._me in self._ranks else UNDEFINED

    @property
    def size(self):
        return self.Get_size()

    @property
    def rank(self):
        return self.Get_rank()

    def _engine_ranks(self, ranks):
        """The engine's ranks of the group's `ranks`; MPI.Exception ERR_RANK for one out of
        range or repeated."""
        if len(set(ranks)) != len(ranks):
            raise MPIException(errors.ERR_RANK, f"ranks {list(ranks)} repeat one")
        for r in ranks:
            if not isinstance(r, int) or not 0 <= r < len(self._ranks):
                raise MPIException(errors.ERR_RANK, f"rank {r!r} (group size "
                                   f"{len(self._ranks)})")
        return [self._ranks[r] for r in ranks]

    def Incl(self, ranks):
        """MPI_Group_incl: the group of `ranks`, in that order. MPI.Exception ERR_RANK."""
        return Group(self._engine_ranks(ranks), self._me)

    def Excl(self, ranks):
        """MPI_Group_excl: the group without `ranks`, in this group's order. ERR_RANK."""
        gone = set(self._engine_ranks(ranks))
        return Group([r for r in self._ranks if r not in gone], self._me)

    def Translate_ranks(self, ranks=None, group=None):
        """MPI_Group_translate_ranks: the ranks in `group` (None: COMM_WORLD's group, as
        mpi4py) of this group's `ranks` (all if None): UNDEFINED for one not in `group`,
        PROC_NULL for PROC_NULL. ERR_RANK."""
        ranks = range(len(self._ranks)) if ranks is None else ranks
        world = group is None       # then a world rank is the engine's rank itself
        into = {} if world else {r: i for i, r in enumerate(group._ranks)}
        translated = []
        for r in ranks:
            engine_rank = PROC_NULL if r == PROC_NULL else self._engine_ranks([r])[0]
            translated.append(engine_rank if world or r == PROC_NULL
                              else into.get(engine_rank, UNDEFINED))
        return translated

    def Compare(self, group):
        """MPI_Group_compare: IDENT (the same ranks in the same order), SIMILAR (in another
        order) or UNEQUAL."""
        if group._ranks == self._ranks:
            return IDENT
        return SIMILAR if sorted(group._ranks) == sorted(self._ranks) else UNEQUAL

    def Free(self):
        """MPI_Group_free: a group holds no resources here (a tuple of ranks)."""
