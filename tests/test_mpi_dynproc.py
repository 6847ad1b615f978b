"""shmdat.mpi's dynamic processes (shmdat/mpi/dynproc.py), by real launches: Spawn of 1 to 3
children from 1 and 2 parents (the pi program of mpi4py's tutorial, point-to-point both ways,
the intercommunicator's collectives, Merge both ways, Disconnect, Get_parent on both sides),
Spawn_multiple (APPNUM, errcodes), Accept/Connect between communicators of one job and
between two jobs, the name service, Join, the errors, a child that fails and a parent that
fails (the job ends, nothing left in /dev/shm), a singleton. Where MPICH is installed, each
program prints the same lines under mpiexec."""

import os
import signal
import subprocess
import sys
import uuid

import pytest

from shmdat.mpi import errors
from tests import mpi_launch

# A spawned program: its lines say which side printed them, and what it got.
CHILD = """
import os, sys
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
parent = MPI.Comm.Get_parent()
world = MPI.COMM_WORLD
r = world.rank
assert parent != MPI.COMM_NULL and isinstance(parent, MPI.Intercomm)
say("child", r, world.size, parent.rank, parent.size, parent.remote_size,
    world.Get_attr(MPI.APPNUM), sys.argv[1:])
N = np.array(0, "i")
parent.Bcast([N, MPI.INT], root=0)
h, s = 1.0 / N, 0.0
for i in range(r, int(N), world.size):
    x = h * (i + 0.5)
    s += 4.0 / (1.0 + x * x)
parent.Reduce([np.array(s * h), MPI.DOUBLE], None, op=MPI.SUM, root=0)
got = parent.recv(source=0, tag=r)
parent.send((r, got), dest=parent.remote_size - 1, tag=7)
buf = np.zeros(5, "d")
parent.Recv(buf, source=0, tag=100 + r)
parent.Send(buf * 2, dest=0, tag=200 + r)
say("child", r, "allreduce", parent.allreduce(r + 1), "bcast", parent.bcast(None, root=0))
say("child", r, "gather", parent.gather(None, root=0), "scatter", parent.scatter(None, root=0))
parent.gather(("c", r), root=MPI.ROOT if r == 0 else MPI.PROC_NULL)
parent.Barrier()
for high in (True, False):
    merged = parent.Merge(high)
    say("child", r, "merged", high, merged.rank, merged.size, merged.allreduce(1))
    merged.Free()
parent.Disconnect()
say("child", r, "after", parent == MPI.COMM_NULL, MPI.Comm.Get_parent() == MPI.COMM_NULL)
"""

PARENT = """
import os, sys
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r = world.rank
say("parent", r, MPI.Comm.Get_parent() == MPI.COMM_NULL, world.Get_attr(MPI.APPNUM))
errcodes = []
child = world.Spawn(sys.executable, [CHILD, "a b", "c"], maxprocs=KIDS, errcodes=errcodes)
k = child.remote_size
say("parent", r, type(child).__name__, child.rank, child.size, k, errcodes)
root = MPI.ROOT if r == 0 else MPI.PROC_NULL
child.Bcast([np.array(1000, "i"), MPI.INT], root=root)
pi = np.array(0.0)
child.Reduce(None, [pi, MPI.DOUBLE], op=MPI.SUM, root=root)
say("parent", r, "pi", round(float(pi), 9))
if r == 0:
    for i in range(k):
        child.send(["to", i], dest=i, tag=i)
if r == world.size - 1:
    say("parent", r, "got", sorted(child.recv(source=MPI.ANY_SOURCE, tag=7) for _ in range(k)))
if r == 0:
    for i in range(k):
        child.Send(np.arange(5.0) + i, dest=i, tag=100 + i)
    for i in range(k):
        back = np.empty(5)
        status = MPI.Status()
        child.Recv(back, source=i, tag=200 + i, status=status)
        assert (back == 2 * (np.arange(5.0) + i)).all() and status.Get_source() == i
say("parent", r, "allreduce", child.allreduce(10 * (r + 1)), "bcast", child.bcast("hi", root=root))
say("parent", r, "gather", child.gather(None, root=root),
    "scatter", child.scatter([i * i for i in range(k)] if r == 0 else None, root=root))
say("parent", r, "gathered", child.gather(("p", r), root=0))
child.Barrier()
for high in (False, True):
    merged = child.Merge(high)
    say("parent", r, "merged", high, merged.rank, merged.size, merged.allreduce(1))
    merged.Free()
child.Disconnect()
say("parent", r, "after", child == MPI.COMM_NULL)
"""


