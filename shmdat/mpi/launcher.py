"""The launcher behind `shmdat run -n N` and `python -m shmdat.mpi`: start N ranks, hand
them the wire-up table, pass their output through, and end the whole job when one fails.
A rank's Spawn (shmdat/mpi/dynproc.py) asks it for more processes: they are a world of their
own (their own wire-up table), and part of the job as its ranks are."""

import atexit
import collections
import ctypes
import json
import os
import selectors
import shutil
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
# A spawned process's: the port its parents accept on, and which of the Spawn's commands it runs.
ENV_PARENT, ENV_APPNUM = "SHMDAT_MPI_PARENT_PORT", "SHMDAT_MPI_APPNUM"
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


def _prefix_lines(label, pipe, out):
    """Copy `pipe` to `out` line by line, each line prefixed with `[label] `."""
    tag = f"[{label}] ".encode()
    with pipe:
        for line in iter(pipe.readline, b""):
            out.write(tag + line)
            out.flush()


class Job:
    """N ranks of one command. `run()` returns the job's exit status. With `mpi4py`, the
    shim directory goes first on the ranks' PYTHONPATH: `import mpi4py` gives shmdat.mpi.
    Processes are numbered in the order started; each belongs to a world (0: the job's
    ranks; 1, 2, ...: what each Spawn started), which has its own ranks and wire-up table."""

    def __init__(self, size, argv, prefix=False, mpi4py=False, auto_cleanup=True):
        self.size, self.argv, self.prefix, self.mpi4py = size, list(argv), prefix, mpi4py
        # Without auto_cleanup (mpiexec's -disable-auto-cleanup), a rank that fails does not
        # end the others: fault-tolerant programs go on (ULFM, shmdat/mpi/ulfm.py).
        self.auto_cleanup, self.failed = auto_cleanup, None
        self.ranks = []            # Popen per process
        self.sockets = []          # the launcher's end of each process's wire-up socket
        self.places = []           # (world, rank in it) per process
        self.tables = []           # per world: its size and rank -> wire-up line, until sent
        self.status = None         # the first failing rank's exit status, or an Abort's code
        self.threads = []
        self.sel = None            # the supervising loop's selector, once it runs
        self.ending = False        # the job is being ended: no more spawning
        self.apps, self.extra = [(self.argv, size)], {}    # world 0's commands, environment

    def _start(self):
        self.base = dict(os.environ, **{ENV_JOBID: str(os.getpid())})
        if self.mpi4py:
            inherited = self.base.get("PYTHONPATH")
            self.base["PYTHONPATH"] = SHIM_DIR + os.pathsep + inherited if inherited \
                else SHIM_DIR
        self._start_world(self.apps, self.extra)

    def _start_world(self, apps, extra):
        """Start a world: each app (argv, count) `count` times, its ranks numbered across
        the apps, with the environment `extra` too. OSError if one cannot start (those of
        this world started already are killed: a world starts whole or not at all)."""
        world, size = len(self.tables), sum(count for _, count in apps)
        started = []
        try:
            for appnum, (argv, count) in enumerate(apps):
                for _ in range(count):
                    started.append(self._popen(argv, dict(extra, **{
                        ENV_RANK: str(len(started)), ENV_SIZE: str(size),
                        ENV_APPNUM: str(appnum)}), stdin=world == 0 and not started))
        except OSError:
            for p, mine in started:
                p.kill()
                p.wait()
                mine.close()
            raise
        self.tables.append((size, {}))
        for rank, (p, mine) in enumerate(started):
            index = len(self.ranks)
            self.ranks.append(p)
            self.sockets.append(mine)
            self.places.append((world, rank))
            if self.sel is not None:
                self.sel.register(mine, selectors.EVENT_READ, index)
            if self.prefix:
                label = rank if world == 0 else f"{world}.{rank}"
                for pipe, out in ((p.stdout, sys.stdout.buffer), (p.stderr, sys.stderr.buffer)):
                    t = threading.Thread(target=_prefix_lines, args=(label, pipe, out),
                                         daemon=True)
                    t.start()
                    self.threads.append(t)

    def _popen(self, argv, env, stdin):
        """One process of `argv` with its socket to the launcher; (Popen, the launcher's end)."""
        mine, theirs = socket.socketpair()
        pipe = subprocess.PIPE if self.prefix else None
        try:
            p = subprocess.Popen(
                argv, env=dict(self.base, **env, **{ENV_FD: str(theirs.fileno())}),
                pass_fds=(theirs.fileno(),), preexec_fn=_die_with_launcher,
                stdin=None if stdin else subprocess.DEVNULL, stdout=pipe, stderr=pipe)
        except OSError:
            mine.close()
            raise
        finally:
            theirs.close()
        return p, mine

    def _spawn(self, request):
        """A rank's Spawn: start its apps as a new world whose processes will connect to
        `port`; returns, per process, whether it started (none does if one command cannot
        be run, or the job is ending)."""
        apps = [(list(argv), count) for argv, count in request["spawn"]]
        total = sum(count for _, count in apps)
        if self.ending or not runnable(apps):
            return [False] * total
        try:
            self._start_world(apps, {ENV_PARENT: request["port"]})
        except OSError:
            return [False] * total
        return [True] * total

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
        sel = self.sel = selectors.DefaultSelector()
        sel.register(wake_r, selectors.EVENT_READ)
        for index, s in enumerate(self.sockets):
            sel.register(s, selectors.EVENT_READ, index)
        partial = collections.defaultdict(bytes)
        deadline = None            # when the SIGKILL falls, once the job is being ended
        while any(p.returncode is None for p in self.ranks):
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            for key, _ in sel.select(timeout):
                if key.data is None:
                    os.read(wake_r, 512)
                    continue
                index = key.data
                world, rank = self.places[index]
                size, table = self.tables[world]
                try:
                    data = key.fileobj.recv(4096)
                except OSError:    # reset by a rank that died
                    data = b""
                if not data:       # the rank closed its end (or exited)
                    sel.unregister(key.fileobj)
                    if table is not None and rank not in table:
                        # It will never report: the ranks waiting for the table learn it
                        # now (an end of file) rather than at their wire-up timeout.
                        for s in self._world_sockets(world):
                            _shutdown_quietly(s)
                    continue
                *lines, partial[index] = (partial[index] + data).split(b"\n")
                for line in map(json.loads, lines):
                    if "abort" in line:      # a rank called Abort: end the job with its code
                        if self.status is None:
                            self.status = line["abort"] & 0xFF
                    elif "spawn" in line:
                        _send_quietly(key.fileobj, json.dumps(
                            {"spawned": self._spawn(line)}).encode() + b"\n")
                    else:
                        table[rank] = line
                        if len(table) == size:
                            line = json.dumps([table[r] for r in range(size)]).encode() + b"\n"
                            for s in self._world_sockets(world):
                                _send_quietly(s, line)
                            self.tables[world] = (size, None)   # (sent)
            stop = [s for s in caught if s != signal.SIGCHLD]
            caught.clear()
            for index, p in enumerate(self.ranks):
                if p.returncode is None and p.poll() is not None and self.status is None \
                        and self.failed is None:
                    if p.returncode != 0:
                        status = _exit_status(p.returncode)
                    elif self._left_its_parents(index):
                        status = 1
                    else:
                        continue
                    if self.auto_cleanup:
                        self.status = status
                    else:           # the job's status once all have exited
                        self.failed = status
            if deadline is None and (self.status is not None or stop):
                if self.status is None:
                    self.status = 128 + stop[0]
                self.ending = True
                deadline = time.monotonic() + KILL_AFTER_S
                self._signal_all(signal.SIGTERM)
            if deadline is not None and time.monotonic() >= deadline:
                self._signal_all(signal.SIGKILL)
                for p in self.ranks:
                    p.wait()
        sel.close()

    def _left_its_parents(self, index):
        """Whether process `index`, which exited 0, was spawned and never wired up: its
        parents wait in Spawn for a connection that will not come (MPICH's mpiexec leaves
        them waiting), so the job ends, saying why."""
        world, rank = self.places[index]
        table = self.tables[world][1]
        if world == 0 or table is None or rank in table:
            return False
        print(f"shmdat run: spawned process {world}.{rank} ({self.ranks[index].args[0]}) "
              "exited without initializing MPI: its parents cannot finish Spawn",
              file=sys.stderr, flush=True)
        return True

    def _world_sockets(self, world):
        return [s for s, (w, _) in zip(self.sockets, self.places) if w == world]

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



