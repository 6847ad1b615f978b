"""The launcher behind `shmdat run -n N` and `python -m shmdat.mpi`: start N ranks, hand
them the wire-up table, pass their output through, and end the whole job when one fails."""

import ctypes
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

from ..hw import shm

# Environment a rank reads (shmdat/mpi/wireup.py).
ENV_RANK, ENV_SIZE, ENV_JOBID, ENV_FD = ("SHMDAT_MPI_RANK", "SHMDAT_MPI_SIZE",
                                         "SHMDAT_MPI_JOBID", "SHMDAT_MPI_FD")
# Holds the `mpi4py` package that answers with shmdat.mpi (shim/mpi4py/__init__.py says how).
SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shim")
KILL_AFTER_S = 3.0     # between the SIGTERM that ends a job and the SIGKILL
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_launcher():
    """In the child before exec: SIGKILL when the launcher dies, so no rank outlives it."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _exit_status(returncode):
    """A shell's exit status for a child's Popen.returncode."""
    return returncode if returncode >= 0 else 128 - returncode


def _prefix_lines(rank, pipe, out):
    """Copy `pipe` to `out` line by line, each line prefixed with `[rank] `."""
    tag = f"[{rank}] ".encode()
    with pipe:
        for line in iter(pipe.readline, b""):
            out.write(tag + line)
            out.flush()


class Job:
    """N ranks of one command. `run()` returns the job's exit status. With `mpi4py`, the
    shim directory goes first on the ranks' PYTHONPATH: `import mpi4py` gives shmdat.mpi."""

    def __init__(self, size, argv, prefix=False, mpi4py=False, auto_cleanup=True):
        self.size, self.argv, self.prefix, self.mpi4py = size, list(argv), prefix, mpi4py
        # Without auto_cleanup (mpiexec's -disable-auto-cleanup), a rank that fails does not
        # end the others: fault-tolerant programs go on (ULFM, shmdat/mpi/ulfm.py).
        self.auto_cleanup, self.failed = auto_cleanup, None
        self.ranks = []            # Popen per rank
        self.sockets = []          # the launcher's end of each rank's wire-up socket
        self.status = None         # the first failing rank's exit status, or an Abort's code
        self.threads = []

    def _start(self):
        jobid = str(os.getpid())
        base = dict(os.environ)
        if self.mpi4py:
            inherited = base.get("PYTHONPATH")
            base["PYTHONPATH"] = SHIM_DIR + os.pathsep + inherited if inherited else SHIM_DIR
        for rank in range(self.size):
            mine, theirs = socket.socketpair()
            env = dict(base, **{ENV_RANK: str(rank), ENV_SIZE: str(self.size),
                                ENV_JOBID: jobid, ENV_FD: str(theirs.fileno())})
            pipe = subprocess.PIPE if self.prefix else None
            self.ranks.append(subprocess.Popen(
                self.argv, env=env, pass_fds=(theirs.fileno(),), preexec_fn=_die_with_launcher,
                stdin=None if rank == 0 else subprocess.DEVNULL, stdout=pipe, stderr=pipe))
            theirs.close()
            self.sockets.append(mine)
        if self.prefix:
            for rank, p in enumerate(self.ranks):
                for pipe, out in ((p.stdout, sys.stdout.buffer), (p.stderr, sys.stderr.buffer)):
                    t = threading.Thread(target=_prefix_lines, args=(rank, pipe, out), daemon=True)
                    t.start()
                    self.threads.append(t)

    def run(self):
        """Start the ranks and supervise them until every one has exited; then reclaim what
        dead ranks left in /dev/shm. Returns 0, or the first failing rank's exit status."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        old_wakeup = signal.set_wakeup_fd(wake_w)
        caught = []
        old = {s: signal.signal(s, lambda signum, frame: caught.append(signum))
               for s in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM)}
        try:
            self._start()
            self._supervise(wake_r, caught)
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
            signal.set_wakeup_fd(old_wakeup)
            os.close(wake_r)
            os.close(wake_w)
            for s in self.sockets:
                s.close()
            for t in self.threads:
                t.join()
            shm.reclaim_dead()
        return self.status or self.failed or 0

    def _supervise(self, wake_r, caught):
        """The launcher's loop: wire-up lines in, the table out, children reaped; the job
        ended on the first failure or on SIGINT/SIGTERM."""
        sel = selectors.DefaultSelector()
        sel.register(wake_r, selectors.EVENT_READ)
        partial = {}
        for rank, s in enumerate(self.sockets):
            sel.register(s, selectors.EVENT_READ, rank)
            partial[rank] = b""
        table = {}
        deadline = None            # when the SIGKILL falls, once the job is being ended
        while any(p.returncode is None for p in self.ranks):
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            for key, _ in sel.select(timeout):
                if key.data is None:
                    os.read(wake_r, 512)
                    continue
                rank = key.data
                try:
                    data = key.fileobj.recv(4096)
                except OSError:    # reset by a rank that died
                    data = b""
                if not data:       # the rank closed its end (or exited)
                    sel.unregister(key.fileobj)
                    if rank not in table:
                        # It will never report: the ranks waiting for the table learn it
                        # now (an end of file) rather than at their wire-up timeout.
                        for s in self.sockets:
                            _shutdown_quietly(s)
                    continue
                *lines, partial[rank] = (partial[rank] + data).split(b"\n")
                for line in map(json.loads, lines):
                    if "abort" in line:      # a rank called Abort: end the job with its code
                        if self.status is None:
                            self.status = line["abort"] & 0xFF
                        continue
                    table[rank] = line
                    if len(table) == self.size:
                        line = json.dumps([table[r] for r in range(self.size)]).encode() + b"\n"
                        for s in self.sockets:
                            _send_quietly(s, line)
            stop = [s for s in caught if s != signal.SIGCHLD]
            caught.clear()
            for p in self.ranks:
                if p.returncode is None and p.poll() is not None and p.returncode != 0 \
                        and self.status is None and self.failed is None:
                    if self.auto_cleanup:
                        self.status = _exit_status(p.returncode)
                    else:           # the job's status once all have exited
                        self.failed = _exit_status(p.returncode)
            if deadline is None and (self.status is not None or stop):
                if self.status is None:
                    self.status = 128 + stop[0]
                deadline = time.monotonic() + KILL_AFTER_S
                self._signal_all(signal.SIGTERM)
            if deadline is not None and time.monotonic() >= deadline:
                self._signal_all(signal.SIGKILL)
                for p in self.ranks:
                    p.wait()
        sel.close()

    def _signal_all(self, signum):
        for p in self.ranks:
            if p.returncode is None:
                try:
                    p.send_signal(signum)
                except ProcessLookupError:
                    pass


def _shutdown_quietly(sock):
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _send_quietly(sock, data):
    """Send the table to a rank that may have died already."""
    try:
        sock.sendall(data)
    except OSError:
        pass

