"""The EP state machine as data (design docs/design/dat-over-verbs.md, section 6.1).

The DAT 1.2 pages (dat_ep_*, dat_cr_*, dat_rsp_*, dat_rmr_bind) are the spec; the
comments quote them. The tables, and fire():

  ALLOWED      {consumer call: states it is legal in}. Any other state refuses the call
               (check_call) with InvalidState whose subtype names the EP's state
               (SUBTYPE, dat_error.h's words), as dapl does (dapls_ep_state_subtype).
  CALL_EVENTS  {consumer call: the events it fires once allowed}.
  TRANSITIONS  {(state, event): next state}. An event with no row is a provider bug:
               fire() raises InternalError naming it.
  ACTIONS      {(state, event): action names}: the side effects of the move, run by
               fire() in order after the state is assigned. The EP binds each name to
               one of its methods (EP._actions); "post_<event>" names post that
               CONNECTION_EVENT (POSTS) with the private data the event carries.
  fire(ep, event, private_data): the only place an EP's state is assigned.

The QP's own states are verbs' table (verbs/qp_state.py); the actions here call it
(qp.modify), they do not repeat it. The rdma_cm events that fire the provider's
events come through cm_state's table first (per CMID). TENTATIVE_CONNECTION_PENDING belongs to
PspFlags.PROVIDER (ModelNotSupported), the UNCONFIGURED_* and CONNECTED_*_PATH
states to DAT 2.0: no event leads to them.
"""

import enum

from .constants import EpState, EventNumber
from .errors import InternalError, InvalidState

S = EpState
E = EventNumber


class EpEvent(enum.Enum):
    """What moves an EP. Consumer calls first, then the provider's events."""
    CONNECT = enum.auto()               # dat_ep_connect, dat_ep_dup_connect
    RESERVE = enum.auto()               # dat_rsp_create(ep)
    UNRESERVE = enum.auto()             # dat_rsp_free of the EP's RSP
    ACCEPT = enum.auto()                # dat_cr_accept
    REJECT = enum.auto()                # dat_cr_reject of the CR that came to the EP's RSP
    DISCONNECT = enum.auto()            # dat_ep_disconnect(ABRUPT)
    DISCONNECT_GRACEFUL = enum.auto()   # dat_ep_disconnect(GRACEFUL)
    RESET = enum.auto()                 # dat_ep_reset
    FREE = enum.auto()                  # dat_ep_free, and dat_ia_close(ABRUPT) in any state
    REQUEST = enum.auto()               # a connection request arrived at the EP's RSP
    ADDR_RESOLVED = enum.auto()         # active: rdma_cm resolved the peer's address
    ROUTE_RESOLVED = enum.auto()        # active: ... and the route to it
    CONNECT_RESPONSE = enum.auto()      # active: the peer accepted (CONNECT_RESPONSE)
    ESTABLISHED = enum.auto()           # passive: the requester has the connection (ESTABLISHED)
    PEER_REJECTED = enum.auto()         # active: the peer's consumer rejected (REJECTED, DAT's header)
    NON_PEER_REJECTED = enum.auto()     # active: nobody listens there (REJECTED, no header)
    UNREACHABLE = enum.auto()           # active: no route, no answer, or the peer died meanwhile
    TIMER_EXPIRED = enum.auto()         # active: the consumer's connect timeout passed
    CONNECT_ERROR = enum.auto()         # passive: the requester withdrew or died before ESTABLISHED
    REQUESTS_DRAINED = enum.auto()      # graceful: the peer consumed all we sent
    PEER_DISCONNECTED = enum.auto()     # the peer closed the connection (DISCONNECTED)
    BROKEN = enum.auto()                # QP_FATAL (peer died), an error completion, the hard watermark


V = EpEvent
_ALL = frozenset(S)
# The nine states of DAT 1.2 (the others are DAT 2.0's, and unreachable here).
_DAT_1_2 = frozenset({S.UNCONNECTED, S.RESERVED, S.PASSIVE_CONNECTION_PENDING,
                      S.ACTIVE_CONNECTION_PENDING, S.TENTATIVE_CONNECTION_PENDING, S.CONNECTED,
                      S.DISCONNECT_PENDING, S.DISCONNECTED, S.COMPLETION_PENDING})

