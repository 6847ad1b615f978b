"""mpi4py's Info (MPI_Info): ordered (key, value) strings, as hints to calls that take
them. shmdat.mpi takes no hints (windows, communicators and Alloc_mem accept an Info and
ignore it, as MPI allows), so an Info is a plain store; its errors are MPICH's.

As mpi4py's, an Info object is a handle: `Info(i)` is another handle to i's store (equal
to it), `Info()` a null one (equal to INFO_NULL, false); Free makes the handle null.
INFO_ENV (the environment MPI was started in) has no keys here, as under mpiexec."""

import itertools
import weakref

from . import errors, unimplemented
from .errors import Exception as MPIException
from .handles import Handle

MAX_INFO_KEY, MAX_INFO_VAL = 255, 1024          # MPICH's
_NULL_HANDLE, _ENV_HANDLE = 0x1c000000, 0x5c000001
_handles = itertools.count(0x9c000000)
_by_handle = weakref.WeakValueDictionary()     # handle -> its _Store while a handle lives


class _Store:
    """What the handles of one Info share: its items, in the order first set."""
    __slots__ = ("items", "handle", "__weakref__")

    def __init__(self, handle, items=None):
        self.items, self.handle = dict(items or {}), handle
        _by_handle[handle] = self


_ENV = _Store(_ENV_HANDLE)


def _string(value, what, limit, error_class):
    """`value` checked as an info key or value: TypeError if not a str, MPI.Exception
    `error_class` if empty (a key) or longer than `limit`."""
    if not isinstance(value, str):
        raise TypeError(f"an info {what} is a str, not {type(value).__name__}")
    if len(value) > limit or (what == "key" and not value):
        raise MPIException(error_class, f"info {what} of {len(value)} characters")
    return value


