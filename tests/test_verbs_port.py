"""shm0's port taken down and up (`shmdat link set`), and the device dying under its
Contexts (IBV_EVENT_DEVICE_FATAL): real processes, each test in a device namespace
of its own (tests/conftest.py: device_ns), so the tests beside it keep their port."""

import errno
import os
import select
import struct
import subprocess
import sys

import pytest

from shmdat.hw import shm
from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.device import Context
from shmdat.verbs.link import LINK, link_set, link_show
from shmdat.verbs.pd import PD
from shmdat.verbs.pyverbs_error import PyverbsRDMAError

from tests.verbs_ends import End, bounded

RETRIES = dict(timeout=10, retry_cnt=2)         # 3 tries of 4.2 ms: about 13 ms of retries


def _port_watcher(ch, contexts):
    """Open `contexts` Contexts; report each port event and the port's state it leaves."""
    ctxs = [Context(name="shm0") for _ in range(contexts)]
    ch.send("open")
    for _ in range(2):                           # down, then up
        seen = []
        for ctx in ctxs:
            event = bounded(ctx.get_async_event)
            attr = ctx.query_port(1)
            seen.append((event.event_type, event.element.port_num, attr.state, attr.phys_state))
            event.ack()
        ch.send(seen)
    for ctx in ctxs:
        ctx.close()


def test_every_context_of_every_process_sees_the_port_go_down_and_up(device_ns):
    watchers = [device_ns.spawn(_port_watcher, 2), device_ns.spawn(_port_watcher, 1)]
    assert [w.recv() for w in watchers] == ["open", "open"]
    with Context(name="shm0") as mine:           # another device instance: not ours to see
        assert link_set(LINK, "down", ns=device_ns.name)
        assert not link_set(LINK, "down", ns=device_ns.name)       # already down
        assert link_show(device_ns.name)["state"] == "DOWN"
        down = (e.IBV_EVENT_PORT_ERR, 1, e.IBV_PORT_DOWN, 3)        # phys_state DISABLED
        assert [w.recv() for w in watchers] == [[down, down], [down]]
        assert link_set(LINK, "up", ns=device_ns.name)
        up = (e.IBV_EVENT_PORT_ACTIVE, 1, e.IBV_PORT_ACTIVE, 5)     # phys_state LINK_UP
        assert [w.recv() for w in watchers] == [[up, up], [up]]
        mine.progress()
        assert not select.select([mine.async_fd], [], [], 0)[0]
        assert mine.query_port(1).state == e.IBV_PORT_ACTIVE
    for w in watchers:
        w.join()


def test_the_shmdat_link_command(device_ns):
    env = dict(os.environ, SHMDAT_DEVICE_NS=device_ns.name)

    def shmdat(*args):
        return subprocess.run([sys.executable, "-m", "shmdat", "link", *args], env=env,
                              capture_output=True, text=True, timeout=60)

    watcher = device_ns.spawn(_port_watcher, 1)
    assert watcher.recv() == "open"
    done = shmdat("set", "shm0/1", "down")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "link shm0/1 state DOWN physical_state DISABLED netdev lo\n"
    assert watcher.recv()[0][0] == e.IBV_EVENT_PORT_ERR
    assert shmdat("set", "shm0/1", "up").returncode == 0
    assert watcher.recv()[0][0] == e.IBV_EVENT_PORT_ACTIVE
    assert "state ACTIVE" in shmdat("show").stdout
    wrong = shmdat("set", "shm1/1", "down")
    assert wrong.returncode == 1 and "shm0/1" in wrong.stderr
    assert shmdat("set", "shm0/1", "sideways").returncode == 2
    watcher.join()


def _receiver(ch):
    end = End()
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    end.recv(1)
    ch.send(end.completion().status)             # the message sent while the link was up
    end.recv(2)
    ch.send(end.completion().status)             # one held while it was down
    ch.recv()
    end.close()


def _sender(ch, qp_attr):
    end = End()
    end.connect(ch.recv(), **qp_attr)
    ch.send(end.qp.qp_num)
    end.send(1, b"up")
    ch.send(end.completion().status)
    ch.recv()                                     # the port is down now
    event = bounded(end.ctx.get_async_event)
    event.ack()
    end.send(2, b"while down")
    end.send(3, b"behind it")
    if qp_attr.get("timeout"):                    # retries run out
        statuses = [end.completion().status, end.completion().status]
        ch.send((event.event_type, statuses, end.qp.qp_state))
        ch.recv()
    else:                                         # an infinite timeout waits for the port
        assert all(end.cq.poll()[0] == 0 for _ in range(200))
        ch.send((event.event_type, [], end.qp.qp_state))
        ch.recv()                                 # the port is up again
        ch.send([end.completion().status, end.completion().status])
    end.close()


