# The client half of the README's first program: run examples/first_server.py
# first, then this from the same directory (with the same optional conn_qual).
import pathlib
import sys

import shmdat
from shmdat import CloseFlags, EvdFlags, EventNumber

conn_qual = int(sys.argv[1]) if len(sys.argv) > 1 else 4242
server_address = pathlib.Path("shmdat-server.address").read_text()   # written by the server

with shmdat.ia_open() as ia:
    pz = ia.pz_create()
    conn_evd = ia.evd_create(8, EvdFlags.CONNECTION)
    dto_evd = ia.evd_create(64, EvdFlags.DTO)
    ep = ia.ep_create(pz, dto_evd, dto_evd, conn_evd)
    lmr = ia.lmr_create(pz, 4096)
    ep.connect(server_address, conn_qual, private_data=b"hello?")
    event, _ = conn_evd.wait(10_000_000)
    if event.number != EventNumber.CONNECTION_EVENT_ESTABLISHED:
        sys.exit(f"client: {event.number.name}")         # e.g. NON_PEER_REJECTED: nobody listens there
    print("client: connected, private data", event.data.private_data)
    lmr.buffer[:5] = list(b"hello")                      # lmr.buffer: a numpy view of the LMR
    ep.post_send([lmr.triplet(0, 5)], "my cookie")
    event, _ = dto_evd.wait(10_000_000)                  # the send's completion
    print("client: send", event.data.status.name, event.data.user_cookie)
    ep.disconnect(CloseFlags.GRACEFUL)                   # once the server has taken the message
    event, _ = conn_evd.wait(10_000_000)
    print("client:", event.number.name)                  # CONNECTION_EVENT_DISCONNECTED