def _spawn_program(tmp_path, body, kids):
    """`body` with CHILD the path of the child program and KIDS the children's count."""
    child = mpi_launch.write(tmp_path, CHILD, "child.py")
    return body.replace("CHILD", repr(child)).replace("KIDS", str(kids))


@pytest.mark.parametrize("parents, kids", [(1, 1), (1, 3), (2, 2), (2, 3)])
def test_spawn(tmp_path, parents, kids):
    """The tutorial's pi, point-to-point both ways, every collective, Merge, Disconnect."""
    r = mpi_launch.launch_mpi4py(tmp_path, parents, _spawn_program(tmp_path, PARENT, kids))
    lines = mpi_launch.lines_of(r)
    assert len([line for line in lines if line.startswith("child ")]) == 6 * kids
    assert f"parent 0 pi {3.141592737:.9f}" in lines
    assert f"parent 0 Intercomm 0 {parents} {kids} {[0] * kids}" in lines
    assert f"child 0 {kids} 0 {kids} {parents} 0 ['a b', 'c']" in lines
    assert f"parent 0 merged False 0 {parents + kids} {parents + kids}" in lines


@mpi_launch.needs_mpiexec
def test_spawn_as_mpiexec(tmp_path):
    """(Three processes: MPICH's busy polling is slow beyond the cores.)"""
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, _spawn_program(tmp_path, PARENT, 2))


MULTIPLE = """
import os, sys
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
if world.rank == 0:
    args = ([sys.executable] * 2, [[KID, "one"], [KID, "two"]], [1, 2], [MPI.INFO_NULL] * 2)
else:                                   # (significant at the root only)
    args = (None, None, -1, MPI.INFO_NULL)
errcodes = []
child = world.Spawn_multiple(*args, errcodes=errcodes)
say("parent", world.rank, child.remote_size, errcodes)
child.Disconnect()
"""

MULTIPLE_KID = """
import os, sys
from mpi4py import MPI
""" + mpi_launch.SAY + """
parent = MPI.Comm.Get_parent()
world = MPI.COMM_WORLD
say("kid", world.rank, world.size, world.Get_attr(MPI.APPNUM), sys.argv[1:], parent.remote_size)
parent.Disconnect()
"""


def _multiple(tmp_path):
    return MULTIPLE.replace("KID", repr(mpi_launch.write(tmp_path, MULTIPLE_KID, "kid.py")))


def test_spawn_multiple(tmp_path):
    """Two commands in one world of three: APPNUM, the arguments, errcodes per command."""
    r = mpi_launch.launch_mpi4py(tmp_path, 2, _multiple(tmp_path))
    assert mpi_launch.lines_of(r) == [
        "kid 0 3 0 ['one'] 2", "kid 1 3 1 ['two'] 2", "kid 2 3 1 ['two'] 2",
        "parent 0 3 [[0], [0, 0]]", "parent 1 3 [[0], [0, 0]]"]


@mpi_launch.needs_mpiexec
def test_spawn_multiple_as_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, _multiple(tmp_path))


