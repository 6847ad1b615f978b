"""The benchmark's runner in-process: a failing benchmark stops its peers cleanly and
leaves nothing in /dev/shm; mpiexec is found beside the interpreter; the verbs
layer's blocked cells and every layer's message rate run for real (tiny budgets:
no figure is judged)."""

import math
import os
import sys

import pytest

from shmdat import bench
from shmdat.hw import shm
from shmdat.bench import msgrate, runner
from shmdat.bench.plan import COLLECTIVES, MSGRATE, TESTS, Cell


def test_a_failing_benchmark_stops_its_peer_and_leaves_no_memory(monkeypatch, capsys):
    pids = []
    real_reap, real_run_pair = runner.reap, runner.run_pair

    def recording_reap(procs, *args, **kwargs):
        pids.extend(p.pid for p in procs)
        real_reap(procs, *args, **kwargs)

    def failing_run_pair(transport, cells, budget, on_row):
        # A NaN budget (the command line refuses it) makes the client fail after it has
        # connected, while its server waits for the next step on the control pipe.
        real_run_pair(transport, cells, math.nan, on_row)

    monkeypatch.setattr(runner, "reap", recording_reap)
    monkeypatch.setattr(runner, "run_pair", failing_run_pair)
    code = bench.main(["--tests", "rdma_write_lat", "--sizes", "8", "--wait", "poll", "--senders", "0",
                       "--no-waiting"])
    err = capsys.readouterr().err
    assert code == 1
    assert "shmdat bench: shmdat failed: ValueError: cannot convert float NaN to integer" in err
    assert len(pids) == 2 and not any(p == os.getpid() for p in pids)
    # Both benchmark processes closed their IAs: none had to be killed, nothing of theirs is left.
    assert "killed" not in err
    assert not [o["name"] for o in shm.list_objects() if o["pid"] in pids]


def test_mpiexec_beside_the_interpreter_is_found_off_path(monkeypatch):
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not os.access(beside, os.X_OK):
        pytest.skip("no mpiexec beside this interpreter")
    monkeypatch.setenv("PATH", os.pathsep.join(["/nonexistent", "/usr/bin", "/bin"]))    # a venv not activated
    assert runner.find_mpiexec() == beside


def measured(run, cells):
    """run(cells, budget, on_row) with a tiny budget: [(cell, median, min)] in order."""
    got = []
    run(cells, 0.001, lambda cell, median, minimum: got.append((cell, median, minimum)))
    return got


def test_verbs_block_cells_wait_on_completion_channels():
    cells = [Cell(test, 8, "block") for test in TESTS]
    got = measured(lambda *a: runner.run_pair("shmdat.verbs", *a), cells)
    assert [c for c, _, _ in got] == cells
    assert all(median > 0 and minimum > 0 for _, median, minimum in got)


def test_verbs_message_rate_cell():
    [(cell, median, minimum)] = measured(lambda *a: runner.run_pair("shmdat.verbs", *a), [MSGRATE])
    assert cell == MSGRATE and cell.metric == "message_rate" and median >= minimum > 0


def test_mpi4py_message_rate_cell_over_isend_irecv_windows():
    why = runner.mpi_available()
    if why:
        pytest.skip(why)
    # With a latency cell before it: the worker changes endpoint between them.
    cells = [Cell("send_lat", 8, "poll"), MSGRATE]
    got = measured(runner.run_mpi, cells)
    assert [c for c, _, _ in got] == cells
    assert all(median > 0 and minimum > 0 for _, median, minimum in got)


def test_collective_cells_run_unchanged_on_shmdat_mpi_at_an_odd_rank_count():
    got = measured(lambda *a: runner.run_mpi(*a, "shmdat.mpi", 3, "shmdat.bench.mpi_collectives"), COLLECTIVES)
    assert [c for c, _, _ in got] == COLLECTIVES
    assert all(median >= minimum > 0 for _, median, minimum in got)


def test_dat_message_rate_of_one_sender_is_a_layered_row():
    r = msgrate.run(1, 60)
    assert (r["transport"], r["op"], r["metric"], r["senders"], r["unit"]) == \
        ("shmdat", "msgrate", "message_rate", 1, "msgs/s")
    assert r["median"] >= r["min"] > 0
