"""The modify-QP matrix (verbs/qp_state.py) against what libibverbs users rely on."""

import errno

import pytest

from shmdat.verbs import libibverbs_enums as e
from shmdat.verbs.pyverbs_error import PyverbsRDMAError
from shmdat.verbs.qp_state import check_modify

S = e.ibv_qp_state
RC, UC, UD = e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD
# What pyverbs' to_init / to_rtr / to_rts pass, per QP type (IBV_QP_STATE included).
TO = {
    RC: {S.IBV_QPS_INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
         S.IBV_QPS_RTR: e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN
         | e.IBV_QP_MAX_DEST_RD_ATOMIC | e.IBV_QP_MIN_RNR_TIMER,
         S.IBV_QPS_RTS: e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY | e.IBV_QP_SQ_PSN
         | e.IBV_QP_MAX_QP_RD_ATOMIC},
    UC: {S.IBV_QPS_INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
         S.IBV_QPS_RTR: e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN | e.IBV_QP_RQ_PSN,
         S.IBV_QPS_RTS: e.IBV_QP_SQ_PSN},
    UD: {S.IBV_QPS_INIT: e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY,
         S.IBV_QPS_RTR: 0, S.IBV_QPS_RTS: e.IBV_QP_SQ_PSN},
}
PATH = [(S.IBV_QPS_RESET, S.IBV_QPS_INIT), (S.IBV_QPS_INIT, S.IBV_QPS_RTR), (S.IBV_QPS_RTR, S.IBV_QPS_RTS)]


def einval(*args):
    with pytest.raises(PyverbsRDMAError) as err:
        check_modify(*args)
    assert err.value.error_code == errno.EINVAL
    return str(err.value)


@pytest.mark.parametrize("qp_type", [RC, UC, UD])
def test_the_path_to_rts_with_pyverbs_masks(qp_type):
    for cur, new in PATH:
        mask = TO[qp_type][new] | e.IBV_QP_STATE
        assert check_modify(qp_type, cur, mask, new) == new
        for bit in e.ibv_qp_attr_mask:                 # each required bit is required
            if bit != e.IBV_QP_STATE and bit.value & mask and bit.value & (bit.value - 1) == 0:
                assert bit.name in einval(qp_type, cur, mask & ~bit.value, new)


@pytest.mark.parametrize("qp_type", [RC, UC, UD])
def test_every_state_may_go_to_reset_and_err_but_reset_to_err(qp_type):
    for cur in S:
        if cur == S.IBV_QPS_UNKNOWN:
            continue
        for new in (S.IBV_QPS_RESET, S.IBV_QPS_ERR):
            if (cur, new) == (S.IBV_QPS_RESET, S.IBV_QPS_ERR):
                einval(qp_type, cur, e.IBV_QP_STATE, new)      # as the kernel's table
                continue
            assert check_modify(qp_type, cur, e.IBV_QP_STATE, new) == new
            assert "does not allow IBV_QP_PORT" in einval(qp_type, cur, e.IBV_QP_STATE | e.IBV_QP_PORT, new)


def test_moves_not_in_the_table():
    einval(RC, S.IBV_QPS_RESET, e.IBV_QP_STATE | TO[RC][S.IBV_QPS_RTS], S.IBV_QPS_RTS)    # skipping
    einval(RC, S.IBV_QPS_INIT, e.IBV_QP_STATE, S.IBV_QPS_RTS)
    einval(RC, S.IBV_QPS_RTS, e.IBV_QP_STATE, S.IBV_QPS_RTR)                               # backwards
    assert "not a transition of a IBV_QPT_RC QP" in einval(RC, S.IBV_QPS_SQE, e.IBV_QP_STATE, S.IBV_QPS_RTS)
    assert check_modify(UD, S.IBV_QPS_SQE, e.IBV_QP_STATE, S.IBV_QPS_RTS) == S.IBV_QPS_RTS
    einval(RC, S.IBV_QPS_ERR, e.IBV_QP_STATE, S.IBV_QPS_INIT)                              # ERR: only RESET


def test_attributes_only_stay_in_the_state():
    assert check_modify(RC, S.IBV_QPS_RTS, e.IBV_QP_MIN_RNR_TIMER) == S.IBV_QPS_RTS
    assert check_modify(RC, S.IBV_QPS_INIT, e.IBV_QP_ACCESS_FLAGS) == S.IBV_QPS_INIT
    assert "does not allow IBV_QP_DEST_QPN" in einval(RC, S.IBV_QPS_RTS, e.IBV_QP_DEST_QPN)
    einval(RC, S.IBV_QPS_RTR, e.IBV_QP_TIMEOUT)             # RTR -> RTR is no transition
    einval(RC, S.IBV_QPS_RESET, e.IBV_QP_PORT)              # RESET -> RESET carries nothing


def test_optional_attributes_are_taken():
    mask = e.IBV_QP_STATE | TO[RC][S.IBV_QPS_RTS] | e.IBV_QP_MIN_RNR_TIMER | e.IBV_QP_ACCESS_FLAGS
    assert check_modify(RC, S.IBV_QPS_RTR, mask, S.IBV_QPS_RTS) == S.IBV_QPS_RTS
    assert check_modify(RC, S.IBV_QPS_RTS, e.IBV_QP_STATE | e.IBV_QP_EN_SQD_ASYNC_NOTIFY,
                        S.IBV_QPS_SQD) == S.IBV_QPS_SQD
