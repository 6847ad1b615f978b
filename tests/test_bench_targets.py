"""Issue 13's targets judged on synthetic runs (targets.evaluate is a pure function of the rows)."""

from shmdat.bench import report, targets
from shmdat.bench.plan import Cell, rate_row, row

MiB = 1 << 20


def lat(transport, wait, median):
    return row(transport, Cell("send_lat", 8, wait), median, median)


def bw(transport, test, size, median):
    return row(transport, Cell(test, size, "poll"), median, median)


def judge(rows=(), msgrate=(), waiting=None):
    """{name: judged target} of one synthetic run."""
    return {t["name"]: t for t in targets.evaluate(list(rows), list(msgrate), waiting)}


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
