"""Profile shmdat's hot path: cProfile of the client side of a benchmark cell.

    python benchmarks/profile_hot_path.py [--layer dat|verbs] [--test send_lat] [--size 8] [--wait poll] [--seconds 2]

A spawned server runs the benchmark's passive side; this process runs the
client under cProfile and prints the functions that take the time.
"""

import argparse
import contextlib
import cProfile
import multiprocessing
import pstats

from shmdat.bench.plan import Cell
from shmdat.bench.shmdat_transport import ShmdatEndpoint
from shmdat.bench.verbs_transport import VerbsEndpoint
from shmdat.bench.timing import client_cell, serve

LAYERS = {"dat": ShmdatEndpoint, "verbs": VerbsEndpoint}


def _server(layer, ctrl, max_size):
    t = LAYERS[layer]("server", ctrl, max_size)
    serve(t, ctrl)
    t.close()


ITERATION = ("_pingpong", "_rdma_once", "_batch", "_rdma_batch")    # a timed iteration's function


def arguments(seconds, top):
    """The cell to run (--layer, --test, --size, --wait), for how long, how many rows."""
    p = argparse.ArgumentParser()
    p.add_argument("--layer", choices=sorted(LAYERS), default="dat")
    p.add_argument("--test", default="send_lat")
    p.add_argument("--size", type=int, default=8)
    p.add_argument("--wait", default="poll")
    p.add_argument("--seconds", type=float, default=seconds)
    p.add_argument("--top", type=int, default=top)
    return p.parse_args()


@contextlib.contextmanager
def client(args):
    """(endpoint, control pipe, Cell): the client of the cell `args` names, its server
    spawned; both end with the block."""
    ctx = multiprocessing.get_context("spawn")
    a, b = ctx.Pipe()
    server = ctx.Process(target=_server, args=(args.layer, a, args.size), daemon=True)
    server.start()
    t = LAYERS[args.layer]("client", b, args.size)
    try:
        yield t, b, Cell(args.test, args.size, args.wait)
    finally:
        b.send(None)
        server.join(10)
        t.close()


def main():
    args = arguments(seconds=2.0, top=25)
    with client(args) as (t, b, cell):
        print("without profiler: median %.3g, min %.3g" % client_cell(t, b, cell, args.seconds))
        prof = cProfile.Profile()
        prof.enable()
        client_cell(t, b, cell, args.seconds)
        prof.disable()
    stats = pstats.Stats(prof)
    loops = sum(v[1] for k, v in stats.stats.items() if k[2] in ITERATION)
    print("Python calls per timed iteration: %.0f" % (stats.total_calls / loops))
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