# The consumer calls, by the name the EP checks them under.
ALLOWED = {
    # dat_ep_connect, dat_ep_dup_connect: "Endpoint was not in DAT_EP_STATE_UNCONNECTED state".
    "connect": frozenset({S.UNCONNECTED}),
    # dat_ep_post_send, _post_rdma_read, _post_rdma_write: "valid for the Endpoint in the
    # DAT_EP_STATE_CONNECTED and DAT_EP_STATE_DISCONNECTED states" (flushed at once when
    # DISCONNECTED); dat_ep_disconnect: "No new Send, RDMA Read, and RDMA Write DTOs ...
    # can be posted ... in the DAT_EP_DISCONNECT_PENDING state".
    "post_send": frozenset({S.CONNECTED, S.DISCONNECTED}),
    # dat_ep_post_recv: "The operation is valid for all states of the Endpoint."
    "post_recv": _ALL,
    # dat_ep_disconnect: "Disconnecting an Endpoint in UNCONNECTED, RESERVED,
    # PASSIVE_CONNECTION_PENDING, and TENTATIVE_CONNECTION_PENDING is disallowed";
    # DISCONNECTED is a no-op.
    "disconnect": frozenset({S.ACTIVE_CONNECTION_PENDING, S.COMPLETION_PENDING, S.CONNECTED,
                             S.DISCONNECT_PENDING, S.DISCONNECTED}),
    # dat_ep_reset: "valid for both Disconnected and Unconnected states".
    "reset": frozenset({S.UNCONNECTED, S.DISCONNECTED}),
    # dat_ep_free: "in any Endpoint state except Reserved, Passive Connection Pending,
    # and Tentative Connection Pending".
    "free": _DAT_1_2 - {S.RESERVED, S.PASSIVE_CONNECTION_PENDING, S.TENTATIVE_CONNECTION_PENDING},
    # dat_ep_modify: the quiescent states UNCONNECTED and TENTATIVE_CONNECTION_PENDING
    # (the page lets EVDs and attributes change in RESERVED and PASSIVE_CONNECTION_PENDING
    # too; this provider does not: all fields, quiescent states only).
    "modify": frozenset({S.UNCONNECTED, S.TENTATIVE_CONNECTION_PENDING}),
    # dat_cr_accept with the consumer's EP (a PSP's CR): an Unconnected EP, as dapl checks
    # ("If the provided local Endpoint does not satisfy the requested Connection Request,
    # the operation fails without any effect").
    "accept": frozenset({S.UNCONNECTED}),
    # dat_cr_accept of a CR that came to an RSP: its reserved EP, now Passive Connection
    # Pending (dat_rsp_create: "transitioned from Reserved to Passive Connection Pending").
    "accept_reserved": frozenset({S.PASSIVE_CONNECTION_PENDING}),
    # dat_rsp_create: "an Endpoint was not in the Idle state" (Unconnected).
    "reserve": frozenset({S.UNCONNECTED}),
    # dat_rmr_bind: the page allows CONNECTED and DISCONNECTED (flushed at once); this
    # provider binds on a CONNECTED EP only.
    "rmr_bind": frozenset({S.CONNECTED}),
}

# The subtype a refusal carries: the EP's state, in dat_error.h's words.
SUBTYPE = {
    S.UNCONNECTED: "INVALID_STATE_EP_UNCONNECTED",
    S.UNCONFIGURED_UNCONNECTED: "INVALID_STATE_EP_UNCONFIGURED",
    S.RESERVED: "INVALID_STATE_EP_RESERVED",
    S.UNCONFIGURED_RESERVED: "INVALID_STATE_EP_UNCONFRESERVED",
    S.PASSIVE_CONNECTION_PENDING: "INVALID_STATE_EP_PASSCONNPENDING",
    S.UNCONFIGURED_PASSIVE: "INVALID_STATE_EP_UNCONFPASSIVE",
    S.ACTIVE_CONNECTION_PENDING: "INVALID_STATE_EP_ACTCONNPENDING",
    S.TENTATIVE_CONNECTION_PENDING: "INVALID_STATE_EP_TENTCONNPENDING",
    S.UNCONFIGURED_TENTATIVE: "INVALID_STATE_EP_UNCONFTENTATIVE",
    S.CONNECTED: "INVALID_STATE_EP_CONNECTED",
    S.DISCONNECT_PENDING: "INVALID_STATE_EP_DISCPENDING",
    S.DISCONNECTED: "INVALID_STATE_EP_DISCONNECTED",
    S.COMPLETION_PENDING: "INVALID_STATE_EP_COMPLPENDING",
    S.CONNECTED_SINGLE_PATH: "INVALID_STATE_EP_CONNECTED",
    S.CONNECTED_MULTI_PATH: "INVALID_STATE_EP_CONNECTED",
}

