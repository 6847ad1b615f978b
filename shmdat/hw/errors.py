"""The hardware's own errors (the API layers translate them into theirs)."""


class HwError(Exception):
    """Something the shared-memory hardware cannot do."""


class NoRoom(HwError):
    """/dev/shm cannot hold a new segment (`size` bytes for `what`)."""

    def __init__(self, message, size, what):
        super().__init__(message)
        self.size, self.what = size, what


class PeerUnreachable(HwError):
    """No HCA answers at that address."""


class RingCorrupt(HwError):
    """The peer wrote something into the connection that cannot be right."""


class LayoutMismatch(PeerUnreachable):
    """The peer's shared object has another layout version (layout.LAYOUT_VERSION): a peer
    that speaks another layout is unreachable, as a NIC of another wire protocol is."""
