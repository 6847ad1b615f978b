"""The state tables (dat/ep_state.py, dat/cm_state.py, dat/evd_state.py) against the
DAT man pages, written out here by hand, and checked for totality.

The man pages' words are quoted; where this provider is stricter than a page the
difference is listed in DEVIATIONS with its reason, so a table that drifts from
either fails. The same refusals provoked on real EPs: test_state_tables_ep.py.
"""

import types

import pytest

import shmdat
from shmdat import EpState as S, EvdFlags, Return
from shmdat.dat import cm_state, ep_state, evd_state, seam
from shmdat.dat.cm import PSP, RSP
from shmdat.dat.ep import EP
from shmdat.dat.evd import EVD

V = ep_state.EpEvent
DAT_1_2 = {S.UNCONNECTED, S.RESERVED, S.PASSIVE_CONNECTION_PENDING, S.ACTIVE_CONNECTION_PENDING,
           S.TENTATIVE_CONNECTION_PENDING, S.CONNECTED, S.DISCONNECT_PENDING, S.DISCONNECTED,
           S.COMPLETION_PENDING}

# The states each consumer call is valid in, as the DAT 1.2 pages say.
MAN_PAGES = {
    # dat_ep_connect: "Endpoint was not in DAT_EP_STATE_UNCONNECTED state."
    "connect": {S.UNCONNECTED},
    # dat_ep_post_send (and _post_rdma_read/_write): "valid for the Endpoint in the
    # DAT_EP_STATE_CONNECTED and DAT_EP_STATE_DISCONNECTED states".
    "post_send": {S.CONNECTED, S.DISCONNECTED},
    # dat_ep_post_recv: "The operation is valid for all states of the Endpoint."
    "post_recv": set(S),
    # dat_ep_disconnect: "Disconnecting an Endpoint in DAT_EP_STATE_UNCONNECTED,
    # DAT_EP_STATE_RESERVED, DAT_EP_STATE_PASSIVE_CONNECTION_PENDING, and
    # DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING is disallowed."
    "disconnect": DAT_1_2 - {S.UNCONNECTED, S.RESERVED, S.PASSIVE_CONNECTION_PENDING,
                             S.TENTATIVE_CONNECTION_PENDING},
    # dat_ep_reset: "valid for both Disconnected and Unconnected states".
    "reset": {S.UNCONNECTED, S.DISCONNECTED},
    # dat_ep_free: "any Endpoint state except Reserved, Passive Connection Pending,
    # and Tentative Connection Pending".
    "free": DAT_1_2 - {S.RESERVED, S.PASSIVE_CONNECTION_PENDING, S.TENTATIVE_CONNECTION_PENDING},
    # dat_ep_modify: the Protection Zone "in Quiescent, Unconnected, and Tentative
    # Connection Pending states"; the EVDs and attributes also in "Reserved, Passive
    # Connection Pending".
    "modify": {S.UNCONNECTED, S.TENTATIVE_CONNECTION_PENDING, S.RESERVED, S.PASSIVE_CONNECTION_PENDING},
    # dat_cr_accept: the EP the consumer gives must be able to take the request: an
    # Unconnected one (dapl); a CR of an RSP brings its own, Passive Connection Pending.
    "accept": {S.UNCONNECTED},
    "accept_reserved": {S.PASSIVE_CONNECTION_PENDING},
    # dat_rsp_create: "an Endpoint was not in the Idle state".
    "reserve": {S.UNCONNECTED},
    # dat_rmr_bind: "valid for the Endpoint in the DAT_EP_STATE_CONNECTED and
    # DAT_EP_STATE_DISCONNECTED states".
    "rmr_bind": {S.CONNECTED, S.DISCONNECTED},
}

# Where this provider refuses what a page allows.
DEVIATIONS = {
    "modify": {S.RESERVED, S.PASSIVE_CONNECTION_PENDING},   # all fields, quiescent states only
    "rmr_bind": {S.DISCONNECTED},                          # binds on a connected EP only
}

