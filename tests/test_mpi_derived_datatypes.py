"""shmdat.mpi's derived datatypes (mpi4py's Datatype.Create_contiguous, _vector, _hvector,
_indexed, _hindexed, _indexed_block, _hindexed_block, _struct, _subarray, _resized, Dup,
Commit, Free): bounds and sizes as MPICH computes them, and point-to-point messages of them
(a column of a matrix, a block of a grid, a struct of mixed fields, the halo of a 2-D
decomposition) packed at the sender and placed at the receiver, eager and rendezvous; the
same program under mpiexec, line for line. What takes no gapped derived datatype yet
(collectives' buffers) raises NotImplementedCall."""

import pytest

from tests import mpi_launch

PROGRAM = """import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
D, I, C = MPI.DOUBLE, MPI.INT, MPI.CHAR
types = {
    "contiguous": I.Create_contiguous(3), "vector": D.Create_vector(3, 2, 4),
    "hvector": D.Create_hvector(2, 1, 12), "indexed": I.Create_indexed([2, 1, 3], [0, 5, 9]),
    "hindexed": I.Create_hindexed([1, 2], [4, 20]), "indexed_block": I.Create_indexed_block(2, [1, 6]),
    "hindexed_block": D.Create_hindexed_block(1, [0, 24, 8]),
    "struct": MPI.Datatype.Create_struct([1, 2, 1], [0, 8, 20], [D, I, C]),
    "subarray_c": I.Create_subarray([4, 5], [2, 3], [1, 1]),
    "subarray_f": I.Create_subarray([4, 5], [2, 3], [1, 1], order=MPI.ORDER_FORTRAN),
    "resized": I.Create_resized(0, 12), "dup": D.Dup(), "empty": I.Create_contiguous(0),
    "nested": I.Create_vector(2, 1, 3).Create_contiguous(2),
}
if rank == 0:
    for name, t in types.items():
        say(name, t.Get_extent(), t.Get_true_extent(), t.size, t.lb, t.ub, t.is_named)
    say("errors", outcome(lambda: I.Create_vector(-1, 1, 1)), outcome(lambda: I.Create_indexed([1, 2], [0])), outcome(lambda: I.Create_vector("a", 1, 1)),
        outcome(lambda: comm.Send([np.zeros(9), 1, D.Create_vector(3, 1, 3)], 1)),
        outcome(lambda: I.Free()), MPI.ORDER_C, MPI.ORDER_F == MPI.ORDER_FORTRAN)
for t in types.values():
    t.Commit()
other = 1 - rank if size == 2 else rank

def exchange(name, send, recv, spec):
    if rank == 0:
        comm.Send(spec(send), 1, 7)
    else:
        status = MPI.Status()
        comm.Recv(spec(recv), 0, 7, status)
        say(name, recv.tolist(), status.Get_count(spec(recv)[2]))

a = np.arange(12.0).reshape(3, 4)
exchange("column", a, np.full((3, 4), -1.0), lambda m: [m, 1, D.Create_vector(3, 1, 4).Commit()])
g = np.arange(20, dtype="i4").reshape(4, 5)
exchange("block", g, np.zeros((4, 5), "i4"), lambda m: [m, 1, types["subarray_c"]])
exchange("block_f", g, np.zeros((4, 5), "i4"), lambda m: [m, 1, types["subarray_f"]])
exchange("indexed x2", np.arange(24, dtype="i4"), np.zeros(24, "i4"), lambda m: [m, 2, types["indexed"]])
rec = np.zeros(2, dtype=np.dtype([("d", "f8"), ("i", "i4", 2), ("c", "S1")], align=True))
if rank == 0:
    rec["d"], rec["i"], rec["c"] = [1.5, 2.5], [[1, 2], [3, 4]], [b"x", b"y"]
exchange("struct", rec.view("u1"), np.zeros(rec.nbytes, "u1"), lambda m: [m, 2, types["struct"]])
big = np.arange(3 * 40000.0).reshape(40000, 3)        # a column of 320 KB: a rendezvous message
if rank == 0:
    comm.Send([big, 1, D.Create_vector(40000, 1, 3).Commit()], 1, 8)
else:
    got = np.zeros((40000, 3))
    r = comm.Irecv([got, 1, D.Create_vector(40000, 1, 3).Commit()], 0, 8)
    r.Wait()
    say("rendezvous column", bool((got[:, 0] == big[:, 0]).all()), float(got[:, 1:].sum()))
v = D.Create_vector(2, 1, 2).Commit()
dup = v.Dup()
v.Free()
say(rank, "freed", v == MPI.DATATYPE_NULL, dup.Get_extent(), dup.size)
say(rank, "reduction", outcome(lambda: comm.Allreduce(MPI.IN_PLACE, [np.zeros(4), 1, dup])))
"""


