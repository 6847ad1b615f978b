"""rdma_cm over shm0 (shmdat.verbs.cmid), with real processes: the synchronous and
asynchronous flows, private data and its limits, rejects and their reasons,
the port table (EADDRINUSE, ephemeral ports, a killed listener's port),
disconnects and killed peers; UD ids (RDMA_PS_UDP): SIDR, UDParam, datagrams back
through an AH made from a completion, SIDR's statuses and limits."""

import errno
import os
import select
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

from shmdat.verbs import cmid as cmid_module
from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.addr import AH, AHAttr, GlobalRoute
from shmdat.verbs.cmid import CMID, AddrInfo, CMEvent, CMEventChannel, ConnParam, UDParam
from shmdat.verbs.cq import CQ, WC
from shmdat.verbs.gid import GID
from shmdat.verbs.librdmacm_enums import RAI_PASSIVE, RDMA_PS_IB, RDMA_PS_UDP, rdma_cm_event_type as ET
from shmdat.verbs.providers.shm0 import shm0dv
from shmdat.verbs.pyverbs_error import PyverbsRDMAError, PyverbsUserError
from shmdat.verbs.qp import QP, QPAttr, QPCap, QPInitAttr
from shmdat.verbs.wr import SGE, RecvWR, SendWR

from tests.verbs_ends import bounded

RC = e.IBV_QPT_RC
CONNECT_LIMIT, ACCEPT_LIMIT, REJECT_LIMIT = 56, 196, 148


def _init_attr():
    return QPInitAttr(qp_type=RC, cap=QPCap(max_send_wr=4, max_recv_wr=4))


def _event(channel, expected):
    event = bounded(lambda: CMEvent(channel))
    assert event.event_type == expected, event.event_str()
    event.ack_cm_event()
    return event


def _listener(channel, port=0, address="127.0.0.1"):
    cmid = CMID(channel)
    cmid.bind_addr(AddrInfo(src=address, src_service=str(port), flags=RAI_PASSIVE))
    cmid.listen()
    return cmid


def _routed(channel, port, address="127.0.0.1"):
    cmid = CMID(channel)
    cmid.resolve_addr(AddrInfo(src="127.0.0.1", dst=address, dst_service=str(port)))
    _event(channel, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
    cmid.resolve_route()
    _event(channel, ET.RDMA_CM_EVENT_ROUTE_RESOLVED)
    return cmid


def _param(data=b""):
    param = ConnParam(data_len=len(data))
    param.set_private_data(data)
    return param


@pytest.fixture(autouse=True)
def _rdma_cm_context_closes():
    """rdma_cm keeps one Context per process open, as librdmacm keeps its devices; it
    closes (and its CMIDs with it) after each test, so the leak check finds nothing."""
    yield
    if cmid_module._the_agent is not None:
        cmid_module._the_agent.ctx.close()


# Peers (spawned processes).

def _async_server(ch, accept_data, reject_data):
    """Listen on an ephemeral port, report it, take one request; reject it, or accept
    it, echo one message, and follow the test's orders."""
    channel = CMEventChannel()
    listener = _listener(channel)
    ch.send(listener.src_addr[1])
    request = _event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST)
    ch.send(request.private_data)
    child = CMID(request, listen_id=listener)
    if reject_data is not None:
        child.reject(reject_data)
        ch.recv()
        return
    child.create_qp(_init_attr())
    mr = child.reg_msgs(4096)
    child.post_recv(mr)
    child.accept(_param(accept_data))
    _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    wc = bounded(child.get_recv_comp)
    child.post_send(mr, length=wc.byte_len)
    assert bounded(child.get_send_comp).status == e.IBV_WC_SUCCESS
    order = ch.recv()
    if order == "disconnect":
        child.disconnect()
    if order in ("disconnect", "await disconnect"):
        _event(channel, ET.RDMA_CM_EVENT_DISCONNECTED)
        ch.send("disconnected")
    ch.recv(timeout=60)                     # until the test ends or kills us


def _sync_server(ch):
    listener = CMID(AddrInfo(src="127.0.0.1", src_service="0", flags=RAI_PASSIVE),
                    qp_init_attr=_init_attr())
    listener.listen()
    ch.send(listener.src_addr[1])
    child = bounded(listener.get_request)
    mr = child.reg_msgs(64)
    child.post_recv(mr)
    bounded(child.accept)
    wc = bounded(child.get_recv_comp)
    mr.write(bytes(mr.read(wc.byte_len, 0)).upper(), wc.byte_len)
    child.post_send(mr, length=wc.byte_len)
    bounded(child.get_send_comp)
    bounded(child.disconnect)               # returns with its DISCONNECTED
    ch.send("disconnected")
    ch.recv()


