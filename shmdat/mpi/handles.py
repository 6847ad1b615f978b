"""mpi4py's handle classes whose handles name a shared object (Errhandler, Message, Info): a
null handle, another handle to the same object, equality by the object, and the integer
handles (toint/py2f, fromint/f2py: MPICH's numbers for the predefined objects, then one per
object made, the object's `handle`)."""

from . import errors
from .errors import Exception as MPIException


class Handle:
    """Mixed into a handle class, which sets `_NULL_HANDLE` (the null handle's int),
    `_by_handle` (int -> the shared object, while it lives), `_target` (the attribute
    naming a handle's shared object, None when null) and `_what` (its name in errors); its
    constructor calls `_assign`. Gives `_to`, `==` and `bool` by the object named, and the
    integer handles."""

    def toint(self):
        """MPI_*_c2f: the handle as an int (MPICH's numbers for the predefined ones)."""
        target = getattr(self, self._target)
        return self._NULL_HANDLE if target is None else target.handle

    py2f = toint

    @classmethod
    def fromint(cls, handle):
        """A handle to the object whose int `handle` is. MPI.Exception ERR_ARG if it names
        none alive."""
        if handle == cls._NULL_HANDLE:
            return cls()
        target = cls._by_handle.get(handle)
        if target is None:
            raise MPIException(errors.ERR_ARG, f"{cls.__name__}.fromint({handle!r}): no such "
                               f"{cls._what}")
        return cls._to(target)

    f2py = fromint

    @classmethod
    def _owner(cls):
        """The handle class itself (the one that names `_target`), for a subclass too."""
        return next(c for c in cls.__mro__ if "_target" in vars(c))

    def _assign(self, other):
        """Name what `other` names (None: the null handle). TypeError unless `other` is a
        handle of this class."""
        owner = self._owner()
        if other is not None and not isinstance(other, owner):
            raise TypeError(f"expected a{'n' if owner.__name__[0] in 'AEIOU' else ''} "
                            f"{owner.__name__}, not {type(other).__name__}")
        setattr(self, self._target, None if other is None else getattr(other, self._target))

    @classmethod
    def _to(cls, target):
        """A new handle naming `target`."""
        handle = cls.__new__(cls)
        setattr(handle, cls._target, target)
        return handle

    def __eq__(self, other):
        return isinstance(other, self._owner()) and \
            getattr(other, self._target) is getattr(self, self._target)

    def __bool__(self):
        return getattr(self, self._target) is not None