@mpi_launch.needs_mpiexec
def test_derived_datatypes_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, PROGRAM.replace(
        'say(rank, "reduction"', '# say(rank, "reduction"'))


def test_a_reduction_over_a_datatype_with_gaps_is_not_implemented_on_every_rank(tmp_path):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 2, PROGRAM))
    assert lines.count("0 reduction ('NotImplementedCall',)") == 1
    assert lines.count("1 reduction ('NotImplementedCall',)") == 1


COLLECTIVES = """import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
col = MPI.INT.Create_vector(3, 1, 4).Commit()          # a column of a 3x4 matrix
pair = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.DOUBLE, MPI.INT]).Commit()
def matrix(fill):
    return np.full((3, 4), fill, dtype="i4")
m = matrix(rank + 1) if rank == 0 else matrix(-1)
comm.Bcast([m, 1, col], root=0)
say(rank, "bcast", m.tolist())
rec = np.zeros(2, dtype=np.dtype([("d", "f8"), ("i", "i4")], align=True))
if rank == 1:
    rec["d"], rec["i"] = [0.5, 1.5], [7, 8]
req = comm.Ibcast([rec.view("u1"), 2, pair], root=1)
req.Wait()
say(rank, "ibcast", rec["d"].tolist(), rec["i"].tolist())
cols = MPI.INT.Create_vector(3, 1, size).Create_resized(0, 4).Commit()   # column i of a 3 x size matrix
grid = np.arange(3 * size, dtype="i4").reshape(3, size) if rank == 0 else np.zeros((3, size), "i4")
mine = np.zeros(3, "i4")
comm.Scatter([grid, 1, cols], [mine, 3, MPI.INT], root=0)
say(rank, "scatter", mine.tolist())
back = np.zeros((3, size), "i4")
comm.Gather([mine * 10, 3, MPI.INT], [back, 1, cols], root=0)
if rank == 0:
    say(rank, "gather", back.tolist())
every = np.zeros((3, size), "i4")
comm.Allgather([mine, 3, MPI.INT], [every, 1, cols])
say(rank, "allgather", every.tolist())
inplace = np.full((3, size), -1, "i4")
inplace[:, rank] = rank + 100
comm.Allgather(MPI.IN_PLACE, [inplace, 1, cols])
say(rank, "allgather in place", inplace.tolist())
sendm = np.arange(3 * size, dtype="i4").reshape(3, size) + 1000 * rank
recvm = np.zeros((3, size), "i4")
comm.Alltoall([sendm, 1, cols], [recvm, 1, cols])
say(rank, "alltoall", recvm.tolist())
"""


@mpi_launch.needs_mpiexec
def test_collectives_of_derived_datatypes_as_under_mpiexec(tmp_path):
    for n in (2, 3):
        mpi_launch.assert_same_as_mpiexec(tmp_path, n, COLLECTIVES)


@mpi_launch.needs_mpiexec
@pytest.mark.parametrize("count", [0, 1, 3])
def test_truncated_and_empty_receives_into_a_derived_datatype(tmp_path, count):
    body = f"""import os
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
col = MPI.DOUBLE.Create_vector(3, 1, 2).Commit()
if comm.rank == 0:
    comm.Send([np.arange(12.0), {count}, MPI.DOUBLE.Create_vector(1, 1, 1).Commit()], 1)
else:
    got = np.full(6, -1.0)
    status = MPI.Status()
    comm.Recv([got, 1, col], 0, MPI.ANY_TAG, status)
    os.write(1, (str(got.tolist()) + " " + str(status.Get_count(MPI.DOUBLE)) + "\\n").encode())
"""
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, body)


