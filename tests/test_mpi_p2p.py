"""shmdat.mpi point to point, by real launches: rings of objects and arrays, wildcards and
statuses, ordering across eager and rendezvous sizes, large messages, requests, errors."""

import pytest

from tests.mpi_launch import FAILS, launch

HEAD = FAILS + """
import sys
import numpy as np
from shmdat.mpi import MPI
from shmdat.mpi.engine import EAGER_LIMIT
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
"""


def run_ok(tmp_path, n, body, *args):
    r = launch(tmp_path, n, HEAD + body, *args)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return r.stdout


@pytest.mark.parametrize("n", [2, 3, 4])
def test_ring_of_objects_and_arrays(tmp_path, n):
    out = run_ok(tmp_path, n, """
        assert (rank, size) == (comm.rank, comm.size)
        comm.send({"from": rank, "list": list(range(rank))}, dest=right, tag=7)
        got = comm.recv(source=left, tag=7)
        assert got == {"from": left, "list": list(range(left))}, got
        for dtype in (np.float64, np.int32, np.complex128, np.uint8):
            a = (np.arange(100) * (rank + 1)).astype(dtype)
            b = np.zeros(100, dtype)
            req = comm.Irecv(b, source=left, tag=1)
            comm.Send(a, dest=right, tag=1)
            req.Wait()
            assert (b == (np.arange(100) * (left + 1)).astype(dtype)).all(), (dtype, b)
        d = np.full(10, float(rank))
        e = np.zeros(10)
        comm.Isend([d, MPI.DOUBLE], right).Wait()
        comm.Recv([e, MPI.DOUBLE], left)
        assert (e == left).all()
        # As mpi4py: a typecode for the datatype, a float rank as C's int conversion.
        comm.Isend([d * 2, 2, "d"], float(right)).Wait()
        comm.Recv([e, 2, "d"], left + 0.5)
        assert (e[:2] == 2 * left).all() and (e[2:] == left).all()
        sys.stdout.write(f"ok {rank}\\n")
    """.replace("\n        ", "\n"))
    assert sorted(out.split("\n")[:-1]) == [f"ok {r}" for r in range(n)]


def test_any_source_any_tag_and_statuses(tmp_path):
    out = run_ok(tmp_path, 4, """
        if rank:
            comm.send("x" * rank, dest=0, tag=10 * rank)
            comm.Barrier()          # else an ANY_TAG receive below may take the array
            comm.Send(np.arange(rank, dtype=np.float64), dest=0, tag=100 + rank)
        else:
            seen = set()
            for _ in range(3):
                st = MPI.Status()
                obj = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
                assert obj == "x" * st.Get_source() and st.Get_tag() == 10 * st.Get_source()
                assert st.source == st.Get_source() and st.Get_error() == MPI.SUCCESS
                seen.add(st.Get_source())
            assert seen == {1, 2, 3}, seen
            comm.Barrier()
            for _ in range(3):
                st = MPI.Status()
                buf = np.zeros(8)
                comm.Recv([buf, MPI.DOUBLE], status=st)
                src = st.Get_source()
                assert st.Get_tag() == 100 + src
                assert st.Get_count(MPI.DOUBLE) == src and st.Get_count() == 8 * src
                assert st.Get_count(MPI.INT) == 2 * src
                assert (buf[:src] == np.arange(src)).all()
            st = MPI.Status()
            assert st.Get_source() == MPI.ANY_SOURCE and st.Get_tag() == MPI.ANY_TAG
            print("ok")
    """.replace("\n        ", "\n"))
    assert out == "ok\n"


def test_a_tag_picks_its_message_out_of_order(tmp_path):
    run_ok(tmp_path, 2, """
        if rank == 0:
            for tag in (1, 2, 3):
                comm.send(tag, dest=1, tag=tag)
        else:
            assert comm.recv(source=0, tag=3) == 3
            assert comm.recv(source=0, tag=MPI.ANY_TAG) == 1
            assert comm.recv(source=MPI.ANY_SOURCE, tag=2) == 2
    """.replace("\n        ", "\n"))


