"""The alternatives as benchmark transports, with the same send/recv/finish
interface as shmdat's: multiprocessing.Pipe, pyzmq over ipc://, MPI (mpi4py, or
shmdat.mpi; and mpi4py with windows of Isend / Irecv, for the message rate).

Each uses its library the fast way a user would: bytes straight from and into
preallocated numpy buffers, no pickling.
"""

import os
import tempfile

import numpy as np


class PipeEndpoint:
    """multiprocessing.Pipe: send_bytes / recv_bytes_into; polling is conn.poll(0)."""

    def __init__(self, role, ctrl, max_size, conn):
        self.conn = conn
        self.src = np.zeros(max_size, np.uint8)
        self.dst = np.zeros(max_size, np.uint8)

    def send(self, size):
        self.conn.send_bytes(self.src, 0, size)

    def recv(self, poll):
        if poll:
            while not self.conn.poll(0):
                pass
        return self.conn.recv_bytes_into(self.dst)

    def finish(self, poll):
        pass

    def close(self):
        self.conn.close()


class ZmqEndpoint:
    """pyzmq PAIR sockets over ipc://; large messages sent zero-copy, received into a buffer."""

    ZERO_COPY = 64 * 1024

    def __init__(self, role, ctrl, max_size):
        import zmq
        self.zmq = zmq
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.PAIR)
        self.sock.setsockopt(zmq.LINGER, 0)
        if role == "server":
            self.path = os.path.join(tempfile.gettempdir(), f"shmdat-bench-{os.getpid()}.ipc")
            self.sock.bind(f"ipc://{self.path}")
            ctrl.send(self.path)
        else:
            self.path = None
            self.sock.connect(f"ipc://{ctrl.recv()}")
        self.src = np.zeros(max_size, np.uint8)
        self.dst = np.zeros(max_size, np.uint8)

    def send(self, size):
        self.sock.send(self.src[:size], copy=size < self.ZERO_COPY)

    def recv(self, poll):
        if poll:
            again, noblock, recv_into = self.zmq.Again, self.zmq.NOBLOCK, self.sock.recv_into
            while True:
                try:
                    return recv_into(self.dst, flags=noblock)
                except again:
                    pass
        return self.sock.recv_into(self.dst)

    def finish(self, poll):
        pass

    def close(self):
        self.sock.close()
        self.ctx.term()
        if self.path:
            try:
                os.unlink(self.path)
            except OSError:
                pass


class MpiEndpoint:
    """MPI Send / Recv of numpy buffers between ranks 0 and 1: `MPI` is mpi4py's (under
    mpiexec) or shmdat.mpi's (under shmdat run)."""

    def __init__(self, MPI, comm, max_size):
        self.MPI = MPI
        self.comm = comm
        self.peer = 1 - comm.Get_rank()
        self.src = np.zeros(max_size, np.uint8)
        self.dst = np.zeros(max_size, np.uint8)

    def send(self, size):
        self.comm.Send([self.src[:size], self.MPI.BYTE], dest=self.peer, tag=1)

    def recv(self, poll):
        buf = [self.dst, self.MPI.BYTE]
        if poll:
            req = self.comm.Irecv(buf, source=self.peer, tag=1)
            while not req.Test():
                pass
        else:
            self.comm.Recv(buf, source=self.peer, tag=1)

    def finish(self, poll):
        pass

    def close(self):
        pass


class MpiWindowEndpoint:
    """mpi4py Isend / Irecv with a window, as osu_mbw_mr: WINDOW receives kept posted
    (each in its own slot of one buffer); sends posted with Isend and completed WINDOW
    at a time with Waitall. For the message rate, not for latency."""

    def __init__(self, MPI, comm, max_size, window):
        self.MPI = MPI
        self.comm = comm
        self.peer = 1 - comm.Get_rank()
        self.window = window
        self.src = np.zeros(max_size, np.uint8)
        self.slots = [[buf, MPI.BYTE] for buf in np.zeros((window, max_size), np.uint8)]
        self.recvs = [self._irecv(slot) for slot in self.slots]       # oldest first
        self.next = 0                                                  # index of the oldest
        self.sends = []

    def _irecv(self, slot):
        return self.comm.Irecv(slot, source=self.peer, tag=1)

    def send(self, size):
        self.sends.append(self.comm.Isend([self.src[:size], self.MPI.BYTE], dest=self.peer, tag=1))
        if len(self.sends) == self.window:
            self.MPI.Request.Waitall(self.sends)
            self.sends = []

    def recv(self, poll):
        i = self.next
        req = self.recvs[i]
        if poll:
            while not req.Test():
                pass
        else:
            req.Wait()
        self.recvs[i] = self._irecv(self.slots[i])
        self.next = (i + 1) % self.window

    def finish(self, poll):
        self.MPI.Request.Waitall(self.sends)
        self.sends = []

    def close(self):
        for req in self.recvs:
            req.Cancel()
        self.MPI.Request.Waitall(self.recvs)
