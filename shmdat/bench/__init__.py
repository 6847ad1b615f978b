"""shmdat bench: perftest-style latency, bandwidth and message rate between processes,
with the alternatives measured in the same run (--compare)."""

import argparse
import json
import os
import sys
import time

from . import msgrate, report, runner, waiting
from .plan import DEFAULT_SIZES, QUICK_SIZES, TESTS, WAITS, Cell, row

TARGET_SECONDS = 50.0       # what the cells of a default run share (about a minute with set-up)


def _size(text):
    text = text.strip().upper().removesuffix("B")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(float(text.rstrip("KMG")) * scale)


def _parser():
    p = argparse.ArgumentParser(prog="shmdat bench", description=__doc__)
    p.add_argument("--compare", action="store_true",
                   help="also measure multiprocessing.Pipe, pyzmq ipc://, mpi4py and numpy.copyto")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", metavar="FILE.png", help="draw latency and bandwidth against size (matplotlib)")
    p.add_argument("--quick", action="store_true", help="three sizes and short cells: a few seconds")
    p.add_argument("--tests", default=",".join(TESTS), help=f"comma-separated, of: {', '.join(TESTS)}")
    p.add_argument("--sizes", help="comma-separated sizes, e.g. 8,4K,1M (default 8 B to 16 MiB)")
    p.add_argument("--wait", default=",".join(WAITS), help="poll, block or both (default)")
    p.add_argument("--budget", type=float, help="seconds per cell (default: ~45 s spread over all cells)")
    p.add_argument("--senders", help="message-rate sender counts, e.g. 1,2,4 (default 1 to 2x cores); 0: skip")
    p.add_argument("--messages", type=int, help="messages per message-rate run (default 40000)")
    p.add_argument("--no-waiting", action="store_true",
                   help="skip the idle-waiter CPU and peer-death notice measurements")
    return p


def _progress(text):
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{text}")
    else:
        sys.stderr.write(text + "\n")
    sys.stderr.flush()


def main(argv=None):
    args = _parser().parse_args(argv)
    tests = [t.strip() for t in args.tests.split(",") if t.strip()]
    waits = [w.strip() for w in args.wait.split(",") if w.strip()]
    bad = [t for t in tests if t not in TESTS] + [w for w in waits if w not in WAITS]
    if bad:
        print(f"shmdat bench: unknown test or wait mode: {', '.join(bad)}", file=sys.stderr)
        return 2
    sizes = [_size(s) for s in args.sizes.split(",")] if args.sizes else \
        (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    cells = [Cell(t, s, w) for t in tests for s in sizes for w in waits]
    alt_cells = [c for c in cells if c.op == "send"]

    transports = [("shmdat", cells)]
    skipped = {}
    if args.compare:
        transports.append(("multiprocessing.Pipe", alt_cells))
        try:
            import zmq  # noqa: F401
            transports.append(("pyzmq", alt_cells))
        except ImportError:
            skipped["pyzmq"] = "pyzmq is not installed"
        why = runner.mpi_available()
        if why:
            skipped["mpi4py"] = why
        else:
            transports.append(("mpi4py", alt_cells))
    ncells = sum(len(c) for _, c in transports)
    budget = args.budget or (0.02 if args.quick else max(0.02, TARGET_SECONDS / max(ncells, 1)))

    rows, done = [], [0]
    total = ncells + (len(sizes) if args.compare else 0)

    def on_row(transport):
        def take(cell, median, minimum):
            rows.append(row(transport, cell, median, minimum))
            done[0] += 1
            _progress(f"[{done[0]}/{total}] {transport:<20} {cell.test:<14} {report.size_text(cell.size):>8}"
                      f" {cell.wait:<5} {median:9.3g} {rows[-1]['unit']}")
        return take

    started = time.monotonic()
    for transport, tcells in transports:
        if not tcells:
            continue
        try:
            if transport == "mpi4py":
                runner.run_mpi(tcells, budget, on_row(transport))
            else:
                runner.run_pair(transport, tcells, budget, on_row(transport))
        except RuntimeError as e:
            if transport == "shmdat":
                print(f"\nshmdat bench: {e}", file=sys.stderr)
                return 1
            skipped[transport] = str(e).splitlines()[0]
    if args.compare:
        runner.run_memcpy(sizes, budget, on_row("memcpy"))

    rates = []
    senders = [int(n) for n in args.senders.split(",")] if args.senders else \
        ([1, 2] if args.quick else list(range(1, 2 * (os.cpu_count() or 1) + 1)))
    messages = args.messages or (4000 if args.quick else 40000)
    for n in (s for s in senders if s > 0):
        _progress(f"message rate, {n} sender(s)")
        rates.append(msgrate.run(n, messages))
    wait_costs = None
    if not args.no_waiting:
        _progress("idle waiter CPU and peer-death notice")
        wait_costs = waiting.measure(idle_seconds=0.5 if args.quick else 2.0, deaths=1 if args.quick else 3)
    if sys.stderr.isatty():
        _progress("")
    elapsed = time.monotonic() - started

    if args.plot:
        report.plot(rows, args.plot)
    if args.json:
        print(json.dumps({"machine": {**report.machine(), "seconds": round(elapsed, 1)},
                          "rows": rows, "msgrate": rates, "waiting": wait_costs, "skipped": skipped}, indent=1))
    else:
        m = report.machine()
        print(f"shmdat bench, {m['date']}, {m['cpu']}, {m['cores']} cores, {elapsed:.0f} s\n")
        print(report.table(rows, rates, wait_costs, skipped))
    return 0
