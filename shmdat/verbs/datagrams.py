"""The wire of a UD QP: one ring connection per (sender QP, receiver QP) pair.

Many QPs may send to one UD QP, and a ring has one producer. So a sender makes
a connection segment of its own for each QP it sends to, on the first send
(named after itself and both QP numbers), and tells the receiver's device
through its inbox (the HCA's datagram socket, hw/hca.py) with a notice; the
receiving Context hands the notice to the QP it names, which maps the segment,
unlinks its name and from then on polls it with its other senders'. Each
message carries the Q_Key in a datagram header (hw/ring.py); the receiver
drops it unless the key is its own, or when no receive is posted. A sender
whose ring is full loses the message, as UD may. The rings are the ordinary
ones (hw/ring.py), used one way.
"""

import struct

import posix_ipc

from ..hw import hca as hw_hca, ring
from ..hw.errors import NoRoom, PeerUnreachable, RingCorrupt

RING_BYTES = 64 * 1024                  # each way; a UD message is at most the MTU
_NOTICE = struct.Struct("<8sQQQII")     # magic, the sender's (pid, start, hca number), src, dst
_MAGIC = b"shmdatUD"


def parse_notice(data):
    """(sender's HCA address, src qp_num, dst qp_num) from an inbox message, or None."""
    if len(data) != _NOTICE.size:
        return None
    magic, pid, start, n, src, dst = _NOTICE.unpack(data)
    if magic != _MAGIC:
        return None
    return hw_hca.address_of(pid, start, n), src, dst


def _no_receive():
    return None


class _From:
    """The completion sink of the connection from one sender: its receives name it."""
    __slots__ = ("qp", "src_qp")

    def __init__(self, qp, src_qp):
        self.qp, self.src_qp = qp, src_qp

    def recv_done(self, work):
        self.qp.recv_done(work, self.src_qp)


class Datagrams:
    """A UD QP's connections: `outbound` by destination qp_num, and `inbound`."""

    def __init__(self, qp):
        self.qp = qp
        self.outbound = {}          # dest qp_num -> (QueuePair, the Segment we created)
        self.inbound = []           # QueuePairs from senders
        self.key = 0                # the QP's Q_Key, which inbound messages must carry

    def outstanding(self):
        """Send WRs not completed yet."""
        return sum(len(wire.sq) + len(wire.inflight) for wire, _ in self.outbound.values())

    def send(self, work, dest):
        """Send `work` (its SGEs begin with the datagram header) to QP `dest`; lost
        (completing at once) if there is no such QP."""
        wire = self._to(dest)
        if wire is None:
            self.qp.send_done(work)
        else:
            wire.post_send(work)

    def _to(self, dest):
        entry = self.outbound.get(dest)
        if entry is not None:
            wire = entry[0]
            if wire.peer_state() <= ring.S_UP and wire.peer.alive():
                return wire
            self._drop_outbound(dest)
        qp = self.qp
        owner = qp.context.qpn_table.owner(dest)
        if owner is None:
            return None
        name = f"{hw_hca.prefix_of(*qp._owner)}.u{qp.qp_num}-{dest}"
        try:
            peer = qp.context.hca.peer(hw_hca.address_of(*owner[:3]))
            segment = ring.create_connection_segment(name, RING_BYTES)
        except (PeerUnreachable, NoRoom, posix_ipc.ExistentialError, OSError):
            return None
        wire = ring.QueuePair(segment, 0, peer, qp, _no_receive)
        wire.drops = True
        self.outbound[dest] = (wire, segment)
        try:
            qp.context.hca.cm_send(peer.address, _NOTICE.pack(_MAGIC, *qp._owner, qp.qp_num, dest))
        except (PeerUnreachable, OSError):         # gone, or its inbox is full: the message is lost
            self._drop_outbound(dest)
            return None
        return wire

    def _drop_outbound(self, dest, complete=True):
        wire, segment = self.outbound.pop(dest)
        pending = wire.drain()[0]
        if complete:
            for work in pending:
                self.qp.send_done(work)     # sent as far as UD goes: the receiver is gone
        wire.set_state(ring.S_CLOSED)
        wire.close()
        segment.unlink()                    # gone already if the receiver mapped it

    def attach(self, address, src):
        """A sender's notice: map its connection and poll it from now on."""
        qp = self.qp
        name = f"{hw_hca.prefix_of(*hw_hca.parse_address(address))}.u{src}-{qp.qp_num}"
        try:
            peer = qp.context.hca.peer(address)
            segment = ring.open_connection_segment(name)
        except (PeerUnreachable, RingCorrupt, posix_ipc.ExistentialError, OSError):
            return
        segment.unlink()                    # both sides have it mapped: the name can go
        wire = ring.QueuePair(segment, 1, peer, _From(qp, src), qp._take_recv)
        wire.drops = True
        wire.datagram_key = self.key
        self.inbound.append(wire)

    def set_key(self, key):
        self.key = key
        for wire in self.inbound:
            wire.datagram_key = key

    def progress(self):
        """Deliver what senders put in our rings; move our sends on."""
        for wire in self.inbound[:] if len(self.inbound) > 1 else self.inbound:
            leaving = wire.peer_state() > ring.S_UP
            try:
                wire.poll_recv()
            except RingCorrupt:
                leaving = True
            if leaving:
                self._close_inbound(wire)
        for dest, (wire, _) in list(self.outbound.items()):
            if wire.sq or wire.inflight:
                try:
                    wire.poll_send()
                except RingCorrupt:
                    self._drop_outbound(dest)

    def check_peers(self):
        """Let go of the connections of processes that died."""
        for wire in self.inbound[:]:
            if not wire.peer.alive():
                self._close_inbound(wire)
        for dest, (wire, _) in list(self.outbound.items()):
            if not wire.peer.alive():
                self._drop_outbound(dest)

    def _close_inbound(self, wire):
        self.inbound.remove(wire)
        wire.set_state(ring.S_CLOSED)
        wire.close()

    def drain(self):
        """Every send not completed, for the QP to flush (it went to ERR)."""
        pending = []
        for wire, _ in self.outbound.values():
            pending += wire.drain()[0]
        return pending

    def close(self):
        """Leave every connection (RESET, destroy)."""
        for dest in list(self.outbound):
            self._drop_outbound(dest, complete=False)
        for wire in self.inbound[:]:
            self._close_inbound(wire)