# dat_error.h's DAT_INVALID_STATE_EP_* subtype for each state DAT 1.2 names.
EP_SUBTYPES = {
    S.UNCONNECTED: "INVALID_STATE_EP_UNCONNECTED",
    S.RESERVED: "INVALID_STATE_EP_RESERVED",
    S.PASSIVE_CONNECTION_PENDING: "INVALID_STATE_EP_PASSCONNPENDING",
    S.ACTIVE_CONNECTION_PENDING: "INVALID_STATE_EP_ACTCONNPENDING",
    S.TENTATIVE_CONNECTION_PENDING: "INVALID_STATE_EP_TENTCONNPENDING",
    S.CONNECTED: "INVALID_STATE_EP_CONNECTED",
    S.DISCONNECT_PENDING: "INVALID_STATE_EP_DISCPENDING",
    S.DISCONNECTED: "INVALID_STATE_EP_DISCONNECTED",
    S.COMPLETION_PENDING: "INVALID_STATE_EP_COMPLPENDING",
}

CONSUMER_EVENTS = {ev for events in ep_state.CALL_EVENTS.values() for ev in events}


def test_allowed_table_is_the_man_pages():
    expected = {call: frozenset(states - DEVIATIONS.get(call, set())) for call, states in MAN_PAGES.items()}
    assert ep_state.ALLOWED == expected


def test_each_refusal_carries_the_state_subtype():
    for state, subtype in EP_SUBTYPES.items():
        assert ep_state.SUBTYPE[state] == subtype
    assert set(ep_state.SUBTYPE) == set(S)
    assert all(v.startswith("INVALID_STATE_EP_") for v in ep_state.SUBTYPE.values())


@pytest.mark.parametrize("call", sorted(ep_state.ALLOWED))
def test_check_call_refuses_every_state_not_allowed(call):
    """Every (state, call) pair out of the table: InvalidState, the state's subtype,
    the call and the state named; every pair in it: no error."""
    for state in S:
        if state in ep_state.ALLOWED[call]:
            ep_state.check_call(state, call)
            continue
        with pytest.raises(shmdat.InvalidState) as e:
            ep_state.check_call(state, call, f"the {call} call")
        assert e.value.code == Return.INVALID_STATE
        assert e.value.subtype == ep_state.SUBTYPE[state]
        assert f"the {call} call" in str(e.value) and state.name in str(e.value)


def test_ep_tables_are_total():
    """Every (state, event) pair is a row, or refused: a consumer event by ALLOWED
    for every call that fires it, any other event by fire's InternalError."""
    assert set(ep_state.ACTIONS) <= set(ep_state.TRANSITIONS)
    for state in S:
        for event in V:
            if (state, event) in ep_state.TRANSITIONS:
                continue
            if event in CONSUMER_EVENTS:
                for call, events in ep_state.CALL_EVENTS.items():
                    if event in events:
                        assert state not in ep_state.ALLOWED[call], (call, state, event)
            else:
                with pytest.raises(shmdat.InternalError) as e:
                    ep_state.fire(types.SimpleNamespace(_state=state), event)
                assert event.name in str(e.value) and state.name in str(e.value)


def test_every_allowed_call_has_its_rows():
    for call, events in ep_state.CALL_EVENTS.items():
        for state in ep_state.ALLOWED[call]:
            for event in events:
                assert (state, event) in ep_state.TRANSITIONS, (call, state, event)


def test_no_event_leads_to_a_provider_only_state():
    """TENTATIVE_CONNECTION_PENDING and the UNCONFIGURED_* states (PspFlags.PROVIDER) and
    DAT 2.0's CONNECTED_*_PATH are never entered."""
    reachable = set(ep_state.TRANSITIONS.values())
    assert reachable == DAT_1_2 - {S.TENTATIVE_CONNECTION_PENDING}


class _Recorder(dict):
    """An EP's _actions for a stub: every action records its name and the state it saw."""

    def __init__(self, log):
        super().__init__()
        self.log = log

    def __missing__(self, name):
        return lambda ep: self.log.append((name, ep._state))


@pytest.mark.parametrize("key", sorted(ep_state.TRANSITIONS, key=lambda k: (k[0].value, k[1].value)),
                         ids=lambda k: f"{k[0].name}-{k[1].name}")
