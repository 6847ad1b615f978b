"""The 40 bytes a UD receive gets before the payload, as RoCE v2 delivers them.

On RoCE v2 the GRH is the packet's IP header: for IPv4-mapped GIDs
(::ffff:a.b.c.d) 20 zero bytes and then the 20-byte IPv4 header (rxe and the
kernel's union rdma_network_hdr lay it out so), otherwise the 40-byte IPv6
header. The lengths are those of the packet the message would be on the wire:
UDP (8), BTH (12), DETH (8), immediate data (4 if any), payload and ICRC (4).
"""

import struct

GRH_BYTES = 40
_IPV4_MAPPED = bytes(10) + b"\xff\xff"
_UDP, _BTH, _DETH, _IMM, _ICRC = 8, 12, 8, 4, 4
_IPPROTO_UDP = 17
_DONT_FRAGMENT = 0x4000


def grh(sgid, dgid, payload, with_imm=False, hop_limit=1, traffic_class=0, flow_label=0):
    """The GRH of a UD message of `payload` bytes from GID `sgid` to `dgid` (16 bytes each)."""
    transport = _UDP + _BTH + _DETH + (_IMM if with_imm else 0) + payload + _ICRC
    if sgid.startswith(_IPV4_MAPPED) and dgid.startswith(_IPV4_MAPPED):
        header = struct.pack("!BBHHHBBH4s4s", 0x45, traffic_class, 20 + transport, 0, _DONT_FRAGMENT,
                             hop_limit, _IPPROTO_UDP, 0, sgid[12:], dgid[12:])
        checksum = _ip_checksum(header)
        return bytes(20) + header[:10] + struct.pack("!H", checksum) + header[12:]
    first = 6 << 28 | (traffic_class & 0xFF) << 20 | (flow_label & 0xFFFFF)
    return struct.pack("!IHBB16s16s", first, transport, _IPPROTO_UDP, hop_limit, sgid, dgid)


def _ip_checksum(header):
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
