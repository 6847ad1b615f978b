"""Transport retries of an RC requester whose responder is not there (ibv_modify_qp's
timeout and retry_cnt): a NIC's packets to a QP number nobody holds, or to a QP not in
RTR, are dropped, and the requester gives up with IBV_WC_RETRY_EXC_ERR after
retry_cnt + 1 transport timeouts; with timeout 0 (infinite) it waits."""

import signal

from shmdat.verbs import libibverbs_enums as e

from tests.verbs_ends import End

RETRIES = dict(timeout=10, retry_cnt=2)         # 3 tries of 4.2 ms: about 13 ms of retries
PEEK = 200                                      # polls in which a send must not complete


def _qp_num_then_killed(ch):
    end = End()                                 # its QP stays in INIT: it never joins
    ch.send(end.qp.qp_num)
    ch.recv(timeout=60)                         # until killed


def _gives_up(end):
    wc = end.completion()
    assert (wc.wr_id, wc.status) == (1, e.IBV_WC_RETRY_EXC_ERR)
    assert end.qp.qp_state == e.IBV_QPS_ERR
    end.send(2, b"after")
    assert end.completion().status == e.IBV_WC_WR_FLUSH_ERR


def test_a_send_to_a_qp_number_nobody_holds_runs_out_of_retries():
    gone, end = End(), End()
    nobody = gone.qp.qp_num
    gone.close()                                # its number is free: no QP answers to it
    try:
        end.connect(nobody, **RETRIES)
        end.send(1, b"anyone?")
        _gives_up(end)
    finally:
        end.close()


def test_a_send_to_a_peer_killed_before_it_joined_runs_out_of_retries(spawn):
    peer = spawn(_qp_num_then_killed)
    end = End()
    try:
        end.connect(peer.recv(), **RETRIES)
        peer.kill(signal.SIGKILL)
        end.send(1, b"anyone?")
        # Never a hang: the retries run out, or (when this QP had made the connection's
        # segment, the lower number of the two) its peer is found dead: QP_FATAL, flushed.
        wc = end.completion()
        assert wc.wr_id == 1 and wc.status in (e.IBV_WC_RETRY_EXC_ERR, e.IBV_WC_WR_FLUSH_ERR)
        assert end.qp.qp_state == e.IBV_QPS_ERR
    finally:
        end.close()


def test_with_an_infinite_timeout_a_send_waits_for_its_responder():
    requester, responder = End(), End()
    try:
        requester.connect(responder.qp.qp_num)  # timeout 0: infinite
        requester.send(1, b"patience")
        assert not any(requester.cq.poll()[0] for _ in range(PEEK))
        responder.recv(7)
        responder.connect(requester.qp.qp_num)
        assert requester.completion().status == e.IBV_WC_SUCCESS
        wc = responder.completion()
        assert (wc.wr_id, wc.status, bytes(responder.mr.read(8, 0))) == (7, e.IBV_WC_SUCCESS,
                                                                        b"patience")
    finally:
        requester.close()
        responder.close()
