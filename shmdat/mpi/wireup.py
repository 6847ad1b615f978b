"""A rank's side of the wire-up: learn rank and size from the launcher's environment, report
(address, conn_qual) on the inherited socket, get every rank's, connect every pair. The
socket stays open for the rank's life: Abort goes to the launcher through it."""

import atexit
import json
import os
import socket
import sys
import time

import shmdat
from shmdat import EventNumber

from . import errors
from .errors import Exception as MPIException
from .launcher import ENV_FD, ENV_RANK, ENV_SIZE

WIREUP_S = 60            # the whole wire-up, at most
SLICE_US = 50_000
_AFTER_ESTABLISHED = (EventNumber.CONNECTION_EVENT_DISCONNECTED,
                      EventNumber.CONNECTION_EVENT_BROKEN)
_launcher = []           # this process's socket to the launcher, once launch_info has run


def launch_info():
    """(rank, size, socket or None) from the launcher's environment; a process not started
    by the launcher is a singleton: (0, 1, None)."""
    if ENV_FD not in os.environ:
        return 0, 1, None
    sock = socket.socket(fileno=int(os.environ.pop(ENV_FD)))
    sock.settimeout(WIREUP_S)
    _launcher.append(sock)
    atexit.register(sock.close)   # (at exit, not by the collector: no ResourceWarning)
    return int(os.environ[ENV_RANK]), int(os.environ[ENV_SIZE]), sock


def exchange(sock, rank, address, conn_qual):
    """Report this rank's (address, conn_qual) to the launcher; return every rank's, by rank."""
    line = b""
    try:
        sock.sendall(json.dumps({"rank": rank, "address": address,
                                 "conn_qual": conn_qual}).encode() + b"\n")
        while not line.endswith(b"\n"):
            data = sock.recv(65536)
            if not data:
                break
            line += data
    except OSError:            # a timeout, or the launcher shut the socket
        pass
    if not line.endswith(b"\n"):
        raise MPIException(errors.ERR_OTHER, "the launcher sent no wire-up table (a rank "
                           "exited before reporting, or the wire-up timed out)")
    return [(entry["address"], entry["conn_qual"]) for entry in json.loads(line)]


def connect_all(engine, table):
    """Rank j connects to every rank below it (private data: j) and accepts every rank
    above; returns once every EP is established. One EVD gets both the connection requests
    and the connection events."""
    rank = engine.rank
    for i in range(rank):
        address, conn_qual = table[i]
        engine.peers[i].ep.connect(address, conn_qual, private_data=rank.to_bytes(4, "little"))
    waiting = engine.size - 1
    deadline = time.monotonic() + WIREUP_S
    while waiting:
        if time.monotonic() > deadline:
            raise MPIException(errors.ERR_OTHER, f"wire-up: {waiting} connection(s) not made "
                               f"in {WIREUP_S} s")
        try:
            event, _ = engine.cm_evd.wait(SLICE_US)
        except shmdat.TimeoutExpired:
            continue
        if event.number == EventNumber.CONNECTION_REQUEST_EVENT:
            cr = event.data.cr
            cr.accept(engine.peers[int.from_bytes(cr.private_data[:4], "little")].ep)
        elif event.number == EventNumber.CONNECTION_EVENT_ESTABLISHED:
            waiting -= 1
        elif event.number in _AFTER_ESTABLISHED:
            continue    # a peer whose wire-up ended first may be done and gone already:
            #             its messages are queued, and its absence is the engine's business
        else:
            raise MPIException(errors.ERR_OTHER, f"wire-up: {event.number.name}")


def abort(rank, errorcode):
    """MPI_Abort: ask the launcher to end the job with `errorcode`, then exit at once (no
    atexit: the launcher reclaims what this process leaves in /dev/shm)."""
    sys.stdout.flush()
    print(f"shmdat.mpi: rank {rank} called Abort({errorcode})", file=sys.stderr, flush=True)
    for sock in _launcher:
        try:
            sock.sendall(json.dumps({"abort": errorcode}).encode() + b"\n")
        except OSError:        # the launcher has gone: the job is ending anyway
            pass
    os._exit(errorcode & 0xFF)


def ask_launcher(request):
    """Send the launcher `request` (one JSON line) and return its answer (shmdat/mpi/
    dynproc.py's Spawn); None in a process no launcher started. MPI.Exception ERR_OTHER if
    the launcher does not answer."""
    if not _launcher:
        return None
    sock, line = _launcher[0], b""
    try:
        sock.sendall(json.dumps(request).encode() + b"\n")
        while not line.endswith(b"\n"):
            data = sock.recv(65536)
            if not data:
                break
            line += data
    except OSError:
        pass
    if not line.endswith(b"\n"):
        raise MPIException(errors.ERR_OTHER, "the launcher did not answer (the job is ending?)")
    return json.loads(line)
