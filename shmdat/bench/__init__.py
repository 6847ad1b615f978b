"""shmdat bench: perftest-style latency, bandwidth and message rate between processes,
with the alternatives measured in the same run (--compare)."""

import argparse
import importlib.util
import json
import math
import os
import sys
import time

from . import msgrate, report, runner, targets, waiting
from ..dat.limits import MAX_MESSAGE_SIZE, MAX_RDMA_SIZE
from .plan import (COLLECTIVE_RANKS, COLLECTIVES, DEFAULT_SIZES, MSGRATE, QUICK_COLLECTIVE_RANKS,
                   QUICK_SIZES, TESTS, UNITS, WAITS, Cell, collective_row, rate_row, row)

TARGET_SECONDS = 50.0       # what the cells of a default run share (about a minute with set-up)
MAX_SIZE = min(MAX_MESSAGE_SIZE, MAX_RDMA_SIZE)     # a larger cell could only fail


def _size(text):
    """'8', '4K', '1.5M', '64KiB' -> bytes; ValueError or OverflowError if it is not one."""
    number = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(number[-1:], 1)
    return int(float(number.rstrip("KMG")) * scale)


# argparse types: each refuses a bad value with a one-line usage error naming it,
# before anything starts.

def _message_size(text):
    try:
        n = _size(text)
    except (ValueError, OverflowError):
        n = None
    if n is None or not 1 <= n <= MAX_SIZE:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size from 1 to {MAX_SIZE} bytes"
                                         " (shmdat's largest message), e.g. 8, 4K, 1M")
    return n


def _count(lowest):
    def parse(text):
        try:
            n = int(text)
        except ValueError:
            n = None
        if n is None or n < lowest:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {lowest}")
        return n
    return parse


def _one_of(choices):
    def parse(text):
        if text not in choices:
            raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(choices)}")
        return text
    return parse


def _list_of(parse_one):
    """A comma-separated list, each item parsed by parse_one."""
    return lambda text: [parse_one(item.strip()) for item in text.split(",")]


def _seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = None
    if seconds is None or not 0 < seconds < math.inf:       # also refuses nan
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return seconds


