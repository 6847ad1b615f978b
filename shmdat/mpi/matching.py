"""MPI's matching: receives posted and not yet matched, messages arrived and not yet
received (the unexpected queue). Both in order, so the first match is the oldest one, which
with per-pair FIFO delivery is MPI's non-overtaking rule."""

ANY_SOURCE = -2      # MPICH's values, as mpi4py over MPICH has them
ANY_TAG = -1
PROC_NULL = -1


class Message:
    """An arrived message nobody has received yet: eager (`data`, the payload's bytes) or a
    rendezvous request (`rts`: the sender's RmrTriplet and its request id). `ack`: a
    synchronous send's request id, answered when the message is matched."""
    __slots__ = ("source", "comm", "tag", "length", "data", "rts", "ack")

    def __init__(self, source, comm, tag, length, data=None, rts=None, ack=None):
        self.source, self.comm, self.tag, self.length = source, comm, tag, length
        self.data, self.rts, self.ack = data, rts, ack


def _matches_message(msg, comm, source, tag):
    """Whether a receive (comm, source, tag), wildcards allowed, matches message `msg`."""
    return msg.comm == comm and (source == ANY_SOURCE or msg.source == source) \
        and (tag == ANY_TAG or msg.tag == tag)


class Matcher:
    """The posted-receive queue (of RecvOps: comm, source, tag) and the unexpected queue."""

    def __init__(self):
        self.posted = []
        self.unexpected = []

    def take_posted(self, comm, source, tag):
        """The oldest posted receive that a message (comm, source, tag) matches, removed from
        the queue; None if none does (the message is then unexpected)."""
        for i, op in enumerate(self.posted):     # (its test inline: run for every message)
            if op.comm == comm and (op.source == ANY_SOURCE or op.source == source) and \
                    (op.tag == ANY_TAG or op.tag == tag):
                del self.posted[i]
                return op
        return None

    def find_unexpected(self, comm, source, tag):
        """The oldest unexpected message (comm, source, tag) matches, left in place; or None."""
        for msg in self.unexpected:
            if _matches_message(msg, comm, source, tag):
                return msg
        return None

    def take_message(self, comm, source, tag):
        """The oldest unexpected message a receive (comm, source, tag) matches, removed (a
        matched probe's: no receive can match it any more); None if none."""
        for i, msg in enumerate(self.unexpected):
            if _matches_message(msg, comm, source, tag):
                del self.unexpected[i]
                return msg
        return None
