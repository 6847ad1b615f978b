"""MPI's named datatypes and buffer specs as mpi4py takes them: `buf`, `[buf, T]`,
`[buf, count, T]` (and tuples). The MPI datatype, not the buffer's format, sets the element
size; a bare buffer's datatype comes from its format (a numpy dtype's character)."""

import math
import operator
import sys

import numpy as np

from . import attributes, dlpack, errors, external32, handles, typemap, unimplemented
from .buffer import buffer
from .errors import Exception as MPIException

ORDER_C, ORDER_F = 56, 57       # Create_subarray's orders (MPICH's; mpi4py's ORDER_FORTRAN is ORDER_F)
# Datatype.combiner: the constructor that made a datatype (MPICH's numbers).
COMBINER_NAMED, COMBINER_DUP, COMBINER_CONTIGUOUS, COMBINER_VECTOR, COMBINER_HVECTOR = 1, 2, 3, 4, 6
COMBINER_INDEXED, COMBINER_HINDEXED, COMBINER_INDEXED_BLOCK, COMBINER_STRUCT = 7, 9, 10, 12
COMBINER_SUBARRAY, COMBINER_RESIZED, COMBINER_HINDEXED_BLOCK = 13, 18, 19
COMBINER_DARRAY, COMBINER_F90_REAL, COMBINER_F90_COMPLEX, COMBINER_F90_INTEGER = 14, 15, 16, 17
COMBINER_VALUE_INDEX = 20       # (MPICH makes none: Get_value_index gives a named pair or null)
# Create_darray's distributions, and its darg meaning "the default block size" (MPICH's).
DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC, DISTRIBUTE_NONE, DISTRIBUTE_DFLT_DARG = 121, 122, 123, -49767
# Match_size's type classes (MPICH's).
TYPECLASS_REAL, TYPECLASS_INTEGER, TYPECLASS_COMPLEX, TYPECLASS_LOGICAL = 1, 2, 3, 4