# Accept/Connect inside one job (mpi4py's test_dynproc's shape, both directions), with the
# port passed by a message and by the name service, and Join over a Unix socket.
ACCEPT_CONNECT = """
import os, socket
import numpy as np
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
r, n = world.rank, world.size
rest = world.Split(0 if r else MPI.UNDEFINED, r)
for accepting_side in (0, 1):       # world rank 0 accepts, then the others do
    if r == 0:
        if accepting_side == 0:
            port = MPI.Open_port()
            world.send(port, dest=1)
            ic = MPI.COMM_SELF.Accept(port)
            MPI.Close_port(port)
        else:
            port = MPI.Lookup_name(world.recv(source=1))
            ic = MPI.COMM_SELF.Connect(port)
    else:
        if accepting_side == 0:
            ic = rest.Connect(world.recv(source=0) if r == 1 else None, root=0)
        else:
            port = MPI.Open_port() if r == 1 else None
            if r == 1:
                MPI.Publish_name("SERVICE", port)
                world.send("SERVICE", dest=0)
            ic = rest.Accept(port, root=0)
            if r == 1:
                MPI.Unpublish_name("SERVICE", port)
                MPI.Close_port(port)
    say(r, accepting_side, type(ic).__name__, ic.rank, ic.size, ic.remote_size)
    root = MPI.ROOT if r == 0 else 0
    say(r, accepting_side, "bcast", ic.bcast(["x", 1] if r == 0 else None, root))
    if r == 0:
        for i in range(ic.remote_size):
            ic.Send(np.full(3, i, "i"), dest=i, tag=5)
        say(r, accepting_side, "sum", sum(ic.recv(source=MPI.ANY_SOURCE) for _ in range(n - 1)))
    else:
        buf = np.zeros(3, "i")
        ic.Recv(buf, source=0, tag=5)
        ic.send(int(buf.sum()) + r, dest=0)
    say(r, accepting_side, "allreduce", ic.allreduce(r))
    merged = ic.Merge(r != 0)
    say(r, accepting_side, "merged", merged.rank, merged.allreduce(r))
    merged.Free()
    ic.Disconnect()
say(r, "after", ic == MPI.COMM_NULL)
if n > 1 and r < 2:                 # Join: ranks 0 and 1 over a Unix socket
    path = os.path.join(SOCKDIR, "join")
    if r == 0:
        server = socket.socket(socket.AF_UNIX)
        server.bind(path)
        server.listen(1)
        world.send(None, dest=1)
        sock = server.accept()[0]
        server.close()
        os.unlink(path)
    else:
        world.recv(source=0)
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(path)
    ic = MPI.Comm.Join(sock.fileno())
    sock.close()
    say(r, "join", type(ic).__name__, ic.size, ic.remote_size, ic.allreduce(r + 1))
    ic.Disconnect()
"""


def _accept_connect(tmp_path):
    service = f"shmdat-test-{uuid.uuid4().hex}"
    return ACCEPT_CONNECT.replace("SERVICE", service).replace("SOCKDIR", repr(str(tmp_path)))


@pytest.mark.parametrize("n", [2, 3])
def test_accept_connect(tmp_path, n):
    r = mpi_launch.launch_mpi4py(tmp_path, n, mpi_launch.PIDS + _accept_connect(tmp_path))
    lines = mpi_launch.lines_of(r)
    assert f"0 0 Intercomm 0 1 {n - 1}" in lines and f"1 1 Intercomm 0 {n - 1} 1" in lines
    assert f"0 1 sum {sum(3 * (i - 1) + i for i in range(1, n))}" in lines
    assert "0 join Intercomm 1 1 2" in lines and "1 join Intercomm 1 1 1" in lines
    assert not mpi_launch.leftovers(mpi_launch.pids(r.stdout))


@mpi_launch.needs_mpiexec
def test_accept_connect_as_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 2, _accept_connect(tmp_path))