def runnable(apps):
    """Whether every command of `apps` ((argv, count) each) can be run."""
    return all(shutil.which(argv[0]) for argv, _ in apps)


_detached = []      # the launchers started for a singleton's Spawns


@atexit.register
def _wait_detached():
    """At a singleton's exit, after MPI's finalize (registered before it: this module is
    imported first), wait for the worlds it spawned to end, as a launcher waits for every
    process of its job."""
    for p in _detached:
        p.wait()


def start_for_singleton(apps, port):
    """A Spawn in a process no launcher started (a singleton): a launcher of the new world's
    own, `python -m shmdat.mpi.launcher REQUEST` (it ends the world when one of its
    processes fails, and is ended with it by Ctrl-C; the singleton's exit waits for it).
    Whether it started."""
    if not runnable(apps):
        return False
    _detached.append(subprocess.Popen([sys.executable, "-m", __name__,
                                       json.dumps({"spawn": apps, "port": port})]))
    return True


def main(argv):
    """A singleton's Spawn's launcher: run the world the request names."""
    request = json.loads(argv[0])
    apps = [(list(argv), count) for argv, count in request["spawn"]]
    job = Job(sum(count for _, count in apps), [])
    job.apps, job.extra = apps, {ENV_PARENT: request["port"]}
    return job.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
