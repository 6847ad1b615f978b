"""Count the Python lines one round trip of an MPI ping-pong runs at rank 0, per layer and
per function.

    python -m shmdat run -n 2 -- python benchmarks/count_lines_mpi.py [--mode recv|test|wait]
        [--spec array|list] [--size 8] [--iterations 2000] [--top 25] [--time 0] [--mpi-lines]

Ranks 0 and 1 ping-pong a numpy array of --size bytes (uint8) on COMM_WORLD, tag 1; after a
warm-up, rank 0 runs --iterations round trips under sys.settrace. --mode: recv, Send then Recv
(a blocking receive); test, Send then Irecv and a Test loop (the bench's polling receiver);
wait, Isend and Irecv, each completed by Wait. --spec: the buffer as a bare array, or as
[array, MPI.BYTE] (the bench's form).

How long a receive waits depends on the machine's load, so the lines that waiting runs are
counted apart: an empty poll (an EVD dequeue that found nothing, and in the engine's wait
the lines up to its next dequeue), and in --mode test a Test that returned False. So is a
look at the peers (it runs by time, not per message). What is left is the same on any load:
the measure to compare two trees of the MPI hot path with.

--time N: then N round trips without the tracer, the round trip's mean in microseconds at
rank 0 (the median of five runs); a timing drifts with the load, unlike the counts.
"""

import argparse
import collections
import statistics
import sys
import time

import numpy as np

from shmdat.mpi import MPI

# Run by time, not per message: counted apart (the file path's end, function).
LOOKS = {("shmdat/verbs/device.py", "_liveness"), ("shmdat/dat/engine.py", "watch")}
DEQUEUE = ("shmdat/dat/evd.py", "dequeue")
WAIT_LOOP = ("shmdat/mpi/engine.py", "_poll_first")    # where an empty poll's lines go on


def _arguments():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=("recv", "test", "wait"), default="recv")
    p.add_argument("--spec", choices=("array", "list"), default="array")
    p.add_argument("--size", type=int, default=8)
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--time", type=int, default=0)
    p.add_argument("--mpi-lines", action="store_true", help="also every shmdat/mpi line run")
    return p.parse_args()


def _round_trip(comm, mode, send, recv, peer, first):
    """One message each way (rank 0 sends `first`)."""
    if first:
        _send(comm, mode, send, peer)
        _recv(comm, mode, recv, peer)
    else:
        _recv(comm, mode, recv, peer)
        _send(comm, mode, send, peer)


def _send(comm, mode, buf, peer):
    if mode == "wait":
        comm.Isend(buf, peer, 1).Wait()
    else:
        comm.Send(buf, peer, 1)


def _recv(comm, mode, buf, peer):
    if mode == "recv":
        comm.Recv(buf, peer, 1)
    elif mode == "wait":
        comm.Irecv(buf, peer, 1).Wait()
    else:
        request = comm.Irecv(buf, peer, 1)
        while not request.Test():
            pass


def _is(code, where):
    path, name = where
    return code.co_name == name and code.co_filename.endswith(path)


class Tracer:
    """sys.settrace's function: counts lines by (file, line), and apart from them the
    load's share (empty polls, Tests that found nothing, looks at the peers)."""

    def __init__(self, mode):
        self.mode = mode
        self.lines = collections.Counter()     # (file, line) -> runs, the load's share left out
        self.calls = 0
        self.apart = collections.Counter()     # kind -> how many; "<kind> lines" -> their lines
        self.stack = []       # [frame, its lines so far, kind]: a segment that may go apart
        self.empty_wait = None  # an empty poll's lines in the engine's wait, to its next dequeue
        self.kinds = {}

    def _kind(self, code):
        if code not in self.kinds:
            kind = None
            if any(_is(code, look) for look in LOOKS):
                kind = "look"
            elif _is(code, DEQUEUE):
                kind = "poll"
            elif self.mode == "test" and code.co_name == "Test" and "shmdat/mpi/" in code.co_filename:
                kind = "test"
            self.kinds[code] = kind
        return self.kinds[code]

    def __call__(self, frame, event, arg):
        code = frame.f_code
        if event == "call":
            self.calls += 1
            kind = self._kind(code)
            if kind == "poll" and self.empty_wait is not None:
                self._close_wait()
            if kind is not None and not any(s[2] in ("test", "look") for s in self.stack):
                self.stack.append([frame, collections.Counter(), kind])
        elif event == "line":
            self._counter()[(code.co_filename, frame.f_lineno)] += 1
        elif event == "return":
            if self.stack and frame is self.stack[-1][0]:
                self._end(arg)
            elif self.empty_wait is not None and _is(code, WAIT_LOOP):
                self._close_wait()
        return self

    def _counter(self):
        if self.stack:
            return self.stack[-1][1]
        return self.lines if self.empty_wait is None else self.empty_wait

    def _end(self, returned):
        """The segment on top of the stack has returned: apart, or counted in after all."""
        _, counted, kind = self.stack.pop()
        # An exception leaves a frame by a return event of None: dequeue returns an event.
        if kind == "look" or kind == "test" and returned is False:
            self.apart[kind] += 1
            self.apart[kind + " lines"] += sum(counted.values())
        elif kind == "poll" and returned is None:
            if self.stack or self.mode == "test":
                # In a Test: its own count decides; elsewhere (progress) one per call.
                self._counter().update(counted)
            else:
                self.empty_wait = counted       # the wait loop's lines after it go with it
        else:
            self._counter().update(counted)

    def _close_wait(self):
        self.apart["poll"] += 1
        self.apart["poll lines"] += sum(self.empty_wait.values())
        self.empty_wait = None


