# The server half of the README's first program. Start it first, then run
# examples/first_client.py from the same directory. The optional argument is
# the connection qualifier (the "port") to listen on.
import pathlib
import sys

import shmdat
from shmdat import EvdFlags

conn_qual = int(sys.argv[1]) if len(sys.argv) > 1 else 4242
address_file = pathlib.Path("shmdat-server.address")     # how the client finds this server

with shmdat.ia_open() as ia:                             # dat_ia_open("shm0"); closed at the end
    pz = ia.pz_create()
    cr_evd = ia.evd_create(8, EvdFlags.CR)
    conn_evd = ia.evd_create(8, EvdFlags.CONNECTION)
    dto_evd = ia.evd_create(64, EvdFlags.DTO)
    psp = ia.psp_create(conn_qual, cr_evd)               # listen on conn_qual
    ep = ia.ep_create(pz, dto_evd, dto_evd, conn_evd)
    lmr = ia.lmr_create(pz, 4096)                        # 4 KiB of shared memory
    ep.post_recv([lmr.triplet(0, 4096)], "first buffer")  # where the client's message will go
    address_file.write_text(ia.address)
    print(f"server: listening at {ia.address} on conn_qual {psp.conn_qual}")
    try:
        event, _ = cr_evd.wait(60_000_000)               # timeouts are microseconds: 60 s
        cr = event.data.cr
        print("server: connection request, private data", cr.private_data)
        cr.accept(ep, b"welcome")
        event, _ = conn_evd.wait(10_000_000)
        print("server:", event.number.name)              # CONNECTION_EVENT_ESTABLISHED
        event, _ = dto_evd.wait(10_000_000)              # the client's message has arrived
        done = event.data
        print("server: received", bytes(lmr.buffer[:done.transferred_length]), done.status.name)
        event, _ = conn_evd.wait(10_000_000)
        print("server:", event.number.name)              # CONNECTION_EVENT_DISCONNECTED
    finally:
        address_file.unlink()