def _connected(device_ns, qp_attr):
    receiver = device_ns.spawn(_receiver)
    sender = device_ns.spawn(_sender, qp_attr)
    sender.send(receiver.recv())
    receiver.send(sender.recv())
    assert receiver.recv() == sender.recv() == e.IBV_WC_SUCCESS
    return receiver, sender


def test_sends_while_the_port_is_down_exhaust_their_retries(device_ns):
    receiver, sender = _connected(device_ns, RETRIES)
    link_set(LINK, "down", ns=device_ns.name)
    sender.send("down")
    event_type, statuses, state = sender.recv()
    assert event_type == e.IBV_EVENT_PORT_ERR
    assert statuses == [e.IBV_WC_RETRY_EXC_ERR, e.IBV_WC_WR_FLUSH_ERR]
    assert state == e.IBV_QPS_ERR
    link_set(LINK, "up", ns=device_ns.name)
    sender.send("done")
    sender.join()
    receiver.kill()


def test_a_qp_with_an_infinite_timeout_waits_for_the_port(device_ns):
    receiver, sender = _connected(device_ns, {})
    link_set(LINK, "down", ns=device_ns.name)
    sender.send("down")
    assert sender.recv() == (e.IBV_EVENT_PORT_ERR, [], e.IBV_QPS_RTS)
    link_set(LINK, "up", ns=device_ns.name)
    sender.send("up")
    assert sender.recv() == [e.IBV_WC_SUCCESS, e.IBV_WC_SUCCESS]
    assert receiver.recv() == e.IBV_WC_SUCCESS
    receiver.send("done")
    sender.join()
    receiver.join()


def _opens_while_down(ch):
    with Context(name="shm0") as ctx:
        ch.send(ctx.query_port(1).state)
    end = End()                                   # PD, CQ, MR and a QP to INIT
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())                       # to RTS: the port's state is not checked
    ch.send(end.qp.qp_state)
    ch.recv()                                     # the port is up now
    end.send(1, b"hello")
    ch.send(end.completion().status)
    ch.recv()
    end.close()


def test_contexts_and_qps_are_made_while_the_port_is_down(device_ns):
    link_set(LINK, "down", ns=device_ns.name)
    maker = device_ns.spawn(_opens_while_down)
    assert maker.recv() == e.IBV_PORT_DOWN
    receiver = device_ns.spawn(_receiver)
    maker.send(receiver.recv())
    receiver.send(maker.recv())
    assert maker.recv() == e.IBV_QPS_RTS
    link_set(LINK, "up", ns=device_ns.name)
    maker.send("up")
    assert maker.recv() == receiver.recv() == e.IBV_WC_SUCCESS
    maker.send("done")
    maker.join()
    receiver.kill()


# IBV_EVENT_DEVICE_FATAL: the device's state removed or corrupted under its Contexts.

def _fatal_watcher(ch):
    end = End()
    end.recv(7)
    ch.send(end.qp.qp_num)
    end.connect(ch.recv())
    ch.send("connected")
    event = bounded(end.ctx.get_async_event)
    event.ack()
    wc = end.completion()
    failures = []
    for call in (lambda: PD(end.ctx), lambda: end.ctx.query_port(1), end.ctx.query_device,
                 lambda: end.qp.to_rts(end.qp.query(0)[0])):
        with pytest.raises(PyverbsRDMAError) as err:
            call()
        failures.append(err.value.error_code)
    end.ctx.progress()
    again = bool(select.select([end.ctx.async_fd], [], [], 0)[0])
    ch.send((event.event_type, end.qp.qp_state, (wc.wr_id, wc.status), failures, again))
    ch.recv()
    end.close()


def _break_by_unlinking(path):
    os.unlink(path)


def _break_by_corrupting(path):
    with open(path, "r+b") as f:
        f.write(struct.pack("Q", 0x0BADC0DE))   # the version word


@pytest.mark.parametrize("break_device", [_break_by_unlinking, _break_by_corrupting])
def test_a_device_removed_or_corrupted_under_its_contexts_is_device_fatal(device_ns, break_device):
    a, b = device_ns.spawn(_fatal_watcher), device_ns.spawn(_fatal_watcher)
    a.send(b.recv())
    b.send(a.recv())
    assert a.recv() == b.recv() == "connected"
    break_device(os.path.join(shm.SHM_DIR, shm.device_object_name("port", device_ns.name)))
    for watcher in (a, b):
        assert watcher.recv() == (e.IBV_EVENT_DEVICE_FATAL, e.IBV_QPS_ERR,
                                  (7, e.IBV_WC_WR_FLUSH_ERR), [errno.EIO] * 4, False)
    if break_device is _break_by_corrupting:    # nobody opens a Context on it any more
        opener = device_ns.spawn(_open_context)
        assert opener.recv() == errno.EIO
        opener.join()
    for watcher in (a, b):
        watcher.send("done")
        watcher.join()


def _open_context(ch):
    with pytest.raises(PyverbsRDMAError) as err:
        Context(name="shm0")
    ch.send(err.value.error_code)
