"""Dynamic processes (MPI's chapter 10): ports (Open_port, Close_port), Comm.Accept and
Comm.Connect, Comm.Spawn and Spawn_multiple, Comm.Get_parent, Comm.Disconnect, Comm.Join,
and the name service (Publish_name, Lookup_name, Unpublish_name).

A port is a PSP of its own, named by its DAT address and connection qualifier
("shmdat-port:<conn_qual>@<address>"): any process of the machine's DAT device can connect
to it, of this job or another. Accept and Connect (collective over each side's
communicator) make an intercommunicator:

1. the connecting root connects a new EP to the port; the accepting root takes that
   connection request off the port's EVD and accepts it (a Peer of each engine's own,
   past its job's ranks: engine.add_peer);
2. the two roots swap, over that connection, their group's cards (each member's address and
   the connection qualifier of its engine's PSP), their group's context proposal (the
   largest next free id of its members, as Create_intercomm) and the root's rank; the
   accepting root adds a nonce that names this Accept;
3. every other pair of members connects, the connecting side's member to the accepting
   side's member's PSP, private data "DPM" + nonce + the connecting member's rank; a request
   for another Accept (one this process has not reached yet) waits in `_early`;
4. both sides take the larger proposal and claim four ids from it, as Create_intercomm.

Connections are always new, even to a process of the same job: the intercommunicator's
remote ranks are Peers of their own (their messages match on the intercommunicator's context
as any other's). They stay until the processes exit (Disconnect frees the communicator).

Spawn: the root opens a port and asks the launcher (wireup.ask_launcher) to start the
processes as a world of their own, with the port in their environment (launcher.ENV_PARENT);
at MPI's init they Connect to it over their COMM_WORLD (`connect_parent`), while the
spawning communicator Accepts on it.

The name service is per machine and per user: a published name is an entry of /dev/shm
named as shmdat's objects are (owner's pid and start time in the name), holding the
service's name and its port. Unpublish_name (or the owner's exit) removes it, and what a
dead owner left goes with the launcher's or `shmdat gc`'s reclaim."""

import atexit
import errno
import hashlib
import operator
import os
import secrets
import socket
import struct
import time

import shmdat
from shmdat import EventNumber
from shmdat.hw import shm

from . import errors, wireup
from .comm import SELF_CONTEXT, WORLD_CONTEXT, Comm, _NullComm, _claim, _invalid
from .errors import Exception as MPIException
from .info import INFO_NULL
from .intercomm import Intercomm
from . import launcher
from .launcher import ENV_PARENT
from .pickler import pickle

MAX_PORT_NAME = 1024        # MPICH's MPI_MAX_PORT_NAME
PORT_PREFIX = "shmdat-port:"
DPM_CONTEXT = -100          # the roots' handshake messages: no communicator's context is < 0
SLICE_US = 20_000           # a wait for a connection event lets the engine progress this often
NONCE = struct.Struct("<3sQi")      # b"DPM", an Accept's nonce, the connecting member's rank
ROOT_REQUEST = b"DPR"       # the connecting root's private data to a port
NAME_PREFIX = "mpiname-"    # a published name: shmdat.<uid>.<pid>.<start>.<n>.mpiname-<hash>

_engine = []                # this process's engine, once MPI.py has made it
_ports = {}                 # port name -> (PSP, its EVD), for the ports open here
_early = []                 # (nonce, rank, cr): requests for an Accept not reached yet
_published = {}             # service name -> its entry's path, for the names published here


class _NullIntercomm(_NullComm, Intercomm):
    """COMM_NULL (equal to it, every call ERR_COMM) of class Intercomm: what Get_parent
    gives where no Spawn started this process, as mpi4py's."""


PARENT_NULL = object.__new__(_NullIntercomm)   # (Comm.__new__ would make a plain _NullComm)
_self = []                  # this process's COMM_SELF (Join's)
_parent = [PARENT_NULL]     # Get_parent's intercommunicator


# Ports.

def Open_port(info=INFO_NULL):
    """MPI_Open_port: a new port's name (a str of at most MAX_PORT_NAME characters), which
    Accept takes here and Connect anywhere on the machine."""
    engine = _engine[0]
    evd = engine.ia.evd_create(8, shmdat.EvdFlags.CR)
    psp = engine.ia.psp_create_any(evd)
    name = f"{PORT_PREFIX}{psp.conn_qual}@{engine.ia.address}"
    _ports[name] = (psp, evd)
    return name