def test_fire_assigns_then_runs_the_row_in_order(key):
    state, event = key
    log = []
    ep = types.SimpleNamespace(_state=state, _actions=_Recorder(log),
                               _post_connection_event=lambda n, pd: log.append((n, ep._state, pd)))
    ep_state.fire(ep, event, b"pd")
    new = ep_state.TRANSITIONS[key]
    assert ep._state == new
    expected = []
    for name in ep_state.ACTIONS.get(key, ()):
        number = ep_state.POSTS.get(name)
        expected.append((name, new) if number is None else (number, new, b"pd"))
    assert log == expected


def test_every_action_is_bound_by_the_ep_and_used():
    used = {name for names in ep_state.ACTIONS.values() for name in names}
    assert used == set(EP._actions) | set(ep_state.POSTS)
    assert not set(EP._actions) & set(ep_state.POSTS)
    assert all(callable(f) for f in EP._actions.values())


def test_connection_events_are_posted_where_the_pages_say():
    """The CONNECTION_EVENT each provider event posts, from the dat_ep_connect,
    dat_cr_accept, dat_ep_disconnect and dat_rmr_bind pages."""
    E = shmdat.EventNumber

    def posted(state, event):
        return [ep_state.POSTS[n] for n in ep_state.ACTIONS.get((state, event), ()) if n in ep_state.POSTS]

    A, C = S.ACTIVE_CONNECTION_PENDING, S.COMPLETION_PENDING
    assert posted(A, V.CONNECT_RESPONSE) == [E.CONNECTION_EVENT_ESTABLISHED]
    assert posted(A, V.PEER_REJECTED) == [E.CONNECTION_EVENT_PEER_REJECTED]
    assert posted(A, V.NON_PEER_REJECTED) == [E.CONNECTION_EVENT_NON_PEER_REJECTED]
    assert posted(A, V.UNREACHABLE) == [E.CONNECTION_EVENT_UNREACHABLE]
    assert posted(A, V.TIMER_EXPIRED) == [E.CONNECTION_EVENT_TIMED_OUT]
    assert posted(C, V.ESTABLISHED) == [E.CONNECTION_EVENT_ESTABLISHED]
    assert posted(C, V.CONNECT_ERROR) == [E.CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR]
    for state in (A, C, S.CONNECTED, S.DISCONNECT_PENDING):
        assert posted(state, V.DISCONNECT) == [E.CONNECTION_EVENT_DISCONNECTED]
        assert posted(state, V.FREE) == []                  # nobody is left to tell
    for state in (C, S.CONNECTED, S.DISCONNECT_PENDING):
        assert posted(state, V.BROKEN) == [E.CONNECTION_EVENT_BROKEN]
        assert "post_ep_broken" in ep_state.ACTIONS[(state, V.BROKEN)]
    assert posted(S.DISCONNECTED, V.DISCONNECT) == []        # "Disconnecting a ... Disconnected Endpoint is no-op"


# The CM handshake (rdma_cm's, per CMID: design section 6.2).

T, C = cm_state.CmidState, seam.CmEvent
LIVE = set(T) - {T.DONE}