# Two jobs: the server's job publishes a name; the client's, started once it has, looks it up.
SERVER = mpi_launch.PIDS + """
import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
port = MPI.Open_port() if world.rank == 0 else None
if world.rank == 0:
    MPI.Publish_name("SERVICE", port)
    say("published")
ic = world.Accept(port)
say("server", world.rank, ic.size, ic.remote_size, ic.allreduce(world.rank + 1))
say("server", world.rank, "gather", ic.gather(world.rank, root=0))
merged = ic.Merge(False)
say("server", world.rank, "merged", merged.rank, merged.size)
merged.Free()
ic.Disconnect()
if world.rank == 0:
    MPI.Unpublish_name("SERVICE", port)
    MPI.Close_port(port)
"""

CLIENT = mpi_launch.PIDS + """
import os
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
port = MPI.Lookup_name("SERVICE") if world.rank == 0 else None
ic = world.Connect(port)
say("client", world.rank, ic.size, ic.remote_size, ic.allreduce(100 * (world.rank + 1)))
say("client", world.rank, "gather", ic.gather(None, root=MPI.ROOT if world.rank == 0
                                              else MPI.PROC_NULL))
merged = ic.Merge(True)
say("client", world.rank, "merged", merged.rank, merged.size)
merged.Free()
ic.Disconnect()
"""


def test_two_jobs(tmp_path):
    """A job of 2 Accepts, a job of 3 Connects, the port found by name: the name service
    is the machine's, the connection is over DAT between two launches."""
    service = f"shmdat-test-{uuid.uuid4().hex}"
    server = mpi_launch.write(tmp_path, SERVER.replace("SERVICE", service), "server.py")
    client = mpi_launch.write(tmp_path, CLIENT.replace("SERVICE", service), "client.py")
    run = [sys.executable, "-m", "shmdat", "run", "--mpi4py"]
    with subprocess.Popen(run + ["-n", "2", "--", sys.executable, server],
                          stdout=subprocess.PIPE, text=True, env=mpi_launch.env()) as first:
        try:
            early = []      # (the ranks' pids, until the name is published)
            while not early or early[-1] != "published\n":
                early.append(first.stdout.readline())
                assert early[-1], "the server's job ended before publishing"
            second = subprocess.run(run + ["-n", "3", "--", sys.executable, client],
                                    capture_output=True, text=True, env=mpi_launch.env(),
                                    timeout=mpi_launch.TIMEOUT)
            out, _ = first.communicate(timeout=mpi_launch.TIMEOUT)
        finally:
            first.kill()
    assert second.returncode == 0 and first.returncode == 0, second.stderr
    out = "".join(early) + out + second.stdout
    assert not mpi_launch.leftovers(mpi_launch.pids(out))
    assert sorted(line for line in out.splitlines() if not line.startswith(("pid ", "pub"))) \
        == sorted([
        "server 0 2 3 600", "server 1 2 3 600", "server 0 gather None",
        "server 1 gather None", "client 0 gather [0, 1]", "client 1 gather None",
        "client 2 gather None", "server 0 merged 0 5", "server 1 merged 1 5",
        "client 0 3 2 3", "client 1 3 2 3", "client 2 3 2 3",
        "client 0 merged 2 5", "client 1 merged 3 5", "client 2 merged 4 5"])


