"""A server and a client in the style of OFA's dtest, over shmdat.

    python examples/dtest.py --server                     # prints its address
    python examples/dtest.py --client <address>

The pair exchanges private data while connecting, hands over an RMR triplet
in a send, then the client does a burst of RDMA writes into the server's
memory followed by a marker send, RDMA reads of the server's memory, a
ping-pong of sends, and disconnects. Each phase prints its timing.
"""

import argparse
import sys
import time

import numpy as np

import shmdat
from shmdat import EvdFlags, EventNumber, RmrTriplet

SERVER_HELLO = b"dtest server: welcome"
CLIENT_HELLO = b"dtest client: hello"
TRIPLET = 24            # bytes of a packed RmrTriplet
WINDOW = 32             # RDMAs in flight at once: within the DTO EVD's qlen and the EP's queue


class Endpoint:
    """An IA with what dtest needs: a PZ, EVDs, one EP and one provider LMR."""

    def __init__(self, size, timeout):
        self.timeout = int(timeout * 1e6)                    # DAT timeouts are microseconds
        self.ia = shmdat.ia_open()
        self.pz = self.ia.pz_create()
        self.cr_evd = self.ia.evd_create(4, EvdFlags.CR)
        self.conn_evd = self.ia.evd_create(4, EvdFlags.CONNECTION)
        self.dto_evd = self.ia.evd_create(2 * WINDOW, EvdFlags.DTO)
        self.ep = self.ia.ep_create(self.pz, self.dto_evd, self.dto_evd, self.conn_evd)
        # [0, size): the RDMA region the peer writes and reads; then a send and a receive buffer.
        self.size = size
        self.lmr = self.ia.lmr_create(self.pz, size + 2 * max(size, 64))
        self.send_at, self.recv_at = size, size + max(size, 64)

    def expect(self, evd, number):
        event, _ = evd.wait(self.timeout)
        if event.number != number:
            raise SystemExit(f"dtest: expected {number.name}, got {event.number.name}")
        return event.data

    def completion(self, op):
        self.completions(op)

    def completions(self, *ops):
        """Reap one completion of each of `ops`, in whatever order they come: a send's
        completion and the receive of the peer's answer are not ordered with each other."""
        expected = list(ops)
        while expected:
            d = self.expect(self.dto_evd, EventNumber.DTO_COMPLETION_EVENT)
            if d.status != shmdat.DtoStatus.SUCCESS or d.operation not in expected:
                raise SystemExit(f"dtest: {d.operation.name} completed with {d.status.name}")
            expected.remove(d.operation)

    def burst(self, post, count, op):
        """Post `count` DTOs with post(), reaping completions so that at most WINDOW are in flight."""
        for i in range(count):
            if i >= WINDOW:
                self.completion(op)
            post()
        for _ in range(min(count, WINDOW)):
            self.completion(op)

    def post_recv(self):
        self.ep.post_recv([self.lmr.triplet(self.recv_at, max(self.size, 64))], "recv")

    def send(self, data):
        self.lmr.buffer[self.send_at:self.send_at + len(data)] = np.frombuffer(data, np.uint8)
        self.ep.post_send([self.lmr.triplet(self.send_at, len(data))], "send")

    def received(self, n):
        return bytes(self.lmr.buffer[self.recv_at:self.recv_at + n])

    def close(self):
        self.ia.close()


def pattern(size, seed):
    return bytes((i * 7 + seed) & 0xFF for i in range(size))


def report(name, seconds, count, nbytes=0):
    line = f"  {name:<22} {seconds * 1e3:9.2f} ms  {seconds / count * 1e6:8.2f} us/op"
    if nbytes:
        line += f"  {nbytes / seconds / 1e6:9.1f} MB/s"
    print(line, flush=True)