def test_non_overtaking_under_many_messages_of_mixed_sizes(tmp_path):
    # Eager and rendezvous messages alternate: each must still arrive in the order sent,
    # including to receives posted before the messages exist.
    run_ok(tmp_path, 2, """
        sizes = [8, EAGER_LIMIT + 1, 1, 3 * EAGER_LIMIT, 0, EAGER_LIMIT]
        count = 300
        if rank == 0:
            for i in range(count):
                comm.Send(np.full(sizes[i % len(sizes)], i % 251, np.uint8), dest=1, tag=i % 3)
            for i in range(count):
                comm.send(i, dest=1, tag=5)
        else:
            early = [comm.irecv(source=0, tag=5) for _ in range(20)]
            buf = np.empty(3 * EAGER_LIMIT, np.uint8)
            for i in range(count):
                st = MPI.Status()
                comm.Recv(buf, source=0, tag=MPI.ANY_TAG, status=st)
                n = sizes[i % len(sizes)]
                assert (st.Get_tag(), st.Get_count()) == (i % 3, n), (i, st.Get_tag())
                assert (buf[:n] == i % 251).all(), i
            assert MPI.Request.waitall(early) == list(range(20))
            assert [comm.recv(source=0, tag=5) for _ in range(20, count)] == list(range(20, count))
    """.replace("\n        ", "\n"))


def test_messages_larger_than_the_eager_limit(tmp_path):
    run_ok(tmp_path, 3, """
        for n in (EAGER_LIMIT, EAGER_LIMIT + 1, 1 << 20, 3_000_001):
            a = np.random.default_rng(n + rank).integers(0, 1 << 30, n // 4 + 1, np.int32)
            b = np.empty_like(a)
            r = comm.Irecv([b, MPI.INT], source=left, tag=n % 1000)
            s = comm.Isend([a, MPI.INT], dest=right, tag=n % 1000)
            MPI.Request.Waitall([r, s])
            assert (b == np.random.default_rng(n + left).integers(0, 1 << 30, n // 4 + 1,
                                                                   np.int32)).all(), n
        # The same arrays again (a registration from the cache), and a count below the size.
        a = np.arange(1 << 18, dtype=np.float64) + rank
        for k in range(3):
            b = np.zeros(1 << 18)
            r = comm.Irecv([b, 1000, MPI.DOUBLE], source=left)
            comm.Send([a, 1000, MPI.DOUBLE], dest=right)
            r.Wait()
            assert (b[:1000] == np.arange(1000) + left + k * size).all() and not b[1000:].any()
            a += size
        big = {"rank": rank, "data": list(range(200_000))}
        req = comm.isend(big, dest=right, tag=9)
        got = comm.recv(source=left, tag=9)
        req.wait()
        assert got == {"rank": left, "data": list(range(200_000))}
    """.replace("\n        ", "\n"))


def test_requests_test_wait_and_waitall(tmp_path):
    run_ok(tmp_path, 2, """
        other = 1 - rank
        r = comm.irecv(source=other, tag=3)
        flag, obj = r.test()
        assert not flag and obj is None          # nothing sent yet
        comm.Barrier()
        comm.isend(("hello", rank), dest=other, tag=3).wait()
        assert r.wait() == ("hello", other)
        reqs = [comm.isend(i, dest=other, tag=i) for i in range(10)]
        reqs += [comm.irecv(source=other, tag=i) for i in range(10)]
        statuses = []
        res = MPI.Request.waitall(reqs, statuses)
        assert res == [None] * 10 + list(range(10))
        assert [s.Get_tag() for s in statuses[10:]] == list(range(10))
        b = np.zeros(4, np.int64)
        rr = comm.Irecv(b, source=other, tag=4)
        comm.Send(np.arange(4, dtype=np.int64) * rank, dest=other, tag=4)
        while not rr.Test():
            pass
        assert (b == np.arange(4) * other).all()
        assert MPI.Request.Testall([rr]) is True
    """.replace("\n        ", "\n"))


def test_a_completed_request_is_null_from_then_on(tmp_path):
    """As mpi4py's: once a completion call has returned a request, it is REQUEST_NULL:
    wait() gives None, test() (True, None), and statuses come back empty."""
    run_ok(tmp_path, 2, """
        other = 1 - rank
        r = comm.irecv(source=other, tag=5)
        comm.send(("x", rank), dest=other, tag=5)
        assert r.wait() == ("x", other)
        st = MPI.Status()
        assert r.wait(st) is None
        assert (st.Get_source(), st.Get_tag()) == (MPI.ANY_SOURCE, MPI.ANY_TAG)
        assert r.test() == (True, None) and r.Wait() is True and r.Test() is True
        reqs = [r, comm.irecv(source=other, tag=6)]
        comm.send("y", dest=other, tag=6)
        assert MPI.Request.waitall(reqs) == [None, "y"]
        assert MPI.Request.Testall(reqs) is True and MPI.Request.waitall(reqs) == [None, None]
    """.replace("\n        ", "\n"))


