"""The EVD's states as data (design docs/design/dat-over-verbs.md, section 6.3).

DAT gives an EVD independent bands of state (dat_error.h: "Enabled/Disabled,
Waitable/Unwaitable ... are orthogonal bands"); this provider keeps four, as bits
of one plain int, evd._bands (the hot paths test them as ints):

    WAITER      a thread owns the EVD by blocking in dat_evd_wait
    UNWAITABLE  dat_evd_set_unwaitable, until clear_unwaitable
    DISABLED    dat_evd_disable, until dat_evd_enable
    OVERFLOWED  an event found the queue full, until a take or a resize leaves room

  REFUSALS     {consumer call: ((band, subtype, why), ...)}: the call raises
               InvalidState(subtype) when the EVD is in the band (first match first).
  TRANSITIONS  {event: (band, in it before, in it after)}; None before: from either.
               An event from the wrong side of its band is a provider bug: InternalError.
  ACTIONS      {event: action names}, run by fire() after the band moved; the EVD
               binds each name (EVD._actions).
  fire(evd, event): the only place an EVD's bands are assigned.

What the bands do elsewhere: a CNO is triggered only by an EVD that is enabled and
has no waiter (dat_evd_wait: "The CNO ... is not triggered upon event arrival if
there is a Consumer blocked"); OVERFLOWED goes out once as ASYNC_ERROR_EVD_OVERFLOW;
query reports one EvdState, the first of OVERFLOWED, DISABLED, UNWAITABLE, else
WAITABLE. The outcomes of a blocked wait are not refusals: Abort (EVD freed or IA
closed), InterruptedCall (a signal), TimeoutExpired, and InvalidState UNWAITABLE
when set_unwaitable woke it ("waiting" below).
"""

import enum

from .constants import EvdState
from .errors import InternalError, InvalidState


class Band(enum.IntFlag):
    WAITER = 1
    UNWAITABLE = 2
    DISABLED = 4
    OVERFLOWED = 8


# Plain ints for the hot paths (an IntFlag operation costs a Python call).
WAITER, UNWAITABLE, DISABLED, OVERFLOWED = (int(b) for b in Band)


class EvdEvent(enum.Enum):
    # Hashed as the singletons they are: Enum's own __hash__ is a Python call, and fire()
    # looks an event up twice in each blocking dat_evd_wait.
    __hash__ = object.__hash__

    WAIT = enum.auto()              # dat_evd_wait blocks: the caller owns the EVD
    WAIT_DONE = enum.auto()         # ... and returns, however
    SET_UNWAITABLE = enum.auto()    # dat_evd_set_unwaitable
    CLEAR_UNWAITABLE = enum.auto()  # dat_evd_clear_unwaitable
    ENABLE = enum.auto()            # dat_evd_enable
    DISABLE = enum.auto()           # dat_evd_disable
    OVERFLOW = enum.auto()          # an event found the queue full
    ROOM = enum.auto()              # a take or a resize left room again


B = Band
W = EvdEvent

_WAITER = (B.WAITER, "INVALID_STATE_EVD_WAITER")
REFUSALS = {
    # dat_evd_wait: "There is already a waiter on the EVD, or the EVD is in an unwaitable state."
    "wait": (_WAITER + ("another thread is already waiting on this EVD",),
             (B.UNWAITABLE, "INVALID_STATE_EVD_UNWAITABLE", "the EVD is unwaitable (set_unwaitable)")),
    # dat_evd_wait: "if dat_evd_set_unwaitable is called on an EVD on which a thread is
    # blocked in this function, the function returns with DAT_INVALID_STATE".
    "waiting": ((B.UNWAITABLE, "INVALID_STATE_EVD_UNWAITABLE",
                 "the EVD was made unwaitable during the wait"),),
    # dat_evd_wait: "Any other dequeue operation (dat_evd_wait() or dat_evd_dequeue) on
    # the Event Dispatcher is rejected with a DAT_INVALID_STATE error code."
    "dequeue": (_WAITER + ("a thread is waiting on this EVD; dequeue would race it",),),
    # dat_evd_resize: not while a waiter's threshold was checked against the old qlen.
    "resize": (_WAITER + ("a thread is waiting on this EVD; resize it when none is",),),
}

TRANSITIONS = {
    W.WAIT: (B.WAITER, False, True),
    W.WAIT_DONE: (B.WAITER, True, False),
    W.SET_UNWAITABLE: (B.UNWAITABLE, None, True),
    W.CLEAR_UNWAITABLE: (B.UNWAITABLE, None, False),
    W.ENABLE: (B.DISABLED, None, False),
    W.DISABLE: (B.DISABLED, None, True),
    W.OVERFLOW: (B.OVERFLOWED, False, True),    # once: an overflowed EVD does not overflow again
    W.ROOM: (B.OVERFLOWED, True, False),
}

ACTIONS = {
    W.SET_UNWAITABLE: ("wake_waiter",),         # the blocked waiter returns InvalidState
    W.OVERFLOW: ("post_overflow",),             # ASYNC_ERROR_EVD_OVERFLOW on the async EVD
}


# The tables as plain ints, for fire() and check_call() (REFUSING: the bands each call
# refuses, which a hot path tests before calling check_call).
_ROWS = {event: (int(band), before, after, ACTIONS.get(event, ()))
         for event, (band, before, after) in TRANSITIONS.items()}
REFUSING = {call: sum(int(band) for band, _, _ in rows) for call, rows in REFUSALS.items()}


def start(evd):
    """An EVD is born waitable, enabled, with no waiter and room (dat_evd_create)."""
    evd._bands = 0


def in_band(evd, band):
    return bool(evd._bands & band)


def check_call(evd, call):
    """Raise the InvalidState of the first band in REFUSALS[call] the EVD is in."""
    bands = evd._bands
    if bands & REFUSING[call]:
        for band, subtype, why in REFUSALS[call]:
            if bands & band:
                raise InvalidState(why, subtype=subtype)


def query_state(evd):
    """The EvdState dat_evd_query reports."""
    bands = evd._bands
    if bands & OVERFLOWED:
        return EvdState.OVERFLOWED
    if bands & DISABLED:
        return EvdState.DISABLED
    if bands & UNWAITABLE:
        return EvdState.UNWAITABLE
    return EvdState.WAITABLE


def fire(evd, event):
    """Move the EVD's band by `event`, then run the event's actions.

    Raises InternalError if the EVD is on the wrong side of the band for the event.
    """
    band, before, after, actions = _ROWS[event]
    bands = evd._bands
    if before is not None and (bands & band != 0) is not before:
        raise InternalError(f"EVD: no transition for {event.name} "
                            f"{'outside' if before else 'in'} band {Band(band).name}")
    evd._bands = bands | band if after else bands & ~band
    for name in actions:
        evd._actions[name](evd)