def server(args):
    node = Endpoint(args.size, args.timeout)
    try:
        psp = node.ia.psp_create(args.port, node.cr_evd)
        print(f"dtest server: address {node.ia.address} port {args.port}", flush=True)
        cr = node.expect(node.cr_evd, EventNumber.CONNECTION_REQUEST_EVENT).cr
        if cr.private_data != CLIENT_HELLO:
            raise SystemExit(f"dtest: unexpected private data {cr.private_data!r}")
        node.post_recv()
        cr.accept(node.ep, SERVER_HELLO)
        node.expect(node.conn_evd, EventNumber.CONNECTION_EVENT_ESTABLISHED)
        psp.free()

        # Hand the client our RMR triplet: where it may RDMA.
        node.lmr.buffer[:args.size] = np.frombuffer(pattern(args.size, 0), np.uint8)
        node.send(node.lmr.rmr_triplet(0, args.size).pack())
        node.completion(shmdat.DtoOp.SEND)

        # The burst of RDMA writes ends with a marker send: then the data is there.
        node.completion(shmdat.DtoOp.RECEIVE)
        marker = node.received(10)
        if marker[:6] != b"marker":
            raise SystemExit("dtest: expected the marker send")
        iterations = int.from_bytes(marker[6:], "little")      # the client says how many ping-pongs
        if bytes(node.lmr.buffer[:args.size]) != pattern(args.size, 1):
            raise SystemExit("dtest: the RDMA writes did not land")
        # The client now reads our region back, then ping-pongs.
        for _ in range(iterations):
            node.post_recv()
            node.completion(shmdat.DtoOp.RECEIVE)
            node.send(node.received(args.size))
            node.completion(shmdat.DtoOp.SEND)
        node.expect(node.conn_evd, EventNumber.CONNECTION_EVENT_DISCONNECTED)
        print("dtest server: done", flush=True)
    finally:
        node.close()


def client(args):
    node = Endpoint(args.size, args.timeout)
    try:
        start = time.perf_counter()
        node.post_recv()
        node.ep.connect(args.client, args.port, node.timeout, CLIENT_HELLO)
        pd = node.expect(node.conn_evd, EventNumber.CONNECTION_EVENT_ESTABLISHED).private_data
        if pd != SERVER_HELLO:
            raise SystemExit(f"dtest: unexpected private data {pd!r}")
        report("connect", time.perf_counter() - start, 1)

        node.completion(shmdat.DtoOp.RECEIVE)
        remote = RmrTriplet.unpack(node.received(TRIPLET))
        node.post_recv()

        # A burst of RDMA writes, then a marker send (the EP keeps them in order).
        node.lmr.buffer[:args.size] = np.frombuffer(pattern(args.size, 1), np.uint8)
        local = [node.lmr.triplet(0, args.size)]
        start = time.perf_counter()
        node.burst(lambda: node.ep.post_rdma_write(local, "write", remote), args.burst, shmdat.DtoOp.RDMA_WRITE)
        report(f"RDMA write x{args.burst}", time.perf_counter() - start, args.burst, args.burst * args.size)
        node.send(b"marker" + args.iterations.to_bytes(4, "little"))
        node.completion(shmdat.DtoOp.SEND)

        # RDMA reads of what we wrote.
        node.lmr.buffer[:args.size] = 0
        start = time.perf_counter()
        node.burst(lambda: node.ep.post_rdma_read(local, "read", remote), args.burst, shmdat.DtoOp.RDMA_READ)
        report(f"RDMA read x{args.burst}", time.perf_counter() - start, args.burst, args.burst * args.size)
        if bytes(node.lmr.buffer[:args.size]) != pattern(args.size, 1):
            raise SystemExit("dtest: the RDMA reads returned the wrong bytes")

        # Ping-pong: send, wait for the echo.
        message = pattern(args.size, 2)
        start = time.perf_counter()
        for _ in range(args.iterations):
            node.send(message)
            node.completions(shmdat.DtoOp.SEND, shmdat.DtoOp.RECEIVE)
            node.post_recv()
        elapsed = time.perf_counter() - start
        if node.received(args.size) != message:
            raise SystemExit("dtest: the echo differs from what was sent")
        report(f"ping-pong x{args.iterations}", elapsed, args.iterations)
        print(f"  {'half round trip':<22} {elapsed / args.iterations / 2 * 1e6:9.2f} us", flush=True)

        node.ep.disconnect()
        node.expect(node.conn_evd, EventNumber.CONNECTION_EVENT_DISCONNECTED)
        print("dtest client: done", flush=True)
    finally:
        node.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    role = p.add_mutually_exclusive_group(required=True)
    role.add_argument("--server", action="store_true", help="listen and serve one client")
    role.add_argument("--client", metavar="ADDRESS", help="connect to the server at ADDRESS")
    p.add_argument("--port", type=int, default=45248, help="connection qualifier (default 45248)")
    p.add_argument("--burst", type=int, default=100, help="RDMA writes and reads (default 100)")
    p.add_argument("--size", type=int, default=4096,
                   help="bytes per RDMA and message, the same on both sides (default 4096)")
    p.add_argument("--iterations", type=int, default=1000,
                   help="ping-pong round trips (client; default 1000)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds any one wait may take (default 10)")
    args = p.parse_args(argv)
    try:
        server(args) if args.server else client(args)
    except shmdat.DatError as e:
        print(f"dtest: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
