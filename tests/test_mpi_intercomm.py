"""shmdat.mpi's intercommunicators (Intracomm.Create_intercomm, MPI.Intercomm), by real
launches at N = 2 to 5 with uneven groups (world ranks 0, 3 against the others, one group
in reverse world order, leaders that are not both rank 0): the groups, Merge, Dup, Compare,
Free; point-to-point to the remote group's ranks on every path (statuses in remote ranks,
ANY_SOURCE); every inter collective with each group as the root group and every root; each
program checks its results against values worked out in it and, where MPICH is installed,
prints the same lines as under mpiexec. Then the errors (bad leaders, ROOT and PROC_NULL
misused, IN_PLACE, the calls not built), that intercommunicator traffic never matches
another communicator's, and that every name of mpi4py's Intercomm is here or listed."""

import pytest

from tests import mpi_launch

SETUP = """
import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r, n = world.rank, world.size
color = 0 if r % 3 == 0 else 1
mine = [i for i in range(n) if (i % 3 == 0) == (color == 0)]        # world ranks, ascending
others = [i for i in range(n) if (i % 3 == 0) != (color == 0)]
local = world.Split(color, -r if color else r)          # group 1 in reverse world order
order = {0: [i for i in range(n) if i % 3 == 0], 1: [i for i in range(n) if i % 3][::-1]}
here, there = order[color], order[1 - color]            # the groups' world ranks, in rank order
leader = local.size - 1 if color == 0 else 0            # group 0's leader: its last rank
ic = MPI.Intracomm.Create_intercomm(local, leader, world, max(others), tag=11)
lr, size, rsize = ic.rank, ic.size, ic.remote_size
assert (lr, size, rsize) == (here.index(r), len(here), len(there))
"""

GROUPS = SETUP + """
say(r, "sizes", lr, size, rsize, ic.Get_remote_size(), ic.is_inter, ic.Is_inter(), ic.is_intra,
    isinstance(ic, MPI.Intercomm), isinstance(ic, MPI.Intracomm), isinstance(ic, MPI.Comm),
    isinstance(local, MPI.Intracomm), isinstance(local, MPI.Intercomm),
    ic.topology == MPI.UNDEFINED)
groups = (ic.group.Translate_ranks(None, world.group),
          ic.Get_remote_group().Translate_ranks(None, world.group))
assert groups == (here, there), groups
say(r, "groups", *groups, ic.remote_group.rank == MPI.UNDEFINED, ic.Get_group().rank)
for high in (False, True, color == 1, color == 0):
    merged = ic.Merge(high)
    ranks = merged.group.Translate_ranks(None, world.group)
    assert sorted(ranks) == list(range(n)) and ranks[merged.rank] == r
    say(r, "merge", high, merged.rank, ranks, merged.allreduce(r) == n * (n - 1) // 2)
    merged.Free()
dup = ic.Dup()
say(r, "compare", ic.Compare(ic), ic.Compare(dup), dup.Compare(ic), ic.Compare(MPI.Comm(ic)),
    ic.Compare(world), world.Compare(ic), local.Compare(ic), type(dup).__name__,
    dup.remote_size, dup.rank)
for kind in (MPI.Intracomm, MPI.Intercomm):
    try:
        kind(ic if kind is MPI.Intracomm else world)
    except TypeError:
        say(r, "TypeError", kind.__name__)
say(r, "null", MPI.Intercomm() == MPI.COMM_NULL, MPI.Intercomm(ic) == ic, MPI.Comm(ic) == ic)
say(r, "dup allreduce", dup.allreduce(r), dup.allreduce(r) == sum(there))
dup.Free()
say(r, "freed", dup == MPI.COMM_NULL, ic != MPI.COMM_NULL)
"""

