"""The measurement loops, shared by every transport.

A transport endpoint offers send(size), recv(poll) -> nbytes and finish()
(wait until every send it posted has completed); shmdat's also offers rdma().
The client side drives: it tells the server each cell over a control channel
(outside the timed region), runs WARM untimed iterations to estimate the cost
of one, picks the count that fills the time budget, tells the server, and
measures.
"""

import statistics
import time

from .plan import MSGRATE_LEAST, REPS, WARM, iterations

ACK = 8                 # bytes of the bandwidth test's acknowledgement
_now = time.perf_counter


def _pingpong(t, size, poll):
    t0 = _now()
    t.send(size)
    t.recv(poll)
    return (_now() - t0) / 2


def _batch(t, size, count, poll):
    """`count` messages, then the receiver's acknowledgement: seconds for all."""
    t0 = _now()
    for _ in range(count):
        t.send(size)
    t.recv(poll)
    elapsed = _now() - t0
    t.finish(poll)
    return elapsed


def _rdma_once(t, op, size, poll):
    t0 = _now()
    t.rdma(op, size)
    t.finish(poll)
    return _now() - t0


def _rdma_batch(t, op, size, count, poll):
    t0 = _now()
    for _ in range(count):
        t.rdma(op, size)
    t.finish(poll)
    return _now() - t0


def client_cell(t, ctrl, cell, budget):
    """Measure one cell; returns (median, min) in us (latency), GB/s (bandwidth) or msgs/s
    (message rate)."""
    poll = cell.wait == "poll"
    size = cell.size
    ctrl.send(cell)
    kind = cell.test
    if kind == "send_lat":
        est = min(_pingpong(t, size, poll) for _ in range(WARM)) * 2
        n = iterations(est, budget)
        ctrl.send(n)
        samples = [_pingpong(t, size, poll) for _ in range(n)]
        return _latency(samples)
    if kind in ("send_bw", "msgrate"):
        # The message rate is send_bw's batch of small messages, each batch ended by the
        # receiver's acknowledgement (osu_mbw_mr's shape).
        est = _batch(t, size, WARM, poll) / WARM
        n = iterations(est, budget / REPS, lo=WARM if kind == "send_bw" else MSGRATE_LEAST)
        ctrl.send(n)
        seconds = [_batch(t, size, n, poll) for _ in range(REPS)]
        return _bandwidth(size * n, seconds) if kind == "send_bw" else _rate(n, seconds)
    op = cell.op
    if kind.endswith("_lat"):
        est = min(_rdma_once(t, op, size, poll) for _ in range(WARM))
        n = iterations(est, budget)
        ctrl.send(n)
        return _latency([_rdma_once(t, op, size, poll) for _ in range(n)])
    est = _rdma_batch(t, op, size, WARM, poll) / WARM
    n = iterations(est, budget / REPS, lo=WARM)
    ctrl.send(n)
    return _bandwidth(size * n, [_rdma_batch(t, op, size, n, poll) for _ in range(REPS)])


def server_cell(t, ctrl, cell):
    """The passive half of client_cell (RDMA needs none: the server idles)."""
    poll = cell.wait == "poll"
    if cell.test == "send_lat":
        _echo(t, cell.size, WARM, poll)
        _echo(t, cell.size, ctrl.recv(), poll)
    elif cell.test in ("send_bw", "msgrate"):
        _serve_batch(t, WARM, poll)
        n = ctrl.recv()
        for _ in range(REPS):
            _serve_batch(t, n, poll)
    else:
        ctrl.recv()
    t.finish(poll)


def _echo(t, size, count, poll):
    for _ in range(count):
        t.recv(poll)
        t.send(size)


def _serve_batch(t, count, poll):
    for _ in range(count):
        t.recv(poll)
    t.send(ACK)


def _latency(seconds):
    us = [s * 1e6 for s in seconds]
    return statistics.median(us), min(us)


def _bandwidth(nbytes, seconds):
    gbps = [nbytes / s / 1e9 for s in seconds]
    return statistics.median(gbps), min(gbps)


def _rate(count, seconds):
    rates = [count / s for s in seconds]
    return statistics.median(rates), min(rates)


def serve(t, ctrl):
    """The server's loop: cells until the client says None."""
    while True:
        cell = ctrl.recv()
        if cell is None:
            return
        server_cell(t, ctrl, cell)


def drive(t, ctrl, cells, budget, report):
    """The client's loop: every cell, each result to report(cell, median, min)."""
    for cell in cells:
        median, minimum = client_cell(t, ctrl, cell, budget)
        report(cell, median, minimum)
    ctrl.send(None)