def _rdma_target(ch):
    """Accept one connection; offer an MR to write (reg_write) and one to read
    (reg_read), then report what the writable one holds."""
    channel = CMEventChannel()
    listener = _listener(channel)
    ch.send(listener.src_addr[1])
    child = CMID(_event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST), listen_id=listener)
    child.create_qp(_init_attr())
    child.accept()
    _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    writable, readable = child.reg_write(64), child.reg_read(64)
    readable.write(b"read me", 7)
    ch.send([(mr.buf, mr.rkey) for mr in (writable, readable)])
    ch.recv()
    ch.send(writable.read(7, 0))
    ch.recv(timeout=60)


def _async_client(ch, port):
    """Connect to the test's listener, report it, and wait to be killed."""
    channel, cmid = _connect(port)
    _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    ch.send("established")
    ch.recv(timeout=60)


def _bind_and_hold(ch, address, port):
    cmid = CMID(CMEventChannel())
    cmid.bind_addr(AddrInfo(src=address, src_service=str(port), flags=RAI_PASSIVE))
    cmid.listen()
    ch.send(cmid.src_addr[1])
    ch.recv(timeout=60)


# The flows.

def _connect(port, data=b"", qp=True):
    channel = CMEventChannel()
    cmid = _routed(channel, port)
    if qp:
        cmid.create_qp(_init_attr())
    cmid.connect(_param(data))
    return channel, cmid


def test_async_flow_carries_private_data_at_its_limits_and_traffic(spawn):
    accept_data = bytes(range(ACCEPT_LIMIT))
    peer = spawn(_async_server, accept_data, None)
    channel, cmid = _connect(peer.recv(), b"c" * CONNECT_LIMIT)
    assert peer.recv() == b"c" * CONNECT_LIMIT          # CONNECT_REQUEST's whole field
    established = _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    assert established.private_data == accept_data
    mr = cmid.reg_msgs(4096)
    cmid.post_recv(mr)
    mr.write(b"ping", 4)
    cmid.post_send(mr, length=4)
    assert bounded(cmid.get_send_comp).status == e.IBV_WC_SUCCESS
    wc = bounded(cmid.get_recv_comp)
    assert (wc.status, wc.byte_len, mr.read(4, 0)) == (e.IBV_WC_SUCCESS, 4, b"ping")
    assert cmid.query_qp(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_RTS
    peer.send("stop")


def test_private_data_is_padded_to_the_messages_field(spawn):
    peer = spawn(_async_server, b"ok", None)
    channel, cmid = _connect(peer.recv(), b"hi")
    assert peer.recv() == b"hi".ljust(CONNECT_LIMIT, b"\0")
    assert _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED).private_data == b"ok".ljust(
        ACCEPT_LIMIT, b"\0")
    peer.send("stop")


def test_sync_flow(spawn):
    peer = spawn(_sync_server)
    port = peer.recv()
    cmid = CMID(AddrInfo(src="127.0.0.1", dst="127.0.0.1", dst_service=str(port)),
                qp_init_attr=_init_attr())
    mr = cmid.reg_msgs(64)
    bounded(cmid.connect)               # returns established
    cmid.post_recv(mr)
    send = cmid.reg_msgs(5)
    send.write(b"hello", 5)
    cmid.post_send(send)
    assert bounded(cmid.get_send_comp).status == e.IBV_WC_SUCCESS
    wc = bounded(cmid.get_recv_comp)
    assert (wc.byte_len, mr.read(5, 0)) == (5, b"HELLO")
    bounded(cmid.disconnect)
    assert peer.recv() == "disconnected"
    peer.send("stop")


def test_sync_connect_nobody_listens_is_econnrefused():
    cmid = CMID(AddrInfo(dst="127.0.0.1", dst_service=str(_free_port())), qp_init_attr=_init_attr())
    with pytest.raises(PyverbsRDMAError) as err:
        bounded(cmid.connect)
    assert err.value.error_code == errno.ECONNREFUSED


def _free_port():
    """A port nobody listens on (bound for a moment, then freed)."""
    cmid = CMID(CMEventChannel())
    cmid.bind_addr(AddrInfo(src="127.0.0.1", flags=RAI_PASSIVE))
    port = cmid.src_addr[1]
    cmid.close()
    return port