P2P = """
def block(j):
    return np.array([r, j], 'i')
def check(statuses):
    for st, buf in statuses:
        assert buf.tolist() == [there[st.source], lr], (st.source, buf)
    return sorted((st.source, st.tag, st.Get_count(MPI.INT)) for st, _ in statuses)
def receive_all(source_any, recv):
    statuses = []
    for j in range(rsize):
        st, buf = MPI.Status(), np.zeros(2, 'i')
        recv(buf, MPI.ANY_SOURCE if source_any else j, st)
        statuses.append((st, buf))
    return check(statuses)
# Isend then Recv from ANY_SOURCE, ANY_TAG: the status names the sender's rank in the remote
# group (its tag is that rank too).
reqs = [ic.Isend(block(j), dest=j, tag=lr) for j in range(rsize)]
say(r, "Isend/Recv(ANY)", receive_all(True, lambda b, s, st: ic.Recv(b, s, MPI.ANY_TAG, st)))
MPI.Request.Waitall(reqs)
ic.Barrier()        # (no message of the next round meets those ANY_TAG receives)
# Irecv from each, then Send, Ssend, Rsend, Bsend-free paths.
for name in ("Send", "Ssend", "Rsend"):
    bufs = [np.zeros(2, 'i') for _ in range(rsize)]
    recvs = [ic.Irecv(bufs[j], source=j, tag=7) for j in range(rsize)]
    for j in range(rsize):
        getattr(ic, name)(block(j), dest=j, tag=7)
    statuses = [MPI.Status() for _ in range(rsize)]
    MPI.Request.Waitall(recvs, statuses)
    say(r, name + "/Irecv", check(list(zip(statuses, bufs))))
# Issend then Probe (ANY_SOURCE) and Recv from the status's source.
reqs = [ic.Issend(block(j), dest=j, tag=3) for j in range(rsize)]
statuses = []
for _ in range(rsize):
    st = MPI.Status()
    ic.Probe(MPI.ANY_SOURCE, 3, st)
    buf = np.zeros(2, 'i')
    ic.Recv(buf, st.source, 3)
    statuses.append((st, buf))
say(r, "Issend/Probe", check(statuses))
MPI.Request.Waitall(reqs)
# Iprobe until there, Mprobe and its Message.
reqs = [ic.Isend(block(j), dest=j, tag=4) for j in range(rsize)]
statuses = []
for _ in range(rsize):
    st = MPI.Status()
    while not ic.Iprobe(MPI.ANY_SOURCE, 4, st):
        pass
    msg = ic.Mprobe(st.source, 4)
    buf = np.zeros(2, 'i')
    msg.Recv(buf)
    statuses.append((st, buf))
say(r, "Iprobe/Mprobe", check(statuses))
MPI.Request.Waitall(reqs)
# Persistent requests.
bufs = [np.zeros(2, 'i') for _ in range(rsize)]
recvs = [ic.Recv_init(bufs[j], j, 8) for j in range(rsize)]
sends = [ic.Send_init(block(j), j, 8) for j in range(rsize)]
MPI.Prequest.Startall(recvs + sends)
statuses = [MPI.Status() for _ in range(rsize)]
MPI.Request.Waitall(recvs, statuses)
MPI.Request.Waitall(sends)
say(r, "Send_init/Recv_init", check(list(zip(statuses, bufs))))
# Sendrecv and Sendrecv_replace between local rank i and remote rank i.
if lr < rsize:
    st, got = MPI.Status(), np.zeros(2, 'i')
    ic.Sendrecv(block(lr), lr, 9, got, lr, 9, st)
    say(r, "Sendrecv", check([(st, got)]))
    st, buf = MPI.Status(), block(lr)
    ic.Sendrecv_replace(buf, lr, 10, lr, 10, st)
    say(r, "Sendrecv_replace", check([(st, buf)]))
# Objects.
reqs = [ic.isend(("obj", r, j), dest=j, tag=12) for j in range(rsize)]
got = []
for _ in range(rsize):
    st = MPI.Status()
    obj = ic.recv(source=MPI.ANY_SOURCE, tag=12, status=st)
    assert obj == ("obj", there[st.source], lr), obj
    got.append((st.source, obj))
MPI.Request.waitall(reqs)
say(r, "isend/recv", sorted(got))
recvs = [ic.irecv(source=j, tag=13) for j in range(rsize)]
for j in range(rsize):
    ic.ssend([r, j], dest=j, tag=13)
got = MPI.Request.waitall(recvs)
assert got == [[there[j], lr] for j in range(rsize)], got
say(r, "ssend/irecv", got)
if lr < rsize:
    say(r, "sendrecv", ic.sendrecv(("sr", r), dest=lr, sendtag=14, source=lr, recvtag=14))
# PROC_NULL: nothing sent, an empty status from PROC_NULL.
ic.Send(block(0), MPI.PROC_NULL)
st = MPI.Status()
ic.Recv(np.zeros(2, 'i'), MPI.PROC_NULL, status=st)
say(r, "PROC_NULL", st.source == MPI.PROC_NULL, st.Get_count(MPI.INT),
    ic.recv(source=MPI.PROC_NULL))
"""

