"""Real peer processes for cross-process tests.

A peer runs `target(ch, *args)` in a freshly spawned interpreter (never a fork:
an IA must not cross fork()), with `env` added to its environment. `ch` is the peer's end of a pipe for coordination:
ch.send(obj) / ch.recv() there, peer.send / peer.recv(timeout) here. Every
receive has a timeout so a bug fails the test instead of hanging it.
"""

import contextlib
import multiprocessing
import os
import signal
import traceback

_ctx = multiprocessing.get_context("spawn")
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


def _run(conn, target, args):
    ch = Channel(conn)
    try:
        target(ch, *args)
    except BaseException:
        conn.send(("__peer_failed__", traceback.format_exc()))
        raise SystemExit(1)
    conn.send(("__peer_done__", None))


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


class Peer:
    def __init__(self, target, *args, env=None):
        self._conn, child = _ctx.Pipe()
        self.process = _ctx.Process(target=_run, args=(child, target, args), daemon=True)
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
            os.kill(self.pid, sig)

    def reap(self):
        """End the peer; True if it had to be killed (it had not finished by itself)."""
        killed = self.process.is_alive()
        self.kill()
        self.process.join(TIMEOUT)
        self._conn.close()
        return killed or self.process.exitcode != 0
