"""Profile shmdat's hot path: cProfile of the client side of a benchmark cell.

    python benchmarks/profile_hot_path.py [--test send_lat] [--size 8] [--wait poll] [--seconds 2]

A spawned server runs the benchmark's passive side; this process runs the
client under cProfile and prints the functions that take the time.
"""

import argparse
import cProfile
import multiprocessing
import pstats

from shmdat.bench.plan import Cell
from shmdat.bench.shmdat_transport import ShmdatEndpoint
from shmdat.bench.timing import client_cell, serve


def _server(ctrl, max_size):
    t = ShmdatEndpoint("server", ctrl, max_size)
    serve(t, ctrl)
    t.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--test", default="send_lat")
    p.add_argument("--size", type=int, default=8)
    p.add_argument("--wait", default="poll")
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    ctx = multiprocessing.get_context("spawn")
    a, b = ctx.Pipe()
    server = ctx.Process(target=_server, args=(a, args.size), daemon=True)
    server.start()
    t = ShmdatEndpoint("client", b, args.size)
    cell = Cell(args.test, args.size, args.wait)
    print("without profiler: median %.3g, min %.3g" % client_cell(t, b, cell, args.seconds))
    prof = cProfile.Profile()
    prof.enable()
    client_cell(t, b, cell, args.seconds)
    prof.disable()
    b.send(None)
    server.join(10)
    t.close()
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