COLLECTIVES = """
def roots():
    # (root group, the root's rank in it, what this rank passes as root)
    for root_color in (0, 1):
        for root in range(len(order[root_color])):
            if color == root_color:
                yield root_color, root, MPI.ROOT if lr == root else MPI.PROC_NULL
            else:
                yield root_color, root, root
ic.Barrier()
ic.barrier()
say(r, "barrier")
for root_color, root, arg in roots():
    the_root = order[root_color][root]
    # Bcast: the root's 3 ints (its world rank, ...) to every member of the other group.
    buf = np.arange(3, dtype='i') + 10 * r if arg == MPI.ROOT else np.full(3, -1, 'i')
    ic.Bcast(buf if arg != MPI.PROC_NULL else None, root=arg)
    if arg >= 0:
        assert buf.tolist() == [10 * the_root, 10 * the_root + 1, 10 * the_root + 2], buf
    say(r, "Bcast", root_color, root, buf.tolist())
    obj = ic.bcast(("b", r) if arg == MPI.ROOT else None, root=arg)
    assert obj == (("b", the_root) if arg >= 0 else None), obj
    say(r, "bcast", root_color, root, obj)
    # Gather: 2 ints per member of the other group, in its rank order, at the root.
    out = np.full(2 * rsize, -1, 'i')
    ic.Gather(None if arg < 0 else np.array([r, lr], 'i'), out if arg == MPI.ROOT else None,
              root=arg)
    if arg == MPI.ROOT:
        assert out.tolist() == [v for j, w in enumerate(there) for v in (w, j)], out
    say(r, "Gather", root_color, root, out.tolist())
    obj = ic.gather(("g", r), root=arg)
    assert obj == ([("g", w) for w in there] if arg == MPI.ROOT else None), obj
    say(r, "gather", root_color, root, obj)
    # Scatter: block j of the root's to member j of the other group.
    send = np.arange(3 * rsize, dtype='i') + 100 * r
    out = np.full(3, -1, 'i')
    ic.Scatter(send if arg == MPI.ROOT else None, out if arg >= 0 else None, root=arg)
    if arg >= 0:
        assert out.tolist() == [100 * the_root + 3 * lr + k for k in range(3)], out
    say(r, "Scatter", root_color, root, out.tolist())
    obj = ic.scatter([("s", r, j) for j in range(rsize)] if arg == MPI.ROOT else None, root=arg)
    assert obj == (("s", the_root, lr) if arg >= 0 else None), obj
    say(r, "scatter", root_color, root, obj)
    # Reduce: the other group's vectors, summed (and their max), at the root.
    for op in (MPI.SUM, MPI.MAX):
        out = np.full(2, -1, 'i')
        ic.Reduce(None if arg < 0 else np.array([r, 1], 'i'), out if arg == MPI.ROOT else None,
                  op=op, root=arg)
        if arg == MPI.ROOT:
            assert out.tolist() == ([sum(there), rsize] if op == MPI.SUM else [max(there), 1])
        say(r, "Reduce", op == MPI.SUM, root_color, root, out.tolist())
    obj = ic.reduce([r], op=MPI.SUM, root=arg)
    assert obj == (there if arg == MPI.ROOT else None), obj
    say(r, "reduce", root_color, root, obj)
# Allgather: group 0 sends 2 ints, group 1 sends 3; each gets the other group's blocks.
count, theirs = (2, 3) if color == 0 else (3, 2)
out = np.full(theirs * rsize, -1, 'i')
ic.Allgather(np.full(count, r, 'i'), out)
assert out.tolist() == [w for w in there for _ in range(theirs)], out
say(r, "Allgather", out.tolist())
obj = ic.allgather(("a", r))
assert obj == [("a", w) for w in there], obj
say(r, "allgather", obj)
# Alltoall: block j (count ints) to member j of the other group.
send = np.array([1000 * r + j for j in range(rsize) for _ in range(count)], 'i')
out = np.full(theirs * rsize, -1, 'i')
ic.Alltoall(send, out)
assert out.tolist() == [1000 * w + lr for w in there for _ in range(theirs)], out
say(r, "Alltoall", out.tolist())
obj = ic.alltoall([(r, j) for j in range(rsize)])
assert obj == [(w, lr) for w in there], obj
say(r, "alltoall", obj)
# Allreduce: each group gets the OTHER group's reduction.
for op, dtype, want in ((MPI.SUM, 'i', [sum(there), sum(there) + rsize]),
                        (MPI.MAX, 'd', [max(there), max(there) + 1]),
                        (MPI.PROD, 'i', [int(np.prod(there)),
                                         int(np.prod([w + 1 for w in there]))])):
    out = np.zeros(2, dtype)
    ic.Allreduce(np.array([r, r + 1], dtype), out, op)
    assert out.tolist() == want, (out, want)
    say(r, "Allreduce", dtype, out.tolist())
obj = ic.allreduce([r])
assert obj == there, obj
say(r, "allreduce", obj, ic.allreduce(r, MPI.MAX))
# Large messages (rendezvous): a Bcast and an Allreduce of 1 MiB.
for root_color, root, arg in roots():
    big = np.full(1 << 17, r, 'd') if arg == MPI.ROOT else np.zeros(1 << 17, 'd')
    ic.Bcast(big if arg != MPI.PROC_NULL else None, root=arg)
    assert arg < 0 or big[0] == big[-1] == order[root_color][root]
out = np.zeros(1 << 17, 'd')
ic.Allreduce(np.full(1 << 17, r, 'd'), out)
say(r, "large", out[0] == out[-1] == sum(there))
ic.Free()
local.Free()
say(r, "freed", ic == MPI.COMM_NULL, local == MPI.COMM_NULL)
"""
INTERCOMM = SETUP + GROUPS + P2P + COLLECTIVES


