"""The shmdat command: info, ls, gc, and bench's dispatch."""

import json
import os
import subprocess
import sys

import shmdat
from shmdat.hw import shm

TIMEOUT = 60


def run(*args):
    done = subprocess.run([sys.executable, "-m", "shmdat", *args], capture_output=True, text=True,
                          timeout=TIMEOUT)
    return done.returncode, done.stdout, done.stderr


def _open_and_report(ch):
    ia = shmdat.ia_open()
    ch.send(os.getpid())
    ch.recv()           # killed while waiting here
    ia.close()


def test_info_shows_attributes_and_the_machine():
    code, out, err = run("info")
    assert code == 0, err
    for expected in ("provider shm0: DAT 1.2", "max_private_data_size", "srq_supported",
                     "/dev/shm free", "cross-memory attach"):
        assert expected in out


def test_ls_and_gc_tell_the_dead_from_the_living(spawn, ia):
    peer = spawn(_open_and_report)
    dead_pid = peer.recv()
    peer.kill()
    peer.process.join(TIMEOUT)

    code, out, err = run("ls", "--json")
    assert code == 0, err
    listed = json.loads(out)
    mine = [o for o in listed if o["pid"] == os.getpid()]
    assert mine and all(o["alive"] for o in mine)           # our IA: segment and doorbell
    # Any other process's ia_open may have reclaimed the dead peer's objects already;
    # what is still there must be listed as dead.
    assert all(not o["alive"] for o in listed if o["pid"] == dead_pid)

    code, out, err = run("gc")
    assert code == 0, err
    after = shm.list_objects()
    assert {o["name"] for o in mine} <= {o["name"] for o in after}     # the living are never touched
    assert not [o for o in after if o["pid"] == dead_pid]
    assert "left alone" in out


def test_ls_text_and_an_empty_gc_run():
    code, out, err = run("ls")
    assert code == 0 and ("owner" in out or "no shmdat objects" in out), err
    code, out, err = run("gc")
    assert code == 0 and "left alone" in out, err


def test_bench_options_go_to_the_benchmark():
    code, out, err = run("bench", "--help")
    assert code == 0, err
    assert "--compare" in out


def test_version_is_the_package_version():
    code, out, err = run("--version")
    assert code == 0, err
    assert out.strip() == f"shmdat {shmdat.__version__}"


def test_unknown_command_is_a_usage_error():
    code, _, err = run("frobnicate")
    assert code == 2 and "invalid choice" in err
