"""MPI's reduction operations: the predefined MPI.SUM ... MPI.MINLOC (called on two Python
objects for the object collectives, mpi4py's rules; applied as a numpy ufunc for the buffer
collectives; all commutative) and user operations, `Op.Create(function, commute=False)`, whose
function takes (invec, inoutvec, datatype) as mpi4py passes them. A non-commutative operation
is applied in rank order: the algorithms ask `Is_commutative()` before reordering."""

import numpy as np

from . import errors, handles, unimplemented
from .datatypes import message
from .errors import Exception as MPIException


def _max(x, y):
    return y if y > x else x


def _min(x, y):
    return y if y < x else x


def _maxloc(x, y):
    """(value, index) pairs: the larger value; on a tie the smaller index."""
    if x[0] != y[0]:
        return x if x[0] > y[0] else y
    return x if x[1] <= y[1] else y


def _minloc(x, y):
    if x[0] != y[0]:
        return x if x[0] < y[0] else y
    return x if x[1] <= y[1] else y


def _loc_ufunc(better):
    """MAXLOC or MINLOC on arrays of (value, index) records (MPI.DOUBLE_INT ...), called
    as a ufunc: `out` (which is `acc`) takes `other`'s pair where it wins."""
    def apply(other, acc, out):
        if acc.dtype.names != ("value", "index"):
            raise MPIException(errors.ERR_OP, "MAXLOC and MINLOC need a (value, index) pair "
                               "datatype such as MPI.DOUBLE_INT")
        value, index = other["value"], other["index"]
        wins = better(value, acc["value"]) | (value == acc["value"]) & (index < acc["index"])
        out[wins] = other[wins]
    return apply


_PREDEFINED = {}     # name -> the predefined Op (SUM, ..., and the window's REPLACE, NO_OP)


def _predefined(name):
    """Unpickling a predefined op: this process's own."""
    return _PREDEFINED[name]


