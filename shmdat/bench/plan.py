"""What to measure: the cells of the benchmark and how many iterations each gets."""

from typing import NamedTuple

KiB, MiB = 1024, 1024 * 1024
DEFAULT_SIZES = [8, 64, 512, 4 * KiB, 32 * KiB, 256 * KiB, MiB, 4 * MiB, 16 * MiB]
QUICK_SIZES = [8, 4 * KiB, MiB]
TESTS = ("send_lat", "rdma_write_lat", "rdma_read_lat", "send_bw", "rdma_write_bw", "rdma_read_bw")
WAITS = ("poll", "block")
REPS = 5                # bandwidth: repetitions of a timed batch (median and min over them)
WARM = 3                # untimed iterations before each cell
TIMEOUT_US = 30_000_000  # every blocking wait inside the benchmark is bounded
WINDOW = 32             # sends a sender keeps posted at most (and receives a receiver keeps posted)
MSGRATE_SIZE = 8        # bytes of a message-rate message
MSGRATE_LEAST = 1000    # messages in a message-rate batch at least, whatever the budget
UNITS = {"latency": "us", "bandwidth": "GB/s", "message_rate": "msgs/s"}
COLLECTIVE_RANKS = [2, 4]   # MPI collectives are timed at these numbers of ranks (--ranks)
QUICK_COLLECTIVE_RANKS = [4]    # --quick: the rank count issue 14's targets name, one launch per MPI
COLLECTIVE_LARGE = MiB      # the large Bcast and Allreduce


class Cell(NamedTuple):
    test: str           # one of TESTS, "msgrate" (one sender's window of sends: MSGRATE), or
    #                     an MPI collective's, one of COLLECTIVES' (microseconds per call)
    size: int
    wait: str           # "poll" | "block"

    @property
    def op(self):
        return self.test.rsplit("_", 1)[0]          # send, rdma_write, rdma_read, memcpy

    @property
    def metric(self):
        if self.test == "msgrate":
            return "message_rate"
        return "latency" if self.test.endswith("_lat") else "bandwidth"


# Message rate, one sender to one receiver: 8-byte sends, the sender keeping a window posted.
MSGRATE = Cell("msgrate", MSGRATE_SIZE, "poll")
# MPI collectives, every rank in the call (blocking calls: wait "block"). Barrier moves no data.
COLLECTIVES = [Cell("barrier_lat", 0, "block"),
               Cell("bcast_lat", 8, "block"), Cell("bcast_lat", COLLECTIVE_LARGE, "block"),
               Cell("allreduce_lat", 8, "block"), Cell("allreduce_lat", COLLECTIVE_LARGE, "block")]


def iterations(seconds_per_iteration, budget, lo=5, hi=200_000):
    """How many iterations fill `budget` seconds, given a first estimate of one."""
    return max(lo, min(hi, int(budget / max(seconds_per_iteration, 1e-7))))


def row(transport, cell, median, minimum):
    """One row of the --json schema."""
    return {"transport": transport, "op": cell.op, "metric": cell.metric, "size": cell.size,
            "wait": cell.wait, "median": median, "min": minimum, "unit": UNITS[cell.metric]}


def collective_row(transport, ranks, cell, median, minimum):
    """One MPI collective row of the --json schema: a latency row with the number of ranks."""
    return {**row(transport, cell, median, minimum), "ranks": ranks}


def rate_row(transport, senders, wait, median, minimum):
    """One message-rate row of the --json schema (msgs/s, 8-byte messages, into one receiver)."""
    return {"transport": transport, "op": "msgrate", "metric": "message_rate", "size": MSGRATE_SIZE,
            "senders": senders, "wait": wait, "median": median, "min": minimum, "unit": UNITS["message_rate"]}