# Section 6.2's rows: (CMID state, rdma_cm event) -> (next state, the DAT event).
DESIGN_6_2 = {
    (T.RESOLVING_ADDR, C.ADDR_RESOLVED): (T.RESOLVING_ROUTE, "addr_resolved"),
    (T.RESOLVING_ADDR, C.UNREACHABLE): (T.DONE, "unreachable"),          # ADDR_ERROR
    (T.RESOLVING_ROUTE, C.ROUTE_RESOLVED): (T.CONNECTING, "route_resolved"),
    (T.RESOLVING_ROUTE, C.UNREACHABLE): (T.DONE, "unreachable"),         # ROUTE_ERROR
    (T.CONNECTING, C.CONNECT_RESPONSE): (T.CONNECTED, "connect_response"),
    (T.CONNECTING, C.REJECTED): (T.DONE, "rejected"),
    (T.CONNECTING, C.UNREACHABLE): (T.DONE, "unreachable"),              # and CONNECT_ERROR
    (T.LISTENING, C.REQUEST): (T.LISTENING, "request"),
    (T.ACCEPTED, C.ESTABLISHED): (T.CONNECTED, "established"),
    (T.ACCEPTED, C.UNREACHABLE): (T.DONE, "connect_error"),
    (T.ACCEPTED, C.REJECTED): (T.DONE, "connect_error"),
    (T.CONNECTED, C.PEER_DISCONNECTED): (T.DONE, "peer_disconnected"),
    (T.CONNECTED, C.QP_FATAL): (T.DONE, "qp_fatal"),
}
# Where this provider has more rows than the design's table: a request withdrawn before
# its accept (the CR's state is the withdrawal), and an accepted one whose requester
# disconnected or died before establishing it (today's ACCEPT_COMPLETION_ERROR, kept).
EXTRA_ROWS = {
    (T.REQUEST, C.REJECTED): (T.DONE, None),
    (T.REQUEST, C.UNREACHABLE): (T.DONE, None),
    (T.REQUEST, C.PEER_DISCONNECTED): (T.DONE, None),
    (T.REQUEST, C.QP_FATAL): (T.DONE, None),
    (T.ACCEPTED, C.PEER_DISCONNECTED): (T.DONE, "connect_error"),
    (T.ACCEPTED, C.QP_FATAL): (T.DONE, "connect_error"),
}


def test_handshake_table_is_the_design_plus_its_listed_rows():
    ignored = {(state, event) for state, event in cm_state.TRANSITIONS
               if event is C.DEVICE_REMOVAL or state is T.DONE}
    assert {k: v for k, v in cm_state.TRANSITIONS.items() if k not in ignored} \
        == {**DESIGN_6_2, **EXTRA_ROWS}


def test_late_events_and_device_removal_are_ignored_explicitly():
    """A CMID whose handshake is over ignores everything; DEVICE_REMOVAL ends any."""
    for event in C:
        assert cm_state.TRANSITIONS[(T.DONE, event)] == (T.DONE, None)
    for state in LIVE:
        assert cm_state.TRANSITIONS[(state, C.DEVICE_REMOVAL)] == (T.DONE, None)


def test_every_cmid_state_has_a_role_and_rows():
    assert set(cm_state.ROLE) == set(T)
    assert {state for state, _ in cm_state.TRANSITIONS} == set(T)


def test_a_cm_event_with_no_row_is_internal_error_and_moves_nothing():
    for state in LIVE:
        for event in C:
            if (state, event) in cm_state.TRANSITIONS:
                continue
            owner = types.SimpleNamespace(_cm_state=state, _cm_actions={})
            with pytest.raises(shmdat.InternalError) as e:
                cm_state.fire(owner, event, None)
            assert event.name in str(e.value) and state.name in str(e.value)
            assert owner._cm_state is state


@pytest.mark.parametrize("key", sorted(cm_state.TRANSITIONS, key=lambda k: (k[0].value, k[1].value)),
                         ids=lambda k: f"{k[0].name}-{k[1].name}")
def test_cm_fire_assigns_then_runs_the_action_with_the_event(key):
    log = []
    owner = types.SimpleNamespace(_cm_state=key[0])
    owner._cm_actions = {name: (lambda name: lambda o, ev: log.append((name, o._cm_state, ev)))(name)
                         for name in cm_state.ACTIONS}
    cm_state.fire(owner, key[1], "the event")
    new, action = cm_state.TRANSITIONS[key]
    assert owner._cm_state is new
    assert log == ([] if action is None else [(action, new, "the event")])


def test_every_cm_action_is_bound_by_the_owner_whose_cmid_can_take_it():
    """The EP binds the actions of the active, accepted and connected states, the
    service points the listener's; a CR's request needs none (its state says it)."""
    def actions(states):
        return {a for (s, _), (_, a) in cm_state.TRANSITIONS.items() if s in states} - {None}

    assert set(EP._cm_actions) == actions({T.RESOLVING_ADDR, T.RESOLVING_ROUTE, T.CONNECTING,
                                           T.ACCEPTED, T.CONNECTED})
    assert set(PSP._cm_actions) == set(RSP._cm_actions) == actions({T.LISTENING})
    assert actions({T.REQUEST}) == set()
    assert set(EP._cm_actions) | set(PSP._cm_actions) == cm_state.ACTIONS


