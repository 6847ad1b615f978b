"""Attribute caching (MPI_Comm/Win/Type_create_keyval, set_attr, get_attr, delete_attr,
free_keyval), as mpi4py offers it: a keyval names an attribute slot of one kind of object
(Comm, Win or Datatype); each object holds its own values. A keyval's copy_fn decides what
a Dup of the object inherits (None or False: nothing; True: the same value; a function
(obj, keyval, value) -> the new value, or NotImplemented for none), its delete_fn
(obj, keyval, value) runs when a value goes (replaced, deleted, or its object freed). An
exception in either is MPI.Exception ERR_OTHER, its traceback written to stderr, as mpi4py.
With nopython=True values are C integers (an int, else TypeError)."""

import itertools
import operator
import sys
import traceback

from . import errors
from .errors import Exception as MPIException

KEYVAL_INVALID = 0x24000000     # no key (MPICH's)
_FIRST_KEYVAL = 0x7C000001      # user keyvals from here: none is a predefined key's number


class Keyval:
    """A user keyval: its kind ("Comm", "Win", "Datatype") and callbacks."""

    __slots__ = ("kind", "copy_fn", "delete_fn", "nopython", "freed")

    def __init__(self, kind, copy_fn, delete_fn, nopython):
        self.kind, self.copy_fn, self.delete_fn = kind, copy_fn, delete_fn
        self.nopython, self.freed = bool(nopython), False


_keyvals = {}                   # keyval number -> Keyval, while not freed
_numbers = itertools.count(_FIRST_KEYVAL)


def create_keyval(kind, copy_fn=None, delete_fn=None, nopython=False):
    """MPI_<kind>_create_keyval: a new keyval number."""
    number = next(_numbers)
    _keyvals[number] = Keyval(kind, copy_fn, delete_fn, nopython)
    return number


def free_keyval(kind, keyval):
    """MPI_<kind>_free_keyval: KEYVAL_INVALID. Values still set keep their delete_fn, run
    when their objects free them. MPI.Exception ERR_KEYVAL for a keyval not of this kind."""
    found = _live(kind, keyval)
    found.freed = True
    del _keyvals[keyval]
    return KEYVAL_INVALID


def _live(kind, keyval):
    """The Keyval of `kind` under `keyval`. TypeError for a keyval that is not an int (as
    mpi4py), MPI.Exception ERR_KEYVAL for one that names none (or another kind's)."""
    found = _keyvals.get(operator.index(keyval))
    if found is None or found.kind != kind:
        raise MPIException(errors.ERR_KEYVAL, f"keyval {keyval!r} is not a {kind} keyval")
    return found


def _call(fn, obj, keyval, value, what):
    """A user callback; its exception becomes MPI.Exception ERR_OTHER (traceback on stderr)."""
    try:
        return fn(obj, keyval, value)
    except BaseException as exc:
        sys.stderr.write("".join(traceback.format_exception(exc)))
        raise MPIException(errors.ERR_OTHER, f"the keyval's {what} raised "
                           f"{type(exc).__name__}") from None


class Keyvals:
    """Create_keyval and Free_keyval, class methods of the kinds of object that hold
    attributes (Comm, Win, Datatype), which name their kind in `_kind`."""

    _kind = None

    @classmethod
    def Create_keyval(cls, copy_fn=None, delete_fn=None, nopython=False):
        """MPI_<kind>_create_keyval: a new keyval (the module docstring says what the
        callbacks do)."""
        return create_keyval(cls._kind, copy_fn, delete_fn, nopython)

    @classmethod
    def Free_keyval(cls, keyval):
        """MPI_<kind>_free_keyval: KEYVAL_INVALID. MPI.Exception ERR_KEYVAL."""
        return free_keyval(cls._kind, keyval)


class Attributes:
    """One object's attribute values (shared by every handle to the object)."""

    __slots__ = ("values",)

    def __init__(self):
        self.values = {}        # keyval number -> (Keyval, value)

    def get(self, kind, keyval):
        """MPI_<kind>_get_attr of a user keyval: its value, or None if not set."""
        _live(kind, keyval)
        entry = self.values.get(keyval)
        return None if entry is None else entry[1]

    def set(self, obj, kind, keyval, value):
        """MPI_<kind>_set_attr: a value already there is deleted first (its delete_fn)."""
        found = _live(kind, keyval)
        if found.nopython:
            value = operator.index(value)   # (TypeError for anything but an int, as mpi4py)
        self._delete(obj, keyval)
        self.values[keyval] = (found, value)

    def delete(self, obj, kind, keyval):
        """MPI_<kind>_delete_attr (nothing to do if not set)."""
        _live(kind, keyval)
        self._delete(obj, keyval)

    def _delete(self, obj, keyval):
        entry = self.values.pop(keyval, None)
        if entry is not None and entry[0].delete_fn is not None:
            _call(entry[0].delete_fn, obj, keyval, entry[1], "delete_fn")

    def copied(self, obj):
        """The values a Dup of `obj` inherits, by each keyval's copy_fn."""
        new = Attributes()
        for keyval, (found, value) in self.values.items():
            copy_fn = found.copy_fn
            if copy_fn is None or copy_fn is False:
                continue
            if copy_fn is not True:
                value = _call(copy_fn, obj, keyval, value, "copy_fn")
                if value is NotImplemented:
                    continue
            new.values[keyval] = (found, value)
        return new

    def clear(self, obj):
        """The object is freed: every value is deleted (its delete_fn), in the order set."""
        for keyval in list(self.values):
            self._delete(obj, keyval)
