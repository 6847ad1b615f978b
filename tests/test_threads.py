"""Threads and waiting: the provider is thread safe, no wake-up is lost, an idle waiter costs nothing."""

import threading
import time

import pytest

import shmdat
from shmdat import EpAttr, EvdFlags

from tests.nodes import WAIT, Node
from tests.remote import connect_to_remote

BOUND = 30.0


@pytest.fixture
def pair(spawn, conn_qual):
    """A Node with a deep DTO EVD, connected to a spawned peer that can hold many receives."""
    deep = EpAttr(max_recv_dtos=2048, max_request_dtos=2048)
    node = Node(qlen=4096, attr=deep)
    r = connect_to_remote(spawn, node, conn_qual, attr=deep)
    yield node, r
    node.close()


def run_threads(targets):
    threads = [threading.Thread(target=t, daemon=True) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(BOUND)
        assert not t.is_alive(), "a thread did not finish"


def test_the_provider_says_it_is_thread_safe(ia):
    _, provider = ia.query()
    assert provider.is_thread_safe is True
    assert shmdat.registry_list_providers()[0].thread_safe is True


def test_many_threads_post_while_one_waits(pair):
    node, r = pair
    threads, per_thread = 4, 50                 # within the peer's EVD (256 events)
    r.post_recv(threads * per_thread, 64)
    done, errors = [], []

    def poster(t):
        def post():
            try:
                for i in range(per_thread):
                    node.ep.post_send([node.lmr.triplet(64 * t, 8)], (t, i))
            except Exception as e:       # handed to the test
                errors.append(e)
        return post

    def waiter():
        for _ in range(threads * per_thread):
            event, _ = node.dto.wait(WAIT)
            done.append(event.data.user_cookie)

    run_threads([waiter] + [poster(t) for t in range(threads)])
    assert not errors
    assert sorted(done) == [(t, i) for t in range(threads) for i in range(per_thread)]
    for t in range(threads):                    # each thread's sends complete in its order
        assert [c for c in done if c[0] == t] == [(t, i) for i in range(per_thread)]
    assert len(r.wait_dtos(threads * per_thread)) == threads * per_thread
    r.finish()


def test_a_thread_waits_while_another_posts_on_the_same_ep(pair):
    node, r = pair
    n = 200
    r.post_recv(n, 64)
    seen = []

    def waiter():
        for _ in range(n):
            event, _ = node.dto.wait(WAIT)
            assert event.data.status == shmdat.DtoStatus.SUCCESS
            seen.append(event.data.user_cookie)

    def poster():
        for i in range(n):
            node.ep.post_send([node.lmr.triplet(0, 16)], i)

    run_threads([waiter, poster])
    assert seen == list(range(n))
    assert len(r.wait_dtos(n)) == n
    r.finish()


def test_thousands_of_cross_thread_wake_ups(ia):
    ping = ia.evd_create(4, EvdFlags.SOFTWARE)
    pong = ia.evd_create(4, EvdFlags.SOFTWARE)
    rounds = 3000

    def a():
        for i in range(rounds):
            ping.post_se(i)
            assert pong.wait(WAIT)[0].data.pointer == i

    def b():
        for i in range(rounds):
            assert ping.wait(WAIT)[0].data.pointer == i
            pong.post_se(i)

    run_threads([a, b])


def test_thousands_of_cross_process_wake_ups(pair):
    node, r = pair
    rounds = 2000
    r.post_recv(1, 64)
    r.start("echo", rounds, 64)
    for i in range(rounds):
        node.ep.post_recv([node.lmr.triplet(64, 64)], "echo")
        node.ep.post_send([node.lmr.triplet(0, 8)], "ping")
        cookies = {node.dto.wait(WAIT)[0].data.user_cookie for _ in range(2)}   # blocked waits
        assert cookies == {"ping", "echo"}
    r.result()
    r.finish()


def test_a_blocked_waiter_wakes_for_a_peer_message(pair):
    node, r = pair
    node.ep.post_recv([node.lmr.triplet(0, 64)], "woken")
    r.start("send", b"wake up")                 # sent while we are blocked below
    event, _ = node.dto.wait(WAIT)
    assert event.data.user_cookie == "woken" and event.data.transferred_length == 7
    r.result()
    r.finish()


def test_an_idle_blocked_wait_costs_no_cpu(pair):
    node, r = pair                              # connected: progress has a peer to watch
    cpu = time.process_time()
    with pytest.raises(shmdat.TimeoutExpired):
        node.dto.wait(1_000_000)                # one second, nothing arrives
    assert time.process_time() - cpu < 0.1
    r.finish()