ERRORS = """
import os, sys
from mpi4py import MPI
""" + mpi_launch.SAY + """
world = MPI.COMM_WORLD
NAME = "SERVICE-" + str(world.rank)     # (each rank its own)
say("lookup", outcome(lambda: MPI.Lookup_name(NAME)))
say("unpublish", outcome(lambda: MPI.Unpublish_name(NAME, "x")))
port = MPI.Open_port()
say("port", type(port).__name__, len(port) <= MPI.MAX_PORT_NAME, MPI.MAX_PORT_NAME)
say("publish", outcome(lambda: MPI.Publish_name(NAME, port)))
say("found", outcome(lambda: MPI.Lookup_name(NAME) == port))
say("publish twice", outcome(lambda: MPI.Publish_name(NAME, port)))
say("unpublished", outcome(lambda: MPI.Unpublish_name(NAME, port)))
say("lookup after", outcome(lambda: MPI.Lookup_name(NAME)))
say("close", outcome(lambda: MPI.Close_port(port)), outcome(lambda: MPI.Close_port(port)))
say("close junk", outcome(lambda: MPI.Close_port("junk")))
say("connect junk", outcome(lambda: MPI.COMM_SELF.Connect("junk")))
say("disconnect null", outcome(lambda: MPI.COMM_NULL.Disconnect()))
say("spawn_multiple str", outcome(lambda: MPI.COMM_SELF.Spawn_multiple(sys.executable)))
say("spawn_multiple args", outcome(lambda: MPI.COMM_SELF.Spawn_multiple(
    [sys.executable], [["-c", "pass"]] * 2)))
say("spawn_multiple maxprocs", outcome(lambda: MPI.COMM_SELF.Spawn_multiple(
    [sys.executable], None, [1, 1])))
say("get_parent", MPI.Comm.Get_parent() == MPI.COMM_NULL)
"""

# What MPICH's mpiexec does not do as an error (a Spawn that cannot start ends its job), or
# not the same way (a Spawn's root out of range hangs it).
OUR_ERRORS = ERRORS + """
say("disconnect world", outcome(lambda: world.Disconnect()))    # (MPICH: 'ok', then broken)
errcodes = []
say("spawn missing", outcome(lambda: world.Spawn("/nonexistent/program", maxprocs=2,
                                                 errcodes=errcodes)), errcodes)
say("spawn 0", outcome(lambda: world.Spawn(sys.executable, ["-c", "pass"], maxprocs=0)))
say("spawn root", outcome(lambda: world.Spawn(sys.executable, ["-c", "pass"], root=world.size)))
port = MPI.Open_port()
MPI.Close_port(port)
say("connect closed", outcome(lambda: MPI.COMM_SELF.Connect(port)))
say("accept unopened", outcome(lambda: MPI.COMM_SELF.Accept(port)))
ic = MPI.Intracomm.Create_intercomm(MPI.COMM_SELF, 0, world, 1 - world.rank) \\
    if world.size == 2 else None
if ic is not None:
    say("accept on inter", outcome(lambda: ic.Accept(port)))
say("join", outcome(lambda: MPI.Comm.Join(-1)))
"""


def test_errors(tmp_path):
    service = f"shmdat-test-{uuid.uuid4().hex}"
    r = mpi_launch.launch_mpi4py(tmp_path, 2, OUR_ERRORS.replace("SERVICE", service))
    lines = mpi_launch.lines_of(r, sort=False)
    assert r.stderr == "", r.stderr
    ERR = {name: getattr(errors, name) for name in ("ERR_NAME", "ERR_SERVICE", "ERR_OTHER",
                                                    "ERR_COMM", "ERR_SPAWN", "ERR_ARG",
                                                    "ERR_ROOT", "ERR_PORT")}
    for expected in [
            f"lookup ('MPI', {ERR['ERR_NAME']})", f"unpublish ('MPI', {ERR['ERR_SERVICE']})",
            "port str True 1024", "publish ('ok', None)", "found ('ok', True)",
            f"publish twice ('MPI', {ERR['ERR_NAME']})", "unpublished ('ok', None)",
            f"lookup after ('MPI', {ERR['ERR_NAME']})", "close ('ok', None) ('ok', None)",
            f"close junk ('MPI', {ERR['ERR_OTHER']})", f"connect junk ('MPI', {ERR['ERR_OTHER']})",
            f"disconnect world ('MPI', {ERR['ERR_COMM']})",
            f"disconnect null ('MPI', {ERR['ERR_COMM']})", "spawn_multiple str ('ValueError',)",
            "spawn_multiple args ('ValueError',)", "spawn_multiple maxprocs ('ValueError',)",
            "get_parent True",
            f"spawn missing ('MPI', {ERR['ERR_SPAWN']}) []",
            f"spawn 0 ('MPI', {ERR['ERR_ARG']})", f"spawn root ('MPI', {ERR['ERR_ROOT']})",
            f"connect closed ('MPI', {ERR['ERR_PORT']})",
            f"accept unopened ('MPI', {ERR['ERR_PORT']})",
            f"accept on inter ('MPI', {ERR['ERR_COMM']})", f"join ('MPI', {ERR['ERR_ARG']})"]:
        assert lines.count(expected) == 2, (expected, lines)