def _png_path(path):
    """--plot: refused now, not after the whole run, if it cannot be written."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"cannot write {path}: {folder} is not a directory")
    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {path}: {folder} is not writable")
    if importlib.util.find_spec("matplotlib") is None:
        raise argparse.ArgumentTypeError("needs matplotlib: pip install 'shmdat[plot]'")
    return path


def _parser():
    p = argparse.ArgumentParser(prog="shmdat bench", description=__doc__)
    p.add_argument("--compare", action="store_true",
                   help="also measure multiprocessing.Pipe, pyzmq ipc://, mpi4py and numpy.copyto")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", metavar="FILE.png", type=_png_path,
                   help="draw latency and bandwidth against size (matplotlib)")
    p.add_argument("--quick", action="store_true", help="three sizes and short cells: a few seconds")
    p.add_argument("--tests", default=list(TESTS), type=_list_of(_one_of(TESTS)),
                   help=f"comma-separated, of: {', '.join(TESTS)}")
    p.add_argument("--sizes", type=_list_of(_message_size),
                   help="comma-separated sizes, e.g. 8,4K,1M (default 8 B to 16 MiB)")
    p.add_argument("--wait", default=list(WAITS), type=_list_of(_one_of(WAITS)),
                   help="poll, block, or both as poll,block (the default)")
    p.add_argument("--budget", type=_seconds,
                   help="seconds per cell (default: ~45 s spread over all cells)")
    p.add_argument("--senders", type=_list_of(_count(0)),
                   help="message-rate sender counts, e.g. 1,2,4 (default 1 to 2x cores); 0: skip")
    p.add_argument("--ranks", type=_list_of(_count(0)),
                   help="with --compare, MPI collectives' rank counts, e.g. 2,4 (default; --quick: 4); 0: skip")
    p.add_argument("--messages", type=_count(1),
                   help="messages per message-rate run (default 40000)")
    p.add_argument("--no-waiting", action="store_true",
                   help="skip the idle-waiter CPU and peer-death notice measurements")
    return p


def _progress(text):
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{text}")
    else:
        sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _transports(compare, cells, msgrate):
    """[(name, cells)] to measure, and {name: why} of the alternatives that cannot run.
    With `msgrate`, the verbs layer and mpi4py also measure one sender's message rate
    (DAT's is msgrate.run with one sender)."""
    alt_cells = [c for c in cells if c.op == "send"]
    rate_cells = [MSGRATE] if msgrate else []
    # The verbs layer of the same hardware, beside DAT in every run.
    transports, skipped = [("shmdat", cells), ("shmdat.verbs", cells + rate_cells)], {}
    if compare:
        transports.append(("multiprocessing.Pipe", alt_cells))
        if importlib.util.find_spec("zmq") is None:
            skipped["pyzmq"] = "pyzmq is not installed"
        else:
            transports.append(("pyzmq", alt_cells))
        why = runner.mpi_available()
        if why:
            skipped["mpi4py"] = why
        else:
            transports.append(("mpi4py", alt_cells + rate_cells))
        transports.append(("shmdat.mpi", alt_cells))   # the same MPI worker on shmdat.mpi
    return [(name, c) for name, c in transports if c], skipped


def _collective_runs(compare, ranks, skipped):
    """[(transport, ranks)]: the MPI collectives' launches at each number of ranks,
    shmdat.mpi's and, unless it cannot run, mpi4py's."""
    if not compare:
        return []
    mpis = ["shmdat.mpi"] if "mpi4py" in skipped else ["mpi4py", "shmdat.mpi"]
    return [(t, n) for n in ranks if n > 0 for t in mpis]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    cells = [Cell(t, s, w) for t in args.tests for s in sizes for w in args.wait]
    senders = args.senders or ([1, 2] if args.quick else list(range(1, 2 * (os.cpu_count() or 1) + 1)))
    transports, skipped = _transports(args.compare, cells, 1 in senders)
    rank_counts = args.ranks or (QUICK_COLLECTIVE_RANKS if args.quick else COLLECTIVE_RANKS)
    collective_runs = _collective_runs(args.compare, rank_counts, skipped)
    ncells = sum(len(c) for _, c in transports) + len(COLLECTIVES) * len(collective_runs)
    budget = args.budget or (0.02 if args.quick else max(0.02, TARGET_SECONDS / max(ncells, 1)))
    messages = args.messages or (4000 if args.quick else 40000)

    rows, rates, collectives, wait_costs = [], [], [], None
    total = ncells + (len(sizes) if args.compare else 0)

    def on_row(transport, ranks=None):
        def take(cell, median, minimum):
            if ranks is not None:
                collectives.append(collective_row(transport, ranks, cell, median, minimum))
            elif cell == MSGRATE:
                rates.append(rate_row(transport, 1, cell.wait, median, minimum))
            else:
                rows.append(row(transport, cell, median, minimum))
            done = len(rows) + len(rates) + len(collectives)
            name = transport if ranks is None else f"{transport} -n {ranks}"
            _progress(f"[{done}/{total}] {name:<20} {cell.test:<14} {report.size_text(cell.size):>8}"
                      f" {cell.wait:<5} {median:9.3g} {UNITS[cell.metric]}")
        return take

    started = time.monotonic()
    try:
        for transport, tcells in transports:
            try:
                if transport in ("mpi4py", "shmdat.mpi"):
                    runner.run_mpi(tcells, budget, on_row(transport), transport)
                else:
                    runner.run_pair(transport, tcells, budget, on_row(transport))
            except RuntimeError as e:
                if transport == "shmdat":
                    raise
                skipped[transport] = str(e).splitlines()[0]
        for transport, n in collective_runs:
            try:
                runner.run_mpi(COLLECTIVES, budget, on_row(transport, n), transport, n,
                               "shmdat.bench.mpi_collectives")
            except RuntimeError as e:
                skipped[f"{transport} collectives, {n} ranks"] = str(e).splitlines()[0]
        if args.compare:
            runner.run_memcpy(sizes, budget, on_row("memcpy"))
        for n in (s for s in senders if s > 0):
            _progress(f"message rate, {n} sender(s)")
            rates.append(msgrate.run(n, messages))
        if not args.no_waiting:
            _progress("idle waiter CPU and peer-death notice")
            wait_costs = waiting.measure(idle_seconds=0.5 if args.quick else 2.0, deaths=1 if args.quick else 3)
    except RuntimeError as e:
        print(f"\nshmdat bench: {e}", file=sys.stderr)
        return 1
    if sys.stderr.isatty():
        _progress("")
    m = {**report.machine(), "seconds": round(time.monotonic() - started, 1)}
    judged = targets.evaluate(rows, rates, wait_costs, collectives)

    if args.json:
        print(json.dumps({"machine": m, "rows": rows, "msgrate": rates, "collectives": collectives,
                          "waiting": wait_costs, "skipped": skipped, "targets": judged}, indent=1))
    else:
        print(f"shmdat bench, {m['date']}, {m['cpu']}, {m['cores']} cores, {m['seconds']:.0f} s\n")
        print(report.table(rows, rates, wait_costs, skipped, judged, collectives))
    if args.plot:
        from . import plot      # matplotlib is optional: imported only when asked for
        plot.draw(rows, args.plot, m, " ".join(["shmdat bench", *argv]))
        print(f"plot written to {os.path.abspath(args.plot)}", file=sys.stderr if args.json else sys.stdout)
    return 0
