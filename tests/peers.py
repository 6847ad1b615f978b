"""Real peer processes for cross-process tests.

A peer runs `target(ch, *args)` in a fresh process, with `env` added to its environment:
forked by multiprocessing's fork server, a process that imported shmdat and the tests'
modules once and never opens an IA (so none crosses fork(), and a peer starts in a few
milliseconds instead of the second an interpreter takes to import them), or, when the
environment differs from the one the fork server was started with (`env`, a test's
monkeypatch.setenv: settings shmdat reads at import), a freshly spawned interpreter.
`ch` is the peer's end of a pipe for coordination: ch.send(obj) / ch.recv() there,
peer.send / peer.recv(timeout) here. Every receive has a timeout so a bug fails the test
instead of hanging it.
"""

import atexit
import contextlib
import multiprocessing
import os
import signal
import traceback

_spawned = multiprocessing.get_context("spawn")
_forked = multiprocessing.get_context("forkserver")
# (shmdat.dat.registry: the provider, DAT over the seam and shmdat.verbs; `import shmdat`
# alone loads its names at their first use)
_forked.set_forkserver_preload(["pytest", "numpy", "shmdat.dat.registry", "tests.remote"])
# The environment the fork server starts with (it starts at the first forked peer), less what
# pytest changes from test to test.
_VOLATILE = {"PYTEST_CURRENT_TEST"}
_SERVER_ENV = {k: v for k, v in os.environ.items() if k not in _VOLATILE}
TIMEOUT = 20.0          # seconds: generous bound for any one step of a peer


class PeerFailed(AssertionError):
    pass


class Channel:
    """The peer's end of the pipe (what `target` gets as `ch`)."""

    def __init__(self, conn):
        self._conn = conn

    def send(self, obj):
        self._conn.send(obj)

    def recv(self, timeout=TIMEOUT):
        if not self._conn.poll(timeout):
            raise TimeoutError(f"the test did not answer within {timeout} s")
        return self._conn.recv()


def _run(conn, target, args, forked):
    ch = Channel(conn)
    try:
        target(ch, *args)
    except BaseException:
        conn.send(("__peer_failed__", traceback.format_exc()))
        _exit(forked)
        raise SystemExit(1)
    conn.send(("__peer_done__", None))
    _exit(forked)


def _exit(forked):
    """A forked peer ends by os._exit() (multiprocessing's rule for forked children), which
    skips the atexit handlers a spawned one runs as its interpreter exits: shmdat's among
    them (an IA left open is closed there, which the peer tests' "exit without closing"
    relies on). Run them as the interpreter would."""
    if forked:
        atexit._run_exitfuncs()


@contextlib.contextmanager
def _environment(env):
    """os.environ with `env` added, for a spawned child to inherit."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def _context(env):
    """The fork server where the peer's environment is the server's, else spawn."""
    wanted = {k: v for k, v in os.environ.items() if k not in _VOLATILE}
    wanted.update(env)
    return _forked if wanted == _SERVER_ENV else _spawned


class Peer:
    def __init__(self, target, *args, env=None):
        ctx = _context(env or {})
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_run, args=(child, target, args, ctx is _forked),
                                   daemon=True)
        with _environment(env or {}):
            self.process.start()
        child.close()
        self.pid = self.process.pid
        self._done = False

    def send(self, obj):
        self._conn.send(obj)

    def recv(self, timeout=TIMEOUT):
        """The next object the peer sent; PeerFailed with its traceback if it failed."""
        if not self._conn.poll(timeout):
            raise TimeoutError(f"peer {self.pid} sent nothing within {timeout} s")
        try:
            msg = self._conn.recv()
        except EOFError:
            raise PeerFailed(f"peer {self.pid} exited (code {self.process.exitcode})") from None
        if isinstance(msg, tuple) and len(msg) == 2 and msg[0] == "__peer_failed__":
            raise PeerFailed(f"peer {self.pid} failed:\n{msg[1]}")
        if isinstance(msg, tuple) and len(msg) == 2 and msg[0] == "__peer_done__":
            self._done = True
            raise PeerFailed(f"peer {self.pid} finished while the test expected a message")
        return msg

    def ready(self, timeout=0):
        """Whether the peer has sent something (or ended) within `timeout` seconds."""
        return self._conn.poll(timeout)

    def join(self, timeout=TIMEOUT):
        """Wait for the peer to finish its target successfully."""
        if not self._done:
            if not self._conn.poll(timeout):
                raise TimeoutError(f"peer {self.pid} did not finish within {timeout} s")
            try:
                msg = self._conn.recv()
            except EOFError:
                msg = None
            if isinstance(msg, tuple) and msg and msg[0] == "__peer_failed__":
                raise PeerFailed(f"peer {self.pid} failed:\n{msg[1]}")
            if not (isinstance(msg, tuple) and msg and msg[0] == "__peer_done__"):
                raise PeerFailed(f"peer {self.pid} sent {msg!r} where the test expected it to finish")
            self._done = True
        self.process.join(timeout)
        if self.process.exitcode != 0:
            raise PeerFailed(f"peer {self.pid} exit code {self.process.exitcode}")

    def kill(self, sig=signal.SIGKILL):
        if self.process.is_alive():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:      # it ended (and its fork server reaped it) meanwhile
                pass

    def reap(self):
        """End the peer; True if it had to be killed (it had not finished by itself)."""
        killed = self.process.is_alive()
        self.kill()
        self.process.join(TIMEOUT)
        self._conn.close()
        return killed or self.process.exitcode != 0