def test_connect_to_a_port_nobody_listens_on_is_rejected_with_reason_8():
    channel, cmid = _connect(_free_port())
    rejected = _event(channel, ET.RDMA_CM_EVENT_REJECTED)
    assert rejected.status == 8                         # IB CM's invalid service ID
    assert rejected.private_data == bytes(REJECT_LIMIT)


def test_reject_carries_private_data_and_reason_28(spawn):
    peer = spawn(_async_server, b"", b"go away")
    channel, cmid = _connect(peer.recv())
    peer.recv()
    rejected = _event(channel, ET.RDMA_CM_EVENT_REJECTED)
    assert rejected.status == 28                        # consumer defined
    assert rejected.private_data == b"go away".ljust(REJECT_LIMIT, b"\0")
    peer.send("stop")


def test_private_data_one_byte_over_each_limit_is_einval():
    channel = CMEventChannel()
    listener = _listener(channel)
    cmid = _routed(channel, listener.src_addr[1])
    cmid.create_qp(_init_attr())
    with pytest.raises(PyverbsRDMAError) as err:
        cmid.connect(_param(bytes(CONNECT_LIMIT + 1)))
    assert err.value.error_code == errno.EINVAL
    cmid.connect(_param(bytes(CONNECT_LIMIT)))
    request = _event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST)
    child = CMID(request, listen_id=listener)
    child.create_qp(_init_attr())
    for call, limit in ((lambda data: child.accept(_param(data)), ACCEPT_LIMIT),
                        (child.reject, REJECT_LIMIT)):
        with pytest.raises(PyverbsRDMAError) as err:
            call(bytes(limit + 1))
        assert err.value.error_code == errno.EINVAL
    child.reject(bytes(REJECT_LIMIT))
    assert _event(channel, ET.RDMA_CM_EVENT_REJECTED).status == 28


def test_a_second_listener_on_the_same_address_and_port_is_eaddrinuse(spawn):
    peer = spawn(_bind_and_hold, "127.0.0.1", 0)
    port = peer.recv()
    assert 32768 <= port <= 60999                          # port 0: an ephemeral port
    taken = []
    for address in ("127.0.0.1", "0.0.0.0"):
        cmid = CMID(CMEventChannel())
        taken.append(cmid)
        with pytest.raises(PyverbsRDMAError) as err:
            cmid.bind_addr(AddrInfo(src=address, src_service=str(port), flags=RAI_PASSIVE))
        assert err.value.error_code == errno.EADDRINUSE
    other = CMID(CMEventChannel())                      # another address of 127/8 is free
    taken.append(other)
    other.bind_addr(AddrInfo(src="127.0.0.2", src_service=str(port), flags=RAI_PASSIVE))
    assert other.src_addr == ("127.0.0.2", port)
    peer.send("stop")


