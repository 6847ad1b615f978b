"""mpi4py's handle methods: the integer handles (toint/py2f, fromint/f2py: MPICH's numbers,
for the predefined objects too), the MPI handle (`handle`, fromhandle: the same number, as
MPICH's handles are ints) and `free` (Free unless null or a constant), on every handle class.

Two mixins give them. Handle: for the classes whose handles name one shared object that
carries its number (Errhandler, Message, Info), with a null handle, equality by the object
and bool. Numbered: for the classes whose handles share state of another shape (Comm, Group,
Datatype, Op, Request, Win, File); a Numbers table per class gives each object its number when
first asked for it, and keeps a handle to it, as MPI keeps an object until it is freed, so
that fromint finds it whatever became of the program's handles.

Numbers are MPICH's: the null handle's, the predefined objects' (MPICH's constants, the
tables below), then one per object from MPICH's first for its kind, as C's int (negative:
MPICH's user handles have the high bit set); `handle` is the same as an unsigned pointer
(mpi4py's), as mpi4py over MPICH shows them. A number is never given twice, so a stale one
(of an object freed) names no new object: fromint of it, or of one never given, raises
MPI.Exception with the class's error (MPICH checks only a Comm's: ERR_COMM; for the others it
makes a handle to nothing, which here would be a wrong answer)."""

import itertools
import operator
import threading

from .errors import Exception as MPIException

_INT_BITS = 32          # MPICH's handles are C ints
_POINTER = 2**64        # mpi4py's `handle`: the int as an unsigned pointer-sized integer


def c_int(number):
    """`number` (an int) as MPICH's handle type, C's int: OverflowError as mpi4py's if it does
    not fit."""
    number = operator.index(number)
    if not -2**(_INT_BITS - 1) <= number < 2**(_INT_BITS - 1):
        raise OverflowError("value too large to convert to int")
    return number


def signed(number):
    """A 32-bit handle (0 ... 2**32 - 1) as C's int."""
    number %= 2**_INT_BITS
    return number - 2**_INT_BITS if number >= 2**(_INT_BITS - 1) else number


class _Common:
    """What both mixins give from their toint, fromint, `_names_predefined` (the handle names an
    MPI constant's object), `_nullify` and `_constants` (the module's constant objects, which
    free leaves alone)."""

    _constants = ()

    def __new__(cls, *args, **kwargs):
        """mpi4py's signature, Class.__new__(cls, handle): a subclass's __new__ passes the
        handle on (__init__ takes it)."""
        return super().__new__(cls)

    @property
    def handle(self):
        """mpi4py's handle: the MPI handle (MPICH's int, as an unsigned pointer). Read only."""
        return self.toint() % _POINTER

    @classmethod
    def fromhandle(cls, handle):
        """mpi4py's fromhandle: a handle of this class to the object MPI handle `handle`
        names. Errors as fromint's."""
        return cls.fromint(signed(operator.index(handle)))

    def free(self):
        """mpi4py's free: nothing for a null handle or a module constant; a handle to a
        predefined object becomes null; else Free (its errors)."""
        if not self or any(self is constant for constant in type(self)._constants):
            return
        if self._names_predefined():
            self._nullify()
        else:
            self._free_object()

    def _free_object(self):
        self.Free()


class Handle(_Common):
    """Mixed into a handle class, which sets `_NULL_HANDLE` (the null handle's int),
    `_by_handle` (int -> the shared object, while it lives), `_target` (the attribute
    naming a handle's shared object, None when null), `_what` (its name in errors) and
    `_error` (the error class of a bad handle); its
    constructor calls `_assign`. Gives `_to`, `==` and `bool` by the object named, and the
    integer handles."""

    def toint(self):
        """MPI_*_c2f: the handle as an int (MPICH's numbers for the predefined ones)."""
        target = getattr(self, self._target)
        return signed(self._NULL_HANDLE if target is None else target.handle)

    @classmethod
    def fromint(cls, handle):
        """A handle to the object whose int `handle` is. MPI.Exception (the class's error) if
        it names none alive; OverflowError if it is no C int."""
        handle = c_int(handle) % 2**_INT_BITS
        if handle == cls._NULL_HANDLE:
            return cls()
        target = cls._by_handle.get(handle)
        if target is None:
            raise MPIException(cls._error, f"{cls.__name__}.fromint({signed(handle)!r}): "
                               f"no such {cls._what}")
        return cls._to(target)

    py2f, f2py = toint, fromint

    def _names_predefined(self):
        return 0 <= self.toint()

    def _nullify(self):
        self._assign(None)

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
        if not isinstance(other, self._owner()):
            return NotImplemented
        return getattr(other, self._target) is getattr(self, self._target)

    def __bool__(self):
        return getattr(self, self._target) is not None


