"""The launcher (`shmdat run -n N`, `python -m shmdat.mpi -n N`): environment, stdin,
output prefixes, exit status, and ending the job when a rank fails or on SIGTERM."""

import os
import select
import signal
import subprocess
import sys
import time

import pytest

from tests.mpi_launch import ROOT, TIMEOUT, env
from tests.mpi_launch import write as _script


def run(args, timeout=TIMEOUT, **kw):
    """`shmdat run` with this tree's shmdat, bounded."""
    return subprocess.run([sys.executable, "-m", "shmdat", "run"] + args, capture_output=True,
                          timeout=timeout, env=env(), **kw)


def test_each_rank_gets_its_rank_size_and_job_id(tmp_path):
    prog = _script(tmp_path, """
        import os
        e = os.environ         # one write per line: the ranks share the pipe
        os.write(1, f"{e['SHMDAT_MPI_RANK']} {e['SHMDAT_MPI_SIZE']} {e['SHMDAT_MPI_JOBID']} "
                    f"{e['SHMDAT_DEVICE_NS']}\\n".encode())
    """)
    r = run(["-n", "3", "--", sys.executable, prog])
    assert r.returncode == 0, r.stderr
    lines = sorted(r.stdout.decode().split("\n")[:-1])
    jobids = {line.split()[2] for line in lines}
    assert [line.split()[:2] for line in lines] == [["0", "3"], ["1", "3"], ["2", "3"]]
    assert len(jobids) == 1
    assert {line.split()[3] for line in lines} == {os.environ["SHMDAT_DEVICE_NS"]}


def test_stdin_goes_to_rank_0_only_and_prefix_marks_lines(tmp_path):
    prog = _script(tmp_path, """
        import os, sys
        print(repr(sys.stdin.read()))
        print("err", file=sys.stderr)
    """)
    r = subprocess.run([sys.executable, "-m", "shmdat.mpi", "-n", "2", "--prefix", prog],
                       input=b"hello", capture_output=True, timeout=TIMEOUT,
                       env=env())
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.decode().splitlines()) == ["[0] 'hello'", "[1] ''"]
    assert sorted(r.stderr.decode().splitlines()) == ["[0] err", "[1] err"]


@pytest.mark.parametrize("how, status", [("sys.exit(7)", 7),
                                          ("os.kill(os.getpid(), signal.SIGKILL)", 128 + 9)])
def test_a_failing_rank_sets_the_status_and_ends_the_others(tmp_path, how, status):
    prog = _script(tmp_path, f"""
        import os, signal, sys, time
        if os.environ["SHMDAT_MPI_RANK"] == "2":
            {how}
        time.sleep(3600)
    """)
    r = run(["-n", "3", sys.executable, prog])
    assert r.returncode == status


def test_exit_status_zero_when_every_rank_succeeds(tmp_path):
    r = run(["-n", "2", sys.executable, "-c", "pass"])
    assert r.returncode == 0
    assert r.stdout == r.stderr == b""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_ctrl_c_to_the_launcher_ends_every_rank(tmp_path, signum):
    prog = _script(tmp_path, """
        import os, time
        os.write(1, f"{os.getpid()}\\n".encode())
        time.sleep(3600)
    """)
    launcher = subprocess.Popen([sys.executable, "-m", "shmdat", "run", "-n", "2", sys.executable,
                                 prog], stdout=subprocess.PIPE,
                                env=env())
    pids = [int(line) for line in _lines(launcher.stdout, 2)]
    launcher.send_signal(signum)
    assert launcher.wait(timeout=TIMEOUT) == 128 + signum
    launcher.stdout.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _lines(stream, n):
    """The first n lines of a pipe, within TIMEOUT (a launch that never starts fails the
    test). Read from its fd: select() knows nothing of a buffered reader's buffer."""
    fd, data = stream.fileno(), b""
    end = time.monotonic() + TIMEOUT
    while data.count(b"\n") < n:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        assert ready, f"not {n} lines within {TIMEOUT} s: {data!r}"
        chunk = os.read(fd, 4096)
        assert chunk, f"the output ended after {data!r}"
        data += chunk
    return data.splitlines()[:n]


def test_no_program_is_a_usage_error():
    r = run(["-n", "2"])
    assert r.returncode == 2
    assert b"no program to run" in r.stderr


def test_the_ring_example(tmp_path):
    r = subprocess.run([sys.executable, "-m", "shmdat", "run", "-n", "3", "--prefix", "--",
                        sys.executable, os.path.join(ROOT, "examples", "mpi_ring.py")],
                       capture_output=True, text=True, timeout=TIMEOUT, env=env())
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == [
        "[0] rank 0 got 1048576 doubles of value 2 from rank 2",
        "[0] rank 0 got {'hello from': 2}",
        "[1] rank 1 got 1048576 doubles of value 0 from rank 0",
        "[1] rank 1 got {'hello from': 0}",
        "[2] rank 2 got 1048576 doubles of value 1 from rank 1",
        "[2] rank 2 got {'hello from': 1}",
    ]


def test_the_pi_example(tmp_path):
    r = subprocess.run([sys.executable, "-m", "shmdat", "run", "-n", "3", "--",
                        sys.executable, os.path.join(ROOT, "examples", "mpi_pi.py")],
                       capture_output=True, text=True, timeout=TIMEOUT, env=env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("pi ~ 3.14159265") and r.stdout.endswith(
        "from ranks [0, 1, 2]\n"), r.stdout