def test_barrier_holds_every_rank_until_all_arrive(tmp_path):
    run_ok(tmp_path, 3, """
        import os, pathlib, sys
        here = pathlib.Path(sys.argv[1])
        for round in range(3):
            (here / f"{round}.{rank}").touch()
            comm.Barrier() if round % 2 else comm.barrier()
            assert all((here / f"{round}.{r}").exists() for r in range(size)), round
    """.replace("\n        ", "\n"), str(tmp_path))


def test_errors_are_mpi_exceptions_with_their_class(tmp_path):
    run_ok(tmp_path, 2, """
        assert issubclass(MPI.Exception, RuntimeError)
        fails(MPI.ERR_RANK, comm.send, 1, dest=size)
        fails(MPI.ERR_RANK, comm.Send, np.zeros(1), -5)
        fails(MPI.ERR_TAG, comm.send, 1, dest=0, tag=-3)
        fails(MPI.ERR_TAG, comm.recv, source=0, tag=-7)
        fails(MPI.ERR_COUNT, comm.Send, [np.zeros(2), 3, MPI.DOUBLE], 0)
        fails(BufferError, comm.Recv, np.zeros(4)[::2], 0)
        fails(BufferError, comm.Recv, b"read-only", 0)
        fails(KeyError, comm.Send, [np.zeros(2), "double"], 0)      # as mpi4py
        fails(TypeError, comm.Send, [np.zeros(4), ([1, 1], [0, 2]), MPI.DOUBLE], 0)  # a v-spec
        fails(ValueError, comm.Send, [np.zeros(4), 1, 2, MPI.DOUBLE, 0], 0)       # 5 items
        fails(ValueError, comm.Send, [np.zeros(4), -1, MPI.DOUBLE], 0)
        fails(ValueError, comm.Send, [np.zeros(4), (1, 5), MPI.DOUBLE], 0)        # displ past it
        fails(ValueError, comm.Send, [np.zeros(3, np.uint8), MPI.DOUBLE], 0)      # 3 bytes of 8
        # A message longer than its receive: ERR_TRUNCATE, eager and rendezvous alike, and
        # the connection goes on.
        other = 1 - rank
        for n in (16, 2 * EAGER_LIMIT):
            req = comm.Isend(np.ones(n, np.uint8), dest=other)
            small = np.zeros(8, np.uint8)
            fails(MPI.ERR_TRUNCATE, comm.Recv, small, source=other)
            req.Wait()
            assert (small == 1).all() if n == 16 else not small.any()
        comm.send("after", dest=other)
        assert comm.recv(source=other) == "after"
        # PROC_NULL: a send goes nowhere, a receive completes at once, empty.
        comm.send("nothing", dest=MPI.PROC_NULL)
        st = MPI.Status()
        assert comm.recv(source=MPI.PROC_NULL, status=st) is None
        assert (st.Get_source(), st.Get_count()) == (MPI.PROC_NULL, 0)
    """.replace("\n        ", "\n"))


def test_probe_and_iprobe_leave_the_message_for_the_receive(tmp_path):
    run_ok(tmp_path, 2, """
        if rank == 0:
            comm.Send(np.arange(5, dtype=np.int32), dest=1, tag=4)
            big = comm.Isend(np.arange(EAGER_LIMIT, dtype=np.float64), dest=1, tag=8)
            comm.send("ready?", dest=1, tag=9)
            assert comm.recv(source=1, tag=10) == "probed"
            big.Wait()
        else:
            st = MPI.Status()
            assert comm.Probe(source=MPI.ANY_SOURCE, tag=8, status=st) is True
            assert (st.Get_source(), st.Get_tag(), st.Get_count(MPI.DOUBLE)) == (0, 8, EAGER_LIMIT)
            st = MPI.Status()
            assert comm.probe(status=st) is True               # the oldest: tag 4
            assert (st.Get_tag(), st.Get_count(MPI.INT)) == (4, 5)
            buf = np.zeros(st.Get_count(MPI.INT), np.int32)
            comm.Recv(buf, source=st.Get_source(), tag=st.Get_tag())
            assert (buf == np.arange(5)).all()
            assert comm.Iprobe(source=0, tag=4) is False       # received: gone from the queue
            assert comm.iprobe(source=0, tag=11) is False      # never sent
            while not comm.Iprobe(source=0, tag=9, status=st):
                pass
            assert st.Get_tag() == 9 and comm.recv(source=0, tag=9) == "ready?"
            big = np.zeros(EAGER_LIMIT)
            comm.Recv(big, source=0, tag=8)
            assert (big == np.arange(EAGER_LIMIT)).all()
            st = MPI.Status()
            assert comm.Iprobe(MPI.PROC_NULL, status=st) and st.Get_source() == MPI.PROC_NULL
            comm.send("probed", dest=0, tag=10)
    """.replace("\n        ", "\n"))