def test_a_subarray_outside_its_array_is_refused(tmp_path):
    # (MPICH makes a datatype of it, whose use reads beyond the array: shmdat.mpi says ERR_ARG.)
    body = """from mpi4py import MPI
for args in (([4], [5], [0]), ([4], [2], [3]), ([4, 4], [2], [0]), ([4], [2], [0], 99)):
    try:
        MPI.INT.Create_subarray(*args)
    except MPI.Exception as e:
        print(e.Get_error_class() == MPI.ERR_ARG)
"""
    assert mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 1, body)) == ["True"] * 4


PACK = """import numpy as np
from mpi4py import MPI
c = MPI.COMM_SELF
v = MPI.DOUBLE.Create_vector(2, 1, 2).Commit()
a = np.arange(8.0)
out = bytearray(48)
end = v.Pack(a, out, 0, c)
print("pack", end, np.frombuffer(out[:end]).tolist())
end = MPI.INT.Pack(np.arange(3, dtype="i4"), out, end, c)
print("then ints", end, np.frombuffer(out[32:end], "i4").tolist())
b = np.zeros(8)
print("unpack", v.Unpack(out, 0, b, c), b.tolist())
ints = np.zeros(3, "i4")
print("unpack ints", MPI.INT.Unpack(out, 32, ints, c), ints.tolist())
print("sizes", v.Pack_size(2, c), MPI.INT.Pack_size(3, c), MPI.DOUBLE_INT.Pack_size(1, c), v.Pack_size(0, c))
pair = np.zeros(1, dtype=np.dtype([("v", "f8"), ("i", "i4")], align=True))
pair["v"], pair["i"] = 2.5, 7
print("pair packed", MPI.DOUBLE_INT.Pack(pair.view("u1"), out, 0, c))
"""


@mpi_launch.needs_mpiexec
def test_pack_and_unpack_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, PACK)


def test_pack_and_unpack_refuse_what_does_not_fit(tmp_path):
    # (MPICH writes past the buffer, or reads past it: shmdat.mpi says which error.)
    body = """import numpy as np
from mpi4py import MPI
c = MPI.COMM_SELF
v = MPI.DOUBLE.Create_vector(2, 1, 2)
def error_of(call):
    try:
        call()
    except MPI.Exception as e:
        return e.Get_error_class()
print(error_of(lambda: v.Pack(np.arange(8.0), bytearray(32), 0, c)) == MPI.ERR_TYPE)
v.Commit()
print(error_of(lambda: v.Pack(np.arange(8.0), bytearray(10), 0, c)) == MPI.ERR_TRUNCATE)
print(error_of(lambda: v.Unpack(bytearray(8), 0, np.zeros(8), c)) == MPI.ERR_TRUNCATE)
print(error_of(lambda: v.Pack(np.arange(8.0), bytearray(64), -1, c)) == MPI.ERR_ARG)
print(error_of(lambda: v.Pack_size(-1, c)) == MPI.ERR_COUNT)
"""
    assert mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 1, body)) == ["True"] * 5


ENVELOPE = """from mpi4py import MPI
comm = MPI.COMM_WORLD
out = print if comm.rank == 0 else (lambda *items: None)    # (one rank prints: no interleaving)
I = MPI.INT
made = [I, I.Dup(), I.Create_contiguous(2), I.Create_vector(2, 1, 2), I.Create_hvector(2, 1, 8),
        I.Create_indexed([1], [1]), I.Create_hindexed([1], [4]), I.Create_indexed_block(1, [1]),
        I.Create_hindexed_block(1, [4]), MPI.Datatype.Create_struct([1], [0], [I]),
        I.Create_subarray([2], [1], [0]), I.Create_resized(0, 8), MPI.DOUBLE.Dup()]
out([t.combiner for t in made])
out([t.typestr for t in made])
out([getattr(MPI, name).typestr for name in ("BYTE", "CHAR", "WCHAR", "C_BOOL", "FLOAT", "LONG_DOUBLE",
                                             "C_DOUBLE_COMPLEX", "DOUBLE_INT", "PACKED", "AINT")])
out(MPI.COMBINER_NAMED, MPI.COMBINER_DUP, MPI.COMBINER_STRUCT, MPI.COMBINER_SUBARRAY, MPI.COMBINER_RESIZED)
c = comm.Dup_with_info(MPI.INFO_NULL)
d, request = comm.Idup()
request.Wait()
out(c.Get_size(), d.Get_size(), d.allreduce(1), c.Compare(comm) == MPI.CONGRUENT)
c.Free()
d.Free()
"""


