"""A scriptable peer process: a Node in another process that the test drives by commands.

    r = Remote(spawn)                 # spawns the peer, which opens its IA
    r.listen(conn_qual)
    ... test connects to r.address ...
    r.accept(b"private")             # runs cr.accept in the peer, returns the CR's private data
    r.call("wait_dto")               # any command below; exceptions come back as PeerFailed

Every command is a method of _Server; its return value travels back by pickle.
"""

import shmdat
from shmdat import CloseFlags, EventNumber, RmrTriplet

from tests.nodes import WAIT, Node


class _Server:
    def __init__(self, lmr_size, attr):
        self.node = Node(lmr_size=lmr_size, attr=attr)
        self.n = self.node
        self.cr = None
        self.extra = []

    def address(self):
        return self.n.address

    def listen(self, conn_qual):
        self.n.listen(conn_qual)

    def next_cr(self):
        self.cr = self.n.expect(self.n.cr_evd, EventNumber.CONNECTION_REQUEST_EVENT).cr
        return self.cr.private_data

    def accept(self, private_data=b""):
        pd = self.next_cr()
        self.cr.accept(self.n.ep, private_data)
        return pd

    def accept_only(self, private_data=b""):
        """Accept the CR taken by next_cr() without waiting for ESTABLISHED."""
        self.cr.accept(self.n.ep, private_data)

    def reject(self, private_data=b""):
        pd = self.next_cr()
        self.cr.reject(private_data)
        return pd

    def reject_only(self, private_data=b""):
        """Reject the CR taken by next_cr()."""
        self.cr.reject(private_data)

    def connect(self, address, conn_qual, private_data=b""):
        self.n.ep.connect(address, conn_qual, WAIT, private_data)

    def no_conn_event(self, timeout):
        """True if no connection event arrives within `timeout` microseconds."""
        try:
            self.n.conn_evd.wait(timeout)
        except shmdat.TimeoutExpired:
            return True
        return False

    def wait_conn(self, timeout=WAIT):
        event, _ = self.n.conn_evd.wait(timeout)
        return event.number.name, event.data.private_data

    def post_recv(self, count, size, offset=0):
        for i in range(count):
            self.n.ep.post_recv([self.n.lmr.triplet(offset + i * size, size)], ("recv", i))

    def wait_dto(self, timeout=WAIT):
        event, _ = self.n.dto.wait(timeout)
        d = event.data
        return d.status.name, d.transferred_length, d.operation.name, d.user_cookie

    def post_recv_iov(self, segments, cookie):
        """One receive scattered over (offset, length) pieces of the LMR."""
        self.n.ep.post_recv([self.n.lmr.triplet(o, n) for o, n in segments], cookie)

    def ready_dtos(self):
        """The DTO completions already on the EVD, without waiting (dequeue runs progress)."""
        out = []
        while True:
            try:
                d = self.n.dto.dequeue().data
            except shmdat.QueueEmpty:
                return out
            out.append((d.status.name, d.transferred_length, d.operation.name, d.user_cookie))

    def wait_dtos(self, count, timeout=WAIT):
        return [self.wait_dto(timeout) for _ in range(count)]

    def expose(self, size, privileges=shmdat.MemPriv.ALL, other_pz=False, offset=0, length=None):
        """A new LMR (in another PZ if asked); returns its RmrTriplet as a tuple."""
        pz = self.n.ia.pz_create() if other_pz else self.n.pz
        lmr = self.n.ia.lmr_create(pz, size, privileges)
        self.extra.append(lmr)
        return tuple(lmr.rmr_triplet(offset, length))

    def read_extra(self, index, offset, n):
        return bytes(self.extra[index].buffer[offset:offset + n])

    def rdma_write_to(self, triplet, n):
        """RDMA-write our first n bytes to `triplet`; the DTO status name."""
        self.n.ep.post_rdma_write([self.n.lmr.triplet(0, n)], "rdma", RmrTriplet(*triplet)._replace(segment_length=n))
        return self.wait_dto()[0]

    def free_extra(self, index):
        self.extra[index].free()

    def expose_consumer(self, size):
        """An LMR over this process's own numpy memory, with remote privileges."""
        import numpy as np
        self.own = np.zeros(size, dtype=np.uint8)
        lmr = self.n.ia.lmr_create(self.n.pz, self.own)
        self.extra.append(lmr)
        return tuple(lmr.rmr_triplet())

    def read_consumer(self, offset, n):
        return bytes(self.own[offset:offset + n])

    def crc(self, offset, n):
        import zlib
        return zlib.crc32(self.n.lmr.buffer[offset:offset + n])

    def wait_timeout(self, timeout):
        """Wait expecting a timeout; returns its nmore."""
        try:
            self.n.dto.wait(timeout)
        except shmdat.TimeoutExpired as e:
            return e.nmore
        raise AssertionError("the wait returned an event")

    def check_batch(self, count, size, crcs):
        """Receive `count` messages into receives of `size` (reposting), checking CRCs in order."""
        import zlib
        for i in range(count):
            status, length, op, cookie = self.wait_dto()
            assert status == "SUCCESS", status
            slot = cookie[1]
            got = zlib.crc32(self.n.lmr.buffer[slot * size:slot * size + length])
            assert got == crcs[i], (i, length)
            self.n.ep.post_recv([self.n.lmr.triplet(slot * size, size)], ("recv", slot))
        return True

    def async_events(self):
        out = []
        while True:
            try:
                e = self.n.ia.async_evd.dequeue()
            except shmdat.QueueEmpty:
                return out
            out.append(e.number.name)

    def send(self, data, offset=0):
        self.n.lmr.buffer[offset:offset + len(data)] = memoryview(data)
        self.n.ep.post_send([self.n.lmr.triplet(offset, len(data))], ("send", len(data)))

    def read(self, offset, n):
        return bytes(self.n.lmr.buffer[offset:offset + n])

    def write(self, offset, data):
        self.n.lmr.buffer[offset:offset + len(data)] = memoryview(data)

    def rmr(self, offset=0, length=None):
        return tuple(self.n.lmr.rmr_triplet(offset, length))

    def state(self):
        return self.n.ep.state.name

    def disconnect(self, graceful=False):
        self.n.ep.disconnect(CloseFlags.GRACEFUL if graceful else CloseFlags.ABRUPT)

    def echo(self, count, size):
        """Echo `count` messages back, reposting a receive for each."""
        lmr, ep = self.n.lmr, self.n.ep
        for i in range(count):
            status, length, op, _ = self.wait_dto()
            assert status == "SUCCESS" and op == "RECEIVE", (status, op)
            ep.post_recv([lmr.triplet(0, size)], ("recv", i))
            ep.post_send([lmr.triplet(0, length)], ("send", i))
            status, _, op, _ = self.wait_dto()
            assert status == "SUCCESS" and op == "SEND", (status, op)

    def exit(self):
        self.n.close()
        return "bye"