@pytest.mark.parametrize("n", [1, 3])
def test_sendrecv_and_sendrecv_replace_around_a_ring(tmp_path, n):
    run_ok(tmp_path, n, """
        a = np.full(1000, rank, np.int64)
        b = np.zeros(1000, np.int64)
        st = MPI.Status()
        comm.Sendrecv(a, dest=right, sendtag=3, recvbuf=b, source=left, recvtag=3, status=st)
        assert (b == left).all() and (st.Get_source(), st.Get_tag()) == (left, 3)
        big = np.full(EAGER_LIMIT, float(rank))                     # rendezvous size
        comm.Sendrecv_replace([big, MPI.DOUBLE], dest=right, source=left)
        assert (big == left).all()
        assert comm.sendrecv({"r": rank}, dest=right, source=left) == {"r": left}
        st = MPI.Status()
        assert comm.sendrecv("x", dest=MPI.PROC_NULL, source=MPI.PROC_NULL, status=st) is None
        assert st.Get_source() == MPI.PROC_NULL
        comm.Sendrecv(a, dest=right, recvbuf=None, source=MPI.PROC_NULL)
        comm.Recv(b, source=left)                                  # the send above
        assert (b == left).all()
    """.replace("\n        ", "\n"))


def test_waitany_and_testany_take_completed_requests_in_turn(tmp_path):
    run_ok(tmp_path, 2, """
        if rank == 0:
            comm.send("third", dest=1, tag=3)
            assert comm.recv(source=1) == "go"
            comm.send("first", dest=1, tag=1)
            comm.Send(np.ones(EAGER_LIMIT), dest=1, tag=2)
        else:
            assert MPI.Request.Testany([]) == (MPI.UNDEFINED, True)
            buf = np.zeros(EAGER_LIMIT)
            reqs = [comm.irecv(source=0, tag=1), comm.Irecv(buf, source=0, tag=2),
                    comm.irecv(source=0, tag=3)]
            st = MPI.Status()
            assert MPI.Request.waitany(reqs, st) == (2, "third") and st.Get_tag() == 3
            assert MPI.Request.Testany(reqs) == (MPI.UNDEFINED, False)
            comm.send("go", dest=0)
            seen = dict([MPI.Request.waitany(reqs), MPI.Request.waitany(reqs)])
            assert seen == {0: "first", 1: None} and (buf == 1).all()
            assert MPI.Request.Waitany(reqs) == MPI.UNDEFINED
            assert MPI.Request.testany(reqs) == (MPI.UNDEFINED, True, None)
            r = comm.irecv(source=1, tag=7)
            comm.isend(7, dest=1, tag=7)
            assert MPI.Request.testany([r]) == (0, True, 7)
    """.replace("\n        ", "\n"))


def test_synchronous_sends_complete_only_once_matched(tmp_path):
    # Rank 1 posts its receive for tag 5 only after rank 0 has seen its Issend still
    # pending: a synchronous send cannot complete before that, whatever the timing.
    run_ok(tmp_path, 2, """
        for n in (0, 10, EAGER_LIMIT):
            if rank == 0:
                req = comm.Issend(np.full(n, 3, np.uint8), dest=1, tag=5)
                for _ in range(100):
                    assert not req.Test()
                assert comm.Isend(np.zeros(1), dest=1, tag=4).Test()   # standard: at once
                comm.send("now", dest=1, tag=6)
                req.Wait()
                comm.ssend({"n": n}, dest=1, tag=7)
            else:
                assert comm.recv(source=0, tag=6) == "now"
                buf = np.zeros(n, np.uint8)
                comm.Recv(buf, source=0, tag=5)
                assert (buf == 3).all()
                comm.Recv(np.zeros(1), source=0, tag=4)
                assert comm.recv(source=0, tag=7) == {"n": n}
        # To itself: pending until its own receive matches it.
        req = comm.issend("me", dest=rank, tag=1)
        assert not req.test()[0]
        assert comm.recv(source=rank, tag=1) == "me"
        assert req.test() == (True, None)
        try:
            comm.Ssend(np.zeros(1), dest=rank)
        except MPI.Exception as e:
            assert "would never complete" in str(e)
        else:
            raise AssertionError("a blocking Ssend to itself returned")
        comm.Recv(np.zeros(1), source=rank)
    """.replace("\n        ", "\n"))
