"""MPI's predefined reduction operations (MPI.SUM ... MPI.MINLOC): called on two Python
objects for the object collectives (mpi4py's rules), applied as a numpy ufunc for the buffer
collectives. All are commutative, so the reduction algorithms may combine in any order."""

import numpy as np

from . import errors
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
    def apply(acc, other, out):
        if acc.dtype.names != ("value", "index"):
            raise MPIException(errors.ERR_OP, "MAXLOC and MINLOC need a (value, index) pair "
                               "datatype such as MPI.DOUBLE_INT")
        value, index = other["value"], other["index"]
        wins = better(value, acc["value"]) | (value == acc["value"]) & (index < acc["index"])
        out[wins] = other[wins]
    return apply


class Op:
    """A reduction operation: `op(x, y)` on objects; `reduce_into(acc, other)` on arrays
    whose numpy dtype kind is one of `kinds` (MPI's table of which op takes which types:
    logical ops on integers and C_BOOL, bitwise ones on integers and BYTE, ...)."""

    def __init__(self, name, function, ufunc, kinds):
        self.name, self._function, self._ufunc, self._kinds = name, function, ufunc, kinds

    def __call__(self, x, y):
        return self._function(x, y)

    def Is_commutative(self):
        return True

    def reduce_into(self, acc, other):
        """acc = acc op other, elementwise on numpy arrays of one dtype. MPI.Exception
        ERR_OP if the operation is not defined on that dtype (BAND on floats, MAXLOC on
        anything but a pair datatype...)."""
        if acc.dtype.kind not in self._kinds:
            raise MPIException(errors.ERR_OP, f"MPI.{self.name} is not defined on {acc.dtype}")
        self._ufunc(acc, other, out=acc)

    def __repr__(self):
        return f"<Op MPI.{self.name}>"


_NUMBERS, _REALS, _LOGICAL, _BITS = "iufc", "iuf", "iub", "iu"   # numpy dtype kinds
SUM = Op("SUM", lambda x, y: x + y, np.add, _NUMBERS)
PROD = Op("PROD", lambda x, y: x * y, np.multiply, _NUMBERS)
MAX = Op("MAX", _max, np.maximum, _REALS)
MIN = Op("MIN", _min, np.minimum, _REALS)
LAND = Op("LAND", lambda x, y: x and y, np.logical_and, _LOGICAL)
LOR = Op("LOR", lambda x, y: x or y, np.logical_or, _LOGICAL)
LXOR = Op("LXOR", lambda x, y: bool(x) != bool(y), np.logical_xor, _LOGICAL)
BAND = Op("BAND", lambda x, y: x & y, np.bitwise_and, _BITS)
BOR = Op("BOR", lambda x, y: x | y, np.bitwise_or, _BITS)
BXOR = Op("BXOR", lambda x, y: x ^ y, np.bitwise_xor, _BITS)
MAXLOC = Op("MAXLOC", _maxloc, _loc_ufunc(np.greater), "V")
MINLOC = Op("MINLOC", _minloc, _loc_ufunc(np.less), "V")