def test_resolve_addr_binds_an_ephemeral_port_which_close_frees():
    channel = CMEventChannel()
    active = CMID(channel)
    active.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service="7"), 2000)
    _event(channel, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
    address, port = active.src_addr
    assert address == "127.0.0.1" and 32768 <= port <= 60999     # as the kernel's rdma_cm binds it
    taken = CMID(CMEventChannel())
    with pytest.raises(PyverbsRDMAError) as err:
        taken.bind_addr(AddrInfo(src="127.0.0.1", src_service=str(port), flags=RAI_PASSIVE))
    assert err.value.error_code == errno.EADDRINUSE
    active.close()
    taken.bind_addr(AddrInfo(src="127.0.0.1", src_service=str(port), flags=RAI_PASSIVE))
    taken.close()


def test_a_listener_closed_with_a_request_nobody_took_rejects_it_and_lets_the_device_go():
    server, client = CMEventChannel(), CMEventChannel()
    listener = _listener(server, 0)
    port = listener.src_addr[1]
    active = CMID(client)
    active.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service=str(port)), 2000)
    _event(client, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
    active.resolve_route(2000)
    _event(client, ET.RDMA_CM_EVENT_ROUTE_RESOLVED)
    active.connect(ConnParam(qp_num=1))
    fd = shm0dv.cm_channel_fd(server)
    end = time.monotonic() + 10
    while not select.select([fd], [], [], 0)[0]:    # the request queued on the listener's channel
        assert time.monotonic() < end, "the request never arrived"
        shm0dv.progress(listener.context)
    listener.close()                # with its CONNECT_REQUEST never taken
    assert _event(client, ET.RDMA_CM_EVENT_REJECTED).status == 28
    active.close()
    server.close()
    client.close()
    assert cmid_module._live_agent() is None        # no id left: rdma_cm's device is closed


def test_a_killed_listener_frees_its_port(spawn):
    peer = spawn(_bind_and_hold, "127.0.0.1", 0)
    port = peer.recv()
    peer.kill(signal.SIGKILL)
    peer.process.join(10)
    channel, cmid = _connect(port)
    assert _event(channel, ET.RDMA_CM_EVENT_REJECTED).status == 8
    listener = _listener(channel, port)
    assert listener.src_addr == ("127.0.0.1", port)


def test_a_killed_peer_gives_disconnected_and_flushes(spawn):
    peer = spawn(_async_server, b"", None)
    channel, cmid = _connect(peer.recv())
    peer.recv()
    _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    mr = cmid.reg_msgs(64)
    cmid.post_recv(mr)
    mr.write(b"x", 1)
    cmid.post_send(mr, length=1)
    assert bounded(cmid.get_recv_comp).status == e.IBV_WC_SUCCESS     # the echo
    bounded(cmid.get_send_comp)
    cmid.post_recv(mr)
    peer.kill(signal.SIGKILL)
    _event(channel, ET.RDMA_CM_EVENT_DISCONNECTED)
    assert bounded(cmid.get_recv_comp).status == e.IBV_WC_WR_FLUSH_ERR
    assert cmid.query_qp(e.IBV_QP_STATE)[0].qp_state == e.IBV_QPS_ERR


@pytest.mark.parametrize("initiator", ["active", "passive"])
def test_disconnect_from_either_side_gives_both_disconnected(spawn, initiator):
    peer = spawn(_async_server, b"", None)
    channel, cmid = _connect(peer.recv())
    peer.recv()
    _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    mr = cmid.reg_msgs(64)
    cmid.post_recv(mr)
    cmid.post_send(mr, length=1)
    bounded(cmid.get_recv_comp)
    bounded(cmid.get_send_comp)
    cmid.post_recv(mr)
    if initiator == "active":
        peer.send("await disconnect")
        cmid.disconnect()
    else:
        peer.send("disconnect")
    _event(channel, ET.RDMA_CM_EVENT_DISCONNECTED)
    assert peer.recv() == "disconnected"
    if initiator == "passive":
        cmid.disconnect()                               # answers it; no second event
    assert bounded(cmid.get_recv_comp).status == e.IBV_WC_WR_FLUSH_ERR
    peer.send("stop")


def test_external_qp_with_init_qp_attr_and_establish(spawn):
    peer = spawn(_async_server, b"rep", None)
    channel = CMEventChannel()
    cmid = _routed(channel, peer.recv())
    cq = CQ(cmid.context, 8)
    qp = QP(cmid.pd, QPInitAttr(qp_type=RC, scq=cq, rcq=cq, cap=QPCap(max_recv_wr=4)), QPAttr())
    with pytest.raises(PyverbsRDMAError) as err:       # no peer known yet
        cmid.init_qp_attr(e.IBV_QPS_RTR)
    assert err.value.error_code == errno.EINVAL
    cmid.connect(ConnParam(qp_num=qp.qp_num))
    peer.recv()
    response = _event(channel, ET.RDMA_CM_EVENT_CONNECT_RESPONSE)
    assert response.private_data[:3] == b"rep"
    for state in (e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS):
        qp.modify(*cmid.init_qp_attr(state))
    cmid.establish()                                    # the peer gets ESTABLISHED
    from shmdat.verbs.wr import SGE, RecvWR, SendWR
    mr = cmid.reg_msgs(64)
    qp.post_recv(RecvWR(num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    mr.write(b"ext", 3)
    qp.post_send(SendWR(num_sge=1, sg=[SGE(mr.buf, 3, mr.lkey)]))
    statuses = [_completion(cq).status for _ in range(2)]
    assert statuses == [e.IBV_WC_SUCCESS] * 2 and mr.read(3, 0) == b"ext"
    peer.send("stop")


def _completion(cq):
    def poll():
        while True:
            n, wcs = cq.poll()
            if n:
                return wcs[0]
    return bounded(poll)


def test_addresses_outside_loopback_and_other_port_spaces_are_refused():
    channel = CMEventChannel()
    cmid = CMID(channel)
    with pytest.raises(PyverbsRDMAError) as err:
        cmid.bind_addr(AddrInfo(src="10.1.2.3", flags=RAI_PASSIVE))
    assert err.value.error_code == errno.ENODEV
    cmid.resolve_addr(AddrInfo(dst="10.1.2.3", dst_service="1"))
    error = _event(channel, ET.RDMA_CM_EVENT_ADDR_ERROR)
    assert error.status == -errno.ENODEV
    with pytest.raises(PyverbsRDMAError) as err:
        CMID(channel, port_space=RDMA_PS_IB)
    assert err.value.error_code == errno.EPROTONOSUPPORT
    with pytest.raises(PyverbsRDMAError) as err:        # never connected
        cmid.disconnect()
    assert err.value.error_code == errno.EINVAL


def test_wrong_argument_types_are_pyverbs_errors():
    channel = CMEventChannel()
    cmid = CMID(channel)
    calls = [lambda: CMID(5), lambda: CMEvent(5), lambda: cmid.bind_addr("127.0.0.1"),
             lambda: cmid.resolve_addr(None), lambda: cmid.create_qp(5),
             lambda: cmid.connect("param"), lambda: cmid.reject(5),
             lambda: cmid.post_send("mr"), lambda: AddrInfo(src=5, flags=RAI_PASSIVE),
             lambda: ConnParam(data_len=4).set_private_data("text"),
             lambda: CMID(AddrInfo(dst="127.0.0.1"), qp_init_attr=5)]
    for call in calls:
        with pytest.raises(PyverbsUserError):
            call()


def test_closing_an_id_mid_handshake_rejects_the_other_side():
    channel = CMEventChannel()
    listener = _listener(channel)
    for closing in ("active", "passive"):
        cmid = _routed(channel, listener.src_addr[1])
        cmid.create_qp(_init_attr())
        cmid.connect()
        child = CMID(_event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST), listen_id=listener)
        (cmid if closing == "active" else child).close()     # rdma_destroy_id sends REJ
        rejected = _event(channel, ET.RDMA_CM_EVENT_REJECTED)
        assert rejected.status == 28
        assert rejected.id is (child if closing == "active" else cmid)


def test_a_larger_private_data_limit_when_the_environment_asks(spawn, monkeypatch):
    monkeypatch.setenv("SHMDAT_CM_PRIVATE_DATA", "4096")
    accept_data = b"a" * 4096
    peer = spawn(_async_server, accept_data, None)          # spawned with the setting
    channel, cmid = _connect(peer.recv(), b"c" * 4096)
    assert peer.recv() == b"c" * 4096
    assert _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED).private_data == accept_data
    with pytest.raises(PyverbsRDMAError) as err:
        _connect(cmid.dst_addr[1], b"c" * 4097)
    assert err.value.error_code == errno.EINVAL
    peer.send("stop")


def _readme_rdma_cm_example():
    """The two python blocks of the README's rdma_cm subsection: (server, client)."""
    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    section = readme[readme.index("### rdma_cm: `cmid`"):]
    return re.findall(r"^```python\n(.*?)^```$", section, re.M | re.S)[:2]


def test_the_readme_rdma_cm_example_runs(tmp_path, device_ns):
    """Its fixed port 7471 lives in a device instance of this test's own."""
    env = dict(os.environ, SHMDAT_DEVICE_NS=device_ns.name)
    launch = [sys.executable, "-m", "shmdat.verbs"]
    for name, code in zip(("server.py", "client.py"), _readme_rdma_cm_example()):
        (tmp_path / name).write_text(code)
    server = subprocess.Popen([*launch, "server.py"], cwd=tmp_path, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:                                         # until the server listens
            client = subprocess.run([*launch, "client.py"], cwd=tmp_path, env=env, text=True,
                                    capture_output=True, timeout=30)
            if client.returncode == 0 or "Errno: 111" not in client.stderr \
                    or time.monotonic() > deadline:
                break
        assert client.returncode == 0, client.stderr
        out, err = server.communicate(timeout=30)
        assert (server.returncode, out) == (0, "b'hello'\n"), err
    finally:
        server.kill()
        server.wait(10)


def test_a_qp_that_cannot_follow_the_rep_is_connect_error():
    channel = CMEventChannel()
    listener = _listener(channel)
    cmid = _routed(channel, listener.src_addr[1])
    cmid.create_qp(_init_attr())
    cmid.connect()
    cmid.qp.modify(QPAttr(qp_state=e.IBV_QPS_RESET), e.IBV_QP_STATE)    # RESET cannot go to RTR
    child = CMID(_event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST), listen_id=listener)
    child.create_qp(_init_attr())
    child.accept()
    events = {}
    for _ in range(2):
        event = bounded(lambda: CMEvent(channel))
        events[event.id] = (event.event_type, event.status)
    assert events == {cmid: (ET.RDMA_CM_EVENT_CONNECT_ERROR, -errno.EINVAL),
                      child: (ET.RDMA_CM_EVENT_REJECTED, 28)}


def test_a_killed_active_peer_gives_the_passive_disconnected_and_flushes(spawn):
    channel = CMEventChannel()
    listener = _listener(channel)
    peer = spawn(_async_client, listener.src_addr[1])
    child = CMID(_event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST), listen_id=listener)
    child.create_qp(_init_attr())
    child.post_recv(child.reg_msgs(64))
    child.accept()
    _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    assert peer.recv() == "established"
    peer.kill(signal.SIGKILL)
    assert _event(channel, ET.RDMA_CM_EVENT_DISCONNECTED).id is child
    assert bounded(child.get_recv_comp).status == e.IBV_WC_WR_FLUSH_ERR



