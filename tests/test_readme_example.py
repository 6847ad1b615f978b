"""The README's first program is examples/first_server.py and examples/first_client.py,
word for word, and the pair runs as the README shows: two real processes, the
client finding the server through the address file the server writes.

Every wait here is bounded: lines are read by threads and taken from a queue
with a timeout, and every process is waited for with a timeout.
"""

import os
import pathlib
import queue
import re
import subprocess
import sys
import threading

import pytest

from shmdat.hw import shm

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
EXAMPLES = ROOT / "examples"
ADDRESS_FILE = "shmdat-server.address"
TIMEOUT = 60                    # seconds: a bound on every wait, far above what a run takes


def readme_blocks():
    """{file name: code} for each README code block introduced by a line naming examples/<file>."""
    pattern = re.compile(r"^`?examples/(first_\w+\.py)`?:\n\n```python\n(.*?)^```$", re.M | re.S)
    return {m.group(1): m.group(2) for m in pattern.finditer(README.read_text())}


def test_the_readme_shows_the_example_files_word_for_word():
    blocks = readme_blocks()
    assert sorted(blocks) == ["first_client.py", "first_server.py"]
    for name, code in blocks.items():
        assert code == (EXAMPLES / name).read_text(), f"the README's {name} differs from examples/{name}"


def test_the_readme_links_the_api_reference_in_the_project():
    text = README.read_text()
    assert "docs/api.md" in text
    assert (ROOT / "docs" / "api.md").is_file()
    assert "shared folder" not in text


def test_the_api_reference_names_every_public_method_and_export():
    import types

    import shmdat
    from shmdat.dat.cm import CR, PSP, RSP
    from shmdat.dat.cno import CNO
    from shmdat.dat.ep import EP
    from shmdat.dat.evd import EVD
    from shmdat.dat.ia import IA
    from shmdat.dat.lmr import LMR
    from shmdat.dat.pz import PZ
    from shmdat.dat.rmr import RMR
    from shmdat.dat.srq import SRQ

    doc = (ROOT / "docs" / "api.md").read_text()
    # EP.send_done and EP.recv_done are the hardware queue's completion callbacks, not API;
    # consumer_context and ia, which every handle has, are described once for all.
    internal = {"kind", "send_done", "recv_done", "consumer_context", "ia"}
    assert "`obj.consumer_context`" in doc and "`consumer_context`" in doc
    missing = [f"{cls.__name__.lower()}.{name}"
               for cls in (IA, PZ, EVD, CNO, LMR, RMR, PSP, RSP, CR, EP, SRQ)
               for name in dir(cls)
               if not name.startswith("_") and name not in internal
               and f"{cls.__name__.lower()}.{name}" not in doc]
    missing += [name for name in dir(shmdat)
                if not name.startswith("_") and not isinstance(getattr(shmdat, name), types.ModuleType)
                and not re.search(rf"\b{name}\b", doc)]
    assert not missing, f"docs/api.md does not mention {missing}"


class Running:
    """An example run as a real process; its stdout lines are collected by a thread."""

    def __init__(self, name, cwd, *args):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # This checkout's shmdat, whatever else is installed.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen([sys.executable, str(EXAMPLES / name), *args], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.pid = self.proc.pid
        self._lines = queue.Queue()
        self._out, self._err = [], []
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self._out, True),
                                          daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self._err, False),
                                          daemon=True)]
        for t in self._readers:
            t.start()

    def _read(self, stream, into, queued):
        for line in stream:
            into.append(line.rstrip("\n"))
            if queued:
                self._lines.put(line.rstrip("\n"))
        if queued:
            self._lines.put(None)                   # end of output

    def next_line(self):
        try:
            line = self._lines.get(timeout=TIMEOUT)
        except queue.Empty:
            pytest.fail(f"no output within {TIMEOUT} s")
        assert line is not None, f"the process ended without output: {self.finish()}"
        return line

    def finish(self):
        """(returncode, stdout lines, stderr text) once the process has ended."""
        code = self.proc.wait(TIMEOUT)
        for t in self._readers:
            t.join(TIMEOUT)
        return code, list(self._out), "\n".join(self._err)

    def kill(self):
        """Kill the process if it still runs (a failed test); reclaim what it leaves."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)
            shm.reclaim_dead()
        self.proc.wait(TIMEOUT)


@pytest.fixture
def unique_qual(conn_qual):
    """A connection qualifier no parallel test uses (each worker has its own device instance)."""
    return str(conn_qual)


def test_first_server_and_client_run_as_shown(tmp_path, unique_qual):
    started = []
    try:
        server = Running("first_server.py", tmp_path, unique_qual)
        started.append(server)
        line = server.next_line()
        address = (tmp_path / ADDRESS_FILE).read_text()     # written before that line
        assert line == f"server: listening at {address} on conn_qual {unique_qual}"

        client = Running("first_client.py", tmp_path, unique_qual)
        started.append(client)
        code, out, err = client.finish()
        assert code == 0, err
        assert out == ["client: connected, private data b'welcome'",
                       "client: send SUCCESS my cookie",
                       "client: CONNECTION_EVENT_DISCONNECTED"]

        code, out, err = server.finish()
        assert code == 0, err
        assert out == [line,
                       "server: connection request, private data b'hello?'",
                       "server: CONNECTION_EVENT_ESTABLISHED",
                       "server: received b'hello' SUCCESS",
                       "server: CONNECTION_EVENT_DISCONNECTED"]
        assert not (tmp_path / ADDRESS_FILE).exists(), "the server leaves its address file behind"
    finally:
        for p in started:
            p.kill()
    pids = {p.pid for p in started}
    assert not [o["name"] for o in shm.list_objects() if o["pid"] in pids]


def test_the_client_says_so_when_the_server_has_gone(tmp_path, unique_qual):
    (tmp_path / ADDRESS_FILE).write_text("192.0.2.1")        # an address off the device (TEST-NET-1)
    client = Running("first_client.py", tmp_path, unique_qual)
    try:
        code, out, err = client.finish()
    finally:
        client.kill()
    assert code == 1
    assert out == []
    assert err.strip() == "client: CONNECTION_EVENT_UNREACHABLE"
    assert not [o["name"] for o in shm.list_objects() if o["pid"] == client.pid]
