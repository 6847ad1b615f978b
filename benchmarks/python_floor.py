"""How fast can Python ping-pong 8 bytes through shared memory at all, on this machine?

    python benchmarks/python_floor.py [--count 200000]

Two forked processes share one anonymous mapping; each measure prints the half
round trip (us), to set beside `shmdat bench --compare`'s mpi4py figure:

    words   the floor: the payload and a counter stored, the peer's counter spun on
            (no API at all: what the interpreter and the cache line cost);
    verbs   the least a verbs-shaped API does: post_send copies into a ring and
            queues a completion object, poll_cq places a message into the posted
            receive and makes its completion, post_recv queues the next receive,
            with none of the device's checks (state, access, credits, acks, RNR,
            liveness, errors): what any design with pyverbs' calls and objects
            costs in Python before it does the work a device must do.
"""

import argparse
import collections
import mmap
import multiprocessing
import time

CELLS = 1024            # 64-byte cells per direction
DATA = b"abcdefgh"
RECV = 128              # a receive completion's opcode, as IBV_WC_RECV


def words(buf, me, count):
    w = memoryview(buf).cast("Q")
    data = memoryview(buf)[1024:1032]
    mine, theirs = (0, 8) if me == 0 else (8, 0)
    t0 = time.perf_counter()
    for i in range(1, count + 1):
        if me == 0:
            data[:] = DATA
            w[mine] = i
        while w[theirs] != i:
            pass
        if me == 1:
            data[:] = DATA
            w[mine] = i
    return (time.perf_counter() - t0) / count / 2


class WC:
    __slots__ = ("wr_id", "status", "opcode", "byte_len")

    def __init__(self, wr_id, status, opcode, byte_len):
        self.wr_id, self.status, self.opcode, self.byte_len = wr_id, status, opcode, byte_len


class MiniQP:
    """One end of two rings: word 0/1 each side's head, cells after the first 4 KiB."""

    def __init__(self, buf, side):
        self.m = memoryview(buf)
        self.w = self.m.cast("Q")
        self.tx, self.rx = 4096 + side * CELLS * 64, 4096 + (1 - side) * CELLS * 64
        self.my_head, self.peer_head = side, 1 - side
        self.head = self.tail = 0
        self.rq, self.cq = collections.deque(), collections.deque()

    def post_send(self, wr_id, data):
        n = len(data)
        off = self.tx + (self.head % CELLS) * 64
        self.m[off + 8:off + 8 + n] = data
        self.w[off >> 3] = n
        self.head += 1
        self.w[self.my_head] = self.head
        self.cq.append(WC(wr_id, 0, 0, n))

    def post_recv(self, wr_id, view):
        self.rq.append((wr_id, view))

    def poll_cq(self):
        if self.w[self.peer_head] != self.tail:
            off = self.rx + (self.tail % CELLS) * 64
            n = self.w[off >> 3]
            wr_id, view = self.rq.popleft()
            view[:n] = self.m[off + 8:off + 8 + n]
            self.tail += 1
            self.cq.append(WC(wr_id, 0, RECV, n))
        if self.cq:
            return 1, [self.cq.popleft()]
        return 0, []

    def next_receive(self):
        while True:
            n, wcs = self.poll_cq()
            if n and wcs[0].opcode == RECV:
                return wcs[0]


def verbs(buf, me, count):
    qp = MiniQP(buf, me)
    receive = memoryview(bytearray(64))
    for i in range(16):
        qp.post_recv(i, receive)
    t0 = time.perf_counter()
    for i in range(count):
        if me == 0:
            qp.post_send(i, DATA)
        qp.next_receive()       # (a send's completion met on the way is taken too)
        qp.post_recv(i, receive)
        if me == 1:
            qp.post_send(i, DATA)
    return (time.perf_counter() - t0) / count / 2


def _peer(kind, buf, count):
    kind(buf, 1, count)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--count", type=int, default=200_000)
    args = p.parse_args()
    fork = multiprocessing.get_context("fork")      # the anonymous mapping is inherited
    for kind in (words, verbs):
        buf = mmap.mmap(-1, 4096 + 2 * CELLS * 64)
        peer = fork.Process(target=_peer, args=(kind, buf, args.count))
        peer.start()
        seconds = kind(buf, 0, args.count)
        peer.join(60)
        print(f"{kind.__name__:<6} {seconds * 1e6:.2f} us half round trip")


if __name__ == "__main__":
    main()
