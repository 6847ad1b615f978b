"""Device instances (SHMDAT_DEVICE_NS): each namespace has its own QP table and port,
a QP of one never joins a QP of another, and `shmdat ls` / `gc` see and reclaim the
objects of every namespace. Real processes, each test in namespaces of its own."""

import json
import os
import signal
import subprocess
import sys

from shmdat.hw import qpn, shm

from shmdat.verbs.cmid import CMID, AddrInfo
from shmdat.verbs.librdmacm_enums import RAI_PASSIVE, rdma_port_space

from tests.verbs_ends import End

PEEK = 200                          # polls that would carry a send across if it could go


def _two_qps(ch):
    """In one namespace: QPs 2 and 3; 3 goes to RTS towards 2, which stays in INIT."""
    first, second = End(), End()
    second.connect(first.qp.qp_num)
    second.recv(1)
    ch.send([first.qp.qp_num, second.qp.qp_num])
    ch.recv()
    ch.send(sum(second.cq.poll()[0] for _ in range(PEEK)))
    ch.recv()
    first.close()
    second.close()


def _one_qp(ch, dest_qp_num):
    """In another: QP 2, towards dest_qp_num, which exists only in the other namespace."""
    end = End()
    end.connect(dest_qp_num)
    end.send(1, b"across")
    ch.send((end.qp.qp_num, sum(end.cq.poll()[0] for _ in range(PEEK))))
    ch.recv()
    end.close()


def test_each_namespace_has_its_own_qp_numbers_and_qps_never_join_across(device_ns,
                                                                         other_device_ns):
    pair = device_ns.spawn(_two_qps)
    numbers = pair.recv()
    assert numbers == [qpn.FIRST_QPN, qpn.FIRST_QPN + 1]      # a fresh table of its own
    lone = other_device_ns.spawn(_one_qp, numbers[1])
    assert lone.recv() == (qpn.FIRST_QPN, 0)                   # the same number; nothing went
    pair.send("look")
    assert pair.recv() == 0                                     # nothing came
    for peer in (pair, lone):
        peer.send("done")
        peer.join()


def _holds_a_qp(ch):
    end = End()
    listener = CMID(creator=AddrInfo(src="127.0.0.1", src_service="0",
                                     port_space=rdma_port_space.RDMA_PS_TCP, flags=RAI_PASSIVE))
    listener.listen()                              # a row in the namespace's rdma_cm port table
    ch.send(end.qp.qp_num)
    ch.recv(timeout=60)                            # until killed
    end.close()


def _shmdat(*args):
    done = subprocess.run([sys.executable, "-m", "shmdat", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_ls_and_gc_see_the_device_objects_of_every_namespace(device_ns):
    holder = device_ns.spawn(_holds_a_qp)
    holder.recv()
    names = {shm.device_object_name(what, device_ns.name) for what in ("qpn", "port", "cm_ports")}
    listed = {o["name"]: o for o in json.loads(_shmdat("ls", "--json")) if o["kind"] == "device"}
    assert names <= set(listed)
    assert {listed[name]["ns"] for name in names} == {device_ns.name}
    assert f"(namespace {device_ns.name})" in _shmdat("ls")
    _shmdat("gc")
    assert names <= set(os.listdir(shm.SHM_DIR))               # a live process uses them
    holder.kill(signal.SIGKILL)
    holder.process.join(10)
    _shmdat("gc")                                              # (or a parallel test's gc)
    assert not names & set(os.listdir(shm.SHM_DIR))            # what the killed process left