def same_as_mpiexec(tmp_path, n, body, ours):
    """Where MPICH is installed: `body` prints the lines `ours` under mpiexec too."""
    if mpi_launch.mpi_available() is None:
        assert ours == mpi_launch.lines_of(mpi_launch.launch_mpiexec(tmp_path, n, body))


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_intercomm(tmp_path, n):
    r = mpi_launch.launch_mpi4py(tmp_path, n, INTERCOMM)
    lines = mpi_launch.lines_of(r)
    assert r.stderr == ""
    assert [line.split(maxsplit=1)[1] for line in lines if line.endswith("freed True True")] \
        == ["freed True True"] * 2 * n            # every rank ran to its end (its checks held)
    same_as_mpiexec(tmp_path, n, INTERCOMM, lines)

ERRORS = """
import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r, n = world.rank, world.size
color = 0 if r % 3 == 0 else 1
others = [i for i in range(n) if (i % 3 == 0) != (color == 0)]
local = world.Split(color, r)
b = np.zeros(2, 'i')
for name, call in [
    ("local_leader 5", lambda: local.Create_intercomm(5, world, min(others))),
    ("local_leader -1", lambda: local.Create_intercomm(-1, world, min(others))),
    ("local_leader PROC_NULL", lambda: local.Create_intercomm(MPI.PROC_NULL, world, min(others))),
    ("local_leader str", lambda: local.Create_intercomm("0", world, min(others))),
    ("tag -5", lambda: local.Create_intercomm(0, world, min(others), tag=-5)),
    ("tag ANY_TAG", lambda: local.Create_intercomm(0, world, min(others), tag=MPI.ANY_TAG)),
    ("peer_comm COMM_NULL", lambda: local.Create_intercomm(0, MPI.COMM_NULL, min(others))),
]:
    say(r, name, outcome(call))
ic = local.Create_intercomm(0, world, min(others))
for name, call in [
    ("Bcast root ANY_SOURCE", lambda: ic.Bcast(b, root=MPI.ANY_SOURCE)),
    ("Scatter root remote_size", lambda: ic.Scatter(b, b, root=ic.remote_size)),
    ("bcast root 99", lambda: ic.bcast(1, root=99)),
    ("reduce root -2", lambda: ic.reduce(None, op=MPI.NO_OP, root=-2)),
    ("Gather root -7", lambda: ic.Gather(b, b, root=-7)),
    ("Allreduce IN_PLACE", lambda: ic.Allreduce(MPI.IN_PLACE, b)),
    ("Isend dest ROOT", lambda: ic.Isend(b, dest=MPI.ROOT)),
    ("Send dest remote_size", lambda: ic.Send(b, dest=ic.remote_size)),
    ("Recv source remote_size", lambda: ic.Recv(b, source=ic.remote_size)),
    ("Iprobe source ROOT", lambda: ic.Iprobe(source=MPI.ROOT)),
    ("Compare COMM_NULL", lambda: ic.Compare(MPI.COMM_NULL)),
    ("world bcast ROOT", lambda: world.bcast(1, root=MPI.ROOT)),
    ("world Bcast PROC_NULL", lambda: world.Bcast(b, root=MPI.PROC_NULL)),
    ("world Gather ROOT", lambda: world.Gather(b, None, root=MPI.ROOT)),
    ("Intracomm(ic)", lambda: MPI.Intracomm(ic)),
    ("Intercomm(world)", lambda: MPI.Intercomm(world)),
    ("null Get_remote_size", lambda: MPI.Intercomm().Get_remote_size()),
    ("null Merge", lambda: MPI.Intercomm().Merge(True)),
    ("Comm.Compare(COMM_NULL, ic)", lambda: MPI.Comm.Compare(MPI.COMM_NULL, ic)),
]:
    say(r, name, outcome(call))
say(r, "still", ic.allreduce(r) == sum(others))
ic.Free()
"""