@mpi_launch.needs_mpiexec
def test_combiners_typestrs_and_dups_with_info_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, ENVELOPE)


DECODE = """from mpi4py import MPI
I, D = MPI.INT, MPI.DOUBLE
def names(types):
    return [t.Get_name() for t in types]
made = [I.Dup(), I.Create_contiguous(2), I.Create_vector(2, 1, 2), I.Create_hvector(2, 1, 8),
        I.Create_indexed([1, 2], [1, 5]), I.Create_hindexed([1], [4]), I.Create_indexed_block(1, [1, 3]),
        I.Create_hindexed_block(1, [4]), MPI.Datatype.Create_struct([1, 2], [0, 8], [I, D]),
        I.Create_subarray([2, 3], [1, 2], [0, 1]), I.Create_resized(0, 8)]
for t in made:
    ints, addrs, counts, types = t.Get_contents()
    base, combiner, params = t.decode()
    params = {k: names(v) if k == "datatypes" else v for k, v in params.items()}
    print(t.Get_envelope(), t.envelope == t.Get_envelope(), ints, addrs, counts, names(types),
          base == MPI.DATATYPE_NULL or base.Get_name(), combiner, sorted(params.items()))
nested = I.Create_vector(2, 1, 3).Create_contiguous(2)
print(nested.decode()[1:], nested.decode()[0].decode()[1:], I.decode()[1:], I.Get_envelope())
for call in (I.Get_contents, lambda: MPI.DATATYPE_NULL.Get_envelope()):
    try:
        call()
    except MPI.Exception as e:
        print("error", e.Get_error_class() == MPI.ERR_TYPE)
"""


@mpi_launch.needs_mpiexec
def test_envelopes_contents_and_decode_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, DECODE)


PICKLE = """import os
import pickle
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
I = MPI.INT
made = [I.Dup(), I.Create_vector(2, 1, 3).Commit(), MPI.Datatype.Create_struct([1, 2], [0, 8], [I, MPI.DOUBLE]),
        I.Create_subarray([2, 3], [1, 2], [0, 1]), I.Create_vector(2, 1, 3).Create_contiguous(2),
        I.Create_resized(0, 8), I.Create_hindexed_block(2, [0, 16])]
if comm.rank == 0:
    say([pickle.loads(pickle.dumps(t)) is t for t in (MPI.INT, MPI.DOUBLE, MPI.DATATYPE_NULL)])
    for t in made:
        u = pickle.loads(pickle.dumps(t))
        say(u.Get_envelope(), u.Get_contents()[:3], u.Get_extent(), u.decode()[1], u.is_named)
    comm.send(made[1], 1)
else:
    t = comm.recv(source=0)
    say("received", t.Get_envelope(), t.Get_extent())
"""


@mpi_launch.needs_mpiexec
def test_pickled_datatypes_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, PICKLE)


# Fortran, value-index and darray datatypes (stop 24): Create_darray, Create_f90_integer,
# _real and _complex, Match_size, Get_value_index, tocode, typechar, MPI._typecode and
# _typealign, Datatype() as mpi4py's handle constructor, mpi4py.util.dtlib over them.

NAMES = """CHAR WCHAR SIGNED_CHAR SHORT INT LONG UNSIGNED_CHAR UNSIGNED_SHORT UNSIGNED UNSIGNED_LONG
LONG_LONG UNSIGNED_LONG_LONG FLOAT DOUBLE LONG_DOUBLE C_BOOL INT8_T INT16_T INT32_T INT64_T UINT8_T
UINT16_T UINT32_T UINT64_T FLOAT16_T C_FLOAT_COMPLEX C_DOUBLE_COMPLEX C_LONG_DOUBLE_COMPLEX
CXX_BOOL CXX_FLOAT_COMPLEX CXX_DOUBLE_COMPLEX CXX_LONG_DOUBLE_COMPLEX CHARACTER LOGICAL INTEGER
REAL DOUBLE_PRECISION COMPLEX DOUBLE_COMPLEX LOGICAL1 INTEGER1 INTEGER2 INTEGER4 INTEGER8
INTEGER16 REAL2 REAL4 REAL8 REAL16 COMPLEX4 COMPLEX8 COMPLEX16 COMPLEX32 PACKED BYTE AINT OFFSET
COUNT SHORT_INT TWOINT LONG_INT FLOAT_INT DOUBLE_INT LONG_DOUBLE_INT""".split()