def Close_port(port_name):
    """MPI_Close_port: the port no longer accepts (a port not open here: nothing, as MPICH).
    MPI.Exception ERR_OTHER for a string that names no port (MPICH's class)."""
    _parse_port(port_name)
    psp, evd = _ports.pop(port_name, (None, None))
    if psp is not None:
        psp.free()
        evd.free()


def _parse_port(port_name):
    """(address, conn_qual) of a port name; MPI.Exception ERR_OTHER (MPICH's class for a
    port name it cannot read) otherwise."""
    if isinstance(port_name, str) and port_name.startswith(PORT_PREFIX):
        qual, _, address = port_name[len(PORT_PREFIX):].partition("@")
        if qual.isdigit() and address:
            return address, int(qual)
    raise MPIException(errors.ERR_OTHER, f"{port_name!r} is not a port name")


# Accept and Connect.

def accept(comm, port_name, info=INFO_NULL, root=0):
    """MPI_Comm_accept (collective over `comm`, an intracommunicator): the intercommunicator
    to the group that Connects to `port_name` (significant at the root only, which must have
    opened it). MPI.Exception ERR_PORT (a port not open here), ERR_ROOT, ERR_COMM."""
    return _join_groups(comm, root, True, lambda engine: _take_port_request(engine, port_name))


def connect(comm, port_name, info=INFO_NULL, root=0):
    """MPI_Comm_connect (collective over `comm`, an intracommunicator): the intercommunicator
    to the group that Accepts on `port_name` (significant at the root only). MPI.Exception
    ERR_PORT (nobody accepts there), ERR_OTHER (no port name), ERR_ROOT, ERR_COMM."""
    return _join_groups(comm, root, False, lambda engine: _request_port(engine, port_name))


def _join_groups(comm, root, accepting, bootstrap):
    """Accept's and Connect's common steps (the module's docstring): `bootstrap(engine)` at
    the root gives the engine rank of its connection to the other root."""
    if not isinstance(root, int) or not 0 <= root < comm.Get_size():
        raise MPIException(errors.ERR_ROOT, f"root {root!r} of a communicator of size "
                           f"{comm.Get_size()}")
    engine = comm._engine
    mine = comm._new_context()
    cards = comm.gather(_card(engine), root)
    outcome = None
    if comm.Get_rank() == root:
        try:
            boot = bootstrap(engine)
            nonce = secrets.randbits(63) if accepting else 0
            theirs = _swap(engine, boot, (cards, mine, root, nonce))
            outcome = (0, boot, theirs[0], theirs[1], theirs[2], nonce if accepting else theirs[3])
        except MPIException as e:
            outcome = (e.error_class, str(e))
    outcome = comm.bcast(outcome, root)
    if outcome[0]:
        raise MPIException(*outcome)
    _, boot, their_cards, theirs, their_root, nonce = outcome
    remote = _connect_members(engine, comm.Get_rank() == root, boot, their_cards, their_root,
                              nonce, accepting, comm.Get_rank())
    context = max(mine, theirs)
    _claim(context, 4)
    inter = Intercomm(engine, context, comm._ranks, remote)
    inter._low = accepting      # Merge's order when both sides pass the same `high`
    return inter


def _card(engine):
    """What a process connects to: its engine's address and PSP."""
    return engine.ia.address, engine.psp.conn_qual


def _take_port_request(engine, port_name):
    """(The accepting root) wait for a connection request on the port and accept it on a
    new Peer; its engine rank. MPI.Exception ERR_PORT if the port is not open here."""
    if port_name not in _ports:
        raise MPIException(errors.ERR_PORT, f"Accept on {port_name!r}, which this process "
                           "has not opened (Open_port)")
    _, evd = _ports[port_name]
    while True:
        try:
            event, _ = evd.wait(SLICE_US)
        except shmdat.TimeoutExpired:
            engine.progress()
            continue
        cr = event.data.cr
        if cr.private_data[:len(ROOT_REQUEST)] != ROOT_REQUEST:
            cr.reject()
            continue
        boot = engine.add_peer()
        cr.accept(engine.peers[boot].ep)
        _wait_established(engine, {boot})
        return boot


def _request_port(engine, port_name):
    """(The connecting root) connect a new Peer to the port; its engine rank. MPI.Exception
    ERR_OTHER (not a port name), ERR_PORT (nobody listens there)."""
    address, conn_qual = _parse_port(port_name)
    boot = engine.add_peer()
    try:
        engine.peers[boot].ep.connect(address, conn_qual, private_data=ROOT_REQUEST)
    except shmdat.DatError as e:
        engine.peers[boot].gone = f"its connection failed: {e}"
        raise MPIException(errors.ERR_PORT, f"Connect to {port_name}: {e}") from None
    _wait_established(engine, {boot})
    return boot