RANK, TAG, ROOT, BUFFER, COMM = (f"('MPI', {c})" for c in (6, 4, 7, 1, 5))     # MPICH's classes
TYPE = "('TypeError',)"
ERRORS_SEEN = {
    "local_leader 5": RANK, "local_leader -1": RANK, "local_leader PROC_NULL": RANK,
    "local_leader str": TYPE, "tag -5": TAG, "tag ANY_TAG": TAG, "peer_comm COMM_NULL": TYPE,
    "Bcast root ANY_SOURCE": ROOT, "Scatter root remote_size": ROOT, "bcast root 99": ROOT,
    "reduce root -2": ROOT, "Gather root -7": ROOT, "Allreduce IN_PLACE": BUFFER,
    "Isend dest ROOT": RANK, "Send dest remote_size": RANK, "Recv source remote_size": RANK,
    "Iprobe source ROOT": RANK, "Compare COMM_NULL": COMM, "world bcast ROOT": ROOT,
    "world Bcast PROC_NULL": ROOT, "world Gather ROOT": ROOT, "Intracomm(ic)": TYPE,
    "Intercomm(world)": TYPE, "null Get_remote_size": COMM, "null Merge": COMM,
    "Comm.Compare(COMM_NULL, ic)": COMM, "still": "True"}


@pytest.mark.parametrize("n", [2, 3])
def test_errors(tmp_path, n):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, n, ERRORS))
    assert lines == sorted(f"{rank} {name} {seen}" for rank in range(n)
                           for name, seen in ERRORS_SEEN.items())
    same_as_mpiexec(tmp_path, n, ERRORS, lines)


