"""Issue 13's and 14's targets judged on synthetic runs (targets.evaluate is a pure function of the rows)."""

from shmdat.bench import report, targets
from shmdat.bench.plan import Cell, collective_row, rate_row, row

MiB = 1 << 20


def lat(transport, wait, median):
    return row(transport, Cell("send_lat", 8, wait), median, median)


def bw(transport, test, size, median):
    return row(transport, Cell(test, size, "poll"), median, median)


def judge(rows=(), msgrate=(), waiting=None, collectives=()):
    """{name: judged target} of one synthetic run."""
    return {t["name"]: t for t in targets.evaluate(list(rows), list(msgrate), waiting, list(collectives))}


def test_a_target_within_its_bound_is_met_with_its_figures_and_ratio():
    run = judge([lat("shmdat.verbs", "poll", 0.5), lat("mpi4py", "poll", 1.0)])
    t = run["verbs 8 B send/recv, polling, vs mpi4py"]
    assert (t["ours"], t["theirs"], t["ratio"]) == (0.5, 1.0, 0.5)
    assert (t["relation"], t["bound"], t["unit"]) == ("<=", 0.8, "us")
    assert t["against"] == ["mpi4py", "send", "latency", 8, "poll"]
    assert t["measured"] is True and t["met"] is True


def test_a_target_beyond_its_bound_is_missed():
    run = judge([lat("shmdat.verbs", "poll", 1.0), lat("mpi4py", "poll", 1.0)])
    t = run["verbs 8 B send/recv, polling, vs mpi4py"]
    assert t["ratio"] == 1.0 and t["measured"] is True and t["met"] is False


def test_a_target_whose_figures_were_not_measured_is_never_met():
    # Ours there, theirs not (mpi4py missing); and theirs there, ours not (the cell not selected).
    run = judge([lat("shmdat", "poll", 0.1), lat("mpi4py", "block", 5.0), lat("shmdat.verbs", "block", 0.1)])
    for name in ("DAT 8 B send/recv, polling, vs mpi4py", "verbs 8 B send/recv, blocked vs polling"):
        t = run[name]
        assert t["measured"] is False and t["met"] is False and t["ratio"] is None, name
    assert run["DAT 8 B send/recv, polling, vs mpi4py"]["theirs"] is None     # mpi4py's block cell is not its poll
    # An empty run: every target not measured.
    assert all(t["measured"] is False and t["met"] is False for t in judge().values())
    assert list(judge()) == [t.name for t in targets.TARGETS]


def test_pipe_is_taken_blocked_or_else_polling():
    name = "DAT 8 B send/recv, blocked, vs Pipe"
    polling_only = judge([lat("shmdat", "block", 1.0), lat("multiprocessing.Pipe", "poll", 10.0)])[name]
    assert polling_only["against"][-1] == "poll" and polling_only["ratio"] == 0.1 and polling_only["met"]
    both = judge([lat("shmdat", "block", 1.0), lat("multiprocessing.Pipe", "poll", 10.0),
                  lat("multiprocessing.Pipe", "block", 4.0)])[name]
    assert both["against"][-1] == "block" and both["ratio"] == 0.25 and not both["met"]


def test_message_rates_against_a_number_and_strictly_above_mpi4py():
    run = judge(msgrate=[rate_row("shmdat.verbs", 1, "poll", 2e6, 1e6), rate_row("shmdat", 1, "block", 4e5, 3e5),
                         rate_row("shmdat", 2, "block", 9e9, 9e9), rate_row("mpi4py", 1, "poll", 2e6, 2e6)])
    assert run["verbs message rate, 1 sender"]["met"] and run["verbs message rate, 1 sender"]["theirs"] == 1e6
    assert run["DAT message rate, 1 sender"]["ratio"] == 0.8 and not run["DAT message rate, 1 sender"]["met"]
    # Equal to mpi4py's is not above it; two senders' rate is not one sender's.
    assert run["verbs message rate vs mpi4py Isend/Irecv"]["measured"]
    assert not run["verbs message rate vs mpi4py Isend/Irecv"]["met"]
    assert run["DAT message rate vs mpi4py Isend/Irecv"]["ours"] == 4e5
    assert run["verbs message rate, 1 sender"]["unit"] == "msgs/s"


def test_bandwidth_against_mpi4py_and_memcpy():
    run = judge([bw("shmdat", "send_bw", MiB, 20.0), bw("mpi4py", "send_bw", MiB, 15.0),
                 bw("shmdat", "rdma_write_bw", MiB, 20.0), bw("memcpy", "memcpy_bw", MiB, 40.0),
                 bw("shmdat", "rdma_write_bw", 16 * MiB, 10.0), bw("memcpy", "memcpy_bw", 16 * MiB, 15.0)])
    assert run["DAT 1 MiB send/recv bandwidth vs mpi4py"]["met"]
    assert run["DAT 1 MiB RDMA write vs numpy.copyto"]["ratio"] == 0.5
    assert not run["DAT 1 MiB RDMA write vs numpy.copyto"]["met"]
    assert run["DAT 16 MiB RDMA write vs numpy.copyto"]["met"]