class Info(Handle, unimplemented.Missing):
    """MPI_Info. `_store`: the _Store its handle names, None for a null handle."""

    _unimplemented = unimplemented.INFO
    _NULL_HANDLE, _by_handle, _target, _what = _NULL_HANDLE, _by_handle, "_store", "info"
    _error = errors.ERR_INFO

    def __init__(self, info=None):
        """mpi4py's Info(info=None): a null handle, or another handle to `info`'s store.
        TypeError for anything else."""
        self._assign(info)

    @classmethod
    def Create(cls, items=None):
        """MPI_Info_create: a new Info, with `items` (a mapping, an Info, or (key, value)
        pairs) set in order. Errors as Set."""
        info = cls._to(_Store(next(_handles)))
        if items is not None:
            info.update(items)
        return info

    @classmethod
    def Create_env(cls, args=None):
        """MPI_Info_create_env: a new Info with INFO_ENV's items (none here, as under mpiexec)
        and, as MPICH's, `command` (args[0]) and `argv` (the other arguments, joined by
        spaces) from `args`, the program's arguments (a str: the command alone). TypeError
        for an argument that is not a str."""
        args = [args] if isinstance(args, str) else list(args or ())
        for arg in args:
            if not isinstance(arg, str):
                raise TypeError(f"expected str, got {type(arg).__name__}")
        info = cls.Create(_ENV.items)
        if args:
            info.Set("command", args[0])
        if len(args) > 1:
            info.Set("argv", " ".join(args[1:]))
        return info

    __hash__ = None

    def __repr__(self):
        if self._store is None:
            return "<MPI.INFO_NULL>"
        return "<MPI.INFO_ENV>" if self._store is _ENV else f"<MPI.Info {self.items()!r}>"

    def __reduce__(self):
        """pickle: INFO_NULL and INFO_ENV by name, any other as the items it holds (as
        mpi4py)."""
        if self._store is None:
            return "INFO_NULL" if self is INFO_NULL else (type(self), ())
        if self._store is _ENV:
            return "INFO_ENV" if self is INFO_ENV else (type(self), (INFO_ENV,))
        return (type(self).Create, (self.items(),))     # (a subclass's, as mpi4py)

    def _items(self):
        """The store's items. MPI.Exception ERR_ARG for INFO_NULL (as MPICH)."""
        if self._store is None:
            raise MPIException(errors.ERR_ARG, "an MPI_Info call on INFO_NULL")
        return self._store.items

    def Free(self):
        """MPI_Info_free: this handle becomes null. MPI.Exception ERR_ARG for INFO_NULL,
        ERR_INFO for INFO_ENV (which stays)."""
        self._items()
        if self._store is _ENV:
            raise MPIException(errors.ERR_INFO, "INFO_ENV cannot be freed")
        self._store = None

    def Dup(self):
        """MPI_Info_dup: a new Info with the same items. MPI.Exception ERR_ARG for
        INFO_NULL. Of this handle's class (a subclass's too, as mpi4py)."""
        return type(self).Create(self._items())

    def Get(self, key):
        """MPI_Info_get_string: the value of `key`, None if it is not set. Errors as Set's
        for the key."""
        items = self._items()
        return items.get(_string(key, "key", MAX_INFO_KEY, errors.ERR_INFO_KEY))

    def Set(self, key, value):
        """MPI_Info_set. TypeError unless both are str; MPI.Exception ERR_INFO_KEY for an
        empty key or one over MAX_INFO_KEY characters, ERR_INFO_VALUE for a value over
        MAX_INFO_VAL, ERR_ARG on INFO_NULL."""
        items = self._items()
        items[_string(key, "key", MAX_INFO_KEY, errors.ERR_INFO_KEY)] = \
            _string(value, "value", MAX_INFO_VAL, errors.ERR_INFO_VALUE)

    def Delete(self, key):
        """MPI_Info_delete. MPI.Exception ERR_INFO_NOKEY if `key` is not set."""
        items = self._items()
        if items.pop(_string(key, "key", MAX_INFO_KEY, errors.ERR_INFO_KEY), None) is None:
            raise MPIException(errors.ERR_INFO_NOKEY, f"info key {key!r} is not set")

    def Get_nkeys(self):
        """MPI_Info_get_nkeys."""
        return len(self._items())

    def Get_nthkey(self, n):
        """MPI_Info_get_nthkey: the key set n-th. MPI.Exception ERR_ARG if there are not
        n + 1 keys."""
        keys = list(self._items())
        if not 0 <= n < len(keys):
            raise MPIException(errors.ERR_ARG, f"key {n} of {len(keys)}")
        return keys[n]

    # Python's mapping, as mpi4py's (INFO_NULL behaves as an empty mapping that cannot be
    # written).

    def __len__(self):
        return 0 if self._store is None else len(self._store.items)

    def __contains__(self, key):
        return self._store is not None and self.Get(key) is not None

    def __iter__(self):
        return iter(self.keys())

    def __getitem__(self, key):
        value = None if self._store is None else self.Get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        if self._store is None:
            raise KeyError(key)
        self.Set(key, value)

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        self.Delete(key)

    def get(self, key, default=None):
        value = None if self._store is None else self.Get(key)
        return default if value is None else value

    def keys(self):
        return [] if self._store is None else list(self._store.items)

    def values(self):
        return [] if self._store is None else list(self._store.items.values())

    def items(self):
        return [] if self._store is None else list(self._store.items.items())

    def update(self, items=(), **kwds):
        if self._store is None:
            raise KeyError
        pairs = [(key, items[key]) for key in items.keys()] if hasattr(items, "keys") \
            else items
        for key, value in pairs:
            self.Set(key, value)
        for key, value in kwds.items():
            self.Set(key, value)

    def pop(self, key, *default):
        value = self.get(key)
        if value is not None:
            self.Delete(key)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self):
        if not len(self):
            raise KeyError("popitem(): the info is empty")
        key = self.keys()[-1]
        return key, self.pop(key)

    def copy(self):
        return Info() if self._store is None else self.Dup()

    def clear(self):
        if self._store is not None:
            self._store.items.clear()


INFO_NULL = Info()
INFO_ENV = Info._to(_ENV)
Info._constants = (INFO_ENV,)     # (what free leaves alone)