NOT_HERE = """
import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r, n = world.rank, world.size
color = 0 if r % 3 == 0 else 1
mine = [i for i in range(n) if (i % 3 == 0) == (color == 0)]
others = [i for i in range(n) if (i % 3 == 0) != (color == 0)]
local = world.Split(color, r)
# A remote leader out of peer_comm, or in this very group, at both leaders: every rank of
# both groups raises ERR_RANK (under MPICH the leaders raise and the others wait).
for remote_leader in (n, max(mine)):
    try:
        local.Create_intercomm(0, world, remote_leader)
    except MPI.Exception as e:
        say(r, "remote_leader", remote_leader == n, e.Get_error_class() == MPI.ERR_RANK)
ic = local.Create_intercomm(0, world, min(others))
root = (MPI.ROOT if ic.rank == 0 else MPI.PROC_NULL) if color == 0 else 0
# IN_PLACE, which an intercommunicator's collectives do not take (MPICH takes some, and
# answers wrong): ERR_BUFFER on every rank that gives it, before any message.
b = np.zeros(2 * ic.remote_size, 'i')
for name, call in [("Allgather", lambda: ic.Allgather(MPI.IN_PLACE, b)),
                   ("Alltoall", lambda: ic.Alltoall(None, b)),
                   ("Gather", lambda: ic.Gather(MPI.IN_PLACE, b, root=0)),
                   ("Reduce", lambda: ic.Reduce(MPI.IN_PLACE, b, root=0)),
                   ("Allreduce", lambda: ic.Allreduce(None, b))]:
    try:
        call()
    except MPI.Exception as e:
        say(r, "IN_PLACE", name, e.Get_error_class() == MPI.ERR_BUFFER)
# An op the datatype has not: ERR_OP on every rank, the root's too (no wait for a message
# that never comes).
for arg in ([root] if root != MPI.PROC_NULL else []):
    try:
        ic.Reduce(np.zeros(2), np.zeros(2), op=MPI.BAND, root=arg)
    except MPI.Exception as e:
        say(r, "Reduce BAND on doubles", e.Get_error_class() == MPI.ERR_OP)
# The calls not built on an intercommunicator: NotImplementedError naming the call.
for name, args in [("Scan", (b, b)), ("Exscan", (b, b)), ("scan", (1,)), ("exscan", (1,)),
                   ("Reduce_scatter", (b, b)),
                   ("Reduce_scatter_block", (b, b)), ("Ibarrier", ()), ("Ibcast", (b,)),
                   ("Iallreduce", (b, b)), ("Igather", (b, b)),
                   ("Create", (ic.group,)), ("Create_cart", ([1],)),
                   ("Create_graph", ([1], [0])), ("Create_intercomm", (0, world, 0))]:
    try:
        getattr(ic, name)(*args)
    except NotImplementedError as e:
        say(r, name, str(e) == f"Intercomm.{name} is not implemented by shmdat.mpi")
for name, call in [("Win.Create", lambda: MPI.Win.Create(bytearray(8), comm=ic)),
                   ("Win.Allocate", lambda: MPI.Win.Allocate(8, comm=ic)),
                   ("Win.Allocate_shared", lambda: MPI.Win.Allocate_shared(8, comm=ic))]:
    try:
        call()
    except NotImplementedError as e:
        say(r, name, "Intercomm" in str(e))
say(r, "still", ic.allreduce(r) == sum(others), ic.bcast(r, root=root))
ic.Free()
"""


@pytest.mark.parametrize("n", [2, 4])
def test_what_is_not_here_raises_on_every_rank(tmp_path, n):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, n, NOT_HERE))
    checks = [line.split(maxsplit=1)[1] for line in lines]
    assert all(c.endswith("True") for c in checks if not c.startswith("still")), lines
    per_rank = 2 + 5 + 14 + 3 + 1
    reducing = n - (len(range(0, n, 3)) - 1)        # (not the root group's PROC_NULLs)
    assert len(lines) == per_rank * n + reducing
    stills = sorted(c for c in checks if c.startswith("still"))
    # The remote group's rank 0 (world rank 1) gets the root's world rank, 0; the root group
    # gets None.
    assert stills == sorted("still True " + ("None" if r % 3 == 0 else "0") for r in range(n))


CONTEXTS = """
import os
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r, n = world.rank, world.size
color = 0 if r % 3 == 0 else 1
mine = [i for i in range(n) if (i % 3 == 0) == (color == 0)]
others = [i for i in range(n) if (i % 3 == 0) != (color == 0)]
local = world.Split(color, r)
ic = local.Create_intercomm(0, world, min(others), tag=3)
dup = ic.Dup()
merged = ic.Merge(color == 1)
# A receive from anyone with any tag on the user's local communicator, posted while the
# intercommunicator's collectives run (their local parts go on a communicator of their own).
waiting = local.irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG) if local.rank == 0 else None
say(r, "collectives", ic.allgather(r) == others, dup.allreduce(r) == sum(others),
    local.allreduce(r) == sum(mine), merged.allreduce(1) == n, ic.bcast(
        r if color == 0 and ic.rank == 0 else None,
        root=(MPI.ROOT if ic.rank == 0 else MPI.PROC_NULL) if color == 0 else 0))
ic.Barrier()
if local.rank == local.size - 1:
    local.send("local", dest=0, tag=1)
if waiting is not None:
    say(r, "local got", waiting.wait())
# Every rank sends to the other group's rank 0 on world, then dup, then ic, then merged,
# all with tag 5; that rank receives from anyone with any tag in the other order, and each
# communicator gives only its own messages.
target = min(others)        # the other group's rank 0 (world: both groups ascend)
in_merged = world.group.Translate_ranks([target], merged.group)[0]
requests = [comm.isend((name, r), dest=dest, tag=5) for comm, name, dest in
            [(world, "world", target), (dup, "dup", 0), (ic, "ic", 0),
             (merged, "merged", in_merged)]]
if ic.rank == 0:
    for comm, name in [(merged, "merged"), (ic, "ic"), (dup, "dup"), (world, "world")]:
        got = sorted(comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
                     for _ in range(ic.remote_size))
        assert got == [(name, w) for w in others], got
        say(r, "received", got)
MPI.Request.waitall(requests)
for comm in (merged, dup, ic, local):
    comm.Free()
"""