@mpi_launch.needs_mpiexec
def test_errors_as_mpiexec(tmp_path):
    service = f"shmdat-test-{uuid.uuid4().hex}"
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, ERRORS.replace("SERVICE", service))


FAILING_CHILD = mpi_launch.PIDS + """
from mpi4py import MPI
parent = MPI.Comm.Get_parent()
if MPI.COMM_WORLD.rank == 1:
    raise RuntimeError("a child fails")
parent.Barrier()
"""

FAILING_PARENT = mpi_launch.PIDS + """
import sys
from mpi4py import MPI
child = MPI.COMM_WORLD.Spawn(sys.executable, [CHILD], maxprocs=2)
if MPI.COMM_WORLD.rank == 0 and FAIL_PARENT:
    raise RuntimeError("a parent fails")
child.Barrier()
"""


@pytest.mark.parametrize("who", ["child", "parent"])
def test_failure_ends_the_job(tmp_path, who):
    """A spawned child that raises (or a parent, the children waiting on it): the launch
    fails with its traceback, no process waits for ever, nothing is left in /dev/shm."""
    child = mpi_launch.write(tmp_path, FAILING_CHILD if who == "child" else
                             FAILING_CHILD.replace("rank == 1", "rank == -1"), "child.py")
    body = FAILING_PARENT.replace("CHILD", repr(child)).replace(
        "FAIL_PARENT", str(who == "parent"))
    r = mpi_launch.launch_mpi4py(tmp_path, 2, body)
    assert r.returncode != 0
    assert f"a {who} fails" in r.stderr
    pids = mpi_launch.pids(r.stdout)
    assert len(pids) == 4
    assert not mpi_launch.leftovers(pids)


def test_prefix_labels_spawned_output(tmp_path):
    """With --prefix, a spawned world's lines are labelled [world.rank]."""
    kid = mpi_launch.write(tmp_path, """
from mpi4py import MPI
print("kid here", flush=True)
MPI.Comm.Get_parent().Disconnect()
""", "kid.py")
    r = mpi_launch.launch(tmp_path, 1, f"""
import sys
from mpi4py import MPI
print("parent here", flush=True)
MPI.COMM_WORLD.Spawn(sys.executable, [{kid!r}], maxprocs=2).Disconnect()
""", launcher=("--mpi4py", "--prefix", "--"))
    assert sorted(mpi_launch.lines_of(r)) == ["[0] parent here", "[1.0] kid here",
                                              "[1.1] kid here"]


def test_singleton(tmp_path):
    """A program run without the launcher: ports and names work, and Spawn starts a world
    through a launcher of its own, whose end the singleton's exit waits for."""
    service = f"shmdat-test-{uuid.uuid4().hex}"
    prog = mpi_launch.write(tmp_path, mpi_launch.PIDS + """
import os, sys
from shmdat.mpi import MPI
""" + mpi_launch.SAY + f"""
port = MPI.Open_port()
MPI.Publish_name({service!r}, port)
say(MPI.Lookup_name({service!r}) == port)
say(MPI.Comm.Get_parent() == MPI.COMM_NULL)
errcodes = []
child = MPI.COMM_SELF.Spawn(sys.executable, [{str(tmp_path / "child.py")!r}], maxprocs=2,
                            errcodes=errcodes)
say("spawned", child.remote_size, errcodes, child.allreduce(1))
child.Disconnect()
""")
    mpi_launch.write(tmp_path, mpi_launch.PIDS + """
from shmdat.mpi import MPI
parent = MPI.Comm.Get_parent()
assert parent.allreduce(MPI.COMM_WORLD.rank + 1) == 1
parent.Disconnect()
""", "child.py")
    r = subprocess.run([sys.executable, prog], capture_output=True, text=True,
                       env=mpi_launch.env(), timeout=mpi_launch.TIMEOUT)
    assert r.returncode == 0, r.stderr
    pids = mpi_launch.pids(r.stdout)
    assert len(pids) == 3
    assert [line for line in r.stdout.splitlines() if not line.startswith("pid ")] == [
        "True", "True", "spawned 2 [0, 0] 3"], r.stderr
    assert not mpi_launch.leftovers(pids)      # (the name too: it went at exit)


