"""A peer that writes garbage into a connection breaks that one connection: the victim
neither crashes nor hangs nor reads out of bounds, and its other connections go on.

The corrupt peer is a DAT client of the victim's PSP that then scribbles over its own
connection's ring through the hardware layer (a test peer may use shmdat.hw; the DAT
provider may not), as a buggy or hostile program on the machine could."""

import secrets

import pytest

from shmdat import DtoStatus, EpState, EventNumber as E
from shmdat.hw import ring

from tests.nodes import WAIT, Node
from tests.recording_verbs import unwrap
from tests.remote import Remote

# What the corrupt peer does to the ring its victim reads: a hw ring.QueuePair, found
# under its DAT EP (ep._qp is the verbs QP, whose _qp is the ring once joined).


def _record(qp, kind, length, aux, payload_words=()):
    off = qp._reserve(0)
    assert off >= 0
    w0 = off >> 3
    qp.words[w0] = kind | length << 32
    qp.words[w0 + 1] = aux
    for i, v in enumerate(payload_words):
        qp.words[w0 + 2 + i] = v
    qp.tx_head += 1
    qp.words[qp.w_tx_head] = qp.tx_head


CORRUPTIONS = {
    "head past the ring": lambda qp: qp.words.__setitem__(qp.w_tx_head, qp.tx_head + 10 * qp.ncells),
    "head behind the tail": lambda qp: qp.words.__setitem__(qp.w_tx_head, (1 << 64) - 1),
    "unknown record kind": lambda qp: _record(qp, 99, 8, 8),
    "record longer than the ring": lambda qp: _record(qp, ring.K_MSG, 1 << 30, 1 << 30),
    "fragment without a message": lambda qp: _record(qp, ring.K_FRAG, 8, 8),
    "fragments beyond the announced length": lambda qp: (_record(qp, ring.K_MSG, 16, 16),
                                                         _record(qp, ring.K_FRAG, 32, 16)),
    "rendezvous from a segment that does not exist": lambda qp: _record(
        qp, ring.K_RDV, 32, 64, (987654, 0, 64, 0)),
    "rendezvous past the end of a segment": lambda qp: _record(
        qp, ring.K_RDV, 32, 64, (1, 1 << 40, 64, 0)),
    "pad that does not end the ring": lambda qp: _record(qp, ring.K_PAD, 0, 3),
    "garbage state word": lambda qp: qp.words.__setitem__(qp.w_my_state, 77),
    "the victim's tail moved": lambda qp: qp.words.__setitem__(qp.w_rx_tail, qp.rx_tail + 5 * qp.ncells),
    "random bytes over the ring": lambda qp: (
        qp.buf.__setitem__(slice(qp.tx_base, qp.tx_base + qp.ncells * ring.CELL),
                           secrets.token_bytes(qp.ncells * ring.CELL)),
        qp.words.__setitem__(qp.w_tx_head, qp.tx_head + 7)),
}


def _ring_of(ep):
    """The hw ring under a connected DAT EP: the verbs QP's QueuePair (a test peer reaches
    under DAT on purpose; under the recording module ep._qp is the QP's recording proxy)."""
    ring_qp = unwrap(ep._qp)._qp
    assert ring_qp is not None, "the verbs QP has not joined its connection segment"
    return ring_qp


def _corrupt_peer(ch, address, conn_qual, corruption):
    n = Node()
    n.connect(address, conn_qual)
    ring_qp = _ring_of(n.ep)
    ch.send("connected")
    ch.recv(timeout=60)
    CORRUPTIONS[corruption](ring_qp)
    ring_qp.peer.ring()
    ch.send("corrupted")
    ch.recv(timeout=60)
    n.close()


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_garbage_breaks_only_that_connection(spawn, corruption):
    victim = Node(qlen=64)
    try:
        psp = victim.ia.psp_create_any(victim.cr_evd)
        bad = spawn(_corrupt_peer, victim.address, psp.conn_qual, corruption)
        bad_ep = victim.ep
        victim.accept()
        assert bad.recv() == "connected"
        # A healthy second connection, from another process.
        good = Remote(spawn)
        good_ep = victim.new_ep()
        good.connect(victim.address, psp.conn_qual)
        good.start("wait_conn")                 # the peer takes our reply while we accept
        victim.accept(ep=good_ep)
        assert good.result()[0] == "CONNECTION_EVENT_ESTABLISHED"
        bad_ep.post_recv([victim.lmr.triplet(0, 4096)], "victim's receive")
        bad.send("go")
        assert bad.recv() == "corrupted"
        if corruption == "the victim's tail moved":
            bad_ep.post_send([victim.lmr.triplet(0, 8)], "send that notices")
        event, _ = victim.conn_evd.wait(WAIT)
        assert (event.number, event.data.ep) == (E.CONNECTION_EVENT_BROKEN, bad_ep)
        assert bad_ep.state == EpState.DISCONNECTED
        broken = victim.ia.async_evd.dequeue()
        assert (broken.number, broken.data.handle) == (E.ASYNC_ERROR_EP_BROKEN, bad_ep)
        flushed = victim.dto_done()
        assert flushed.status in (DtoStatus.ERR_FLUSHED, DtoStatus.SUCCESS)
        # The other connection goes on.
        good.post_recv(1, 64)
        victim.lmr.buffer[:5] = list(b"still")
        good_ep.post_send([victim.lmr.triplet(0, 5)], "good")
        assert good.wait_dto()[:2] == ("SUCCESS", 5)
        assert good.read(0, 5) == b"still"
        assert good_ep.state == EpState.CONNECTED
        bad.send("done")
        bad.join()
        good.finish()
    finally:
        victim.close()