def test_idle_waiter_below_one_percent():
    name = "idle blocked waiter, % of a core"
    assert judge(waiting={"idle_waiter_cpu_percent": 0.4, "death_notice_ms": [50]})[name]["met"]
    assert not judge(waiting={"idle_waiter_cpu_percent": 1.0, "death_notice_ms": [50]})[name]["met"]
    assert not judge(waiting=None)[name]["measured"]


def test_the_section_says_met_missed_or_not_measured():
    judged = targets.evaluate([lat("shmdat", "poll", 0.5), lat("mpi4py", "poll", 1.0),
                               lat("shmdat.verbs", "poll", 1.0)])
    lines = dict(zip((t["name"] for t in judged), report.targets_table(judged)[2:]))
    assert lines["DAT 8 B send/recv, polling, vs mpi4py"].endswith("  met")
    assert lines["verbs 8 B send/recv, polling, vs mpi4py"].endswith("  MISSED")
    assert lines["DAT 16 MiB RDMA write vs numpy.copyto"].endswith("  not measured")
    assert all(line.startswith(name) for name, line in lines.items())
    assert " 0.5x " in lines["DAT 8 B send/recv, polling, vs mpi4py"]


def coll(transport, op, size, ranks, median):
    return collective_row(transport, ranks, Cell(f"{op}_lat", size, "block"), median, median)


def test_collective_targets_take_the_figures_at_4_ranks():
    name = "shmdat.mpi 8 B Allreduce, 4 ranks, vs mpi4py"
    # Only 2 ranks measured: not judged on them.
    two = judge(collectives=[coll("shmdat.mpi", "allreduce", 8, 2, 10.0), coll("mpi4py", "allreduce", 8, 2, 9.0)])
    assert two[name]["measured"] is False and two[name]["met"] is False
    run = judge(collectives=[coll("shmdat.mpi", "allreduce", 8, 4, 30.0), coll("mpi4py", "allreduce", 8, 4, 10.0),
                             coll("shmdat.mpi", "allreduce", 8, 2, 1.0), coll("mpi4py", "allreduce", 8, 2, 10.0),
                             coll("shmdat.mpi", "barrier", 0, 4, 20.0), coll("mpi4py", "barrier", 0, 4, 10.0)])
    assert (run[name]["ratio"], run[name]["unit"], run[name]["met"]) == (3.0, "us", False)
    assert run[name]["against"] == ["mpi4py", "allreduce", "latency", 8, 4]
    barrier = run["shmdat.mpi Barrier, 4 ranks, vs mpi4py"]
    assert (barrier["ratio"], barrier["bound"], barrier["met"]) == (2.0, 2.0, True)


def test_mpi_bandwidth_from_64_kib_up_is_judged_at_its_worst_size():
    name = "shmdat.mpi bandwidth, 64 KiB up, vs mpi4py"
    sizes = {32 << 10: (1.0, 9.0), 64 << 10: (5.0, 4.0), 1 << 20: (9.0, 10.0), 16 << 20: (20.0, 10.0)}
    rows = [bw(t, "send_bw", size, figure) for size, pair in sizes.items()
            for t, figure in zip(("shmdat.mpi", "mpi4py"), pair)]
    t = judge(rows)[name]
    # 32 KiB (below the bound's sizes) is not judged; 1 MiB is the worst of the others.
    assert (t["ours"], t["theirs"], t["ratio"], t["measured"], t["met"]) == (9.0, 10.0, 0.9, True, False)
    assert t["against"] == ["mpi4py", "send", "bandwidth", 1 << 20, "poll"]
    better = judge([r for r in rows if r["size"] != 1 << 20])[name]
    assert better["met"] and better["ratio"] == 1.25
    # A size only one of the two measured does not count; none from 64 KiB: not measured.
    assert judge(rows[:2] + rows[-2:-1])[name]["measured"] is False


def test_the_collectives_section_sets_shmdat_mpi_beside_mpi4py():
    lines = report.table([], collectives=[coll("shmdat.mpi", "barrier", 0, 4, 20.0), coll("mpi4py", "barrier", 0, 4, 10.0),
                                          coll("shmdat.mpi", "allreduce", 1 << 20, 2, 500.0)]).splitlines()
    assert lines[0].startswith("MPI collectives (us per call, the slowest rank's)")
    assert lines[2].split() == ["2", "Allreduce", "1", "MiB", "500", "-"]
    assert lines[3].split() == ["4", "Barrier", "-", "20", "10", "0.50x"]