@pytest.mark.parametrize("n", [3, 5])
def test_intercomm_traffic_never_matches_another_communicators(tmp_path, n):
    lines = mpi_launch.lines_of(mpi_launch.launch_mpi4py(tmp_path, n, CONTEXTS))
    assert sum(line.split()[1] == "received" for line in lines) == 4 * 2     # (asserted there)
    collectives = [line.split() for line in lines if line.split()[1] == "collectives"]
    assert collectives == [[str(r), "collectives", "True", "True", "True", "True",
                            "None" if r % 3 == 0 else "0"] for r in range(n)]
    assert [line for line in lines if "local got" in line] == ["0 local got local",
                                                              "1 local got local"]
    same_as_mpiexec(tmp_path, n, CONTEXTS, lines)


# Comm's calls an Intercomm takes as they are: point-to-point (to the remote group),
# attributes, names, error handlers, buffers; Intercomm overrides or refuses the rest.
INHERITED = set("""
    Abort Attach_buffer Bsend Bsend_init Call_errhandler Clone Create_errhandler
    Create_keyval Delete_attr Detach_buffer Dup_with_info Flush_buffer Free_keyval Get_attr
    Get_errhandler Get_name Get_rank Get_size Get_topology Ibsend Idup Idup_with_info Improbe
    Iprobe Irecv Irsend Isend Issend Mprobe Probe Recv Recv_init Rsend Rsend_init Send
    Send_init Sendrecv Sendrecv_replace Set_attr Set_errhandler Set_name Ssend Ssend_init
    bsend ibsend improbe iprobe irecv isend issend mprobe name probe rank recv send sendrecv
    size ssend is_topo topology Get_info Set_info info Disconnect Get_parent Join
    toint fromint py2f f2py handle fromhandle free Isendrecv Isendrecv_replace Psend_init
    Precv_init Iflush_buffer
""".split())


def test_every_name_of_an_intercomm_is_decided(tmp_path):
    """Each public name of Comm is one an Intercomm takes as it is (INHERITED), overrides,
    or refuses (intercomm.NOT_ON_INTERCOMM: NotImplementedCall when called), so a call added
    to Comm later cannot run on an intercommunicator unexamined; and each name of mpi4py
    4.1.2's Intercomm is here or in unimplemented.INTERCOMM."""
    pytest.importorskip("mpi4py")
    body = """
        import sys
        import mpi4py
        mpi4py.rc.initialize = False            # (only its names: MPICH is not started)
        from mpi4py import MPI as real
        from shmdat.mpi import MPI, intercomm, unimplemented
        world = MPI.COMM_WORLD
        color = world.rank % 2
        ic = world.Split(color, 0).Create_intercomm(0, world, 1 - color)
        comm_names = {n for n in dir(world) if not n.startswith("_")}
        overridden = {n for n in vars(intercomm.Intercomm) if not n.startswith("_")}
        undecided = comm_names - INHERITED - overridden
        assert not undecided, undecided
        assert intercomm.NOT_ON_INTERCOMM <= overridden
        for name in intercomm.NOT_ON_INTERCOMM:
            try:
                getattr(ic, name)()
            except unimplemented.NotImplementedCall as e:
                assert str(e) == f"Intercomm.{name} is not implemented by shmdat.mpi", e
            else:
                raise AssertionError(name)
        missing = [n for n in dir(real.Intercomm) if not n.startswith("_")
                   and hasattr(ic, n) == (n in unimplemented.INTERCOMM)]
        assert not missing or sys.modules["mpi4py"].__version__ != "4.1.2", missing
        sys.stdout.write("ok\\n")
    """.replace("\n        ", "\n")
    r = mpi_launch.launch(tmp_path, 2, f"INHERITED = {INHERITED!r}\n" + body)
    assert r.returncode == 0 and r.stdout == "ok\nok\n", r.stdout + r.stderr