class Op(handles.Numbered, unimplemented.Missing):
    """A reduction operation (mpi4py's MPI.Op): `op(x, y)` on objects; on numpy arrays,
    `reduce_local(invec, inoutvec, datatype)` (inoutvec = invec op inoutvec, MPI's order).
    A predefined op applies a ufunc to the dtype kinds of MPI's table (`kinds`: logical ops on
    integers and C_BOOL, bitwise ones on integers and BYTE, ...); a user op (`function`
    taking byte buffers and the datatype, `kinds` None) applies to every datatype."""

    _unimplemented = unimplemented.OP
    _numbers = handles.Numbers(handles.OP["null"], handles.OP["first"])
    _error = errors.ERR_OP
    _constants = _PREDEFINED.values()

    def __init__(self, op=None):
        """mpi4py's Op(op=None): a null handle (false, equal to OP_NULL), or another handle to
        `op` (equal to it). Handles to one op share `_op`, what == compares."""
        if op is None:
            self.name, self._function, self._ufunc, self._kinds = "OP_NULL", None, None, None
            self._commute, self._op = True, None
        elif isinstance(op, Op):
            self.__dict__.update(op.__dict__)
        else:
            raise TypeError(f"expected an Op, not {type(op).__name__}")

    @classmethod
    def _make(cls, name, function, ufunc, kinds, commute=True):
        """A new op (predefined when it has a ufunc)."""
        op = cls.__new__(cls)
        op.name, op._function, op._ufunc, op._kinds = name, function, ufunc, kinds
        op._commute, op._op = commute, object()
        if ufunc is not None:
            _PREDEFINED[name] = op
            cls._numbers.predefine([(op, handles.OP[name])])
        return op

    def __eq__(self, other):
        if not isinstance(other, Op):
            return NotImplemented
        return other._op is self._op

    __hash__ = None     # (as mpi4py's handles)

    def __reduce__(self):
        """pickle: OP_NULL and a predefined op by name (the same object once loaded), another
        handle to one as a new handle to it, as mpi4py; a user op with its function (a new op)."""
        if self._op is None:
            return "OP_NULL" if self is OP_NULL else (type(self), ())
        if self._ufunc is not None:
            predefined = _PREDEFINED[self.name]
            return (_predefined, (self.name,)) if self is predefined else (type(self), (predefined,))
        return super().__reduce__()

    @property
    def is_predefined(self):
        """Whether the op is MPI's (OP_NULL too), not one of Op.Create."""
        return self._ufunc is not None or self._op is None

    @classmethod
    def Create(cls, function, commute=False):
        """MPI_Op_create: a user operation. `function(invec, inoutvec, datatype)` must leave
        invec op inoutvec in inoutvec (writable byte buffers of the same length; on objects
        it is called as function(x, y, None) and its result taken, as mpi4py does)."""
        if not callable(function):
            raise TypeError(f"Op.Create needs a callable, not {type(function).__name__}")
        return cls._make(getattr(function, "__name__", "user"), function, None, None, bool(commute))

    def Free(self):
        """MPI_Op_free: the handle becomes null, equal to MPI.OP_NULL (false; calling it is a
        ValueError, reducing with it ERR_OP).
        MPI.Exception ERR_OP for a predefined or already freed op."""
        if self._ufunc is not None or self._function is None:
            raise MPIException(errors.ERR_OP, f"{self!r} cannot be freed")
        self._function = self._op = None

    def __bool__(self):
        return self._op is not None

    def _identity(self):
        return self._op

    def Is_commutative(self):
        """MPI_Op_commutative. MPI.Exception ERR_OP once freed."""
        self.check(None)
        return self._commute

    @property
    def is_commutative(self):
        return self.Is_commutative()

    def __call__(self, x, y):
        if self._function is None:
            raise ValueError("MPI.OP_NULL cannot be called (as mpi4py)")
        if self._ufunc is None:
            return self._function(x, y, None)
        return self._function(x, y)

    def check(self, dtype):
        """MPI.Exception ERR_OP if the op is freed or not defined on numpy `dtype` (BAND on
        floats, MAXLOC on anything but a pair datatype...); None checks only the former."""
        if self._function is None:
            raise MPIException(errors.ERR_OP, "the op has been freed (MPI.OP_NULL)")
        if dtype is not None and self._kinds is not None and dtype.kind not in self._kinds:
            raise MPIException(errors.ERR_OP, f"MPI.{self.name} is not defined on {dtype}")

    def reduce_local(self, invec, inoutvec, datatype=None):
        """inoutvec = invec op inoutvec, elementwise on numpy arrays of one dtype and size
        (a user op gets their bytes and `datatype`). MPI.Exception ERR_OP as `check`."""
        self.check(inoutvec.dtype)
        if self._ufunc is None:
            self._function(memoryview(invec).cast("B"), memoryview(inoutvec).cast("B"),
                           datatype)
        else:
            self._ufunc(invec, inoutvec, out=inoutvec)

    def Reduce_local(self, inbuf, inoutbuf):
        """MPI_Reduce_local on buffer specs: inoutbuf = inbuf op inoutbuf. ValueError if their
        counts or datatypes differ (as mpi4py); MPI.Exception ERR_OP as `check`."""
        inview, count, datatype = message(inbuf, False)
        outview, outcount, outtype = message(inoutbuf, True)
        if (count, datatype) != (outcount, outtype):
            raise ValueError(f"mismatch in inbuf ({count} {datatype.Get_name()}) and inoutbuf "
                             f"({outcount} {outtype.Get_name()})")
        self.reduce_local(np.frombuffer(inview, datatype.dtype),
                          np.frombuffer(outview, datatype.dtype), datatype)

    def __repr__(self):
        return f"<Op MPI.{self.name}>" if self._ufunc is not None else f"<Op {self.name}>"


_NUMBERS, _REALS, _LOGICAL, _BITS = "iufc", "iuf", "iub", "iu"   # numpy dtype kinds
SUM = Op._make("SUM", lambda x, y: x + y, np.add, _NUMBERS)
PROD = Op._make("PROD", lambda x, y: x * y, np.multiply, _NUMBERS)
MAX = Op._make("MAX", _max, np.maximum, _REALS)
MIN = Op._make("MIN", _min, np.minimum, _REALS)
LAND = Op._make("LAND", lambda x, y: x and y, np.logical_and, _LOGICAL)
LOR = Op._make("LOR", lambda x, y: x or y, np.logical_or, _LOGICAL)
LXOR = Op._make("LXOR", lambda x, y: bool(x) != bool(y), np.logical_xor, _LOGICAL)
BAND = Op._make("BAND", lambda x, y: x & y, np.bitwise_and, _BITS)
BOR = Op._make("BOR", lambda x, y: x | y, np.bitwise_or, _BITS)
BXOR = Op._make("BXOR", lambda x, y: x ^ y, np.bitwise_xor, _BITS)
MAXLOC = Op._make("MAXLOC", _maxloc, _loc_ufunc(np.greater), "V")
MINLOC = Op._make("MINLOC", _minloc, _loc_ufunc(np.less), "V")
OP_NULL = Op()