CODES = """import os
import pickle
from mpi4py import MPI
""" + mpi_launch.SAY + f"""
NAMES = {NAMES!r}
def codes(t):
    return (t.typechar, t.typestr, outcome(t.tocode), MPI._typecode(t), MPI._typealign(t))
def created(t):
    return (t.Get_name(), t.size, t.Get_extent(), t.Get_true_extent(), t.is_named, t.is_predefined,
            t.Get_envelope(), t.Get_contents()[:3], t.decode()[1:], codes(t), codes(t.Dup()))
if MPI.COMM_WORLD.rank == 0:
    for name in NAMES:
        t = getattr(MPI, name)
        say(name, codes(t), codes(MPI.Datatype(t)), outcome(lambda: MPI.Datatype.fromcode(t.tocode()) == t))
    for r in (-1, 0, 2, 3, 4, 5, 9, 10, 18, 19, 38, 39):
        say("f90 integer", r, outcome(lambda: created(MPI.Datatype.Create_f90_integer(r))))
    for p, r in ((0, 0), (3, 4), (3, 5), (4, 4), (6, 30), (6, 37), (6, 38), (7, 30), (15, 300), (15, 307),
                 (15, 308), (16, 300), (33, 4931), (33, 4932), (34, 0), (-1, 10), (MPI.UNDEFINED, 30)):
        say("f90 real", p, r, outcome(lambda: created(MPI.Datatype.Create_f90_real(p, r))))
        say("f90 complex", p, r, outcome(lambda: created(MPI.Datatype.Create_f90_complex(p, r))))
    a, b = MPI.Datatype.Create_f90_integer(4), MPI.Datatype.Create_f90_integer(4)
    a.Set_name("mine")
    c = pickle.loads(pickle.dumps(a))
    say("f90 handles", a == b, a is b, b.Get_name(), a == MPI.INTEGER2, c == a, c.Get_name(), outcome(a.Free),
        a == MPI.DATATYPE_NULL, b.size, b.Create_contiguous(3).Commit().Get_extent(),
        b.Create_contiguous(3).decode()[0] == b)
    for typeclass in ("LOGICAL", "INTEGER", "REAL", "COMPLEX"):
        for size in (0, 1, 2, 3, 4, 8, 16, 32, -1):
            found = outcome(lambda: MPI.Datatype.Match_size(getattr(MPI, "TYPECLASS_" + typeclass), size))
            if found[0] == "ok":
                t = found[1]
                found = (t.Get_name(), t.size, t.is_named, codes(t), t == getattr(MPI, typeclass + str(size), None))
            say("match", typeclass, size, found)
    say("match class", outcome(lambda: MPI.Datatype.Match_size(99, 4)),
        MPI.TYPECLASS_REAL, MPI.TYPECLASS_INTEGER, MPI.TYPECLASS_COMPLEX, MPI.TYPECLASS_LOGICAL)
    for value in NAMES[:24] + ["DOUBLE_INT", "AINT"]:
        pairs = []
        for index in NAMES[:24]:
            pair = MPI.Datatype.Get_value_index(getattr(MPI, value), getattr(MPI, index))
            if pair != MPI.DATATYPE_NULL:
                pairs.append((index, pair.Get_name(), pair.is_named, pair.Get_extent(), codes(pair)))
        say("value index", value, pairs)
    none = MPI.Datatype.Get_value_index(MPI.FLOAT, MPI.SHORT)
    say("value index none", none == MPI.DATATYPE_NULL, none is MPI.DATATYPE_NULL, bool(none),
        MPI.Datatype.Get_value_index(MPI.Datatype(MPI.DOUBLE), MPI.Datatype(MPI.INT)) == MPI.DOUBLE_INT,
        MPI.Datatype.Get_value_index(MPI.INT.Create_contiguous(1), MPI.INT) == MPI.DATATYPE_NULL,
        outcome(lambda: MPI.Datatype.Get_value_index(MPI.DATATYPE_NULL, MPI.INT)),
        outcome(lambda: MPI.Datatype.Get_value_index(MPI.INT, MPI.DATATYPE_NULL)),
        outcome(lambda: MPI.Datatype.Get_value_index(MPI.INT, 5)))
    say("combiners", MPI.COMBINER_DARRAY, MPI.COMBINER_F90_REAL, MPI.COMBINER_F90_COMPLEX,
        MPI.COMBINER_F90_INTEGER, MPI.COMBINER_VALUE_INDEX)
    null = MPI.Datatype()
    say("null", null == MPI.DATATYPE_NULL, null is MPI.DATATYPE_NULL, bool(null), null.Get_name(), codes(null),
        outcome(lambda: MPI.Datatype((1, 2))), outcome(lambda: MPI.Datatype(5)), MPI.Datatype(None) == null,
        pickle.loads(pickle.dumps(MPI.DATATYPE_NULL)) is MPI.DATATYPE_NULL,
        pickle.loads(pickle.dumps(null)) is MPI.DATATYPE_NULL, pickle.loads(pickle.dumps(null)) == null)
    i = MPI.Datatype(MPI.INT)
    say("int handle", i == MPI.INT, i is MPI.INT, i != MPI.INT, i.Get_name(), outcome(i.Free), i == MPI.INT,
        pickle.loads(pickle.dumps(i)) is MPI.INT, pickle.loads(pickle.dumps(i)) == MPI.INT,
        pickle.loads(pickle.dumps(MPI.INT)) is MPI.INT, MPI.INT == 5, MPI.INT != "INT")
    v = MPI.INT.Create_vector(2, 1, 3)
    w = MPI.Datatype(v)
    w.Set_name("shared")
    w.Commit()
    made = v.Create_contiguous(2)
    base = made.decode()[0]
    base.Free()                                 # (a handle of its own: made keeps its own)
    inner = made.Get_contents()[3][0]
    say("derived handle", w == v, v.Get_name(), v.Create_resized(0, 4).Commit().Get_extent(),
        base == MPI.DATATYPE_NULL, inner == v, inner.Get_name(), made.decode()[0].Get_name())
    w.Free()
    say("freed handle", w == MPI.DATATYPE_NULL, v == MPI.DATATYPE_NULL, v.Get_name(), made.Get_extent())
    say("codes", [MPI.Datatype.fromcode(c).Get_name() for c in ("a", "S", "S1", "s", "1s", "U", "U1", "w", "1w",
                                                                "u", "1u", "M", "M8", "m", "m8", "Zd", "b1", "p")],
        outcome(lambda: MPI.Datatype.fromcode("abc@xyz")), outcome(MPI.INT_INT.tocode), MPI.INT_INT.typechar,
        outcome(MPI.DATATYPE_NULL.tocode), MPI.INT.Create_dup().decode()[1])
"""