class Datatype(attributes.Keyvals, handles.Numbered, unimplemented.Missing):
    """A named MPI datatype (its Create_* methods make Derived ones): `size`, its data's
    bytes, and `extent`, its stride in a buffer (larger for the padded pair types);
    `typemap`, where its bytes lie (typemap.py); `Get_size()`, `Get_extent()`,
    `Get_name()`; `dtype`, the numpy dtype reductions compute in."""

    _unimplemented = unimplemented.DATATYPE
    _numbers = handles.Numbers(handles.DATATYPE["null"], handles.DATATYPE["first"])
    _error = errors.ERR_TYPE
    _kind = "Datatype"

    is_named = is_predefined = True
    committed = True
    combiner = COMBINER_NAMED

    def __init__(self, datatype=None):
        """mpi4py's Datatype(datatype=None): another handle to `datatype` (equal to it, not it:
        its name, attributes and commit shared; Free frees this handle only), or a new null
        handle. TypeError for anything else."""
        if datatype is None:
            datatype = DATATYPE_NULL
        elif not isinstance(datatype, Datatype):
            raise TypeError(f"expected a Datatype, not {type(datatype).__name__}")
        self.__dict__ = datatype.__dict__
        if not isinstance(self, type(datatype)):    # (its kind's class; a subclass's kept)
            self.__class__ = type(datatype)

    @classmethod
    def _predefined(cls, name, size, format, extent=None):
        """A named datatype: `format`, the buffer format character of a matching numpy dtype
        (or None); `extent`, if not `size` (the padded pair types)."""
        self = object.__new__(cls)
        self._name, self.size, self._format = name, size, format
        self.extent = extent or size
        self.wire_size = self.extent    # bytes an element takes in a message (padding too)
        self.dtype = np.dtype(_REDUCE_AS.get(name, format))
        self.typemap = typemap.named(size, self.extent, _PAIR_RUNS.get(name),
                                     _ALIGNS.get(name) or self.dtype.alignment)
        self._char = _CHARS.get(name, format)           # (mpi4py's typechar, None: "V")
        self._code = _CODES.get(name, self._char)       # (mpi4py's tocode, None: none)
        return self

    # Handles: two are equal when they name the same datatype (their state is one dict).

    def __eq__(self, other):
        if not isinstance(other, Datatype):
            return NotImplemented
        return other.__dict__ is self.__dict__

    __hash__ = None     # (as mpi4py's handles)

    def _identity(self):
        return self.__dict__ if self else None

    @classmethod
    def _another(cls, handle):
        return Datatype(handle)

    @classmethod
    def fromcode(cls, code):
        """mpi4py's Datatype.fromcode: the named datatype of a typecode ('i', 'd', 'Zd', 'i4',
        'f8', ...). ValueError for a code naming none here."""
        found = _BY_CODE.get(code) if isinstance(code, str) else None
        if found is None:
            raise ValueError(f"cannot map code {code!r} to MPI datatype")
        return found

    def Get_size(self):
        return self.size

    def Get_extent(self):
        """MPI_Type_get_extent: (lb, extent)."""
        return self.typemap.lb, self.extent

    def Get_true_extent(self):
        """MPI_Type_get_true_extent: (true_lb, true_extent), where the bytes really are."""
        t = self.typemap
        return t.true_lb, t.true_ub - t.true_lb

    @property
    def typestr(self):
        """mpi4py's typestr: numpy's type string of the datatype's element (its C type's;
        "V" and the extent for a pair type or a derived datatype; a Dup's, its original's)."""
        if self.combiner == COMBINER_DUP:
            return self._contents[3][0].typestr
        if not self.is_named or self.dtype.names is not None:
            return f"V{self.extent}"
        special = _TYPESTR.get(self._name)
        if special is not None:
            return special
        return (np.dtype(self._format) if self._format else self.dtype).str[1:]

    @property
    def typechar(self):
        """mpi4py's typechar: the character code of the datatype's C type ("V" if none)."""
        return self._char or "V"

    def tocode(self):
        """mpi4py's tocode: the typecode Datatype.fromcode maps back to this datatype ('i',
        'd', 'i4', ...). ValueError if it has none (a pair or derived datatype)."""
        code = _typecode(self)
        if code is None:
            raise ValueError("cannot map to character code or type string")
        return code

    lb = property(lambda self: self.typemap.lb)
    ub = property(lambda self: self.typemap.ub)
    true_lb = property(lambda self: self.typemap.true_lb)
    true_ub = property(lambda self: self.typemap.true_ub)
    true_extent = property(lambda self: self.Get_true_extent()[1])

    # Derived datatypes (MPI 4.1 section 5.1; typemap.py): made uncommitted, as MPI's. Each
    # keeps its constructor's arguments as MPICH's MPI_Type_get_contents_c gives them:
    # (integers, addresses, large counts, datatypes).

    def Create_contiguous(self, count):
        """MPI_Type_contiguous: `count` elements, one after the other."""
        count = _count(count)
        return Derived(typemap.blocks([(self.typemap, count, 0)]), COMBINER_CONTIGUOUS,
                       ([], [], [count], [self]))

    def Create_vector(self, count, blocklength, stride):
        """MPI_Type_vector: `count` blocks of `blocklength` elements, `stride` elements apart."""
        return self._hvector(count, blocklength, stride, _int(stride) * self.extent, COMBINER_VECTOR)

    def Create_hvector(self, count, blocklength, stride):
        """MPI_Type_create_hvector: as Create_vector, `stride` in bytes."""
        return self._hvector(count, blocklength, stride, _int(stride), COMBINER_HVECTOR)

    def _hvector(self, count, blocklength, stride, stride_bytes, combiner):
        count, length = _count(count), _count(blocklength)
        return Derived(typemap.blocks([(self.typemap, length, i * stride_bytes) for i in range(count)]),
                       combiner, ([], [], [count, length, _int(stride)], [self]))

    def Create_indexed(self, blocklengths, displacements):
        """MPI_Type_indexed: blocks of blocklengths[i] elements at displacements[i] elements."""
        return self._hindexed(blocklengths, displacements, self.extent, COMBINER_INDEXED)

    def Create_hindexed(self, blocklengths, displacements):
        """MPI_Type_create_hindexed: as Create_indexed, displacements in bytes."""
        return self._hindexed(blocklengths, displacements, 1, COMBINER_HINDEXED)

    def Create_indexed_block(self, blocklength, displacements):
        """MPI_Type_create_indexed_block: Create_indexed with one blocklength."""
        return self._hindexed([blocklength] * len(displacements), displacements, self.extent,
                              COMBINER_INDEXED_BLOCK)

    def Create_hindexed_block(self, blocklength, displacements):
        """MPI_Type_create_hindexed_block: Create_hindexed with one blocklength."""
        return self._hindexed([blocklength] * len(displacements), displacements, 1,
                              COMBINER_HINDEXED_BLOCK)

    def _hindexed(self, blocklengths, displacements, unit, combiner):
        """The indexed family: displacements in `unit` bytes (1: the h- forms)."""
        pairs = [(_count(n), _int(d)) for n, d in _pairs(blocklengths, displacements)]
        lengths, displs = [n for n, _ in pairs], [d for _, d in pairs]
        if combiner in (COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK):
            counts = [len(pairs), lengths[0] if lengths else 0, *displs]
        else:
            counts = [len(pairs), *lengths, *displs]
        return Derived(typemap.blocks([(self.typemap, n, d * unit) for n, d in pairs]), combiner,
                       ([], [], counts, [self]))

    @classmethod
    def Create_struct(cls, blocklengths, displacements, datatypes):
        """MPI_Type_create_struct: blocks of blocklengths[i] of datatypes[i] at byte
        displacements[i]; the extent padded to the largest alignment, as C's structs."""
        types = [named(t) for t in datatypes]
        if len(types) != len(blocklengths):
            raise ValueError(f"Create_struct: {len(blocklengths)} blocklengths for "
                             f"{len(types)} datatypes")
        pairs = [(_count(n), _int(d)) for n, d in _pairs(blocklengths, displacements)]
        return Derived(typemap.blocks([(t.typemap, n, d) for (n, d), t in zip(pairs, types)],
                                      pad=True), COMBINER_STRUCT,
                       ([], [], [len(pairs), *(n for n, _ in pairs), *(d for _, d in pairs)], types))

    def Create_subarray(self, sizes, subsizes, starts, order=ORDER_C):
        """MPI_Type_create_subarray: the subsizes block at starts of a sizes array (ORDER_C:
        row-major, ORDER_FORTRAN: column-major); its extent the whole array's. MPI.Exception
        ERR_ARG for a block outside the array or an unknown order."""
        sizes, subsizes, starts = ([_int(v) for v in seq] for seq in (sizes, subsizes, starts))
        if not (len(sizes) == len(subsizes) == len(starts) > 0) or order not in (ORDER_C, ORDER_F) \
                or any(not (0 <= st and 0 <= sub and st + sub <= size and size > 0)
                       for size, sub, st in zip(sizes, subsizes, starts)):
            raise MPIException(errors.ERR_ARG, f"Create_subarray: subsizes {subsizes} at "
                               f"{starts} of sizes {sizes}, order {order}")
        return Derived(typemap.subarray(self.typemap, sizes, subsizes, starts, order == ORDER_C),
                       COMBINER_SUBARRAY, ([len(sizes), order], [], sizes + subsizes + starts, [self]))

    def Create_resized(self, lb, extent):
        """MPI_Type_create_resized: the same bytes, bounds lb and lb + extent."""
        lb, extent = _int(lb), _int(extent)
        return Derived(typemap.resized(self.typemap, lb, extent), COMBINER_RESIZED,
                       ([], [], [lb, extent], [self]))

    Resized = Create_resized

    def Create_darray(self, size, rank, gsizes, distribs, dargs, psizes, order=ORDER_C):
        """MPI_Type_create_darray: the part of a gsizes array (ORDER_C or ORDER_F) that process
        `rank` of `size` holds, the processes a psizes grid (row-major), each dimension
        DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC (dargs: the block size, or DISTRIBUTE_DFLT_DARG)
        or DISTRIBUTE_NONE; its extent the whole array's. MPI.Exception ERR_RANK (rank not
        in size), ERR_ARG (a darg too small or not positive, a grid not of `size` processes,
        an undistributed dimension over more than 1, an unknown distribution or order, no
        dimension or an empty one: MPICH makes a datatype of these, or aborts); ValueError
        (lists of other lengths), TypeError."""
        size, rank, order = _int(size), _int(rank), _int(order)
        gsizes = [_int(v) for v in gsizes]
        distribs, dargs, psizes = (_per_dim(seq, len(gsizes)) for seq in (distribs, dargs, psizes))
        if not 0 <= rank < size:
            raise MPIException(errors.ERR_RANK, f"Create_darray: rank {rank} of {size}")
        if not gsizes or min(gsizes) <= 0 or min(psizes) <= 0 or math.prod(psizes) != size \
                or order not in (ORDER_C, ORDER_F):
            raise MPIException(errors.ERR_ARG, f"Create_darray: gsizes {gsizes} over psizes "
                               f"{psizes} for {size} processes, order {order}")
        held = [_held(*dim) for dim in zip(gsizes, distribs, dargs, psizes, _coords(rank, psizes))]
        return Derived(typemap.darray(self.typemap, gsizes, held, order == ORDER_C),
                       COMBINER_DARRAY, ([size, rank, len(gsizes), *distribs, *dargs, *psizes,
                                          order], [], gsizes, [self]))

    @classmethod
    def Create_f90_integer(cls, r):
        """MPI_Type_create_f90_integer: a predefined integer datatype of at least `r` decimal
        digits (the same one for the same r). MPI.Exception ERR_OTHER beyond 38 digits."""
        r = _int(r)
        return _f90(COMBINER_F90_INTEGER, TYPECLASS_INTEGER,
                    next((size for digits, size in _F90_INTEGERS if r <= digits), None), [r])

    @classmethod
    def Create_f90_real(cls, p, r):
        """MPI_Type_create_f90_real: a predefined real datatype of at least `p` decimal digits
        and exponent range `r` (the same one for the same p and r). MPI.Exception ERR_OTHER
        beyond 33 digits or 4931."""
        p, r = _int(p), _int(r)
        return _f90(COMBINER_F90_REAL, TYPECLASS_REAL, _f90_real_size(p, r), [p, r])

    @classmethod
    def Create_f90_complex(cls, p, r):
        """MPI_Type_create_f90_complex: as Create_f90_real, of a complex (two reals)."""
        p, r = _int(p), _int(r)
        size = _f90_real_size(p, r)
        return _f90(COMBINER_F90_COMPLEX, TYPECLASS_COMPLEX, size and 2 * size, [p, r])

    @classmethod
    def Match_size(cls, typeclass, size):
        """MPI_Type_match_size: MPICH's named Fortran datatype of `typeclass` (TYPECLASS_INTEGER,
        _REAL, _COMPLEX, _LOGICAL) and `size` bytes. MPI.Exception ERR_ARG if none."""
        found = _MATCHED.get((_int(typeclass), _int(size)))
        if found is None:
            raise MPIException(errors.ERR_ARG, f"Match_size: no type of class {typeclass} and "
                               f"{size} bytes")
        return found

    @classmethod
    def Get_value_index(cls, value_type, index_type):
        """MPI_Type_get_value_index (MPI 4.1): the named pair datatype of a value and an index
        (MPI.DOUBLE, MPI.INT: MPI.DOUBLE_INT), a new null handle for a pair with none (MPICH
        has them for an INT index only). MPI.Exception ERR_TYPE for a null datatype;
        TypeError for what is no Datatype."""
        for datatype in (value_type, index_type):
            if not isinstance(datatype, Datatype):
                raise TypeError(f"expected a Datatype, not {type(datatype).__name__}")
            if datatype == DATATYPE_NULL:
                raise MPIException(errors.ERR_TYPE, "Get_value_index of MPI_DATATYPE_NULL")
        pair = _VALUE_INDEX.get(id(value_type.__dict__)) if index_type == NAMED["INT"] else None
        return Datatype() if pair is None else pair

    def Dup(self):
        """MPI_Type_dup: the same type map (committed if this is), the attributes its keyvals'
        copy_fn give."""
        dup = Derived(self.typemap, COMBINER_DUP, ([], [], [], [self]))
        dup.committed = self.committed
        if self._attrs is not None:
            dup._attrs = self._attrs.copied(self)
        return dup

    Create_dup = Dup                    # (mpi4py's alias)

    # What made a datatype (MPI_Type_get_envelope, _get_contents, and mpi4py's decode).

    def Get_envelope(self):
        """MPI_Type_get_envelope_c: (integers, addresses, large counts, datatypes, combiner),
        the sizes of what Get_contents gives, as MPICH's."""
        return (0, 0, 0, 0, COMBINER_NAMED)

    envelope = property(lambda self: self.Get_envelope())

    def Get_contents(self):
        """MPI_Type_get_contents_c: (integers, addresses, large counts, datatypes) a derived
        datatype was made from. MPI.Exception ERR_TYPE for a named datatype."""
        raise MPIException(errors.ERR_TYPE, f"Get_contents of the named datatype {self.Get_name()}")

    contents = property(lambda self: self.Get_contents())

    def decode(self):
        """mpi4py's decode: (the datatype it was made from, the combiner's name, the
        constructor's arguments by name); a named datatype is (itself, "NAMED", {}), a
        struct's is (DATATYPE_NULL, "STRUCT", {..., "datatypes": [...]})."""
        return self, "NAMED", {}

    def Commit(self):
        """MPI_Type_commit: this datatype may now be used in communication."""
        return self

    def Pack(self, inbuf, outbuf, position, comm):
        """MPI_Pack: the elements `inbuf` holds (its bytes // extent of them), packed (their
        bytes without gaps) into `outbuf` from byte `position`; the position after them.
        `comm` is not used. MPI.Exception ERR_ARG (a negative position), ERR_TRUNCATE (no
        room in outbuf), ERR_TYPE (not committed)."""
        data = self._elements_of(inbuf, False)
        out = _contiguous_bytes(outbuf, True)[1]
        count, start, end = self._packed_span(data, out, position, "Pack")
        out[start:end] = typemap.pack(self.typemap, data, count)
        return end

    def Unpack(self, inbuf, position, outbuf, comm):
        """MPI_Unpack: the elements `outbuf` holds (its bytes // extent of them), placed
        from the packed bytes of `inbuf` at byte `position`; the position after them.
        Errors as Pack's (ERR_TRUNCATE: inbuf holds too few bytes)."""
        out = self._elements_of(outbuf, True)
        data = _contiguous_bytes(inbuf, False)[1]
        count, start, end = self._packed_span(out, data, position, "Unpack")
        typemap.unpack(self.typemap, data[start:end], out, count, end - start)
        return end

    def _packed_span(self, elements, packed, position, what):
        """(the elements in `elements`, start, end) of their packed bytes in `packed` from
        `position`; MPI.Exception ERR_TRUNCATE if packed has not the room, ERR_ARG."""
        count = len(elements) // self.extent if self.extent > 0 else 0
        start = _position(position)
        end = start + count * self.size
        if end > len(packed):
            raise MPIException(errors.ERR_TRUNCATE, f"{what}: {count * self.size} packed bytes "
                               f"from position {start} of {len(packed)}")
        return count, start, end

    def Pack_size(self, count, comm):
        """MPI_Pack_size: the bytes Pack needs for `count` elements."""
        return _count(count) * self.size

    # The portable representation "external32" (shmdat/mpi/external32.py). `datarep` is not
    # looked at: MPICH takes any name alike.

    def Pack_external(self, datarep, inbuf, outbuf, position):
        """MPI_Pack_external: as Pack, in external32; the position after the elements.
        MPI.Exception ERR_ARG, ERR_TRUNCATE, ERR_TYPE as Pack's (MPICH writes past outbuf's
        end instead of ERR_TRUNCATE); NotImplementedCall where external32 is not
        implemented (shmdat/mpi/external32.py: derived datatypes)."""
        form = _external32(self)
        data = self._elements_of(inbuf, False)
        out = _contiguous_bytes(outbuf, True)[1]
        count = len(data) // self.extent
        start, end = self._external_span(count, form, len(out), position, "Pack_external")
        out[start:end] = form.pack(data, count)
        return end

    def Unpack_external(self, datarep, inbuf, position, outbuf):
        """MPI_Unpack_external: as Unpack, from external32. Errors as Pack_external's
        (ERR_TRUNCATE: inbuf holds too few bytes)."""
        form = _external32(self)
        out = self._elements_of(outbuf, True)
        data = _contiguous_bytes(inbuf, False)[1]
        count = len(out) // self.extent
        start, end = self._external_span(count, form, len(data), position, "Unpack_external")
        form.unpack(data[start:end], out, count)
        return end

    def Pack_external_size(self, datarep, count):
        """MPI_Pack_external_size: the bytes `count` elements take in external32."""
        return _count(count) * _external32(self).itemsize

    @staticmethod
    def _external_span(count, form, room, position, what):
        """(start, end) of `count` elements in external32 from `position`; MPI.Exception
        ERR_TRUNCATE if `room` bytes have not the room, ERR_ARG."""
        start = _position(position)
        end = start + count * form.itemsize
        if end > room:
            raise MPIException(errors.ERR_TRUNCATE, f"{what}: {end - start} bytes from "
                               f"position {start} of {room}")
        return start, end

    def _elements_of(self, buf, writable):
        """Pack's and Unpack's user buffer, as bytes (ERR_TYPE if not committed)."""
        if not self.committed:
            raise MPIException(errors.ERR_TYPE, "a derived datatype not committed (Commit() first)")
        return _contiguous_bytes(buf, writable)[1]

    def Free(self):
        """MPI_Type_free. MPI.Exception ERR_TYPE for a named datatype."""
        raise MPIException(errors.ERR_TYPE, f"Free of the named datatype {self.Get_name()}")

    _given_name = None          # what Set_name gave

    def Get_name(self):
        if self._given_name is not None:
            return self._given_name
        return _MPI_NAMES.get(self._name) or f"MPI_{self._name}"

    def Set_name(self, name):
        """MPI_Type_set_name (this process's handle only). TypeError if `name` is not a str."""
        if not isinstance(name, str):
            raise TypeError(f"a datatype's name is a str, not {type(name).__name__}")
        self._given_name = name

    name = property(lambda self: self.Get_name(), lambda self, name: self.Set_name(name))

    # Attributes (a named datatype may hold them too; it has no Dup).

    _attrs = None               # made at the first Set_attr

    def Get_attr(self, keyval):
        """MPI_Type_get_attr: the keyval's value, None if not set. TypeError, MPI.Exception
        ERR_KEYVAL (no Datatype keyval)."""
        return (self._attrs or _NO_ATTRIBUTES).get(self._kind, keyval)

    def Set_attr(self, keyval, attrval):
        """MPI_Type_set_attr: a value already set is deleted first (its delete_fn).
        MPI.Exception ERR_KEYVAL, ERR_OTHER (the delete_fn raised); TypeError."""
        if self._attrs is None:
            self._attrs = attributes.Attributes()
        self._attrs.set(self, self._kind, keyval, attrval)

    def Delete_attr(self, keyval):
        """MPI_Type_delete_attr (nothing if not set). MPI.Exception ERR_KEYVAL, ERR_OTHER."""
        (self._attrs or _NO_ATTRIBUTES).delete(self, self._kind, keyval)

    def __repr__(self):
        return f"<Datatype {self.Get_name()}>"

    def __reduce__(self):
        """pickle: a named datatype by its name (this process's own, as mpi4py's; another
        handle to it, another handle to this process's)."""
        if self is _PREDEFINED[self._name]:
            return _unpickled, (self._name,)
        return Datatype, (_PREDEFINED[self._name],)


