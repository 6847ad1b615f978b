"""examples/rc_pingpong.py, a pyverbs program, runs unchanged on shmdat as two processes."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).parent.parent / "examples" / "rc_pingpong.py"
LAUNCH = [sys.executable, "-m", "shmdat.verbs", str(EXAMPLE)]


def test_rc_pingpong_between_two_processes():
    server = subprocess.Popen([*LAUNCH, "-n", "300", "-s", "64"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()             # "listening on port N" (bounded by the timeout below)
        assert line.startswith("listening on port"), (line, server.stderr.read())
        port = line.split()[-1]
        client = subprocess.run([*LAUNCH, "127.0.0.1", "-p", port, "-n", "300", "-s", "64"],
                                capture_output=True, text=True, timeout=45)
        assert client.returncode == 0, (client.stdout, client.stderr, server.poll())
        assert "300 iters in" in client.stdout and "usec/iter" in client.stdout
        out, err = server.communicate(timeout=30)
        assert server.returncode == 0, err
        assert "300 iters in" in out
    finally:
        server.kill()
        server.wait(10)
