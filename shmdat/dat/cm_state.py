"""The connection handshake as data: rdma_cm's events per CMID, which are legal in
which state of the CMID, and what each becomes (design docs/design/dat-over-verbs.md,
section 6.2).

The handshake is rdma_cm's (cm.py's docstring draws it). Every CMID DAT holds has an
owner (cm.ConnectionManager.owners): a PSP or RSP listening, a CR with a request, an
EP connecting or connected. The owner keeps its CMID's state in `_cm_state`:

    active      RESOLVING_ADDR, RESOLVING_ROUTE, CONNECTING    an EP's connect
    listening   LISTENING                                      a PSP's or RSP's
    passive     REQUEST                                        a CR's request
                ACCEPTED                                       the EP that accepted it
    both        CONNECTED                                      the connection is up
                DONE                                           over, given up, or no CMID

  TRANSITIONS  {(state, seam.CmEvent): (next state, action name or None)}. The action
               is the DAT event the rdma_cm event becomes; the owner binds each name
               (its `_cm_actions`), the EP's fire ep_state's events. None: ignored.
               A late event (the CMID is DONE) is ignored by an explicit row, as is
               DEVICE_REMOVAL (shm0 never removes its device; on a NIC, the device's
               async DEVICE_FATAL reports it as PROVIDER_INTERNAL_ERROR). rdma_cm's
               events DAT never asked for (TIMEWAIT_EXIT, ADDR_CHANGE...) are None in
               seam.CM_EVENT and reach no table.
  fire(owner, kind, event): the only place a CMID's state moves on an rdma_cm event;
               InternalError for an event with no row (a provider bug).
  begin(owner, state), end(owner): a CMID enters a role (a connect, a listen, a
               request, an accept), or leaves its handshake (closed, or kept only for
               its peer to see a broken connection).

The EP's own moves are ep_state's; the two agree because every EP row that ends a
connection ends its CMID's handshake (ep_state's close_cmid and retire_cmid).
"""

import enum

from .errors import InternalError
from .seam import CmEvent


class CmidState(enum.Enum):
    RESOLVING_ADDR = enum.auto()
    RESOLVING_ROUTE = enum.auto()
    CONNECTING = enum.auto()
    LISTENING = enum.auto()
    REQUEST = enum.auto()
    ACCEPTED = enum.auto()
    CONNECTED = enum.auto()
    DONE = enum.auto()


T = CmidState
C = CmEvent

ROLE = {
    T.RESOLVING_ADDR: "active", T.RESOLVING_ROUTE: "active", T.CONNECTING: "active",
    T.LISTENING: "listening", T.REQUEST: "passive", T.ACCEPTED: "passive",
    T.CONNECTED: "both", T.DONE: "both",
}

_LIVE = frozenset(T) - {T.DONE}

TRANSITIONS = {
    # Active: resolve_addr, resolve_route, connect; ADDR_ERROR, ROUTE_ERROR and
    # CONNECT_ERROR are UNREACHABLE (seam.CM_EVENT).
    (T.RESOLVING_ADDR, C.ADDR_RESOLVED): (T.RESOLVING_ROUTE, "addr_resolved"),
    (T.RESOLVING_ADDR, C.UNREACHABLE): (T.DONE, "unreachable"),
    (T.RESOLVING_ROUTE, C.ROUTE_RESOLVED): (T.CONNECTING, "route_resolved"),
    (T.RESOLVING_ROUTE, C.UNREACHABLE): (T.DONE, "unreachable"),
    (T.CONNECTING, C.CONNECT_RESPONSE): (T.CONNECTED, "connect_response"),
    (T.CONNECTING, C.REJECTED): (T.DONE, "rejected"),        # PEER_ or NON_PEER_ by DAT's header
    (T.CONNECTING, C.UNREACHABLE): (T.DONE, "unreachable"),
    # A listener: each request is a child CMID in REQUEST (a CR, or the RSP's EP's).
    (T.LISTENING, C.REQUEST): (T.LISTENING, "request"),
    # A request not yet accepted: the requester gave up (its REJ), or died. DONE is the
    # withdrawal: the CR's accept fails (ACCEPT_COMPLETION_ERROR), its reject sends nothing.
    (T.REQUEST, C.REJECTED): (T.DONE, None),
    (T.REQUEST, C.UNREACHABLE): (T.DONE, None),
    (T.REQUEST, C.PEER_DISCONNECTED): (T.DONE, None),
    (T.REQUEST, C.QP_FATAL): (T.DONE, None),
    # Accepted: the requester establishes it, or gave up, or died, meanwhile.
    (T.ACCEPTED, C.ESTABLISHED): (T.CONNECTED, "established"),
    (T.ACCEPTED, C.UNREACHABLE): (T.DONE, "connect_error"),
    (T.ACCEPTED, C.REJECTED): (T.DONE, "connect_error"),
    (T.ACCEPTED, C.PEER_DISCONNECTED): (T.DONE, "connect_error"),
    (T.ACCEPTED, C.QP_FATAL): (T.DONE, "connect_error"),
    # Connected: the peer's DREQ (status 0), or its death (shm0's -ECONNRESET).
    (T.CONNECTED, C.PEER_DISCONNECTED): (T.DONE, "peer_disconnected"),
    (T.CONNECTED, C.QP_FATAL): (T.DONE, "qp_fatal"),
}
TRANSITIONS.update({(state, C.DEVICE_REMOVAL): (T.DONE, None) for state in _LIVE})
TRANSITIONS.update({(T.DONE, event): (T.DONE, None) for event in C})      # late

ACTIONS = frozenset(action for _, action in TRANSITIONS.values()) - {None}


def begin(owner, state):
    """`owner`'s CMID enters `state`: a connect (RESOLVING_ADDR), a listen (LISTENING),
    a request (REQUEST), an accept (ACCEPTED)."""
    owner._cm_state = state


def end(owner):
    """`owner`'s CMID leaves its handshake: its late events are ignored."""
    owner._cm_state = T.DONE


def fire(owner, kind, event):
    """Move `owner`'s CMID by the rdma_cm event `event` (typed `kind`, a seam.CmEvent),
    then run the row's action with the event. Raises InternalError if the row is missing."""
    row = TRANSITIONS.get((owner._cm_state, kind))
    if row is None:
        raise InternalError(f"CM: no transition for {kind.name} in {owner._cm_state.name}")
    owner._cm_state, action = row
    if action is not None:
        owner._cm_actions[action](owner, event)