@mpi_launch.needs_mpiexec
def test_fortran_value_index_and_typecodes_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, CODES)


DARRAY = """import os
import pickle
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
B, C, N, D = MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC, MPI.DISTRIBUTE_NONE, MPI.DISTRIBUTE_DFLT_DARG
def described(t):
    t.Commit()
    packed = bytearray(t.size)
    t.Pack(np.arange(max(1, t.extent // 4), dtype="i4"), packed, 0, MPI.COMM_SELF)
    u = pickle.loads(pickle.dumps(t))
    return (t.Get_envelope(), t.Get_contents()[:3], t.Get_extent(), t.Get_true_extent(), t.size,
            t.is_named, t.is_predefined, t.typechar, t.typestr, MPI._typecode(t), t.decode()[1:],
            np.frombuffer(packed, "i4").tolist(), u.decode()[1:] == t.decode()[1:], u.Get_true_extent())
if rank == 0:
    say("constants", B, C, N, D, MPI.COMBINER_DARRAY)
    for ndims in (1, 2, 3):
        for n in (4, 6, 9):
            psizes = MPI.Compute_dims(n, [0] * ndims)
            for gsize in (4, 5, 6):
                for dist, darg in ((B, D), (C, D), (C, 2)):
                    if darg == 2 and gsize % 2:
                        continue        # (MPICH's true extent of blocks cut short: see below)
                    for order in (MPI.ORDER_C, MPI.ORDER_F):
                        for r in (0, 1, n - 1):
                            args = (n, r, [gsize] * ndims, [dist] * ndims, [darg] * ndims, psizes, order)
                            say(args, MPI.INT.Create_darray(*args).Commit().Get_true_extent())
    for args in ((3, 1, [10], [C], [2], [3]), (3, 2, [10], [B], [4], [3]),
                 (4, 1, [4, 6], [C, B], [1, 3], [2, 2], MPI.ORDER_F), (2, 1, [3, 5], [N, B], [D, D], [1, 2]),
                 (2, 1, [3, 5], [N, C], [D, 2], [1, 2], MPI.ORDER_F),
                 (6, 4, [4, 5, 3], [C, B, C], [D, 2, D], [1, 3, 2], MPI.ORDER_F),
                 (27, 26, [4], [B], [D], [27]), (9, 8, [4, 4], [C, C], [3, 3], [3, 3]), (1, 0, [5], [B], [D], [1])):
        say(args, described(MPI.INT.Create_darray(*args)))
    say("of a double", described(MPI.DOUBLE.Create_darray(4, 1, [8], [C], [D], [4])))
    say("of a vector", MPI.INT.Create_vector(2, 1, 3).Create_darray(2, 1, [5], [B], [D], [2]).Get_true_extent())
    resized = MPI.INT.Create_resized(-4, 12).Create_darray(2, 1, [5], [C], [D], [2])
    say("of a resized", resized.Get_extent(), resized.Get_true_extent())
# A 2-D array distributed block x cyclic over the ranks: rank 0 sends each rank its part (a
# darray send), each sends it back with 100 added (a darray receive).
gsizes, psizes = [5, 7], MPI.Compute_dims(size, [0, 0])
def part(r, order):
    return MPI.DOUBLE.Create_darray(size, r, gsizes, [B, C], [D, 2], psizes, order).Commit()
for order in (MPI.ORDER_C, MPI.ORDER_F):
    mine = np.zeros(part(rank, order).size // 8)
    if rank == 0:
        whole = np.arange(35.0).reshape(5, 7)
        requests = [comm.Isend([whole, 1, part(r, order)], r, 3) for r in range(size)]
        comm.Recv(mine, 0, 3)
        MPI.Request.Waitall(requests)
        back = np.zeros((5, 7))
        requests = [comm.Irecv([back, 1, part(r, order)], r, 4) for r in range(size)]
        comm.Send(mine + 100, 0, 4)
        MPI.Request.Waitall(requests)
        say(order, "back", (back - 100).tolist())
    else:
        comm.Recv(mine, 0, 3)
        comm.Send(mine + 100, 0, 4)
    say(order, rank, "holds", mine.tolist())
"""