# The events each consumer call fires once ALLOWED let it through (the tests check that
# every allowed state has a row for them).
CALL_EVENTS = {
    "connect": (V.CONNECT,),
    "disconnect": (V.DISCONNECT, V.DISCONNECT_GRACEFUL),
    "reset": (V.RESET,),
    "free": (V.FREE,),
    "accept": (V.ACCEPT,),
    "accept_reserved": (V.ACCEPT,),
    "reserve": (V.RESERVE,),
}

TRANSITIONS = {
    # Active side. dat_ep_connect: "transferred into DAT_EP_STATE_ACTIVE_CONNECTION_PENDING";
    # ESTABLISHED, PEER_REJECTED, NON_PEER_REJECTED ("not listening"), UNREACHABLE ("cannot
    # reach the remote host"), TIMED_OUT ("the timeout expired") each end it.
    (S.UNCONNECTED, V.CONNECT): S.ACTIVE_CONNECTION_PENDING,
    (S.ACTIVE_CONNECTION_PENDING, V.ADDR_RESOLVED): S.ACTIVE_CONNECTION_PENDING,
    (S.ACTIVE_CONNECTION_PENDING, V.ROUTE_RESOLVED): S.ACTIVE_CONNECTION_PENDING,
    (S.ACTIVE_CONNECTION_PENDING, V.CONNECT_RESPONSE): S.CONNECTED,
    (S.ACTIVE_CONNECTION_PENDING, V.PEER_REJECTED): S.DISCONNECTED,
    (S.ACTIVE_CONNECTION_PENDING, V.NON_PEER_REJECTED): S.DISCONNECTED,
    (S.ACTIVE_CONNECTION_PENDING, V.UNREACHABLE): S.DISCONNECTED,
    (S.ACTIVE_CONNECTION_PENDING, V.TIMER_EXPIRED): S.DISCONNECTED,
    # dat_ep_disconnect: "aborts" the establishment, "the same for graceful or abrupt";
    # dat_ep_free: "aborts connection establishment".
    (S.ACTIVE_CONNECTION_PENDING, V.DISCONNECT): S.DISCONNECTED,
    (S.ACTIVE_CONNECTION_PENDING, V.DISCONNECT_GRACEFUL): S.DISCONNECTED,
    (S.ACTIVE_CONNECTION_PENDING, V.FREE): S.DISCONNECTED,
    # Reserved Service Point. dat_rsp_create: the request moves the EP "from Reserved to
    # Passive Connection Pending"; "If rejected ... into Unconnected state"; dat_rsp_free.
    (S.UNCONNECTED, V.RESERVE): S.RESERVED,
    (S.RESERVED, V.UNRESERVE): S.UNCONNECTED,
    (S.RESERVED, V.REQUEST): S.PASSIVE_CONNECTION_PENDING,
    (S.PASSIVE_CONNECTION_PENDING, V.REJECT): S.UNCONNECTED,
    (S.RESERVED, V.FREE): S.RESERVED,                               # dat_ia_close only: dat_ep_free refuses
    (S.PASSIVE_CONNECTION_PENDING, V.FREE): S.PASSIVE_CONNECTION_PENDING,   # likewise
    # Passive side. dat_cr_accept: ESTABLISHED, or ACCEPT_COMPLETION_ERROR and "Endpoint
    # transitions into Disconnected state".
    (S.UNCONNECTED, V.ACCEPT): S.COMPLETION_PENDING,
    (S.PASSIVE_CONNECTION_PENDING, V.ACCEPT): S.COMPLETION_PENDING,
    (S.COMPLETION_PENDING, V.ESTABLISHED): S.CONNECTED,
    (S.COMPLETION_PENDING, V.CONNECT_ERROR): S.DISCONNECTED,
    (S.COMPLETION_PENDING, V.DISCONNECT): S.DISCONNECTED,           # dat_ep_disconnect: "aborts" it too
    (S.COMPLETION_PENDING, V.DISCONNECT_GRACEFUL): S.DISCONNECTED,
    (S.COMPLETION_PENDING, V.BROKEN): S.DISCONNECTED,               # the peer died, or the hard watermark
    (S.COMPLETION_PENDING, V.FREE): S.DISCONNECTED,
    # Connected. dat_ep_disconnect: abrupt, "all outstanding DTOs ... completed
    # unsuccessfully"; graceful, "During that time ... DAT_EP_DISCONNECT_PENDING".
    (S.CONNECTED, V.DISCONNECT): S.DISCONNECTED,
    (S.CONNECTED, V.DISCONNECT_GRACEFUL): S.DISCONNECT_PENDING,
    (S.CONNECTED, V.PEER_DISCONNECTED): S.DISCONNECTED,
    (S.CONNECTED, V.BROKEN): S.DISCONNECTED,                        # CONNECTION_EVENT_BROKEN
    (S.CONNECTED, V.FREE): S.DISCONNECTED,
    # "abrupt dat_ep_disconnect() ... in DISCONNECT_PENDING ... without waiting". The page:
    # "graceful dat_ep_disconnect() ... in DISCONNECT_PENDING has no effect"; this
    # provider closes at once, as for abrupt (today's behaviour, kept).
    (S.DISCONNECT_PENDING, V.REQUESTS_DRAINED): S.DISCONNECTED,
    (S.DISCONNECT_PENDING, V.DISCONNECT): S.DISCONNECTED,
    (S.DISCONNECT_PENDING, V.DISCONNECT_GRACEFUL): S.DISCONNECTED,
    (S.DISCONNECT_PENDING, V.PEER_DISCONNECTED): S.DISCONNECTED,
    (S.DISCONNECT_PENDING, V.BROKEN): S.DISCONNECTED,
    (S.DISCONNECT_PENDING, V.FREE): S.DISCONNECTED,
    # Disconnected and Unconnected. dat_ep_disconnect: "Disconnecting an unconnected
    # Disconnected Endpoint is no-op"; dat_ep_reset: "For Unconnected state, the operation
    # is no-op".
    (S.DISCONNECTED, V.DISCONNECT): S.DISCONNECTED,
    (S.DISCONNECTED, V.DISCONNECT_GRACEFUL): S.DISCONNECTED,
    (S.DISCONNECTED, V.RESET): S.UNCONNECTED,
    (S.DISCONNECTED, V.FREE): S.DISCONNECTED,
    (S.UNCONNECTED, V.RESET): S.UNCONNECTED,
    (S.UNCONNECTED, V.FREE): S.UNCONNECTED,
}

