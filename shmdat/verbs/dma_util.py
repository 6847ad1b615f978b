"""Device-access helpers of pyverbs.dma_util, for drivers that write
doorbells themselves. shm0 has no device registers: the functions exist so that
the modules which import them load, and a write is an ordinary store."""

import ctypes
import struct


def udma_to_dev_barrier():
    """Order memory writes before a doorbell: a Python call already has."""


def udma_from_dev_barrier():
    """Order reads after the device's writes: a Python call already has."""


def mmio_write64_as_be(addr, val):
    """Store `val` big-endian at `addr` (8 bytes)."""
    ctypes.memmove(addr, struct.pack(">Q", val), 8)


def mmio_write32_as_be(addr, val):
    """Store `val` big-endian at `addr` (4 bytes)."""
    ctypes.memmove(addr, struct.pack(">I", val), 4)
