"""An RC ping-pong in the style of rdma-core's ibv_rc_pingpong, written for pyverbs.

It imports only pyverbs, so it runs on any RDMA device rdma-core drives, and on
shmdat unchanged:

    python -m shmdat.verbs examples/rc_pingpong.py                 # server: prints its port
    python -m shmdat.verbs examples/rc_pingpong.py 127.0.0.1 -p PORT   # client

As ibv_rc_pingpong does, the two sides swap their QP number, PSN and GID over
a TCP socket, take their QPs to RTS, and bounce a message back and forth.
"""

import argparse
import socket
import time

from pyverbs.addr import GID, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context, get_device_list
from pyverbs.libibverbs_enums import ibv_access_flags, ibv_qp_type, ibv_wc_status
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

ACCESS = ibv_access_flags.IBV_ACCESS_LOCAL_WRITE


def exchange(args):
    """A connected TCP socket to the other side (the server prints its port)."""
    if args.server is None:
        listener = socket.create_server(("127.0.0.1", args.port))
        print(f"listening on port {listener.getsockname()[1]}", flush=True)
        conn, _ = listener.accept()
        listener.close()
        return conn
    return socket.create_connection((args.server, args.port), timeout=30)


def swap(conn, reader, mine):
    """Send "qpn:psn:gid", receive the other side's (`reader`: the socket's one reader)."""
    conn.sendall(f"{mine[0]}:{mine[1]}:{mine[2]}\n".encode())
    line = reader.readline().strip()
    qpn, psn, gid = line.split(":", 2)
    return int(qpn), int(psn), gid


def poll(cq):
    while True:
        n, wcs = cq.poll()
        if n:
            if wcs[0].status != ibv_wc_status.IBV_WC_SUCCESS:
                raise SystemExit(f"completion failed with status {wcs[0].status}")
            return wcs[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("server", nargs="?", help="the server's address (client side)")
    p.add_argument("-p", "--port", type=int, default=0, help="TCP port to exchange QP data on")
    p.add_argument("-d", "--ib-dev", help="device (default: the first)")
    p.add_argument("-g", "--gid-idx", type=int, default=3, help="local GID index")
    p.add_argument("-s", "--size", type=int, default=4096, help="message size")
    p.add_argument("-n", "--iters", type=int, default=1000, help="round trips")
    args = p.parse_args()

    name = args.ib_dev or get_device_list()[0].name.decode()
    with Context(name=name) as ctx:
        pd = PD(ctx)
        cq = CQ(ctx, 2)
        mr = MR(pd, args.size, ACCESS)
        cap = QPCap(max_send_wr=1, max_recv_wr=1)
        qp = QP(pd, QPInitAttr(qp_type=ibv_qp_type.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap), QPAttr())
        gid = ctx.query_gid(1, args.gid_idx)
        psn = 0
        conn = exchange(args)
        reader = conn.makefile()
        remote_qpn, remote_psn, remote_gid = swap(conn, reader, (qp.qp_num, psn, gid.gid))
        attr = QPAttr()
        attr.dest_qp_num, attr.rq_psn, attr.sq_psn = remote_qpn, remote_psn, psn
        attr.ah_attr = AHAttr(is_global=1, gr=GlobalRoute(GID(remote_gid), sgid_index=args.gid_idx))
        qp.to_rts(attr)
        sge = SGE(mr.buf, args.size, mr.lkey)
        qp.post_recv(RecvWR(num_sge=1, sg=[sge]))
        swap(conn, reader, (qp.qp_num, psn, gid.gid))    # both sides are ready to receive
        start = time.perf_counter()
        for i in range(args.iters):
            if args.server is not None:             # the client pings first
                qp.post_send(SendWR(wr_id=i, num_sge=1, sg=[sge]))
                poll(cq)
                poll(cq)
                qp.post_recv(RecvWR(num_sge=1, sg=[sge]))
            else:
                poll(cq)
                qp.post_recv(RecvWR(num_sge=1, sg=[sge]))
                qp.post_send(SendWR(wr_id=i, num_sge=1, sg=[sge]))
                poll(cq)
        seconds = time.perf_counter() - start
        reader.close()
        conn.close()
    print(f"{args.iters} iters in {seconds:.2f} seconds = {seconds / args.iters * 1e6:.2f} usec/iter")


if __name__ == "__main__":
    main()