def _serve(ch, lmr_size, attr):
    server = _Server(lmr_size, attr)
    ch.send(server.address())
    while True:
        name, args, kwargs = ch.recv(timeout=60)
        result = getattr(server, name)(*args, **kwargs)
        ch.send(result)
        if name == "exit":
            return


class Remote:
    def __init__(self, spawn, lmr_size=1 << 20, attr=None):
        self.peer = spawn(_serve, lmr_size, attr)
        self.address = self.peer.recv()

    def call(self, name, *args, **kwargs):
        self.start(name, *args, **kwargs)
        return self.result()

    def start(self, name, *args, **kwargs):
        """Start a command in the peer without waiting for it (for work both sides do at once)."""
        self.peer.send((name, args, kwargs))

    def result(self):
        """The result of the command started last."""
        return self.peer.recv()

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.call(name, *args, **kwargs)

    def rmr_triplet(self, offset=0, length=None):
        return RmrTriplet(*self.call("rmr", offset, length))

    def finish(self):
        assert self.call("exit") == "bye"
        self.peer.join()


def connect_to_remote(spawn, node, conn_qual, **remote_kwargs):
    """A Remote listening on conn_qual, with node.ep connected to it and ESTABLISHED on both sides."""
    r = Remote(spawn, **remote_kwargs)
    r.listen(conn_qual)
    node.ep.connect(r.address, conn_qual, WAIT)
    r.accept()
    node.expect(node.conn_evd, EventNumber.CONNECTION_EVENT_ESTABLISHED)
    assert r.wait_conn()[0] == "CONNECTION_EVENT_ESTABLISHED"
    return r


__all__ = ["Remote", "connect_to_remote", "shmdat"]