def test_a_wildcard_listener_takes_every_loopback_address():
    channel = CMEventChannel()
    listener = _listener(channel, address="0.0.0.0")
    for address in ("127.0.0.1", "127.3.2.1"):
        cmid = _routed(channel, listener.src_addr[1], address)
        cmid.create_qp(_init_attr())
        cmid.connect()
        request = _event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST)
        assert request.listen_id is listener
        assert request.id.src_addr == (address, listener.src_addr[1])


def test_post_write_and_post_read_need_no_call_from_the_target(spawn):
    peer = spawn(_rdma_target)
    channel, cmid = _connect(peer.recv())
    _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    (write_addr, write_rkey), (read_addr, read_rkey) = peer.recv()
    mr = cmid.reg_msgs(64)
    mr.write(b"written", 7)
    cmid.post_write(mr, 7, write_addr, write_rkey, flags=e.IBV_SEND_SIGNALED)
    assert bounded(cmid.get_send_comp).status == e.IBV_WC_SUCCESS
    cmid.post_read(mr, 7, read_addr, read_rkey, flags=e.IBV_SEND_SIGNALED)
    assert bounded(cmid.get_send_comp).status == e.IBV_WC_SUCCESS
    assert mr.read(7, 0) == b"read me"
    peer.send("report")
    assert peer.recv() == b"written"
    peer.send("stop")


