"""The connection handshake as data: which CM message is legal in which state of one
handshake, and what it does (design docs/design/dat-over-verbs.md, section 6.2).

Today's handshake runs over the IA's CM channel (cm.py's docstring draws it):
REQ, REP, REJ, RTU and CANCEL between two IAs. One handshake is named by the
active side's (address, conn_id); its state is where cm.py keeps it:

    active side     REQ_SENT      our connect, waiting for REP or REJ (cm.active)
    passive side    CR_PENDING    the request is a CR with the consumer (cm.crs)
                    CR_CANCELLED  ... and the requester has withdrawn it (CANCEL)
                    REP_SENT      accepted, waiting for the RTU (cm.passive)
    both            GONE          no handshake under that name: over, given up, or
                                  never begun

ACTIVE and PASSIVE map (state, message) to the handler cm.py runs (a name, the
ConnectionManager binds it) and the state the handshake is in afterwards. Every
pair has a row: a message that comes late (the handshake is GONE) or twice is
ignored by an explicit row, never by accident. The EP's own moves are ep_state's.
The local events of a live handshake (the connect timer, a peer's death, the
consumer's accept, reject or disconnect) reach it only while it is in cm.active,
cm.crs or cm.passive, so they can never be late.
"""

import enum


class Handshake(enum.Enum):
    GONE = enum.auto()
    REQ_SENT = enum.auto()
    CR_PENDING = enum.auto()
    CR_CANCELLED = enum.auto()
    REP_SENT = enum.auto()


class Message(enum.IntEnum):
    """The CM messages, by their number on the wire."""
    REQ = 1         # connection request: conn_qual, PZ, segment name, private data
    REP = 2         # the passive side accepted: its PZ, private data
    REJ = 3         # rejected: CONSUMER (with private data) or NON_PEER
    RTU = 4         # ready to use: the active side has the connection
    CANCEL = 5      # the active side gave up (timeout, disconnect, free, REP too late)


H = Handshake
M = Message

# Messages the active side receives (looked up in cm.active by our conn_id).
ACTIVE = {
    (H.REQ_SENT, M.REP): ("complete_connect", H.GONE),      # EP CONNECT_RESPONSE; RTU sent
    (H.REQ_SENT, M.REJ): ("refuse_connect", H.GONE),        # EP PEER_ or NON_PEER_REJECTED
    (H.GONE, M.REP): ("cancel_late_reply", H.GONE),         # we gave up: CANCEL, so its accept fails
    (H.GONE, M.REJ): ("ignore", H.GONE),                    # late: we gave up already
}

# Messages the passive side receives (looked up in cm.passive, then cm.crs, by the
# requester's (address, conn_id)).
PASSIVE = {
    (H.GONE, M.REQ): ("take_request", H.CR_PENDING),        # a CR (REJ NON_PEER if nobody listens: GONE)
    (H.CR_PENDING, M.REQ): ("ignore", H.CR_PENDING),        # a duplicate
    (H.CR_CANCELLED, M.REQ): ("ignore", H.CR_CANCELLED),    # a duplicate
    (H.REP_SENT, M.REQ): ("ignore", H.REP_SENT),            # a duplicate
    (H.GONE, M.RTU): ("ignore", H.GONE),                    # late: our EP left COMPLETION_PENDING
    (H.CR_PENDING, M.RTU): ("ignore", H.CR_PENDING),        # out of order: nothing was accepted
    (H.CR_CANCELLED, M.RTU): ("ignore", H.CR_CANCELLED),    # likewise
    (H.REP_SENT, M.RTU): ("complete_accept", H.GONE),       # EP ESTABLISHED
    (H.GONE, M.CANCEL): ("ignore", H.GONE),                 # late: nothing left to withdraw
    (H.CR_PENDING, M.CANCEL): ("cancel_request", H.CR_CANCELLED),  # its accept will fail (CONNECT_ERROR)
    (H.CR_CANCELLED, M.CANCEL): ("ignore", H.CR_CANCELLED),  # withdrawn already
    (H.REP_SENT, M.CANCEL): ("fail_accept", H.GONE),        # EP CONNECT_ERROR
}

ACTIVE_MESSAGES = frozenset({M.REP, M.REJ})
PASSIVE_MESSAGES = frozenset({M.REQ, M.RTU, M.CANCEL})
ACTIVE_STATES = frozenset({H.GONE, H.REQ_SENT})
PASSIVE_STATES = frozenset({H.GONE, H.CR_PENDING, H.CR_CANCELLED, H.REP_SENT})


def handler(state, message):
    """The name of the handler for `message` in a handshake in `state` (ACTIVE or
    PASSIVE by the message's direction)."""
    table = ACTIVE if message in ACTIVE_MESSAGES else PASSIVE
    return table[(state, message)][0]
