"""Smoke test of `shmdat bench`: tiny sizes and budgets, the JSON's shape only (never timings)."""

import json
import subprocess
import sys

import pytest

from shmdat.bench import targets
from shmdat.bench.plan import COLLECTIVES

ROW_KEYS = {"transport", "op", "metric", "size", "wait", "median", "min", "unit"}
RATE_KEYS = ROW_KEYS | {"senders"}
COLLECTIVE_KEYS = ROW_KEYS | {"ranks"}
TARGET_KEYS = {"name", "ours", "theirs", "against", "ratio", "relation", "bound", "unit", "measured", "met"}


def run_bench(*args):
    """A tiny --json run; its finished subprocess."""
    done = subprocess.run([sys.executable, "-m", "shmdat", "bench", "--json", "--sizes", "8,4K",
                           "--budget", "0.002", "--messages", "200", *args],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done


def bench(*args):
    return json.loads(run_bench(*args).stdout)


def check_rows(rows):
    for r in rows:
        assert set(r) == ROW_KEYS, r
        assert r["op"] in ("send", "rdma_write", "rdma_read", "memcpy")
        assert r["metric"] in ("latency", "bandwidth") and r["wait"] in ("poll", "block")
        assert r["unit"] == ("us" if r["metric"] == "latency" else "GB/s")
        assert isinstance(r["size"], int) and r["median"] > 0 and r["min"] > 0


def check_rates(rates):
    for m in rates:
        assert set(m) == RATE_KEYS, m
        assert (m["op"], m["metric"], m["unit"], m["size"]) == ("msgrate", "message_rate", "msgs/s", 8)
        assert m["median"] > 0 and m["min"] > 0 and m["wait"] in ("poll", "block")


def test_json_shape_of_every_shmdat_cell():
    out = bench("--senders", "1,2")
    assert {"machine", "rows", "msgrate", "waiting", "targets"} <= set(out)
    rows = out["rows"]
    check_rows(rows)
    cells = {(r["op"], r["metric"], r["size"], r["wait"]) for r in rows if r["transport"] == "shmdat"}
    assert len(cells) == 3 * 2 * 2 * 2      # ops x metrics x sizes x waits
    # The verbs layer beside DAT: the same cells, the block ones waiting on completion channels.
    verbs = {(r["op"], r["metric"], r["size"], r["wait"]) for r in rows if r["transport"] == "shmdat.verbs"}
    assert verbs == cells
    # Message rate: DAT's from 1 and 2 senders, the verbs layer's from one, each row naming its layer.
    check_rates(out["msgrate"])
    assert sorted((m["transport"], m["senders"]) for m in out["msgrate"]) == \
        [("shmdat", 1), ("shmdat", 2), ("shmdat.verbs", 1)]
    assert out["waiting"]["idle_waiter_cpu_percent"] >= 0 and out["waiting"]["death_notice_ms"]


def test_compare_measures_every_alternative_and_the_mpi_worker_on_shmdat_mpi():
    """--compare names every alternative, measured or skipped; the worker that measures
    mpi4py under mpiexec runs unchanged on shmdat.mpi under shmdat run (transport shmdat.mpi)."""
    out = bench("--compare", "--tests", "send_lat,send_bw", "--sizes", "8,64K", "--wait", "poll",
                "--senders", "0", "--no-waiting", "--ranks", "0")
    check_rows(out["rows"])
    assert out["collectives"] == []
    transports = {r["transport"] for r in out["rows"]}
    for name in ("multiprocessing.Pipe", "pyzmq", "mpi4py"):
        assert name in transports or name in out["skipped"], name
    assert {"shmdat", "shmdat.verbs", "memcpy", "shmdat.mpi"} <= transports
    smpi = sorted((r["op"], r["metric"], r["size"]) for r in out["rows"] if r["transport"] == "shmdat.mpi")
    assert smpi == [("send", "bandwidth", 8), ("send", "bandwidth", 65536),
                    ("send", "latency", 8), ("send", "latency", 65536)]


def test_compare_measures_message_rates_and_collectives_per_rank_count_and_judges_the_targets():
    """Message rate per layer; the collectives program under shmdat run -n N --mpi4py and
    mpiexec -n N: a row per (MPI, N, cell) and issue 14's N = 4 targets; every target judged
    with the run's medians or said not measured."""
    out = bench("--compare", "--tests", "send_lat", "--sizes", "8", "--senders", "1", "--no-waiting",
                "--ranks", "2,4")
    check_rates(out["msgrate"])
    layers = {m["transport"] for m in out["msgrate"]}
    assert {"shmdat", "shmdat.verbs"} <= layers
    assert "mpi4py" in layers or "mpi4py" in out["skipped"]
    assert all(m["senders"] == 1 for m in out["msgrate"])
    assert [t["name"] for t in out["targets"]] == [t.name for t in targets.TARGETS]
    for t in out["targets"]:
        assert set(t) == TARGET_KEYS, t
        assert t["met"] is False or t["measured"] is True, t
    judged = {t["name"]: t for t in out["targets"]}
    # Not selected in this run: never met.
    for name in ("DAT 16 MiB RDMA write vs numpy.copyto", "idle blocked waiter, % of a core"):
        assert judged[name]["measured"] is False and judged[name]["met"] is False
    # Measured in this run: judged one way or the other, with the ratio of the run's medians.
    t = judged["verbs 8 B send/recv, blocked vs polling"]
    assert t["measured"] is True and t["ratio"] == t["ours"] / t["theirs"]
    for c in out["collectives"]:
        assert set(c) == COLLECTIVE_KEYS, c
        assert (c["metric"], c["unit"], c["wait"]) == ("latency", "us", "block")
        assert c["median"] >= c["min"] > 0
    mpis = ["shmdat.mpi"] + ([] if "mpi4py" in out["skipped"] else ["mpi4py"])
    assert sorted((c["transport"], c["ranks"], c["op"], c["size"]) for c in out["collectives"]) == \
        sorted((t, n, cell.op, cell.size) for t in mpis for n in (2, 4) for cell in COLLECTIVES)
    for name in ("shmdat.mpi Barrier, 4 ranks, vs mpi4py", "shmdat.mpi 8 B Allreduce, 4 ranks, vs mpi4py"):
        assert judged[name]["measured"] is ("mpi4py" in mpis), name
    assert judged["shmdat.mpi 8 B Allreduce, 4 ranks, vs mpi4py"]["against"] == \
        (["mpi4py", "allreduce", "latency", 8, 4] if "mpi4py" in mpis else None)


def test_the_table_has_the_mpi_section_and_ends_with_the_targets_section():
    done = subprocess.run([sys.executable, "-m", "shmdat", "bench", "--compare", "--tests", "send_lat",
                           "--sizes", "8", "--wait", "poll", "--budget", "0.002", "--messages", "200",
                           "--senders", "1", "--no-waiting", "--ranks", "0"],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "MPI point to point, 2 ranks: shmdat.mpi (shmdat run) against mpi4py" in done.stdout
    section = done.stdout[done.stdout.index("targets (issues 13 and 14)"):].splitlines()[2:]
    assert [line[:44].rstrip() for line in section] == [t.name for t in targets.TARGETS]
    assert "not measured" in done.stdout
    assert "message rate (msgs/s)" in done.stdout


@pytest.mark.parametrize("option, value", [
    ("--tests", "nonsense"), ("--wait", "never"), ("--sizes", "8,abc"), ("--sizes", "0"), ("--sizes", "3G"),
    ("--senders", "x"), ("--ranks", "-2"), ("--budget", "-1"), ("--budget", "nan"), ("--messages", "0"),
    ("--plot", "{tmp}/missing/bench.png"),
])
def test_a_bad_argument_is_a_usage_error_before_anything_starts(tmp_path, option, value):
    value = value.format(tmp=tmp_path)
    done = subprocess.run([sys.executable, "-m", "shmdat", "bench", option, value],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    # argparse's usage, then one line naming the argument and the bad item; nothing ran.
    last = done.stderr.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"shmdat bench: error: argument {option}: ") and value.split(",")[-1] in last, \
        done.stderr
    assert done.stdout == "" and "[1/" not in done.stderr


def test_plot_draws_a_png_and_says_where(tmp_path):
    png = tmp_path / "bench.png"
    done = run_bench("--plot", str(png), "--tests", "send_lat,send_bw", "--wait", "poll", "--senders", "0",
                     "--no-waiting")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {png}" in done.stderr      # stdout is the JSON alone
    json.loads(done.stdout)
