"""Blocking waits across the Contexts of one process: a thread asleep in one Context's
get_cq_event is woken by the doorbells of the process's other Contexts too, so their
QPs move as soon as a peer rings them, not at the sleeper's next liveness slice."""

from shmdat.verbs import libibverbs_enums as e

from tests.verbs_ends import End, bounded

SIZE, BURST = 30000, 48             # 48 messages of 30 kB: six times what a ring holds
ROUNDS = 200
# A liveness bound: a round takes a few milliseconds (under 2 on the 2-core test machine),
# but at least 50 ms if the refills of the ring wait for the sleeper's next liveness slice
# (the collector consumes while the waiter sleeps): at least 10 s for the rounds.
ROUNDS_BOUND = 6.0


def _collector(ch):
    """Each round: when told the burst is posted, take it on one QP, answer on the other."""
    inbox, outbox = End(max_recv_wr=BURST), End()
    ch.send((inbox.qp.qp_num, outbox.qp.qp_num))
    inbox.connect(ch.recv())
    outbox.connect(ch.recv())
    while ch.recv() == "posted":
        for j in range(BURST):
            inbox.recv(j, length=SIZE)
        for _ in range(BURST):
            assert inbox.completion().status == e.IBV_WC_SUCCESS
        outbox.send(1, b"all here")
        assert outbox.completion().status == e.IBV_WC_SUCCESS
    inbox.close()
    outbox.close()


def test_a_sleeper_in_one_context_moves_the_others_when_their_peers_ring(spawn):
    collector = spawn(_collector)
    waiter, sender = End(channel=True), End(sq_sig_all=0, max_send_wr=BURST)
    try:
        inbox, outbox = collector.recv()
        sender.connect(inbox)
        collector.send(sender.qp.qp_num)
        waiter.connect(outbox)
        collector.send(waiter.qp.qp_num)

        def rounds():
            for _ in range(ROUNDS):
                waiter.recv(1)
                for j in range(BURST):              # the ring takes the first ones; the
                    sender.send(j, b"x" * SIZE, flags=0)    # rest go as the collector consumes
                collector.send("posted")
                waiter.cq.req_notify()
                while waiter.cq.poll()[0] == 0:     # asleep in the waiter's Context
                    waiter.channel.get_cq_event(waiter.cq)
                    waiter.cq.ack_events(1)
                    waiter.cq.req_notify()

        bounded(rounds, ROUNDS_BOUND)
        collector.send("done")
        collector.join()
    finally:
        waiter.close()
        sender.close()
