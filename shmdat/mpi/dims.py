"""MPI.Compute_dims (MPI_Dims_create): a balanced grid of processes, as a Cartesian
topology would lay them out."""

import math
import operator

from . import errors
from .errors import Exception as MPIException


def Compute_dims(nnodes, dims):
    """MPI_Dims_create: `dims` (a number of dimensions, or a sequence whose zeros are to be
    filled and whose other entries stay) with every zero replaced so that the product is
    `nnodes`, the filled ones as close to each other as possible (the smallest spread
    between the largest and the smallest, then the smallest first entries) and in
    non-increasing order; a new list (with no dimension, or none to fill for 0 processes,
    dims as given, as MPICH). MPI.Exception ERR_ARG for a negative nnodes, ERR_DIMS if a
    fixed entry is negative or the fixed entries do not divide nnodes (or a dimension is to
    be filled for 0 processes); ValueError for a negative number of dimensions, as mpi4py."""
    nnodes = operator.index(nnodes)
    if not isinstance(dims, (list, tuple)):
        ndims = operator.index(dims)
        if ndims < 0:
            raise ValueError(f"expecting {ndims} items, got 0")
        dims = [0] * ndims
    dims = [operator.index(d) for d in dims]
    if nnodes < 0:
        raise MPIException(errors.ERR_ARG, f"Compute_dims of {nnodes} processes")
    fixed = 1
    for d in dims:
        if d < 0:
            raise MPIException(errors.ERR_DIMS, f"a negative dimension in {dims}")
        fixed *= d or 1
    free = dims.count(0)
    if not free and nnodes == 0 or not dims:    # (nothing to fill: MPICH returns dims as given)
        return dims
    if nnodes % fixed or not free and fixed != nnodes or nnodes == 0:
        raise MPIException(errors.ERR_DIMS, f"{dims} cannot hold {nnodes} processes")
    if not free:
        return dims
    m = nnodes // fixed
    divisors = sorted({d for i in range(1, math.isqrt(m) + 1) if m % i == 0
                       for d in (i, m // i)}, reverse=True)
    filled = iter(min(_factorizations(m, free, m, divisors),
                      key=lambda f: (f[0] - f[-1], f)))
    return [d or next(filled) for d in dims]


def _factorizations(m, k, largest, divisors):
    """Every non-increasing list of k positive ints whose product is m, none above `largest`
    (`divisors`: a multiple's divisors, largest first)."""
    if k == 1:
        return [[m]] if m <= largest else []
    found = []
    for f in divisors:
        if f ** k < m:           # (the first factor is the largest: at least m's k-th root)
            break
        if f <= largest and m % f == 0:
            found += [[f] + rest for rest in _factorizations(m // f, k - 1, f, divisors)]
    return found
