"""The shared layout's version word (hw/layout.py): the HCA segment and a connection
segment carry LAYOUT_VERSION, and a peer's object of another version is refused with
LayoutMismatch (a PeerUnreachable: a peer of another layout is unreachable)."""

import itertools

import pytest

from shmdat.hw import layout, ring
from shmdat.hw.errors import LayoutMismatch, PeerUnreachable
from shmdat.hw.hca import Hca
from shmdat.verbs import libibverbs_enums as e

from tests.verbs_ends import End

_names = itertools.count(1)


@pytest.fixture
def hcas():
    pair = [Hca(listen_slots=4, table_slots=4) for _ in range(2)]
    yield pair
    for hca in pair:
        hca.close()


def test_each_shared_object_with_a_header_carries_the_version(hcas):
    seg = ring.create_connection_segment(f"{hcas[0].prefix}.layout{next(_names)}")
    try:
        assert hcas[0].words[layout.HCA_W_LAYOUT] == layout.LAYOUT_VERSION
        assert seg.words[layout.CONN_W_LAYOUT] == layout.LAYOUT_VERSION
    finally:
        seg.unlink()
        seg.close()


def test_a_peer_hca_of_another_layout_is_unreachable(hcas):
    me, other = hcas
    other.words[layout.HCA_W_LAYOUT] = layout.LAYOUT_VERSION + 1
    with pytest.raises(LayoutMismatch) as e:
        me.peer(other.address)
    assert isinstance(e.value, PeerUnreachable)
    other.words[layout.HCA_W_LAYOUT] = layout.LAYOUT_VERSION
    assert me.peer(other.address).address == other.address      # the same HCA, right version: reached


def test_a_connection_of_another_layout_is_refused(hcas):
    name = f"{hcas[0].prefix}.layout{next(_names)}"
    seg = ring.create_connection_segment(name)
    try:
        seg.words[layout.CONN_W_LAYOUT] = layout.LAYOUT_VERSION + 1
        with pytest.raises(LayoutMismatch):
            ring.open_connection_segment(name)
        seg.words[layout.CONN_W_LAYOUT] = layout.LAYOUT_VERSION
        ring.open_connection_segment(name).close()
    finally:
        seg.unlink()
        seg.close()


def _responder_of_another_layout(ch, version):
    """A connected RC responder with a receive posted, whose HCA says `version`."""
    end = End()
    try:
        end.ctx.hca.words[layout.HCA_W_LAYOUT] = version
        ch.send(end.qp.qp_num)
        end.recv(1)
        end.connect(ch.recv())
        ch.send("ready")
        while True:                             # the device runs in its polls, until the requester is done
            end.cq.poll()
            try:
                ch.recv(timeout=0.001)
                break
            except TimeoutError:
                pass
    finally:
        end.close()


@pytest.mark.parametrize("version, status", [(layout.LAYOUT_VERSION + 1, e.IBV_WC_RETRY_EXC_ERR),
                                             (layout.LAYOUT_VERSION, e.IBV_WC_SUCCESS)])
def test_an_rc_send_to_a_peer_of_another_layout_runs_out_of_retries(spawn, version, status):
    peer = spawn(_responder_of_another_layout, version)
    end = End()
    try:
        dest = peer.recv()
        peer.send(end.qp.qp_num)
        assert peer.recv() == "ready"
        end.connect(dest, timeout=10, retry_cnt=2)
        end.send(1, b"anyone?")
        wc = end.completion()
        assert (wc.wr_id, wc.status) == (1, status)
    finally:
        peer.send("done")
        end.close()