# The EVD.

B, W = evd_state.Band, evd_state.EvdEvent

# dat_evd_wait: "There is already a waiter on the EVD, or the EVD is in an unwaitable
# state"; "if dat_evd_set_unwaitable is called on an EVD on which a thread is blocked
# ... returns with DAT_INVALID_STATE"; "Any other dequeue operation (dat_evd_wait() or
# dat_evd_dequeue) ... is rejected with a DAT_INVALID_STATE"; dat_evd_resize likewise
# while a waiter's threshold stands.
EVD_MAN_PAGES = {
    "wait": [(B.WAITER, "INVALID_STATE_EVD_WAITER"), (B.UNWAITABLE, "INVALID_STATE_EVD_UNWAITABLE")],
    "waiting": [(B.UNWAITABLE, "INVALID_STATE_EVD_UNWAITABLE")],
    "dequeue": [(B.WAITER, "INVALID_STATE_EVD_WAITER")],
    "resize": [(B.WAITER, "INVALID_STATE_EVD_WAITER")],
}


def test_evd_refusals_are_the_man_pages():
    assert {call: [(band, sub) for band, sub, _ in rows] for call, rows in evd_state.REFUSALS.items()} \
        == EVD_MAN_PAGES


def test_evd_tables_are_total_and_bound():
    assert set(evd_state.TRANSITIONS) == set(W)
    assert {band for band, _, _ in evd_state.TRANSITIONS.values()} == set(B)
    used = {name for names in evd_state.ACTIONS.values() for name in names}
    assert used == set(EVD._actions)


def _evd_in(ia, bands):
    evd = ia.evd_create(4, EvdFlags.SOFTWARE)
    for band in bands:
        evd_state.fire(evd, {B.WAITER: W.WAIT, B.UNWAITABLE: W.SET_UNWAITABLE,
                             B.DISABLED: W.DISABLE, B.OVERFLOWED: W.OVERFLOW}[band])
    return evd


@pytest.mark.parametrize("event", list(W), ids=lambda w: w.name)
def test_evd_fire_moves_one_band_and_refuses_the_wrong_side(ia, event):
    band, before, after = evd_state.TRANSITIONS[event]
    for start_in in (False, True):
        evd = _evd_in(ia, [band] if start_in else [])
        others = {b: evd_state.in_band(evd, b) for b in B if b is not band}
        if before is not None and start_in != before:
            with pytest.raises(shmdat.InternalError) as e:
                evd_state.fire(evd, event)
            assert event.name in str(e.value) and band.name in str(e.value)
            assert evd_state.in_band(evd, band) == start_in
        else:
            evd_state.fire(evd, event)
            assert evd_state.in_band(evd, band) == after
        assert {b: evd_state.in_band(evd, b) for b in B if b is not band} == others
        if evd_state.in_band(evd, B.WAITER):
            evd_state.fire(evd, W.WAIT_DONE)          # free() would otherwise wait for nobody
        evd.free()


@pytest.mark.parametrize("call", sorted(evd_state.REFUSALS))
def test_evd_check_call_refuses_in_each_band(ia, call):
    for band, subtype, _ in evd_state.REFUSALS[call]:
        evd = _evd_in(ia, [band])
        with pytest.raises(shmdat.InvalidState) as e:
            evd_state.check_call(evd, call)
        assert e.value.subtype == subtype
        if band is B.WAITER:
            evd_state.fire(evd, W.WAIT_DONE)
        evd_state.check_call(evd, "dequeue")              # no waiter: nothing refuses a dequeue


def test_query_reports_the_first_band_in_order(ia):
    evd = _evd_in(ia, [B.UNWAITABLE])
    assert evd.query().evd_state == shmdat.EvdState.UNWAITABLE
    evd.disable()
    assert evd.query().evd_state == shmdat.EvdState.DISABLED
    evd_state.fire(evd, W.OVERFLOW)
    assert evd.query().evd_state == shmdat.EvdState.OVERFLOWED
