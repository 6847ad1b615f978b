"""The modify-QP matrix as data, as the kernel's qp_state_table draws it.

For each (current state, new state) a QP may move along: the attributes the
transition requires and those it may also carry, per QP type. ibv_modify_qp
fails with EINVAL for a move not in the table, a mask that lacks a required
attribute, or one that carries an attribute the move does not allow. Moves to
RESET and to ERR are allowed from every state (ERR not from RESET) and carry
nothing else.
"""

import errno

from . import libibverbs_enums as e
from .pyverbs_error import PyverbsRDMAError

RESET, INIT, RTR, RTS, SQD, SQE, ERR = (e.IBV_QPS_RESET, e.IBV_QPS_INIT, e.IBV_QPS_RTR, e.IBV_QPS_RTS,
                                         e.IBV_QPS_SQD, e.IBV_QPS_SQE, e.IBV_QPS_ERR)
RC, UC, UD = e.IBV_QPT_RC, e.IBV_QPT_UC, e.IBV_QPT_UD

STATE, CUR_STATE = e.IBV_QP_STATE, e.IBV_QP_CUR_STATE
PKEY, PORT, ACCESS, QKEY = e.IBV_QP_PKEY_INDEX, e.IBV_QP_PORT, e.IBV_QP_ACCESS_FLAGS, e.IBV_QP_QKEY
AV, PATH_MTU, DEST_QPN, RQ_PSN = e.IBV_QP_AV, e.IBV_QP_PATH_MTU, e.IBV_QP_DEST_QPN, e.IBV_QP_RQ_PSN
MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER = e.IBV_QP_MAX_DEST_RD_ATOMIC, e.IBV_QP_MIN_RNR_TIMER
TIMEOUT, RETRY_CNT, RNR_RETRY = e.IBV_QP_TIMEOUT, e.IBV_QP_RETRY_CNT, e.IBV_QP_RNR_RETRY
SQ_PSN, MAX_QP_RD_ATOMIC = e.IBV_QP_SQ_PSN, e.IBV_QP_MAX_QP_RD_ATOMIC
ALT_PATH, PATH_MIG_STATE = e.IBV_QP_ALT_PATH, e.IBV_QP_PATH_MIG_STATE
EN_SQD_ASYNC_NOTIFY = e.IBV_QP_EN_SQD_ASYNC_NOTIFY


def _move(required=None, optional=None):
    """One transition: {qp_type: (required mask, optional mask)}."""
    required, optional = required or {}, optional or {}
    return {t: (int(required.get(t, 0)), int(optional.get(t, 0))) for t in (RC, UC, UD)}


_CONNECTED_RTS_OPTIONAL = CUR_STATE | ACCESS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER
TABLE = {
    (RESET, RESET): _move(),
    (RESET, INIT): _move(required={RC: PKEY | PORT | ACCESS, UC: PKEY | PORT | ACCESS,
                                   UD: PKEY | PORT | QKEY}),
    (INIT, INIT): _move(optional={RC: PKEY | PORT | ACCESS, UC: PKEY | PORT | ACCESS,
                                  UD: PKEY | PORT | QKEY}),
    (INIT, RTR): _move(required={RC: AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                                 UC: AV | PATH_MTU | DEST_QPN | RQ_PSN},
                       optional={RC: ALT_PATH | ACCESS | PKEY, UC: ALT_PATH | ACCESS | PKEY,
                                 UD: PKEY | QKEY}),
    (RTR, RTS): _move(required={RC: SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC,
                                UC: SQ_PSN, UD: SQ_PSN},
                      optional={RC: _CONNECTED_RTS_OPTIONAL,
                                UC: CUR_STATE | ALT_PATH | ACCESS | PATH_MIG_STATE,
                                UD: CUR_STATE | QKEY}),
    (RTS, RTS): _move(optional={RC: _CONNECTED_RTS_OPTIONAL,
                                UC: CUR_STATE | ACCESS | ALT_PATH | PATH_MIG_STATE,
                                UD: CUR_STATE | QKEY}),
    (RTS, SQD): _move(optional={RC: EN_SQD_ASYNC_NOTIFY, UC: EN_SQD_ASYNC_NOTIFY,
                                UD: EN_SQD_ASYNC_NOTIFY}),
    (SQD, RTS): _move(optional={RC: _CONNECTED_RTS_OPTIONAL,
                                UC: CUR_STATE | ALT_PATH | ACCESS | PATH_MIG_STATE,
                                UD: CUR_STATE | QKEY}),
    (SQD, SQD): _move(optional={RC: PORT | AV | ALT_PATH | ACCESS | PKEY | MIN_RNR_TIMER | PATH_MIG_STATE
                                | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC
                                | MAX_DEST_RD_ATOMIC,
                                UC: AV | ALT_PATH | ACCESS | PKEY | PATH_MIG_STATE,
                                UD: PKEY | QKEY}),
    (SQE, RTS): {UC: (0, int(CUR_STATE | ACCESS)), UD: (0, int(CUR_STATE | QKEY))},     # not RC
}
for _state in (INIT, RTR, RTS, SQD, SQE, ERR):
    TABLE[(_state, RESET)] = _move()
    TABLE[(_state, ERR)] = _move()          # not from RESET: a QP never set up cannot fail


def check_modify(qp_type, current, mask, new=None):
    """The state a QP of `qp_type` in `current` moves to under ibv_modify_qp with
    `mask` (and `new`, the attribute's qp_state when the mask has IBV_QP_STATE).

    Raises PyverbsRDMAError (EINVAL) as libibverbs does for an illegal move.
    """
    mask = int(mask)
    if not mask & STATE:
        # Attributes only, in the current state: the move current -> current.
        new = current
        mask |= STATE
    move = TABLE.get((current, new), {}).get(qp_type)
    if move is None:
        raise PyverbsRDMAError(f"Failed to modify QP: {_name(current)} -> {_name(new)} is not a "
                               f"transition of a {e.ibv_qp_type(qp_type).name} QP", errno.EINVAL)
    required, optional = move
    attributes = mask & ~int(STATE)
    missing = required & ~attributes
    extra = attributes & ~(required | optional)
    if missing or extra:
        words = []
        if missing:
            words.append(f"lacks {_mask_names(missing)}")
        if extra:
            words.append(f"does not allow {_mask_names(extra)}")
        raise PyverbsRDMAError(f"Failed to modify QP: {_name(current)} -> {_name(new)} "
                               f"{' and '.join(words)}", errno.EINVAL)
    return new


def _name(state):
    return e.ibv_qp_state(state).name


def _mask_names(mask):
    return " | ".join(f.name for f in e.ibv_qp_attr_mask if f.value & mask and f.value & (f.value - 1) == 0)
