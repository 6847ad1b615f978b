"""Where a DAT ping-pong's round trip goes, phase by phase, at both sides.

    python benchmarks/pingpong_phases.py [--size 8] [--count 20000] [--wait poll|block]

Two processes ping-pong `--size` bytes through the public DAT API, both polling
(`evd.dequeue` in a loop) or both blocking in `evd.wait` (--wait block), each reaping its send's completion at once (a window of one,
unlike `shmdat bench`'s lazy reaping). Each side times its calls with perf_counter_ns and
prints the medians: post_send, the reap of its completion, the wait for the peer's
message, post_recv, and the client's round trip; and how many dequeues found nothing per
round trip on the receive EVD, with the median cost of one that found nothing and of the one
that found the message (its delivery: the device's round that takes it, and DAT's event).

Unlike call_costs.py, which times each call alone in a loop, this times the calls as a
ping-pong runs them: each after a spin of other code, with the peer's writes to take from
the other core. What the client waits for is the server's turnaround (its notice and
delivery of the message, its post_recv, its post_send up to the message being in the ring)
plus the client's own notice and delivery; the two sides' post_recv and post_send are
measured apart, so the notice and delivery are what the wait leaves. Run it on two trees
(PYTHONPATH) to see which phase a change moved.
"""

import argparse
import multiprocessing
import statistics
import time

import shmdat
from shmdat.bench.plan import TIMEOUT_US
from shmdat.bench.shmdat_transport import ShmdatEndpoint

WARM = 1000             # round trips left out of the figures
_ns = time.perf_counter_ns


class Poller:
    """evd.dequeue in a loop, timing each call: the ones that found nothing apart."""

    def __init__(self):
        self.empty, self.found = [], []

    def next(self, evd):
        while True:
            t0 = _ns()
            try:
                event = evd.dequeue()
            except shmdat.QueueEmpty:
                self.empty.append(_ns() - t0)
                continue
            self.found.append(_ns() - t0)
            return event


class Waiter:
    """evd.wait, as a blocking consumer calls it."""

    @staticmethod
    def next(evd):
        return evd.wait(TIMEOUT_US)[0]


def _medians(names, samples):
    """name -> the median in microseconds, past the warm-up."""
    return {name: statistics.median(s[WARM:]) / 1000 for name, s in zip(names, samples)}


def _server(ctrl, out, size, count, wait):
    t = ShmdatEndpoint("server", ctrl, size)
    iov, poller = [t.src.triplet(0, size)], (Poller() if wait == "poll" else Waiter())
    samples = [[], [], [], []]
    for _ in range(WARM + count):
        t0 = _ns()
        poller.next(t.recv_evd)
        t1 = _ns()
        t.ep.post_recv(t.recv_iov, None)
        t2 = _ns()
        t.ep.post_send(iov, None)
        t3 = _ns()
        poller.next(t.req_evd)
        t4 = _ns()
        for s, v in zip(samples, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            s.append(v)
    out.send(_medians(("wait", "post_recv", "post_send", "reap"), samples))
    t.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=8)
    p.add_argument("--count", type=int, default=20000)
    p.add_argument("--wait", choices=("poll", "block"), default="poll")
    args = p.parse_args()
    ctx = multiprocessing.get_context("spawn")
    ctrl, server_ctrl = ctx.Pipe()
    results, server_results = ctx.Pipe()
    server = ctx.Process(target=_server, args=(server_ctrl, server_results, args.size, args.count,
                                                      args.wait),
                         daemon=True)
    server.start()
    t = ShmdatEndpoint("client", ctrl, args.size)
    if args.wait == "poll":
        poller, reaper = Poller(), Poller()
    else:
        poller = reaper = Waiter()
    iov = [t.src.triplet(0, args.size)]
    samples = [[], [], [], [], []]
    try:
        for _ in range(WARM + args.count):
            t0 = _ns()
            t.ep.post_send(iov, None)
            t1 = _ns()
            reaper.next(t.req_evd)
            t2 = _ns()
            poller.next(t.recv_evd)
            t3 = _ns()
            t.ep.post_recv(t.recv_iov, None)
            t4 = _ns()
            for s, v in zip(samples, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t0)):
                s.append(v)
        client = _medians(("post_send", "reap", "wait", "post_recv", "round trip"), samples)
        if not results.poll(60):
            raise RuntimeError("the server sent no figures within 60 s")
        served = results.recv()
    finally:
        server.join(30)
        t.close()
    print(f"DAT ping-pong of {args.size} B, {args.wait}, medians in us ({args.count} round trips)")
    print("client  " + "  ".join(f"{k} {v:.2f}" for k, v in client.items()))
    print("server  " + "  ".join(f"{k} {v:.2f}" for k, v in served.items()))
    if args.wait == "poll":
        print(f"client: {len(poller.empty) / (WARM + args.count):.1f} empty dequeues of the receive "
              f"EVD a round trip, one {statistics.median(poller.empty) / 1000:.2f} us; the one that "
              f"found the message {statistics.median(poller.found[WARM:]) / 1000:.2f} us")
    turnaround = served["post_recv"] + served["post_send"]
    print(f"notice and delivery, both sides together: {client['wait'] - turnaround:.2f} us "
          "(the client's wait less the server's post_recv and post_send)")


if __name__ == "__main__":
    main()
