"""examples/dtest.py runs to completion between two processes, as the README shows."""

import os
import pathlib
import subprocess
import sys
import threading

import pytest

DTEST = pathlib.Path(__file__).resolve().parent.parent / "examples" / "dtest.py"
TIMEOUT = 60


def start(*args):
    return subprocess.Popen([sys.executable, str(DTEST), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def first_line(proc, timeout=TIMEOUT):
    """The process's first line of output, read with a bound."""
    line = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    assert line and line[0], f"no output within {timeout} s: {proc.stderr.read() if proc.poll() is not None else ''}"
    return line[0]


@pytest.fixture
def port(conn_qual):
    return 40000 + (os.getpid() * 97 + conn_qual) % 20000     # unique per worker and test


def test_server_and_client_run_to_completion(port):
    server = start("--server", "--port", str(port))
    try:
        words = first_line(server).split()
        assert words[:3] == ["dtest", "server:", "address"]
        client = start("--client", words[3], "--port", str(port), "--burst", "40", "--iterations", "50")
        try:
            out, err = client.communicate(timeout=TIMEOUT)
            assert client.returncode == 0, err
            for phase in ("connect", "RDMA write x40", "RDMA read x40", "ping-pong x50", "dtest client: done"):
                assert phase in out
        finally:
            client.kill()
        out, err = server.communicate(timeout=TIMEOUT)
        assert server.returncode == 0, err
        assert "dtest server: done" in out
    finally:
        server.kill()
        server.wait()


def test_client_without_a_server_fails_clearly(port):
    client = start("--client", "1.1.0", "--port", str(port), "--timeout", "2")
    try:
        _, err = client.communicate(timeout=TIMEOUT)
    finally:
        client.kill()
    assert client.returncode != 0
    assert "dtest:" in err