class Numbers:
    """One handle class's integer handles (kept as 32-bit unsigned numbers): `null`'s, the
    predefined objects' (`predefine`), then one per object from `first` on, given when
    first asked for. An object is told by its identity (what its handles share, an object
    the table keeps so that its id is not reused); the table keeps one handle to it."""

    def __init__(self, null, first):
        self.null = null
        self._next = itertools.count(first)
        self._numbers = {}      # id(identity) -> (identity, number)
        self._handles = {}      # number -> (a handle, the identity it had)
        self._predefined = set()    # the ids of the predefined objects' identities
        self._lock = threading.Lock()   # (THREAD_MULTIPLE: one number per object)

    def predefine(self, constants):
        """(constant handle, MPICH's number) pairs: the predefined objects' numbers."""
        for handle, number in constants:
            self._add(handle, handle._identity(), number % 2**_INT_BITS)
            self._predefined.add(id(handle._identity()))

    def _add(self, handle, identity, number):
        self._numbers[id(identity)] = identity, number
        self._handles[number] = handle, identity

    def number(self, handle):
        """The number of the object `handle` names (given now if it has none)."""
        identity = handle._identity()
        if identity is None:
            return self.null
        with self._lock:
            known = self._numbers.get(id(identity))
            if known is not None:
                return known[1]
            number = next(self._next)
            self._add(handle, identity, number)
            return number

    def handle(self, number):
        """A handle to the object of `number`, None if it names none alive (never given, or
        the object freed)."""
        handle, identity = self._handles.get(number, (None, None))
        return handle if handle is not None and handle._identity() is identity else None

    def is_predefined(self, handle):
        identity = handle._identity()
        return identity is not None and id(identity) in self._predefined


class Numbered(_Common):
    """Mixed into a handle class, which sets `_numbers` (its Numbers table), `_error` (the
    error class of a bad handle) and `_identity()` (what the handles to one object share and
    others do not; None for a null handle), and is constructed as Class() (a null handle)
    and Class(handle) (another handle to the same object), or else sets `_another`."""

    def toint(self):
        """MPI_*_c2f: the handle as an int (MPICH's numbers for the null and predefined
        objects, then one per object)."""
        return signed(self._numbers.number(self))

    @classmethod
    def fromint(cls, arg, /):
        """MPI_*_f2c: a new handle to the object of integer handle `arg` (a null handle for
        the null one's). MPI.Exception (the class's error: ERR_COMM, ERR_TYPE, ...) if it
        names no object alive; OverflowError if it is no C int."""
        number = c_int(arg) % 2**_INT_BITS
        if number == cls._numbers.null:
            return cls._another(None)
        handle = cls._numbers.handle(number)
        if handle is None:
            raise MPIException(cls._error, f"{cls.__name__}.fromint({signed(number)}): no such "
                               "object (never made, or freed)")
        return cls._another(handle)

    py2f, f2py = toint, fromint

    @classmethod
    def _another(cls, handle):
        """A new handle to what `handle` names (None: a new null handle)."""
        return cls() if handle is None else type(handle)(handle)

    def _names_predefined(self):
        return self._numbers.is_predefined(self)

    def _nullify(self):
        """(free of a handle to a predefined object) This handle only becomes null."""
        null = type(self)()
        self.__class__, self.__dict__ = type(null), null.__dict__


# MPICH's numbers of its predefined objects (as mpi4py over MPICH gives them with toint).
COMM = {"null": 0x04000000, "first": 0x84000000, "WORLD": 0x44000000, "SELF": 0x44000001}
GROUP = {"null": 0x08000000, "first": 0x88000000, "EMPTY": 0x48000000}
OP = {"null": 0x18000000, "first": 0x98000000, "MAX": 0x58000001, "MIN": 0x58000002,
      "SUM": 0x58000003, "PROD": 0x58000004, "LAND": 0x58000005, "BAND": 0x58000006,
      "LOR": 0x58000007, "BOR": 0x58000008, "LXOR": 0x58000009, "BXOR": 0x5800000a,
      "MINLOC": 0x5800000b, "MAXLOC": 0x5800000c, "REPLACE": 0x5800000d, "NO_OP": 0x5800000e}