def _swap(engine, peer, obj):
    """(A root) send `obj` to engine rank `peer` and receive its object (both posted before
    either is waited for)."""
    recv = engine.post_recv(DPM_CONTEXT, peer, 0, None)
    engine.wait([recv, engine.send(peer, DPM_CONTEXT, 0, memoryview(pickle.dumps(obj)))])
    return pickle.loads(recv.data)


def _connect_members(engine, is_root, boot, cards, their_root, nonce, accepting, rank):
    """Connect this member to every member of the other group (the roots' pair is `boot`
    already); their engine ranks, by rank in the other group."""
    remote = [None] * len(cards)
    if is_root:
        remote[their_root] = boot
    expected = {i for i, r in enumerate(remote) if r is None}
    if not accepting:
        for i in expected:
            remote[i] = engine.add_peer()
            address, conn_qual = cards[i]
            engine.peers[remote[i]].ep.connect(address, conn_qual,
                                               private_data=NONCE.pack(b"DPM", nonce, rank))
        _wait_established(engine, {remote[i] for i in expected})
    else:
        _wait_established(engine, set(), (nonce, expected, remote))
    return remote


def _wait_established(engine, peers, requests=None):
    """Wait on the engine's connection EVD until every Peer of `peers` is connected and,
    with `requests` (nonce, the ranks expected, their engine ranks by rank), the other group's
    members' requests with that nonce have come and been accepted (each on a new Peer, put
    in the list). Requests for another nonce wait in `_early`. MPI.Exception ERR_PORT if a
    connection is refused, ERR_OTHER if they are not made within wireup.WIREUP_S."""
    waiting = {id(engine.peers[p].ep): p for p in peers}
    if requests is not None:
        nonce, expected, remote = requests
        for entry in [e for e in _early if e[0] == nonce]:
            _early.remove(entry)
            waiting.update(_accept_member(engine, entry[1], entry[2], expected, remote))
    deadline = time.monotonic() + wireup.WIREUP_S
    while waiting or requests is not None and expected:
        if time.monotonic() > deadline:
            _abandon(engine, waiting, "not connected in time")
            raise MPIException(errors.ERR_OTHER, "Accept/Connect: connections not made in "
                               f"{wireup.WIREUP_S} s")
        try:
            event, _ = engine.cm_evd.wait(SLICE_US)
        except shmdat.TimeoutExpired:
            engine.progress()
            continue
        number = event.number
        if number == EventNumber.CONNECTION_REQUEST_EVENT:
            cr = event.data.cr
            try:
                magic, their_nonce, their_rank = NONCE.unpack(cr.private_data[:NONCE.size])
            except struct.error:
                magic = None
            if magic != b"DPM":
                cr.reject()
            elif requests is not None and their_nonce == nonce:
                waiting.update(_accept_member(engine, their_rank, cr, expected, remote))
            else:
                _early.append((their_nonce, their_rank, cr))
        elif id(event.data.ep) in waiting:
            if number != EventNumber.CONNECTION_EVENT_ESTABLISHED:
                _abandon(engine, waiting, f"its connection failed ({number.name})")
                raise MPIException(errors.ERR_PORT, f"a connection was refused ({number.name})")
            del waiting[id(event.data.ep)]
        # (otherwise: a connection of the job's or an earlier one ending; not ours)


def _abandon(engine, waiting, why):
    """The Peers of a failed Accept/Connect: nothing is sent to them (not even at exit)."""
    for p in waiting.values():
        engine.peers[p].gone = why


def _accept_member(engine, rank, cr, expected, remote):
    """Accept the other group's member `rank` on a new Peer; {its EP's id: its engine rank}."""
    expected.discard(rank)
    remote[rank] = engine.add_peer()
    ep = engine.peers[remote[rank]].ep
    cr.accept(ep)
    return {id(ep): remote[rank]}


# Spawn.

def spawn(comm, command, args=None, maxprocs=1, info=INFO_NULL, root=0, errcodes=None):
    """MPI_Comm_spawn (collective over `comm`): start `maxprocs` processes of `command` with
    `args` (significant at the root only) as a world of their own; the intercommunicator to
    them. `errcodes` (a list) gets one code per process. MPI.Exception ERR_SPAWN (the
    command cannot be started; none is), ERR_ARG (maxprocs < 1), ERR_ROOT, ERR_COMM."""
    apps = None
    if _is_root(comm, root):
        apps = [(_argv(command, args), operator.index(maxprocs))]
    codes, inter = _spawn(comm, apps, root)
    if errcodes is not None:
        errcodes[:] = codes[0]
    return inter


