"""DAT's header in front of the consumer's private data in every rdma_cm message.

rdma_cm pads private data with zeros to its field's size, and a reject may come
from the peer's consumer or from anyone else: the header's length recovers the
consumer's bytes, its presence says a consumer rejected (dapl does the same), and
its port is the active side's own (the CR's remote_port_qual).
"""

import struct

_HEADER = struct.Struct("<HHH")         # magic, length of the consumer's bytes, port
_MAGIC = 0xDA7C
HEADER_BYTES = _HEADER.size


def with_header(private_data, port=0):
    return _HEADER.pack(_MAGIC, len(private_data), port) + private_data


def split_header(data):
    """(consumer bytes, port), or None if `data` does not start with DAT's header."""
    if len(data) < _HEADER.size:
        return None
    magic, length, port = _HEADER.unpack_from(data)
    if magic != _MAGIC or _HEADER.size + length > len(data):
        return None
    return bytes(data[_HEADER.size:_HEADER.size + length]), port