WIN = {"null": 0x20000000, "first": 0xa0000000}
REQUEST = {"null": 0x2c000000, "first": 0xac000000}
DATATYPE = {"null": 0x0c000000, "first": 0xcc000000}
DATATYPES = {
    "BYTE": 0x4c00010d, "CHAR": 0x4c000101, "SIGNED_CHAR": 0x4c000118,
    "UNSIGNED_CHAR": 0x4c000102, "SHORT": 0x4c000203, "UNSIGNED_SHORT": 0x4c000204,
    "INT": 0x4c000405, "UNSIGNED": 0x4c000406, "LONG": 0x4c000807, "UNSIGNED_LONG": 0x4c000808,
    "LONG_LONG": 0x4c000809, "UNSIGNED_LONG_LONG": 0x4c000819, "FLOAT": 0x4c00040a,
    "DOUBLE": 0x4c00080b, "LONG_DOUBLE": 0x4c00100c, "C_BOOL": 0x4c00013f,
    "INT8_T": 0x4c000137, "INT16_T": 0x4c000238, "INT32_T": 0x4c000439, "INT64_T": 0x4c00083a,
    "UINT8_T": 0x4c00013b, "UINT16_T": 0x4c00023c, "UINT32_T": 0x4c00043d,
    "UINT64_T": 0x4c00083e, "C_FLOAT_COMPLEX": 0x4c000840, "C_DOUBLE_COMPLEX": 0x4c001041,
    "C_LONG_DOUBLE_COMPLEX": 0x4c002042, "COMPLEX": 0x4c00081e, "DOUBLE_COMPLEX": 0x4c001022,
    "WCHAR": 0x4c00040e, "FLOAT16_T": 0x4c000246, "PACKED": 0x4c00010f, "AINT": 0x4c000843,
    "OFFSET": 0x4c000844, "COUNT": 0x4c000845, "CHARACTER": 0x4c00011a, "LOGICAL": 0x4c00041d,
    "INTEGER": 0x4c00041b, "REAL": 0x4c00041c, "DOUBLE_PRECISION": 0x4c00081f,
    "INTEGER1": 0x4c00012d, "INTEGER2": 0x4c00022f, "INTEGER4": 0x4c000430,
    "INTEGER8": 0x4c000831, "INTEGER16": 0x4c001032, "REAL2": 0x4c000226, "REAL4": 0x4c000427,
    "REAL8": 0x4c000829, "REAL16": 0x4c00102b, "COMPLEX4": 0x4c00042e, "COMPLEX8": 0x4c000828,
    "COMPLEX16": 0x4c00102a, "COMPLEX32": 0x4c00202c, "CXX_BOOL": 0x4c000133,
    "CXX_FLOAT_COMPLEX": 0x4c000834, "CXX_DOUBLE_COMPLEX": 0x4c001035,
    "CXX_LONG_DOUBLE_COMPLEX": 0x4c002036, "TWOINT": 0x4c000816,
    # (MPICH's pair types are not built in: handles with the high bit set)
    "FLOAT_INT": 0x8c000000, "DOUBLE_INT": 0x8c000001, "LONG_INT": 0x8c000002,
    "SHORT_INT": 0x8c000003, "LONG_DOUBLE_INT": 0x8c000004}


class SharedState:
    """Mixed into a Numbered handle class whose handles to one object share its __dict__
    (File(f) and Win(w) make another handle to f's or w's object, so that a Close or Free
    through one makes them all null), which sets `_alive`: the attribute that is None in a
    null handle. As mpi4py's handles: equal if they name the same object or are both null,
    unhashable, true while the object lives."""

    def __eq__(self, other):
        if not isinstance(other, self._sharing_class()):
            return NotImplemented
        return self.__dict__ is other.__dict__ or not self and not other

    __hash__ = None

    def __bool__(self):
        return getattr(self, self._alive) is not None

    def _identity(self):
        """(Numbered) What the handles to one object share; None when null."""
        return self.__dict__ if self else None

    @classmethod
    def _sharing_class(cls):
        """The handle class itself (the one that names `_alive`), for a subclass too."""
        return next(c for c in cls.__mro__ if "_alive" in vars(c))