# Side effects, in verbs (design section 6.1). An action that fires the EP's next event
# itself (its verbs call failed, or the graceful close found nothing outstanding) is
# the last of its row.
#
# Ending a connection, or an attempt, on our side (or a refused one): the connect timer
# stops; the CMID sends its DREQ (if connected) and closes before the QP goes to ERR,
# so the peer sees a disconnect, not a broken QP (R3); the QP's outstanding work
# flushes, drained at once so the flushes come before the connection event.
_CLOSE = ("stop_timer", "close_cmid", "qp_to_error")
_CLOSED = _CLOSE + ("post_disconnected",)
# The peer closed: what arrived before its DREQ completes first (with success).
_PEER_CLOSED = ("drain_completions",) + _CLOSED
# A broken connection: the QP to ERR only; the CMID stays (its late events ignored) until
# reset or free, so the peer sees its QP fail too (BROKEN there). Reported twice (dat_rmr_bind
# et al.: "DAT_CONNECTION_EVENT_BROKEN"; EP_BROKEN on the async EVD).
_BREAK = ("stop_timer", "retire_cmid", "qp_to_error", "post_broken", "post_ep_broken")
# dat_ep_free (and dat_ia_close in any state): as our own close, reporting nothing (the
# consumer let the EP go), then the QP closed.
_FREE = _CLOSE + ("destroy_qp",)
# dat_ep_reset: a broken connection's CMID goes; the QP ERR (receives posted meanwhile
# flush) -> RESET -> INIT, ready for the next connection.
_RESET = ("close_cmid", "qp_to_error", "qp_to_init", "clear_addresses")