_NO_ATTRIBUTES = attributes.Attributes()     # (a datatype's before its first Set_attr: empty)
_COMBINER_NAMES = {COMBINER_DUP: "DUP", COMBINER_CONTIGUOUS: "CONTIGUOUS", COMBINER_VECTOR: "VECTOR",
                   COMBINER_HVECTOR: "HVECTOR", COMBINER_INDEXED: "INDEXED",
                   COMBINER_HINDEXED: "HINDEXED", COMBINER_INDEXED_BLOCK: "INDEXED_BLOCK",
                   COMBINER_HINDEXED_BLOCK: "HINDEXED_BLOCK", COMBINER_SUBARRAY: "SUBARRAY",
                   COMBINER_RESIZED: "RESIZED", COMBINER_DARRAY: "DARRAY",
                   COMBINER_F90_INTEGER: "F90_INTEGER", COMBINER_F90_REAL: "F90_REAL",
                   COMBINER_F90_COMPLEX: "F90_COMPLEX"}


def _decoded(combiner, integers, counts):
    """decode()'s arguments by name, from a derived datatype's contents (not a struct's)."""
    if combiner in (COMBINER_VECTOR, COMBINER_HVECTOR):
        return dict(zip(("count", "blocklength", "stride"), counts))
    if combiner in (COMBINER_INDEXED, COMBINER_HINDEXED):
        n = counts[0]
        return {"blocklengths": counts[1:n + 1], "displacements": counts[n + 1:]}
    if combiner in (COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK):
        return {"blocklength": counts[1], "displacements": counts[2:]}
    if combiner == COMBINER_SUBARRAY:
        ndims, order = integers
        return {"sizes": counts[:ndims], "subsizes": counts[ndims:2 * ndims],
                "starts": counts[2 * ndims:], "order": order}
    if combiner == COMBINER_RESIZED:
        return {"lb": counts[0], "extent": counts[1]}
    if combiner == COMBINER_DARRAY:
        n = integers[2]
        return {"size": integers[0], "rank": integers[1], "gsizes": counts,
                "distribs": integers[3:3 + n], "dargs": integers[3 + n:3 + 2 * n],
                "psizes": integers[3 + 2 * n:3 + 3 * n], "order": integers[-1]}
    if combiner == COMBINER_CONTIGUOUS:
        return {"count": counts[0]}
    return {}                           # DUP


