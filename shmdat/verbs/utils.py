"""Printing helpers of pyverbs.utils: the names of QP types and states."""

from . import libibverbs_enums as e

_QP_TYPES = {e.IBV_QPT_RC: "RC", e.IBV_QPT_UC: "UC", e.IBV_QPT_UD: "UD",
             e.IBV_QPT_RAW_PACKET: "Raw Packet", e.IBV_QPT_XRC_SEND: "XRCD_SEND",
             e.IBV_QPT_XRC_RECV: "XRCD_RECV", e.IBV_QPT_DRIVER: "Driver QP"}
_QP_STATES = {e.IBV_QPS_RESET: "Reset", e.IBV_QPS_INIT: "Init", e.IBV_QPS_RTR: "RTR",
              e.IBV_QPS_RTS: "RTS", e.IBV_QPS_SQD: "SQD", e.IBV_QPS_SQE: "SQE",
              e.IBV_QPS_ERR: "Error", e.IBV_QPS_UNKNOWN: "Unknown"}


def qp_type_to_str(qp_type):
    """'RC', 'UD', ... or 'Unknown (N)'."""
    return _QP_TYPES.get(qp_type, f"Unknown ({qp_type})")


def qp_state_to_str(qp_state):
    """'Reset', 'Init', 'RTR', ... or 'Unknown (N)'."""
    return _QP_STATES.get(qp_state, f"Unknown ({qp_state})")