def test_resolve_addrinfo_and_query_addrinfo():
    channel = CMEventChannel()
    listener = CMID(channel)
    listener.resolve_addrinfo("127.0.0.1", "0", flags=RAI_PASSIVE)
    _event(channel, ET.RDMA_CM_EVENT_ADDRINFO_RESOLVED)
    listener.bind_addr(listener.query_addrinfo())
    listener.listen()
    with pytest.raises(PyverbsRDMAError) as err:            # handed over once
        listener.query_addrinfo()
    assert err.value.error_code == errno.ENOENT
    cmid = CMID(channel)
    cmid.resolve_addrinfo("127.0.0.1", "no such service")
    assert _event(channel, ET.RDMA_CM_EVENT_ADDRINFO_ERROR).status == -errno.EINVAL
    cmid.resolve_addrinfo("127.0.0.1", str(listener.src_addr[1]))
    with pytest.raises(PyverbsRDMAError) as err:
        cmid.resolve_addrinfo("127.0.0.1", "1")
    assert err.value.error_code == errno.EBUSY
    _event(channel, ET.RDMA_CM_EVENT_ADDRINFO_RESOLVED)
    cmid.resolve_addr(cmid.query_addrinfo())
    _event(channel, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
    cmid.resolve_route()
    _event(channel, ET.RDMA_CM_EVENT_ROUTE_RESOLVED)
    cmid.create_qp(_init_attr())
    cmid.connect()
    assert _event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST).listen_id is listener


# UD over rdma_cm (RDMA_PS_UDP): SIDR.

UD = e.IBV_QPT_UD
GRH = 40
SIDR_REQ_LIMIT, SIDR_REP_LIMIT = 180, 136
RDMA_UDP_QKEY = 0x01234567


def _ud_init_attr():
    return QPInitAttr(qp_type=UD, cap=QPCap(max_send_wr=4, max_recv_wr=4))


def _ud_listener(channel):
    cmid = CMID(channel, port_space=RDMA_PS_UDP)
    cmid.bind_addr(AddrInfo(src="127.0.0.1", src_service="0", flags=RAI_PASSIVE,
                            port_space=RDMA_PS_UDP))
    cmid.listen()
    return cmid