@mpi_launch.needs_mpiexec
def test_darrays_as_under_mpiexec(tmp_path):
    for n in (1, 3):
        mpi_launch.assert_same_as_mpiexec(tmp_path, n, DARRAY)


DARRAY_ERRORS = """import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
B, C, N, D = MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC, MPI.DISTRIBUTE_NONE, MPI.DISTRIBUTE_DFLT_DARG
for args in ((4, 4, [8], [B], [D], [4]), (4, -1, [8], [B], [D], [4]), (0, 0, [8], [B], [D], [1]),
             (4, 1, [8], [B], [1], [4]), (4, 1, [8], [B], [0], [4]), (4, 1, [8], [B], [-2], [4]),
             (4, 1, [8], [C], [0], [4]), (4, 1, [8], [C], [-2], [4]), (4, 1, [8], [B], [D], [4], 99),
             (4, 1, [8, 2], [B], [D], [4]), (4, 1, [8], [B, B], [D], [4]), (2, 1, [8, 4], [B, B], [D, D], [1, 2.0]),
             (2, 1, [8, 4], [B, B], [D, D], [1, 2], "x")):
    say(args, outcome(lambda: MPI.INT.Create_darray(*args)))
say("null", outcome(lambda: MPI.DATATYPE_NULL.Create_darray(1, 0, [2], [B], [D], [1])))
"""


@mpi_launch.needs_mpiexec
def test_darray_errors_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, DARRAY_ERRORS)