def test_ctrl_c_ends_the_spawned_world(tmp_path):
    """Ctrl-C (SIGINT) to the launcher ends the ranks and the processes they spawned, and
    leaves nothing in /dev/shm."""
    child = mpi_launch.write(tmp_path, mpi_launch.PIDS + """
from mpi4py import MPI
MPI.Comm.Get_parent().recv(source=0)      # (never sent)
""", "child.py")
    prog = mpi_launch.write(tmp_path, mpi_launch.PIDS + f"""
import sys
from mpi4py import MPI
child = MPI.COMM_WORLD.Spawn(sys.executable, [{child!r}], maxprocs=2)
print("spawned", flush=True)
child.recv(source=0)                      # (never sent)
""")
    launcher = subprocess.Popen([sys.executable, "-m", "shmdat", "run", "-n", "1", "--mpi4py",
                                 "--", sys.executable, prog], stdout=subprocess.PIPE,
                                text=True, env=mpi_launch.env())
    lines = []
    with launcher:
        try:
            while "spawned\n" not in lines:
                lines.append(launcher.stdout.readline())
                assert lines[-1], "the job ended before spawning"
            launcher.send_signal(signal.SIGINT)
            assert launcher.wait(timeout=mpi_launch.TIMEOUT) == 128 + signal.SIGINT
        finally:
            launcher.kill()
    pids = mpi_launch.pids("".join(lines))
    assert len(pids) == 3
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not mpi_launch.leftovers(pids)


NESTED = """
import sys
from mpi4py import MPI
depth = int(sys.argv[1]) if len(sys.argv) > 1 else 0
parent = MPI.Comm.Get_parent()
if depth < 2:                   # a spawned process spawns in its turn
    child = MPI.COMM_WORLD.Spawn(sys.executable, [__file__, str(depth + 1)], maxprocs=1)
    got = child.recv(source=0)
    child.Disconnect()
else:
    got = "leaf"
if parent:
    parent.send(f"{depth}<{got}", dest=0)
    parent.Disconnect()
else:
    print(got, flush=True)
"""


def test_nested_spawn(tmp_path):
    r = mpi_launch.launch_mpi4py(tmp_path, 1, NESTED)
    assert mpi_launch.lines_of(r) == ["1<2<leaf"]


@mpi_launch.needs_mpiexec
def test_nested_spawn_as_mpiexec(tmp_path):
    mpi_launch.assert_same_as_mpiexec(tmp_path, 1, NESTED)


def test_a_child_that_never_initializes_ends_the_job(tmp_path):
    """A spawned process that exits 0 without MPI: its parents would wait in Spawn for ever
    (as under mpiexec); the launcher ends the job, saying why."""
    r = mpi_launch.launch_mpi4py(tmp_path, 2, mpi_launch.PIDS + """
import sys
from mpi4py import MPI
MPI.COMM_WORLD.Spawn(sys.executable, ["-c", "pass"], maxprocs=2)
""")
    assert r.returncode == 1
    assert "exited without initializing MPI" in r.stderr
    assert not mpi_launch.leftovers(mpi_launch.pids(r.stdout))