def _ud_connect(port, data=b""):
    channel = CMEventChannel()
    cmid = CMID(channel, port_space=RDMA_PS_UDP)
    cmid.resolve_addr(AddrInfo(src="127.0.0.1", dst="127.0.0.1", dst_service=str(port),
                               port_space=RDMA_PS_UDP))
    _event(channel, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
    cmid.resolve_route()
    _event(channel, ET.RDMA_CM_EVENT_ROUTE_RESOLVED)
    cmid.create_qp(_ud_init_attr())
    cmid.connect(_param(data))
    return channel, cmid


def _echo_back(child, mr):
    """Wait for a datagram, then send it back, upper-cased, to its sender through an AH
    made from the receive's completion and GRH."""
    wc = bounded(child.get_recv_comp)
    assert wc.wc_flags & e.IBV_WC_GRH
    length = wc.byte_len - GRH
    ah = AH(child.pd, wc=wc, port_num=1, grh=mr.buf)
    mr.write(bytes(mr.read(length, GRH)).upper(), length)
    child.post_ud_send(mr, ah, rqpn=wc.src_qp, length=length)
    assert bounded(child.get_send_comp).status == e.IBV_WC_SUCCESS


def _ud_async_server(ch, accept_data, reject_data):
    """Listen for UD ids, report the port; take one request: reject it, or accept it
    (reporting the QP's number and Q_Key) and echo one datagram."""
    channel = CMEventChannel()
    listener = _ud_listener(channel)
    ch.send(listener.src_addr[1])
    request = _event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST)
    child = CMID(request, listen_id=listener)
    if reject_data is not None:
        child.reject(reject_data)
        ch.send(request.private_data)
        ch.recv(timeout=60)
        return
    child.create_qp(_ud_init_attr())
    attr, _ = child.query_qp(e.IBV_QP_STATE | e.IBV_QP_QKEY)
    mr = child.reg_msgs(4096)
    child.post_recv(mr)
    child.accept(_param(accept_data))
    ch.send((request.private_data, child.qpn, attr.qp_state, attr.qkey))
    _echo_back(child, mr)
    ch.recv(timeout=60)


def _ud_sync_server(ch):
    listener = CMID(AddrInfo(src="127.0.0.1", src_service="0", flags=RAI_PASSIVE,
                             port_space=RDMA_PS_UDP), qp_init_attr=_ud_init_attr())
    listener.listen()
    ch.send(listener.src_addr[1])
    child = bounded(listener.get_request)
    mr = child.reg_msgs(4096)
    child.post_recv(mr)
    child.accept()                          # UD: returns at once, nothing to wait for
    ch.send(child.qpn)
    _echo_back(child, mr)
    ch.recv(timeout=60)


def test_ud_async_flow_gives_udparam_and_datagrams_both_ways(spawn):
    accept_data = bytes(range(SIDR_REP_LIMIT))
    peer = spawn(_ud_async_server, accept_data, None)
    channel, cmid = _ud_connect(peer.recv(), b"q" * SIDR_REQ_LIMIT)
    request_data, server_qpn, server_state, server_qkey = peer.recv()
    assert request_data == b"q" * SIDR_REQ_LIMIT
    assert (server_state, server_qkey) == (e.IBV_QPS_RTS, RDMA_UDP_QKEY)
    established = _event(channel, ET.RDMA_CM_EVENT_ESTABLISHED)
    assert established.private_data == accept_data
    ud = UDParam(established)
    assert (ud.qp_num, ud.qkey) == (server_qpn, RDMA_UDP_QKEY)
    assert ud.ah_attr.is_global and ud.ah_attr.dgid == GID("127.0.0.1").gid
    attr, _ = cmid.query_qp(e.IBV_QP_STATE | e.IBV_QP_QKEY)
    assert (attr.qp_state, attr.qkey) == (e.IBV_QPS_RTS, RDMA_UDP_QKEY)
    mr = cmid.reg_msgs(4096)
    cmid.post_recv(mr)
    mr.write(b"datagram", 8)
    cmid.post_ud_send(mr, AH(cmid.pd, attr=ud.ah_attr), rqpn=ud.qp_num, length=8)
    assert bounded(cmid.get_send_comp).status == e.IBV_WC_SUCCESS
    wc = bounded(cmid.get_recv_comp)
    assert (wc.status, wc.src_qp, wc.byte_len) == (e.IBV_WC_SUCCESS, server_qpn, GRH + 8)
    assert mr.read(8, GRH) == b"DATAGRAM"
    with pytest.raises(PyverbsRDMAError) as err:        # UD has no connection to end
        cmid.disconnect()
    assert err.value.error_code == errno.EINVAL
    peer.send("stop")


