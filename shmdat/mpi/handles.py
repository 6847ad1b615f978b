"""The integer handles of mpi4py's handle classes (toint/py2f, fromint/f2py), for the classes
whose handles name a shared object carrying its `handle` int (Errhandler, Message): MPICH's
numbers for the predefined objects, then one per object made."""

from . import errors
from .errors import Exception as MPIException


class IntHandles:
    """Mixed into a handle class, which sets `_NULL_HANDLE` (the null handle's int),
    `_by_handle` (int -> the shared object, while it lives), `_target` (the attribute
    naming a handle's shared object, None when null), `_what` (its name in errors) and the
    class method `_to(obj)` (a handle naming obj)."""

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