ACTIONS = {
    (S.UNCONNECTED, V.CONNECT): ("resolve_addr",),       # a CMID, the connect timer, resolve_addr
    (S.ACTIVE_CONNECTION_PENDING, V.ADDR_RESOLVED): ("resolve_route",),
    (S.ACTIVE_CONNECTION_PENDING, V.ROUTE_RESOLVED): ("send_request",),    # cmid.connect(qp_num, pd)
    # The QP went RTR and RTS, and the CMID established, before the event fired (cm's guard).
    (S.ACTIVE_CONNECTION_PENDING, V.CONNECT_RESPONSE): ("stop_timer", "post_established"),
    (S.ACTIVE_CONNECTION_PENDING, V.PEER_REJECTED): _CLOSE + ("post_peer_rejected",),
    (S.ACTIVE_CONNECTION_PENDING, V.NON_PEER_REJECTED): _CLOSE + ("post_non_peer_rejected",),
    (S.ACTIVE_CONNECTION_PENDING, V.UNREACHABLE): _CLOSE + ("post_unreachable",),
    (S.ACTIVE_CONNECTION_PENDING, V.TIMER_EXPIRED): _CLOSE + ("post_timed_out",),
    (S.ACTIVE_CONNECTION_PENDING, V.DISCONNECT): _CLOSED,
    (S.ACTIVE_CONNECTION_PENDING, V.DISCONNECT_GRACEFUL): _CLOSED,
    (S.ACTIVE_CONNECTION_PENDING, V.FREE): _FREE,
    (S.RESERVED, V.FREE): _FREE,
    (S.PASSIVE_CONNECTION_PENDING, V.FREE): _FREE,
    # The QP to RTR and RTS by the request's CMID, then cmid.accept(qp_num, pd).
    (S.UNCONNECTED, V.ACCEPT): ("accept_request",),
    (S.PASSIVE_CONNECTION_PENDING, V.ACCEPT): ("accept_request",),
    (S.COMPLETION_PENDING, V.ESTABLISHED): ("post_established",),
    (S.COMPLETION_PENDING, V.CONNECT_ERROR): _CLOSE + ("post_accept_completion_error",),
    (S.COMPLETION_PENDING, V.DISCONNECT): _CLOSED,
    (S.COMPLETION_PENDING, V.DISCONNECT_GRACEFUL): _CLOSED,
    (S.COMPLETION_PENDING, V.BROKEN): _BREAK,
    (S.COMPLETION_PENDING, V.FREE): _FREE,
    (S.CONNECTED, V.DISCONNECT): _CLOSED,
    # Graceful: nothing until the requests drained (checked now, and at each completion).
    (S.CONNECTED, V.DISCONNECT_GRACEFUL): ("check_requests_drained",),
    (S.CONNECTED, V.PEER_DISCONNECTED): _PEER_CLOSED,
    (S.CONNECTED, V.BROKEN): _BREAK,
    (S.CONNECTED, V.FREE): _FREE,
    (S.DISCONNECT_PENDING, V.REQUESTS_DRAINED): _CLOSED,
    (S.DISCONNECT_PENDING, V.DISCONNECT): _CLOSED,
    (S.DISCONNECT_PENDING, V.DISCONNECT_GRACEFUL): _CLOSED,
    (S.DISCONNECT_PENDING, V.PEER_DISCONNECTED): _PEER_CLOSED,
    (S.DISCONNECT_PENDING, V.BROKEN): _BREAK,
    (S.DISCONNECT_PENDING, V.FREE): _FREE,
    (S.DISCONNECTED, V.RESET): _RESET,
    (S.DISCONNECTED, V.FREE): _FREE,
    # The page: "For an Unconnected state, the preposted Recvs are not affected"; this
    # provider flushes them (today's behaviour, kept).
    (S.UNCONNECTED, V.RESET): _RESET,
    (S.UNCONNECTED, V.FREE): _FREE,
}

# The "post_*" actions: the connection event they post on the EP's connect EVD, with
# the private data of the event that fired them. post_ep_broken is the async event.
POSTS = {
    "post_established": E.CONNECTION_EVENT_ESTABLISHED,
    "post_peer_rejected": E.CONNECTION_EVENT_PEER_REJECTED,
    "post_non_peer_rejected": E.CONNECTION_EVENT_NON_PEER_REJECTED,
    "post_unreachable": E.CONNECTION_EVENT_UNREACHABLE,
    "post_timed_out": E.CONNECTION_EVENT_TIMED_OUT,
    "post_accept_completion_error": E.CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
    "post_disconnected": E.CONNECTION_EVENT_DISCONNECTED,
    "post_broken": E.CONNECTION_EVENT_BROKEN,
}


def start(ep):
    """An EP is born UNCONNECTED (dat_ep_create)."""
    ep._state = S.UNCONNECTED


def refusal(state, what):
    """The InvalidState a consumer call `what` gets from an EP in `state`."""
    return InvalidState(f"{what} is not allowed on an EP in state {state.name}", subtype=SUBTYPE[state])


def check_call(state, call, what=None):
    """Raise refusal() unless ALLOWED[call] has `state`; `what` names the call in the
    message (default: `call`)."""
    if state not in ALLOWED[call]:
        raise refusal(state, what or call)


def fire(ep, event, private_data=b""):
    """Move `ep` by `event`: assign the next state, then run the row's actions.

    Raises InternalError if (state, event) has no row: the provider fired an event
    the EP's state cannot take (consumer calls are refused by check_call before).
    """
    key = (ep._state, event)
    new = TRANSITIONS.get(key)
    if new is None:
        raise InternalError(f"EP: no transition for {event.name} in {ep._state.name}")
    ep._state = new
    for name in ACTIONS.get(key, ()):
        number = POSTS.get(name)
        if number is None:
            ep._actions[name](ep)
        else:
            ep._post_connection_event(number, private_data)