def spawn_multiple(comm, command, args=None, maxprocs=None, info=INFO_NULL, root=0,
                   errcodes=None):
    """MPI_Comm_spawn_multiple (collective over `comm`): as Spawn, for each command (its args,
    its maxprocs: one int for all, default 1), all in one world (MPI.APPNUM tells each its
    command). `errcodes` (a list) gets one list of codes per command. ValueError for lists of
    other lengths than `command`'s, or a str as `command`; errors as Spawn's."""
    apps = None
    if _is_root(comm, root):
        if isinstance(command, (str, bytes)) or hasattr(command, "__fspath__"):
            raise ValueError("expecting a sequence of path-like")
        commands = list(command)
        count = len(commands)
        argvs = _per_command(args, count, lambda a: isinstance(a, (str, bytes)))
        counts = _per_command(maxprocs, count, lambda m: m is None or isinstance(m, int))
        _per_command(info, count, lambda i: i is None or not isinstance(i, (list, tuple)))
        apps = [(_argv(c, a), 1 if n is None else operator.index(n))
                for c, a, n in zip(commands, argvs, counts)]
    codes, inter = _spawn(comm, apps, root)
    if errcodes is not None:
        errcodes[:] = codes
    return inter


def _is_root(comm, root):
    if not isinstance(root, int) or not 0 <= root < comm.Get_size():
        raise MPIException(errors.ERR_ROOT, f"root {root!r} of a communicator of size "
                           f"{comm.Get_size()}")
    return comm.Get_rank() == root


def _per_command(value, count, one_for_all):
    """A Spawn_multiple argument as a list of `count` (one value given for all, or a sequence
    of that length: ValueError otherwise)."""
    if value is None or one_for_all(value):
        return [value] * count
    value = list(value)
    if len(value) != count:
        raise ValueError(f"expecting {count} items, got {len(value)}")
    return value


def _argv(command, args):
    """The command line of one of Spawn's commands (args: None, one str, or a sequence)."""
    if args is None:
        args = []
    elif isinstance(args, (str, bytes)):
        args = [args]
    return [os.fsdecode(os.fspath(command))] + [os.fsdecode(a) for a in args]


def _spawn(comm, apps, root):
    """Spawn's steps: the root opens a port and has the launcher start `apps` ((argv, count)
    each) with it; all accept on it. (the error codes, a list per app; the
    intercommunicator)."""
    port = outcome = None
    if comm.Get_rank() == root:
        outcome = _start(apps)
        if outcome[0] == 0:
            port = outcome[2]
    codes = comm.bcast(outcome[:2] if outcome else None, root)
    if codes[0]:
        raise MPIException(codes[0], codes[1])
    try:
        return codes[1], accept(comm, port, root=root)
    finally:
        if port is not None:
            Close_port(port)


def _start(apps):
    """(The spawning root) (0, codes, port) once the launcher has started `apps`, or
    (error class, message)."""
    if any(count < 1 for _, count in apps):
        return errors.ERR_ARG, f"Spawn of {[count for _, count in apps]} processes"
    port = Open_port()
    answer = wireup.ask_launcher({"spawn": apps, "port": port})
    if answer is None:          # a singleton: a launcher of their own
        started = [launcher.start_for_singleton(apps, port)]
    else:
        started = answer["spawned"]
    if not all(started):
        Close_port(port)
        failed = [argv[0] for argv, _ in apps]
        return errors.ERR_SPAWN, f"Spawn: cannot start {failed} (not found or not executable)"
    return 0, [[errors.SUCCESS] * count for _, count in apps], port


def connect_parent(world):
    """At MPI's init, in a spawned process: connect COMM_WORLD to the parents' port; what
    Get_parent gives."""
    port = os.environ.pop(ENV_PARENT, None)
    if port is not None:
        _parent[0] = connect(world, port)


def get_parent(cls=None):
    """MPI_Comm_get_parent: the intercommunicator to the processes that spawned this one;
    COMM_NULL if none did, or once it has been disconnected or freed."""
    parent = _parent[0]
    return parent if parent else PARENT_NULL


def disconnect(comm):
    """MPI_Comm_disconnect (collective over the communicator, both groups of an
    intercommunicator): once every member has called it (so that what was sent on it has
    been received), the handle becomes COMM_NULL. MPI.Exception ERR_COMM on COMM_WORLD and
    COMM_SELF."""
    if comm._context not in (WORLD_CONTEXT, SELF_CONTEXT):     # (their Free raises)
        comm.Barrier()
    comm.Free()