def test_ud_sync_flow(spawn):
    peer = spawn(_ud_sync_server)
    port = peer.recv()
    cmid = CMID(AddrInfo(src="127.0.0.1", dst="127.0.0.1", dst_service=str(port),
                         port_space=RDMA_PS_UDP), qp_init_attr=_ud_init_attr())
    bounded(cmid.connect)                               # returns with ESTABLISHED
    server_qpn = peer.recv()
    mr = cmid.reg_msgs(4096)
    cmid.post_recv(mr)
    mr.write(b"hello", 5)
    ah = AH(cmid.pd, attr=_ah_attr_to("127.0.0.1"))
    cmid.post_ud_send(mr, ah, rqpn=server_qpn, length=5)
    assert bounded(cmid.get_send_comp).status == e.IBV_WC_SUCCESS
    wc = bounded(cmid.get_recv_comp)
    assert (wc.src_qp, mr.read(5, GRH)) == (server_qpn, b"HELLO")
    peer.send("stop")


def _ah_attr_to(address):
    return AHAttr(is_global=1, port_num=1, gr=GlobalRoute(GID(address), sgid_index=3))


def test_ud_reject_is_unreachable_with_status_2_and_private_data(spawn):
    peer = spawn(_ud_async_server, b"", b"no room")
    channel, cmid = _ud_connect(peer.recv(), b"hi")
    assert peer.recv() == b"hi".ljust(SIDR_REQ_LIMIT, b"\0")
    unreachable = _event(channel, ET.RDMA_CM_EVENT_UNREACHABLE)
    assert unreachable.status == 2                      # SIDR REP's status: rejected
    assert unreachable.private_data == b"no room".ljust(SIDR_REP_LIMIT, b"\0")
    peer.send("stop")


def test_ud_connect_nobody_listens_or_a_tcp_id_listens_is_unreachable_with_status_1():
    channel, cmid = _ud_connect(_free_port())
    assert _event(channel, ET.RDMA_CM_EVENT_UNREACHABLE).status == 1     # SIDR: unsupported
    tcp_listener = _listener(CMEventChannel())
    channel, cmid = _ud_connect(tcp_listener.src_addr[1])
    assert _event(channel, ET.RDMA_CM_EVENT_UNREACHABLE).status == 1


def test_ud_sync_connect_nobody_listens_raises_the_sidr_status_as_errno():
    cmid = CMID(AddrInfo(src="127.0.0.1", dst="127.0.0.1", dst_service=str(_free_port()),
                         port_space=RDMA_PS_UDP), qp_init_attr=_ud_init_attr())
    with pytest.raises(PyverbsRDMAError) as err:        # librdmacm: the status as errno
        bounded(cmid.connect)
    assert err.value.error_code == 1


def test_ud_private_data_one_byte_over_each_limit_is_einval():
    channel = CMEventChannel()
    listener = _ud_listener(channel)
    with pytest.raises(PyverbsRDMAError) as err:
        _ud_connect(listener.src_addr[1], bytes(SIDR_REQ_LIMIT + 1))
    assert err.value.error_code == errno.EINVAL
    _ud_connect(listener.src_addr[1], bytes(SIDR_REQ_LIMIT))
    request = _event(channel, ET.RDMA_CM_EVENT_CONNECT_REQUEST)
    assert request.private_data == bytes(SIDR_REQ_LIMIT)
    child = CMID(request, listen_id=listener)
    child.create_qp(_ud_init_attr())
    for call in (lambda data: child.accept(_param(data)), child.reject):
        with pytest.raises(PyverbsRDMAError) as err:
            call(bytes(SIDR_REP_LIMIT + 1))
        assert err.value.error_code == errno.EINVAL
    child.reject(bytes(SIDR_REP_LIMIT))


def test_ud_id_refuses_an_rc_qp_and_an_ah_from_a_wc_needs_a_grh():
    channel = CMEventChannel()
    cmid = CMID(channel, port_space=RDMA_PS_UDP)
    cmid.resolve_addr(AddrInfo(dst="127.0.0.1", dst_service="1", port_space=RDMA_PS_UDP))
    _event(channel, ET.RDMA_CM_EVENT_ADDR_RESOLVED)
    with pytest.raises(PyverbsRDMAError) as err:
        cmid.create_qp(_init_attr())
    assert err.value.error_code == errno.EINVAL
    mr = cmid.reg_msgs(64)
    with pytest.raises(PyverbsRDMAError) as err:
        AH(cmid.pd, wc=WC(), port_num=1, grh=mr.buf)
    assert err.value.error_code == errno.EINVAL
    with pytest.raises(PyverbsUserError):
        AH(cmid.pd, wc="wc", port_num=1, grh=mr.buf)