def _layer(path):
    tail = path.rsplit("/shmdat/", 1)[-1] if "/shmdat/" in path else None
    if tail is None:
        return "other"
    return "mpi" if tail.startswith("mpi/") else "dat and below"


def _report(tracer, args, names):
    n = args.iterations
    per_layer, per_function = collections.Counter(), collections.Counter()
    for (path, line), count in tracer.lines.items():
        per_layer[_layer(path)] += count
        if "/shmdat/" in path:
            per_function[(path.rsplit("/shmdat/", 1)[-1], names.get((path, line), "?"))] += count
    shmdat_lines = per_layer["mpi"] + per_layer["dat and below"]
    print(f"{args.mode} ({args.spec}, {args.size} B), rank 0, per round trip: "
          f"{shmdat_lines / n:.1f} shmdat lines (shmdat/mpi {per_layer['mpi'] / n:.1f}, "
          f"shmdat/dat and below {per_layer['dat and below'] / n:.1f}), "
          f"{per_layer['other'] / n:.1f} outside shmdat (this loop), {tracer.calls / n:.1f} calls")
    for (path, name), count in per_function.most_common(args.top):
        print(f"{count / n:7.1f}  {path}:{name}")
    print("shmdat/mpi's functions:")
    for (path, name), count in per_function.most_common():
        if path.startswith("mpi/"):
            print(f"{count / n:7.1f}  {path}:{name}")
    if args.mpi_lines:
        for (path, line), count in sorted(tracer.lines.items()):
            if _layer(path) == "mpi":
                print(f"{count / n:7.1f}  {path.rsplit('/shmdat/', 1)[-1]}:{line}")
    for kind, what in (("poll", "an empty poll"), ("test", "a Test that found nothing"),
                       ("look", "a look at the peers")):
        if tracer.apart[kind]:
            print(f"apart: {what}: {tracer.apart[kind + ' lines'] / tracer.apart[kind]:.0f} lines "
                  f"({tracer.apart[kind] / n:.2f} per round trip here)")


def _names(frames_seen):
    """(file, line) -> the function's qualified name (its name before Python 3.11), from the
    code objects the tracer saw."""
    names = {}
    for code in frames_seen:
        for _, _, line in code.co_lines():
            if line is not None:
                names.setdefault((code.co_filename, line), getattr(code, "co_qualname", code.co_name))
    return names


def main():
    args = _arguments()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    peer = 1 - rank
    array_send = np.arange(args.size, dtype=np.uint8)
    array_recv = np.zeros(args.size, dtype=np.uint8)
    send, recv = (array_send, array_recv) if args.spec == "array" else \
        ([array_send, MPI.BYTE], [array_recv, MPI.BYTE])
    for _ in range(max(200, args.iterations // 4)):          # warm: caches filled
        _round_trip(comm, args.mode, send, recv, peer, rank == 0)
    if rank == 0:
        tracer = Tracer(args.mode)
        seen = set()

        def trace(frame, event, arg):
            seen.add(frame.f_code)
            return tracer(frame, event, arg)
        sys.settrace(trace)
        for _ in range(args.iterations):
            _round_trip(comm, args.mode, send, recv, peer, True)
        sys.settrace(None)
        assert (array_recv == array_send).all()
        _report(tracer, args, _names(seen))
    else:
        for _ in range(args.iterations):
            _round_trip(comm, args.mode, send, recv, peer, False)
    if args.time:
        means = []
        for _ in range(5):
            comm.Barrier()
            start = time.perf_counter()
            for _ in range(args.time):
                _round_trip(comm, args.mode, send, recv, peer, rank == 0)
            means.append((time.perf_counter() - start) / args.time * 1e6)
        if rank == 0:
            print(f"timing: {args.time} round trips, mean {statistics.median(means):.1f} us "
                  f"(median of 5 runs: {', '.join(f'{m:.1f}' for m in means)})")


if __name__ == "__main__":
    main()