# typestr where numpy's type string of the buffer format is not mpi4py's.
_TYPESTR = {"WCHAR": "U1", "PACKED": "u1"}
# The MAXLOC/MINLOC pair types' bytes: the value, then the int after the value's padding.
_PAIR_RUNS = {"SHORT_INT": ((0, 2), (4, 4)), "LONG_INT": ((0, 8), (8, 4)),
              "DOUBLE_INT": ((0, 8), (8, 4)), "LONG_DOUBLE_INT": ((0, 16), (16, 4))}


def _int(value):
    """A count, length or displacement of a datatype constructor: an int (TypeError else)."""
    return operator.index(value)


def _count(value):
    """A count or blocklength: an int at least 0, MPI.Exception ERR_COUNT if negative."""
    value = operator.index(value)
    if value < 0:
        raise MPIException(errors.ERR_COUNT, f"a negative count {value}")
    return value


def _position(value):
    """Pack's and Unpack's byte position: an int at least 0 (MPI.Exception ERR_ARG else)."""
    value = operator.index(value)
    if value < 0:
        raise MPIException(errors.ERR_ARG, f"a negative position {value}")
    return value


def _per_dim(values, ndims):
    """Create_darray's distribs, dargs or psizes: `ndims` ints (ValueError else, as mpi4py's)."""
    values = [_int(v) for v in values]
    if len(values) != ndims:
        raise ValueError(f"expecting {ndims} items, got {len(values)}")
    return values


def _coords(rank, psizes):
    """The coordinates of `rank` in a psizes grid of processes, row-major (MPI's, whatever
    the array's order)."""
    coords = []
    for psize in reversed(psizes):
        rank, coord = divmod(rank, psize)
        coords.append(coord)
    return coords[::-1]