def join(cls, fd):
    """MPI_Comm_join: the intercommunicator between this process and the one at the other
    end of the connected socket `fd` (each opens a port and sends it; the smaller accepts,
    the other connects). MPI.Exception ERR_ARG if `fd` is no connected socket."""
    port = Open_port()
    try:
        try:
            with socket.socket(fileno=os.dup(fd)) as sock:
                data = port.encode()
                sock.sendall(struct.pack("<I", len(data)) + data)
                theirs = _recv_exactly(sock, struct.unpack("<I", _recv_exactly(sock, 4))[0])
        except OSError as e:
            raise MPIException(errors.ERR_ARG, f"Join on fd {fd}: {e}") from None
        if port < theirs.decode():
            return accept(_self[0], port)
        return connect(_self[0], theirs.decode())
    finally:
        Close_port(port)


def _recv_exactly(sock, n):
    data = b""
    while len(data) < n:
        more = sock.recv(n - len(data))
        if not more:
            raise OSError(errno.ECONNRESET, "the other end closed the socket")
        data += more
    return data


# The name service.

def Publish_name(service_name, port_name, info=INFO_NULL):
    """MPI_Publish_name: Lookup_name(service_name) gives `port_name`, in every process of
    this user on the machine, until Unpublish_name or this process's exit. MPI.Exception
    ERR_NAME if the name is published already (MPICH's class)."""
    service_name, port_name = _str(service_name), _str(port_name)
    if _find(service_name) is not None:
        raise MPIException(errors.ERR_NAME, f"{service_name!r} is published already")
    path = os.path.join(shm.SHM_DIR, f"{shm.PREFIX}{shm.MY_PID}.{shm.MY_START}."
                        f"{len(_published)}.{NAME_PREFIX}{_key(service_name)}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pickle.dumps((shm.DEVICE_NS, service_name, port_name)))
    _published[service_name] = path


def Unpublish_name(service_name, port_name, info=INFO_NULL):
    """MPI_Unpublish_name: the name is no longer published. MPI.Exception ERR_SERVICE if
    this process has not published it (MPICH's class)."""
    service_name = _str(service_name)
    path = _published.pop(service_name, None)
    if path is None:
        raise MPIException(errors.ERR_SERVICE, f"{service_name!r} is not published here")
    _unlink(path)


def Lookup_name(service_name, info=INFO_NULL):
    """MPI_Lookup_name: the port published under `service_name`. MPI.Exception ERR_NAME if
    none is (MPICH's class)."""
    found = _find(_str(service_name))
    if found is None:
        raise MPIException(errors.ERR_NAME, f"no port is published as {service_name!r}")
    return found


def _str(value):
    if not isinstance(value, str):
        raise TypeError(f"expected a str, not {type(value).__name__}")
    return value


def _key(service_name):
    return hashlib.sha1(f"{shm.DEVICE_NS}\0{service_name}".encode()).hexdigest()


def _find(service_name):
    """The port a live process has published as `service_name`, or None."""
    what = NAME_PREFIX + _key(service_name)
    for obj in shm.list_objects():
        if obj["what"] != what or not obj["alive"]:
            continue
        try:
            with open(os.path.join(shm.SHM_DIR, obj["name"]), "rb") as f:
                ns, name, port = pickle.loads(f.read())
        except (OSError, EOFError, ValueError):
            continue        # (unpublished meanwhile, or not written yet)
        if (ns, name) == (shm.DEVICE_NS, service_name):
            return port
    return None


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


@atexit.register
def _unpublish_all():
    """At exit, the names this process has left published go."""
    for path in _published.values():
        _unlink(path)
    _published.clear()


def init(engine, world, self_comm):
    """MPI.py's, once COMM_WORLD and COMM_SELF are made: this process's engine, and (a
    spawned process) the connection to its parents."""
    _engine.append(engine)
    _self.append(self_comm)
    connect_parent(world)


Comm.Accept = accept
Comm.Connect = connect
Comm.Spawn = spawn
Comm.Spawn_multiple = spawn_multiple
Comm.Disconnect = disconnect
Comm.Get_parent = classmethod(get_parent)
Comm.Join = classmethod(join)
for _name in ("Accept", "Connect", "Spawn", "Spawn_multiple", "Disconnect"):
    setattr(_NullComm, _name, _invalid(_name))


def _intracomm_only(name):
    """An intracommunicator's call, on an Intercomm: MPI.Exception ERR_COMM (as MPICH)."""
    def call(self, *args, **kwargs):
        raise MPIException(errors.ERR_COMM, f"Comm.{name} on an intercommunicator")
    call.__name__ = call.__qualname__ = name
    return call


for _name in ("Accept", "Connect", "Spawn", "Spawn_multiple"):
    setattr(Intercomm, _name, _intracomm_only(_name))