def test_erroneous_darrays_are_refused(tmp_path):
    # (MPICH makes a datatype of these, or aborts: shmdat.mpi says ERR_ARG.)
    body = """from mpi4py import MPI
B, C, N, D = MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC, MPI.DISTRIBUTE_NONE, MPI.DISTRIBUTE_DFLT_DARG
for args in ((4, 1, [8], [B], [D], [2]), (4, 1, [8], [N], [D], [4]), (4, 1, [8], [99], [D], [4]),
             (4, 1, [], [], [], []), (4, 1, [0], [B], [D], [4]), (4, 1, [-1], [B], [D], [4]),
             (4, 1, [8], [B], [D], [0]), (4, 1, [8], [B], [D], [-4])):
    try:
        MPI.INT.Create_darray(*args)
    except MPI.Exception as e:
        print(e.Get_error_class() == MPI.ERR_ARG)
"""
    assert mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 1, body)) == ["True"] * 8


def test_a_darray_true_extent_bounds_its_bytes(tmp_path):
    # Cyclic blocks cut short in one dimension and starting past 0 in the next: MPICH gives a
    # true extent from the start of the row, (80, 16); shmdat.mpi where the bytes are.
    body = """import numpy as np
from mpi4py import MPI
C = MPI.DISTRIBUTE_CYCLIC
t = MPI.INT.Create_darray(6, 5, [5, 5], [C, C], [2, 2], [3, 2]).Commit()
packed = bytearray(t.size)
t.Pack(np.arange(25, dtype="i4"), packed, 0, MPI.COMM_SELF)
print(t.Get_true_extent(), np.frombuffer(packed, "i4").tolist())
"""
    assert mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, 1, body)) == ["(88, 8) [22, 23]"]


DTLIB = """import os
from mpi4py import MPI
from mpi4py.util import dtlib
""" + mpi_launch.SAY + f"""
NAMES = {NAMES!r}
for name in NAMES:
    t = getattr(MPI, name)
    if t != MPI.DATATYPE_NULL:      # (a struct's extent: padded to the members' alignment)
        say(name, MPI.Datatype.Create_struct([1, 1], [0, 1], [MPI.CHAR, t]).extent,
            MPI.Datatype.Create_struct([1, 1], [0, t.extent], [t, MPI.CHAR]).extent,
            outcome(lambda: str(dtlib.to_numpy_dtype(t))), outcome(lambda: str(dtlib.to_numpy_dtype(t.Dup()))))
for t in (MPI.Datatype.Create_f90_integer(9), MPI.Datatype.Create_f90_real(15, 300),
          MPI.Datatype.Create_f90_complex(6, 30), MPI.Datatype.Match_size(MPI.TYPECLASS_INTEGER, 16),
          MPI.Datatype.Create_struct([1, 1, 1], [0, 32, 64], [MPI.LONG_DOUBLE_INT, MPI.SHORT_INT, MPI.DOUBLE_INT]),
          MPI.INT.Create_darray(1, 0, [2, 3], [MPI.DISTRIBUTE_BLOCK] * 2, [MPI.DISTRIBUTE_DFLT_DARG] * 2, [1, 1])):
    say(t.Get_envelope(), t.extent, outcome(lambda: str(dtlib.to_numpy_dtype(t))))
say(outcome(lambda: dtlib.to_numpy_dtype(MPI.DATATYPE_NULL)), outcome(lambda: dtlib.to_numpy_dtype(MPI.Datatype())))
"""


@mpi_launch.needs_mpiexec
def test_alignment_and_dtlib_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, DTLIB)


F90_MESSAGES = """import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
comm = MPI.COMM_WORLD
for t, dt in ((MPI.Datatype.Create_f90_integer(9), "i4"), (MPI.Datatype.Create_f90_real(15, 300), "f8"),
              (MPI.Datatype.Create_f90_complex(6, 30), "c8"), (MPI.Datatype(MPI.INT), "i4"),
              (MPI.Datatype.Match_size(MPI.TYPECLASS_REAL, 4), "f4")):
    a = np.arange(3, dtype=dt) + comm.rank
    total, got = np.zeros(3, dtype=dt), np.zeros(3, dtype=dt)
    comm.Allreduce([a, t], [total, t], MPI.SUM)
    comm.Sendrecv([a, t], (comm.rank + 1) % comm.size, 0, [got, t], MPI.ANY_SOURCE, 0)
    say(comm.rank, t.Get_envelope(), total.tolist(), got.tolist())
"""


@mpi_launch.needs_mpiexec
def test_messages_and_reductions_of_fortran_datatypes_as_under_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, F90_MESSAGES)
