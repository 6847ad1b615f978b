"""A DAT consumer's usual setup, for tests and their peers.

Node: an IA with a PZ, CR/connection/DTO EVDs, one EP and one provider LMR.
Every wait is bounded (WAIT microseconds) so a bug fails instead of hanging.
"""

import shmdat
from shmdat import EventNumber, EvdFlags

WAIT = 10_000_000       # 10 s in microseconds


class Node:
    def __init__(self, lmr_size=1 << 20, qlen=256, attr=None, ep=True):
        self.ia = shmdat.ia_open()
        self.pz = self.ia.pz_create()
        self.cr_evd = self.ia.evd_create(16, EvdFlags.CR)
        self.conn_evd = self.ia.evd_create(16, EvdFlags.CONNECTION)
        self.dto = self.ia.evd_create(qlen, EvdFlags.DTO)
        self.lmr = self.ia.lmr_create(self.pz, lmr_size)
        self.ep = self.new_ep(attr) if ep else None

    @property
    def address(self):
        return self.ia.address

    def new_ep(self, attr=None):
        return self.ia.ep_create(self.pz, self.dto, self.dto, self.conn_evd, attr)

    def expect(self, evd, number, timeout=WAIT):
        """Wait for the next event of `evd` and check its number."""
        event, _ = evd.wait(timeout)
        assert event.number == number, f"expected {number.name}, got {event.number.name}: {event.data}"
        return event.data

    def listen(self, conn_qual):
        return self.ia.psp_create(conn_qual, self.cr_evd)

    def accept(self, private_data=b"", ep=None):
        """Accept the next CR with `ep` (default: self.ep); returns the CR's private data."""
        cr = self.expect(self.cr_evd, EventNumber.CONNECTION_REQUEST_EVENT).cr
        pd = cr.private_data
        cr.accept(ep or self.ep, private_data)
        self.expect(self.conn_evd, EventNumber.CONNECTION_EVENT_ESTABLISHED)
        return pd

    def connect(self, address, conn_qual, private_data=b"", ep=None):
        """Connect self.ep (or `ep`); returns the peer's private data."""
        (ep or self.ep).connect(address, conn_qual, WAIT, private_data)
        return self.expect(self.conn_evd, EventNumber.CONNECTION_EVENT_ESTABLISHED).private_data

    def dto_done(self, timeout=WAIT):
        """The next DTO completion (its DtoCompletion)."""
        return self.expect(self.dto, EventNumber.DTO_COMPLETION_EVENT, timeout)

    def close(self):
        self.ia.close()