def _held(gsize, distrib, darg, psize, coord):
    """The (start, length) runs of a darray dimension's gsize indices that grid coordinate
    `coord` holds: DISTRIBUTE_BLOCK one block (darg long, at least gsize / psize),
    DISTRIBUTE_CYCLIC blocks of darg (1 by default) dealt round the psize processes,
    DISTRIBUTE_NONE all (psize 1). MPI.Exception ERR_ARG for a darg or psize that does not
    fit, an unknown distribution."""
    if distrib == DISTRIBUTE_NONE and psize == 1:
        return [(0, gsize)]
    if distrib == DISTRIBUTE_BLOCK:
        block = -(-gsize // psize) if darg == DISTRIBUTE_DFLT_DARG else darg
        fits = 0 < block and gsize <= block * psize
    elif distrib == DISTRIBUTE_CYCLIC:
        block = 1 if darg == DISTRIBUTE_DFLT_DARG else darg
        fits = 0 < block
    else:
        fits = False
    if not fits:
        raise MPIException(errors.ERR_ARG, f"Create_darray: distribution {distrib} with darg "
                           f"{darg} of {gsize} over {psize}")
    return [(start, min(block, gsize - start))
            for start in range(coord * block, gsize, psize * block)]


# Create_f90_integer's sizes (the most decimal digits, bytes) and Create_f90_real's (the most
# digits, the largest exponent, bytes), as MPICH's.
_F90_INTEGERS = ((2, 1), (4, 2), (9, 4), (18, 8), (38, 16))
_F90_REALS = ((3, 4, 2), (6, 37, 4), (15, 307, 8), (33, 4931, 16))
_F90_MADE = {}          # (combiner, its integers) -> the datatype, made once as MPICH's


def _f90_real_size(p, r):
    return next((size for digits, exponent, size in _F90_REALS if p <= digits and r <= exponent),
                None)


def _f90(combiner, typeclass, size, integers):
    """A new handle to the Create_f90_* datatype of `size` bytes (None: none, MPI.Exception
    ERR_OTHER)."""
    if size is None:
        raise MPIException(errors.ERR_OTHER, f"no Fortran 90 type of {integers}")
    key = (combiner, *integers)
    made = _F90_MADE.get(key)
    if made is None:
        made = _F90_MADE[key] = Fortran90(_MATCHED[typeclass, size], combiner, integers)
    return Datatype(made)


def _pairs(blocklengths, displacements):
    """(blocklength, displacement) pairs; ValueError if the sequences' lengths differ."""
    if len(blocklengths) != len(displacements):
        raise ValueError(f"{len(blocklengths)} blocklengths but {len(displacements)} "
                         "displacements")
    return zip(blocklengths, displacements)


class Derived(Datatype):
    """A datatype a Create_* call made: its type map (typemap.py), packed on the wire; not
    usable in communication until committed (MPI.Exception ERR_TYPE), and no reduction
    applies to it here (NotImplementedCall)."""

    is_named = is_predefined = False
    committed = False

    def __init__(self, tmap, combiner, contents):
        integers, addresses, counts, types = contents
        self.typemap, self.size, self.extent = tmap, tmap.size, tmap.extent
        self.combiner = combiner
        # (handles of its own to the datatypes it was made of: freeing the caller's leaves them)
        self._contents = (integers, addresses, counts, [_handle(t) for t in types])
        self.wire_size = self.size
        self._format = None

    @property
    def dtype(self):
        unimplemented.missing("Datatype", {"reductions over a derived datatype"},
                              "reductions over a derived datatype")

    def Get_name(self):
        return "" if self._given_name is None else self._given_name

    # mpi4py's typechar and typecode: a Dup's are its original's; others have none.
    _char = property(lambda self: self._contents[3][0]._char
                     if self.combiner == COMBINER_DUP else None)
    _code = property(lambda self: self._contents[3][0]._code
                     if self.combiner == COMBINER_DUP else None)

    def Commit(self):
        self.committed = True
        return self

    def Get_envelope(self):
        return tuple(len(part) for part in self._contents) + (self.combiner,)

    def Get_contents(self):
        """(new handles to the datatypes it was made of, for the caller to Free, as MPI's)"""
        integers, addresses, counts, types = self._contents
        return list(integers), list(addresses), list(counts), [_handle(t) for t in types]

    def decode(self):
        integers, _, counts, types = self._contents
        combiner = self.combiner
        if combiner == COMBINER_STRUCT:
            n = counts[0]
            return DATATYPE_NULL, "STRUCT", {"blocklengths": counts[1:n + 1],
                                             "displacements": counts[n + 1:],
                                             "datatypes": [_handle(t) for t in types]}
        return _handle(types[0]), _COMBINER_NAMES[combiner], _decoded(combiner, integers, counts)

    def Free(self):
        """MPI_Type_free: the attributes go (their delete_fn), this handle becomes
        DATATYPE_NULL (another handle to the datatype is left dangling, as MPI's). MPI.Exception
        ERR_OTHER if a delete_fn raised."""
        if self._attrs is not None:
            self._attrs.clear(self)
        self.__class__, self.__dict__ = NullDatatype, {}

    def __repr__(self):
        return f"<Datatype {self._given_name or 'derived'}>"

    def __reduce__(self):
        """pickle: made again from what decode() says, committed if this was (as mpi4py's)."""
        return _rebuilt, (*self.decode(), self.committed)


class Fortran90(Datatype):
    """A datatype Create_f90_integer, _real or _complex made: predefined (committed, taken
    wherever its named equal of the same size is) but not named, nameless until Set_name;
    its envelope holds its arguments (p, r)."""

    is_named = False

    def __init__(self, base, combiner, integers):
        for field in ("size", "extent", "wire_size", "dtype", "typemap", "_format"):
            setattr(self, field, getattr(base, field))
        kind = {COMBINER_F90_INTEGER: "i", COMBINER_F90_REAL: "f", COMBINER_F90_COMPLEX: "c"}
        self._code = f"{kind[combiner]}{self.size}"
        self._char = _SIZED_CHARS.get(self._code)
        self.combiner, self._integers = combiner, integers

    typestr = property(lambda self: self._code)

    def Get_name(self):
        return "" if self._given_name is None else self._given_name

    def Get_envelope(self):
        return (len(self._integers), 0, 0, 0, self.combiner)

    def Get_contents(self):
        return list(self._integers), [], [], []

    def decode(self):
        names = ("r",) if self.combiner == COMBINER_F90_INTEGER else ("p", "r")
        return DATATYPE_NULL, _COMBINER_NAMES[self.combiner], dict(zip(names, self._integers))

    Free = Derived.Free

    def __repr__(self):
        return f"<Datatype {self._given_name or 'f90 ' + self._code}>"

    def __reduce__(self):
        """pickle: made again by its Create_f90_* call (this process's same datatype)."""
        return _rebuilt, (*self.decode(), True)


def _handle(datatype):
    """A new handle to a datatype that is not named (a named one is itself)."""
    return datatype if datatype.is_named else Datatype(datatype)


def _rebuilt(base, combiner, params, committed):
    """A derived datatype unpickled: its constructor called again with its arguments."""
    if combiner == "DUP":
        made = base.Dup()
    elif combiner == "STRUCT":
        made = Datatype.Create_struct(**params)
    else:
        made = getattr(base, f"Create_{combiner.lower()}")(**params)
    return made.Commit() if committed else made


def _null_type(self, *args):
    raise MPIException(errors.ERR_TYPE, "MPI_DATATYPE_NULL has no size, extent or type map")


class NullDatatype(Datatype):
    """MPI.DATATYPE_NULL: false, named MPI_DATATYPE_NULL; its size and extent (so also a
    buffer spec naming it) raise MPI.Exception ERR_TYPE, as MPICH's."""

    size = extent = typemap = property(_null_type)
    wire_size = dtype = is_named = property(_null_type)     # (Status.Get_count's: ERR_TYPE)

    def __init__(self, datatype=None):
        if datatype is not None:    # (type(DATATYPE_NULL)(datatype): as Datatype(datatype))
            Datatype.__init__(self, datatype)

    def __bool__(self):
        return False

    def __eq__(self, other):
        if not isinstance(other, Datatype):
            return NotImplemented
        return isinstance(other, NullDatatype)      # (a freed datatype is DATATYPE_NULL too)

    __hash__ = None

    def Get_name(self):
        return "MPI_DATATYPE_NULL"

    typechar = typestr = ""             # (as mpi4py's)
    _char = _code = None

    def __reduce__(self):
        """pickle: DATATYPE_NULL itself, or another null handle."""
        return (_unpickled, (None,)) if self is DATATYPE_NULL else (type(self), ())

    def _no_attributes(self, *args):
        _null_type(self)

    Get_attr = Set_attr = Delete_attr = Set_name = _no_attributes
    Get_envelope = Get_contents = decode = Commit = _no_attributes


DATATYPE_NULL = NullDatatype()


def _unpickled(name):
    """A named datatype (or DATATYPE_NULL, name None) unpickled: this process's own."""
    return DATATYPE_NULL if name is None else _PREDEFINED[name]


# (name, size, buffer format character of a matching numpy dtype or None[, extent])
_NAMED = [
    ("BYTE", 1, None), ("CHAR", 1, "c"), ("SIGNED_CHAR", 1, "b"), ("UNSIGNED_CHAR", 1, "B"),
    ("SHORT", 2, "h"), ("UNSIGNED_SHORT", 2, "H"), ("INT", 4, "i"), ("UNSIGNED", 4, "I"),
    ("LONG", 8, "l"), ("UNSIGNED_LONG", 8, "L"), ("LONG_LONG", 8, "q"),
    ("UNSIGNED_LONG_LONG", 8, "Q"), ("FLOAT", 4, "f"), ("DOUBLE", 8, "d"),
    ("LONG_DOUBLE", 16, "g"), ("C_BOOL", 1, "?"), ("INT8_T", 1, None), ("INT16_T", 2, None),
    ("INT32_T", 4, None), ("INT64_T", 8, None), ("UINT8_T", 1, None), ("UINT16_T", 2, None),
    ("UINT32_T", 4, None), ("UINT64_T", 8, None), ("C_FLOAT_COMPLEX", 8, "F"),
    ("C_DOUBLE_COMPLEX", 16, "D"),
    ("C_LONG_DOUBLE_COMPLEX", 32, "G"), ("COMPLEX", 8, None), ("DOUBLE_COMPLEX", 16, None),
    ("WCHAR", 4, "w"), ("FLOAT16_T", 2, "e"), ("PACKED", 1, None),
    ("AINT", 8, "p"), ("OFFSET", 8, None), ("COUNT", 8, None),
    # Fortran's and C++'s (buffer format None: a buffer's own format names C's type).
    ("CHARACTER", 1, None), ("LOGICAL", 4, None), ("INTEGER", 4, None), ("REAL", 4, None),
    ("DOUBLE_PRECISION", 8, None), ("INTEGER1", 1, None), ("INTEGER2", 2, None),
    ("INTEGER4", 4, None), ("INTEGER8", 8, None), ("REAL4", 4, None), ("REAL8", 8, None),
    ("REAL16", 16, None), ("COMPLEX8", 8, None), ("COMPLEX16", 16, None),
    ("COMPLEX32", 32, None), ("CXX_BOOL", 1, None), ("CXX_FLOAT_COMPLEX", 8, None),
    ("CXX_DOUBLE_COMPLEX", 16, None), ("CXX_LONG_DOUBLE_COMPLEX", 32, None),
    # MAXLOC/MINLOC's (value, index) pairs, C structs: sizes with the struct's padding.
    ("SHORT_INT", 6, None, 8), ("TWOINT", 8, None), ("FLOAT_INT", 8, None),
    ("LONG_INT", 12, None, 16), ("DOUBLE_INT", 12, None, 16), ("LONG_DOUBLE_INT", 20, None, 32),
]
# The alignment of the named datatypes whose numpy dtype has not MPICH's (opaque bytes).
_ALIGNS = {"INTEGER16": 16, "REAL2": 2, "COMPLEX4": 4}
# The numpy dtype of the datatypes whose buffer format is not one (or not a number).
_REDUCE_AS = {"BYTE": "u1", "CHAR": "i1", "INT8_T": "i1", "INT16_T": "i2", "INT32_T": "i4",
              "INT64_T": "i8", "UINT8_T": "u1", "UINT16_T": "u2", "UINT32_T": "u4",
              "UINT64_T": "u8", "COMPLEX": "c8", "DOUBLE_COMPLEX": "c16", "WCHAR": "u4",
              "PACKED": "V1",     # (no op applies to PACKED: ERR_OP, as MPICH)
              "OFFSET": "i8", "COUNT": "i8", "CHARACTER": "S1", "LOGICAL": "i4",
              "INTEGER": "i4", "REAL": "f4", "DOUBLE_PRECISION": "f8", "INTEGER1": "i1",
              "INTEGER2": "i2", "INTEGER4": "i4", "INTEGER8": "i8", "REAL4": "f4", "REAL8": "f8",
              "REAL16": "g", "COMPLEX8": "c8", "COMPLEX16": "c16", "COMPLEX32": "G",
              "CXX_BOOL": "?", "CXX_FLOAT_COMPLEX": "c8", "CXX_DOUBLE_COMPLEX": "c16",
              "CXX_LONG_DOUBLE_COMPLEX": "G", "INTEGER16": "V16", "REAL2": "V2",
              "COMPLEX4": "V4"}       # (the last three: no reduction here)
_REDUCE_AS.update({name: np.dtype([("value", value), ("index", "i4")], align=True)
                   for name, value in (("SHORT_INT", "i2"), ("TWOINT", "i4"), ("FLOAT_INT", "f4"),
                                       ("LONG_INT", "i8"), ("DOUBLE_INT", "f8"),
                                       ("LONG_DOUBLE_INT", "g"))})
# mpi4py's character code of a named datatype's C type (its typechar), where it is not the
# buffer format (typestr.pxi's DatatypeChar); None: "V".
_SIZED_CHARS = {"i1": "b", "i2": "h", "i4": "i", "i8": "l", "u1": "B", "u2": "H", "u4": "I",
                "u8": "L", "f2": "e", "f4": "f", "f8": "d", "f16": "g", "c4": "E", "c8": "F",
                "c16": "D", "c32": "G"}
_CHARS = {"BYTE": "B", "PACKED": "B", "WCHAR": "U", "OFFSET": "p", "COUNT": "p",
          "CHARACTER": "c", "LOGICAL": "i", "INTEGER": "i", "REAL": "f",
          "DOUBLE_PRECISION": "d", "COMPLEX": "F", "DOUBLE_COMPLEX": "D", "CXX_BOOL": "?",
          "CXX_FLOAT_COMPLEX": "F", "CXX_DOUBLE_COMPLEX": "D", "CXX_LONG_DOUBLE_COMPLEX": "G"}
# ... and its typecode where that is a type string (the sized C and Fortran types).
_CODES = {"C_BOOL": "b1", "INT8_T": "i1", "INT16_T": "i2", "INT32_T": "i4", "INT64_T": "i8",
          "UINT8_T": "u1", "UINT16_T": "u2", "UINT32_T": "u4", "UINT64_T": "u8",
          "INTEGER1": "i1", "INTEGER2": "i2", "INTEGER4": "i4", "INTEGER8": "i8", "REAL4": "f4",
          "REAL8": "f8", "REAL16": "f16", "COMPLEX8": "c8", "COMPLEX16": "c16",
          "COMPLEX32": "c32"}
_CHARS.update({name: _SIZED_CHARS[code] for name, code in _CODES.items() if name != "C_BOOL"})
# MPI's name where it is not MPI_ and the Python name (MPICH's for FLOAT16_T).
_MPI_NAMES = {"TWOINT": "MPI_2INT", "FLOAT16_T": "MPIX_C_FLOAT16"}
NAMED = {entry[0]: Datatype._predefined(*entry) for entry in _NAMED}
_BY_FORMAT = {d._format: d for d in NAMED.values() if d._format}
_BY_FORMAT.update({"B": NAMED["UNSIGNED_CHAR"], "=?": NAMED["C_BOOL"]})
# MPICH's named datatypes that mpi4py names not (its MPI.INTEGER16, ... are DATATYPE_NULL):
# Match_size gives them.
_MATCH_ONLY = {name: Datatype._predefined(name, size, None) for name, size in (
    ("INTEGER16", 16), ("REAL2", 2), ("COMPLEX4", 4))}
_PREDEFINED = {**NAMED, **_MATCH_ONLY}
Datatype._constants = _PREDEFINED.values()
Datatype._numbers.predefine([(datatype, handles.DATATYPES[name])
                             for name, datatype in _PREDEFINED.items()])
_MATCHED = {(TYPECLASS_LOGICAL, 4): NAMED["LOGICAL"]}
_MATCHED.update({(typeclass, int(name[len(prefix):])): datatype
                 for typeclass, prefix in ((TYPECLASS_INTEGER, "INTEGER"), (TYPECLASS_REAL, "REAL"),
                                           (TYPECLASS_COMPLEX, "COMPLEX"))
                 for name, datatype in _PREDEFINED.items()
                 if name.startswith(prefix) and name[len(prefix):].isdigit()})
# Get_value_index's pairs: (value, MPI.INT) -> the MAXLOC/MINLOC pair type (keyed by what the
# value type's handles share: handles are unhashable, as mpi4py's).
_VALUE_INDEX = {id(NAMED[value].__dict__): NAMED[pair] for value, pair in (
    ("SHORT", "SHORT_INT"), ("INT", "TWOINT"), ("LONG", "LONG_INT"), ("FLOAT", "FLOAT_INT"),
    ("DOUBLE", "DOUBLE_INT"), ("LONG_DOUBLE", "LONG_DOUBLE_INT"))}
BYTE = NAMED["BYTE"]
# Datatype.fromcode's codes: the buffer formats, and numpy's kind + size ('i4', 'c16', ...).
_BY_CODE = dict(_BY_FORMAT, Zf=NAMED["C_FLOAT_COMPLEX"], Zd=NAMED["C_DOUBLE_COMPLEX"],
                Zg=NAMED["C_LONG_DOUBLE_COMPLEX"], b1=NAMED["C_BOOL"])
_BY_CODE.update({f"{kind}{size}": NAMED[f"{name}{8 * size}_T"]
                 for kind, name in (("i", "INT"), ("u", "UINT")) for size in (1, 2, 4, 8)})
_BY_CODE.update({"f2": NAMED["FLOAT16_T"], "f4": NAMED["FLOAT"], "f8": NAMED["DOUBLE"],
                 "f16": NAMED["LONG_DOUBLE"],
                 "c8": NAMED["C_FLOAT_COMPLEX"], "c16": NAMED["C_DOUBLE_COMPLEX"],
                 "c32": NAMED["C_LONG_DOUBLE_COMPLEX"], "n": NAMED["COUNT"],
                 "P": NAMED["UNSIGNED_LONG"], "N": NAMED["UNSIGNED_LONG"]})
# ... and numpy's and PEP 3118's codes of characters, and of datetimes (as mpi4py's).
_BY_CODE.update({code: NAMED[name] for name, codes in (
    ("CHAR", "a S S1 s 1s"), ("WCHAR", "U U1 1w"), ("UINT16_T", "u 1u"), ("INT64_T", "M M8 m m8"))
    for code in codes.split()})
# mpi4py's other names of the same datatypes (MPICH's handles are equal).
ALIASES = {alias: NAMED[name] for alias, name in (
    ("SIGNED_SHORT", "SHORT"), ("SIGNED_INT", "INT"), ("UNSIGNED_INT", "UNSIGNED"),
    ("SIGNED_LONG", "LONG"), ("SIGNED_LONG_LONG", "LONG_LONG"), ("SINT8_T", "INT8_T"),
    ("SINT16_T", "INT16_T"), ("SINT32_T", "INT32_T"), ("SINT64_T", "INT64_T"),
    ("INT_INT", "TWOINT"), ("BOOL", "C_BOOL"), ("C_COMPLEX", "C_FLOAT_COMPLEX"),
    ("FLOAT32_T", "FLOAT"), ("FLOAT64_T", "DOUBLE"), ("F_BOOL", "LOGICAL"),
    ("F_COMPLEX", "COMPLEX"), ("F_DOUBLE", "DOUBLE_PRECISION"),
    ("F_DOUBLE_COMPLEX", "DOUBLE_COMPLEX"), ("F_FLOAT", "REAL"), ("F_FLOAT_COMPLEX", "COMPLEX"),
    ("F_INT", "INTEGER"))}
# mpi4py's names of datatypes MPICH does not have: DATATYPE_NULL there, so here too.
ALIASES.update({name: DATATYPE_NULL for name in (
    "BFLOAT16_T", "COMPLEX4", "INTEGER16", "LOGICAL1", "LOGICAL16", "LOGICAL2", "LOGICAL4",
    "LOGICAL8", "REAL2")})


class InPlace:
    """MPI.IN_PLACE: in a collective, the data is taken from (and left in) the receive
    buffer."""

    def __repr__(self):
        return "MPI.IN_PLACE"


IN_PLACE = InPlace()


def _datatype_of(view):
    """The datatype mpi4py infers from a buffer's format (numpy's 'd', '<d', 'Zd', ...)."""
    datatype = _SEEN_FORMATS.get(view.format)
    if datatype is None:
        if view.format[:1] in _FOREIGN_ORDER:
            raise BufferError(f"format string {view.format!r} with non-native byte order")
        fmt = view.format.lstrip("@=<>!")
        if fmt.startswith("Z"):        # a complex in the buffer protocol's format
            fmt = fmt[1:].upper()
        datatype = _BY_FORMAT.get(fmt)
        if datatype is None:
            raise MPIException(errors.ERR_TYPE,
                               f"no MPI datatype for buffer format {view.format!r}")
        _SEEN_FORMATS[view.format] = datatype
    return datatype


_SEEN_FORMATS = {}      # a buffer's format as given -> its datatype (a send's per-call parse)
_FOREIGN_ORDER = (">", "!") if sys.byteorder == "little" else ("<",)   # a format's prefix


def named(datatype):
    """A buffer spec's datatype: an MPI datatype, or a typecode as mpi4py takes one ('d',
    'i', 'B', ...). KeyError otherwise, as mpi4py's."""
    if isinstance(datatype, Datatype):
        return datatype
    found = _BY_FORMAT.get(datatype) if isinstance(datatype, str) else None
    if found is None:
        raise KeyError(f"cannot map {datatype!r} to MPI datatype")
    return found


class BottomType(int):
    """The type of MPI.BOTTOM (address 0, as mpi4py's)."""

    def __repr__(self):
        return "MPI.BOTTOM"


BOTTOM = BottomType(0)


def _other_buffer(buf):
    """A memoryview of `buf`, which lacks the buffer protocol, where mpi4py takes it as a
    buffer: a DLPack tensor in host memory. NotImplementedCall for what else mpi4py takes
    (MPI.BOTTOM: memory addressed by a derived datatype's absolute displacements; CUDA
    arrays); TypeError for anything else."""
    if hasattr(buf, "__dlpack__"):
        return memoryview(dlpack.as_array(buf))
    if isinstance(buf, BottomType) or hasattr(buf, "__cuda_array_interface__"):
        raise unimplemented.NotImplementedCall(
            f"a buffer of type {type(buf).__name__} is not implemented by shmdat.mpi (the "
            "buffer protocol and DLPack only)")
    raise TypeError(f"expected a buffer object, not {type(buf).__name__}")


def _external32(datatype):
    """The external32 Form of `datatype`'s elements (external32.py). MPI.Exception ERR_TYPE for
    DATATYPE_NULL; NotImplementedCall for a derived datatype (its elements' types are not
    kept) and where Form has none."""
    datatype.size                   # (DATATYPE_NULL: MPI.Exception ERR_TYPE)
    if not datatype.is_predefined:
        raise unimplemented.NotImplementedCall("external32 of a derived datatype is not "
                                               "implemented by shmdat.mpi")
    return external32.Form(datatype.dtype, getattr(datatype, "_name", None))


def _contiguous_bytes(buf, writable):
    try:
        view = memoryview(bytearray() if buf is None else buf)  # None: mpi4py's NULL
    except TypeError:
        view = _other_buffer(buf)
    if not view.c_contiguous:
        if not view.contiguous:
            raise BufferError("the buffer is not contiguous")    # (as mpi4py's getbuffer)
        view = memoryview(np.asarray(view).ravel(order="K"))    # Fortran order: memory order
    if writable and view.readonly:
        raise BufferError("a receive buffer must be writable")
    if view.format == "B" and view.ndim == 1:
        return view, view
    return view, view.cast("B") if view.nbytes else memoryview(bytearray())  # (no cast of a 0 in the shape)


def _items(spec, pair):
    """(buf, count, displ, datatype) of a spec of 2 to 4 items, as mpi4py unpacks one:
    `[buf, T]`, `[buf, count]`, `[buf, count, T]`, `[buf, count, displ, T]`, a count of
    type `pair` (2 or 3 items) being `(count, displ)`; None where absent. ValueError for
    another length."""
    count = displ = datatype = None
    if len(spec) == 2:
        buf, count = spec
        if isinstance(count, (Datatype, str)):
            count, datatype = None, count
    elif len(spec) == 3:
        buf, count, datatype = spec
    elif len(spec) == 4:
        buf, count, displ, datatype = spec
    else:
        raise ValueError(f"message: expecting 2 to 4 items, got {len(spec)}")
    if len(spec) < 4 and isinstance(count, pair):
        count, displ = count
    return buf, count, displ, datatype


def message(spec, writable, blocks=1):
    """(bytes memoryview of the message, count, datatype) for a buffer spec, as mpi4py reads
    one: `buf`, `[buf, T]`, `[buf, count]`, `[buf, (count, displ)]`, `[buf, count, T]`,
    `[buf, (count, displ), T]`, `[buf, count, displ, T]`, a count or T of None being the
    buffer's. With `blocks` (a collective's buffer holding one block per rank), `count` is
    per block: given, or the buffer's elements divided by `blocks`. A derived datatype with
    gaps is NotImplementedCall here (send_message and receive_message take one). ValueError
    for a malformed spec (as mpi4py: 2 to 4 items, a negative count or displacement, one
    beyond the buffer, a count that cannot be inferred); BufferError (read-only where it
    must be written, not contiguous); MPI.Exception ERR_COUNT for a count beyond the
    buffer, ERR_TYPE (a derived datatype not committed)."""
    data, count, datatype = _located(spec, writable, blocks)
    if not _gapless(datatype):
        raise unimplemented.NotImplementedCall(
            "a derived datatype with gaps is not implemented by shmdat.mpi in this call "
            "(point-to-point sends and receives take one)")
    return data[:blocks * count * datatype.extent], count, datatype


def send_message(spec):
    """A point-to-point send's buffer spec: (bytes memoryview, count, datatype), a derived
    datatype with gaps packed into new bytes. Errors as message()'s."""
    return _simple(spec, False, 1) or _stage(_parsed(spec, False, 1), False, 1, None)


def staged(spec, writable, blocks, unpacks):
    """message() for a collective that takes a derived datatype with gaps: a buffer only read
    is packed; one written is packed room (holding the buffer's elements packed, for the
    collectives that read it in place), its unpack appended to `unpacks`, to run once the
    collective has ended (collectives.Channel.finish)."""
    return _stage(_located(spec, writable, blocks), writable, blocks, unpacks)


def _stage(located, writable, blocks, unpacks):
    data, count, datatype = located
    if _gapless(datatype):
        return data[:blocks * count * datatype.extent], count, datatype
    tmap = datatype.typemap
    elements = blocks * count
    room = typemap.pack(tmap, data, elements)
    if writable:
        unpacks.append(lambda: typemap.unpack(tmap, room, data, elements, len(room)))
    return memoryview(room), count, datatype


def receive_message(spec):
    """A point-to-point receive's buffer spec: (bytes memoryview to receive into, count,
    datatype, unpack), unpack None, or (a derived datatype with gaps: the view is packed
    room) a function of the bytes received that places them. Errors as message()'s."""
    simple = _simple(spec, True, 1)
    if simple is not None:
        return (*simple, None)
    data, count, datatype = _parsed(spec, True, 1)
    if _gapless(datatype):
        return data[:count * datatype.extent], count, datatype, None
    tmap = datatype.typemap
    room = bytearray(count * datatype.size)
    return memoryview(room), count, datatype, \
        lambda nbytes: typemap.unpack(tmap, room, data, count, nbytes)


def _gapless(datatype):
    """Whether `count` elements of `datatype` are their buffer's first bytes, as they are."""
    return datatype.is_named or datatype.typemap.contiguous()


def _located(spec, writable, blocks):
    """(the spec's bytes from its displacement on, count, datatype), checked (message())."""
    return _simple(spec, writable, blocks) or _parsed(spec, writable, blocks)


def _parsed(spec, writable, blocks):
    """_located for any spec, parsed in full (a caller that tried _simple first)."""
    if isinstance(spec, (list, tuple)):
        buf, count, displ, datatype = _items(spec, (list, tuple))
        view, data = _contiguous_bytes(buf, writable)
        datatype = _datatype_of(view) if datatype is None else named(datatype)
    else:
        view, data = _contiguous_bytes(spec, writable)
        count = displ = None
        datatype = _datatype_of(view)
    extent = datatype.extent
    if not datatype.committed:
        raise MPIException(errors.ERR_TYPE, "a derived datatype not committed (Commit() first)")
    if displ is not None:
        displ = operator.index(displ)   # (TypeError for anything but an int, as mpi4py)
    if count is not None:
        count = operator.index(count)
    if displ:
        if displ < 0 or displ * extent > len(data):
            raise ValueError(f"message: displacement {displ} outside a buffer of "
                             f"{len(data) // extent} {datatype.Get_name()}")
        data = data[displ * extent:]
    if count is None:
        entries, rest = divmod(len(data), extent) if extent > 0 else (0, 1)
        if rest or entries % blocks:
            raise ValueError(f"message: cannot infer count, buffer length {len(data)} is not "
                             f"a multiple of {blocks} x datatype extent {extent}")
        count = entries // blocks
    elif count < 0:
        raise ValueError(f"message: negative count {count}")
    if _span(datatype, blocks * count) > len(data):
        raise MPIException(errors.ERR_COUNT, f"{blocks} x count {count} of "
                           f"{datatype.Get_name()} does not fit a buffer of {len(data)} bytes")
    return data, count, datatype


def _simple(spec, writable, blocks):
    """(bytes, count, datatype) of the commonest specs, in one pass: a whole C-contiguous
    numpy array of a format seen before, or [array, T] (or a tuple) with T a named datatype.
    None for anything else, or an error to name: the general path (_located) reads it."""
    if spec.__class__ is np.ndarray:
        view = memoryview(spec)
        datatype = _SEEN_FORMATS.get(view.format)
    elif spec.__class__ in (list, tuple) and len(spec) == 2 and \
            spec[0].__class__ is np.ndarray and spec[1].__class__ is Datatype:
        view, datatype = memoryview(spec[0]), spec[1]
    else:
        return None
    if datatype is not None and view.nbytes and view.c_contiguous and not (writable and view.readonly):
        count, rest = divmod(view.nbytes, datatype.extent)
        if not rest and not count % blocks:
            return view.cast("B"), count // blocks, datatype
    return None


def _span(datatype, count):
    """The bytes `count` elements reach from the buffer's start (a derived datatype's
    before it, a negative true lower bound, are refused: MPI.Exception ERR_TYPE)."""
    if datatype.is_named or not count:
        return count * datatype.extent
    tmap = datatype.typemap
    if tmap.true_lb < 0:
        raise MPIException(errors.ERR_TYPE, "a derived datatype reaching before its buffer "
                           f"(true lower bound {tmap.true_lb})")
    return (count - 1) * tmap.extent + tmap.true_ub


def vector(spec, writable, blocks):
    """(one byte memoryview per block, datatype) for a v-collective's buffer spec, as mpi4py
    reads it: `buf`, `[buf, T]`, `[buf, counts]`, `[buf, counts, T]`, `[buf, (counts, displs)]`,
    `[buf, (counts, displs), T]`, `[buf, counts, displs, T]`. Counts and displacements are in
    elements: a sequence of `blocks`, or one int for all (a displacement int d: block i at
    i * d); no counts: the buffer's elements split as evenly as possible; no displacements:
    packed. ValueError for a malformed spec (as mpi4py); MPI.Exception ERR_COUNT for a negative
    count or a block beyond the buffer, ERR_ARG for a negative displacement."""
    counts = displs = datatype = None
    if isinstance(spec, (list, tuple)):
        buf, counts, displs, datatype = _items(spec, tuple)    # (a list is the counts)
        if datatype is not None:
            datatype = named(datatype)
        view, data = _contiguous_bytes(buf, writable)
    else:
        view, data = _contiguous_bytes(spec, writable)
    if datatype is None:
        datatype = _datatype_of(view)
    extent = datatype.extent
    if counts is None:
        elements, rest = divmod(len(data), extent)
        if rest:
            raise ValueError(f"message: cannot infer count, buffer length {len(data)} is not "
                             f"a multiple of datatype extent {extent}")
        counts = [elements // blocks + (i < elements % blocks) for i in range(blocks)]
    counts = per_block(counts, blocks, lambda i, c: c)
    displs = per_block(displs, blocks, lambda i, d: i * d)
    if displs is None:
        displs = [sum(counts[:i]) for i in range(blocks)]
    views = []
    for count, displ in zip(counts, displs):
        if count < 0:
            raise MPIException(errors.ERR_COUNT, f"negative count {count} in {counts}")
        if displ < 0:
            raise MPIException(errors.ERR_ARG, f"negative displacement {displ} in {displs}")
        if (displ + count) * extent > len(data):
            raise MPIException(errors.ERR_COUNT, f"count {count} at displacement {displ} of "
                               f"{datatype.Get_name()} beyond a buffer of {len(data)} bytes")
        views.append(data[displ * extent:(displ + count) * extent])
    return views, datatype


def per_block(value, blocks, spread):
    """A spec's counts or displacements as a list of `blocks` ints: a sequence of that length,
    or one int spread over the blocks by `spread(i, value)`; None stays None."""
    if value is None:
        return None
    if np.ndim(value) == 0:             # (an int, a numpy integer, a 0-d array)
        return [spread(i, operator.index(value)) for i in range(blocks)]
    value = [operator.index(v) for v in value]      # TypeError for floats, as mpi4py
    if len(value) != blocks:
        raise ValueError(f"expecting {blocks} items, got {len(value)}")
    return value


def Get_address(location):
    """MPI_Get_address: the address of the buffer `location` (its first byte) as an int;
    MPI.BOTTOM's and None's is 0, as mpi4py's. TypeError if it is no buffer, BufferError if
    it is not contiguous."""
    if location is None or isinstance(location, BottomType):
        return 0
    if isinstance(location, buffer):    # (its own: 0 for a window's without memory)
        return location.address
    return np.frombuffer(_contiguous_bytes(location, False)[1], np.uint8).ctypes.data


_AINT_BITS = 64     # MPI_Aint: a signed address-sized int


def _aint(value):
    """`value` as MPI_Aint: an int (a float truncated, as C's conversion mpi4py makes);
    TypeError for anything else, OverflowError beyond 64 bits."""
    value = operator.index(int(value) if isinstance(value, float) else value)
    if not -1 << _AINT_BITS - 1 <= value < 1 << _AINT_BITS - 1:
        raise OverflowError(f"{value} does not fit in MPI_Aint")
    return value


def _wrapped(value):
    """An address sum or difference wrapped to MPI_Aint, as C's arithmetic on it."""
    return (value + (1 << _AINT_BITS - 1)) % (1 << _AINT_BITS) - (1 << _AINT_BITS - 1)


def Aint_add(base, disp):
    """MPI_Aint_add: the address `disp` bytes from address `base`."""
    return _wrapped(_aint(base) + _aint(disp))


def Aint_diff(addr1, addr2):
    """MPI_Aint_diff: the bytes from address `addr2` to address `addr1`."""
    return _wrapped(_aint(addr1) - _aint(addr2))


def _typecode(datatype):
    """mpi4py's MPI._typecode (mpi4py.util.dtlib's): the datatype's typecode ('i', 'd', 'i4',
    ...; a Dup's, its original's), None if it has none."""
    return datatype._code


def _typealign(datatype):
    """mpi4py's MPI._typealign (mpi4py.util.dtlib's): the alignment of the datatype's C type
    (a pair type's, its struct's), None if it has none (a derived datatype, not a Dup)."""
    char = datatype._char
    if char is not None:
        return _ALIGNMENTS.get(char) or np.dtype(char).alignment
    if datatype and datatype.is_named and datatype.dtype.names is not None:
        return datatype.dtype.alignment
    return None


_ALIGNMENTS = {"E": 2}      # (half-precision complex: numpy has none)
