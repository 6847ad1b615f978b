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


class Cell(NamedTuple):
    test: str           # one of TESTS
    size: int
    wait: str           # "poll" | "block"

    @property
    def op(self):
        return self.test.rsplit("_", 1)[0]          # send, rdma_write, rdma_read, memcpy

    @property
    def metric(self):
        return "latency" if self.test.endswith("_lat") else "bandwidth"


def iterations(seconds_per_iteration, budget, lo=5, hi=200_000):
    """How many iterations fill `budget` seconds, given a first estimate of one."""
    return max(lo, min(hi, int(budget / max(seconds_per_iteration, 1e-7))))


def row(transport, cell, median, minimum):
    """One row of the --json schema."""
    return {"transport": transport, "op": cell.op, "metric": cell.metric, "size": cell.size,
            "wait": cell.wait, "median": median, "min": minimum,
            "unit": "us" if cell.metric == "latency" else "GB/s"}
