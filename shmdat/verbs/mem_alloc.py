"""Raw memory for MRs on addresses of your own (pyverbs.mem_alloc): libc's
posix_memalign, free, mmap, munmap and madvise, addresses as ints."""

import ctypes
import mmap as _mmap

from .base import PyverbsRDMAErrno

_libc = ctypes.CDLL(None, use_errno=True)
_libc.posix_memalign.argtypes = (ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t)
_libc.free.argtypes = (ctypes.c_void_p,)
_libc.free.restype = None
_libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long)
_libc.mmap.restype = ctypes.c_void_p
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)

_MAP_FAILED = ctypes.c_void_p(-1).value

PROT_READ_, PROT_WRITE_, PROT_EXEC_, PROT_NONE_ = (_mmap.PROT_READ, _mmap.PROT_WRITE,
                                                   _mmap.PROT_EXEC, 0)
MAP_PRIVATE_, MAP_SHARED_, MAP_ANONYMOUS_ = _mmap.MAP_PRIVATE, _mmap.MAP_SHARED, _mmap.MAP_ANONYMOUS
MAP_FIXED_, MAP_HUGETLB_ = 0x10, 0x40000           # Linux's values (the mmap module lacks them)


def posix_memalign(size, alignment=8):
    """posix_memalign, zeroed: the address. MemoryError if it fails."""
    ptr = ctypes.c_void_p()
    if _libc.posix_memalign(ctypes.byref(ptr), alignment, size):
        raise MemoryError(f"Failed to allocate {size} bytes aligned to {alignment}")
    ctypes.memset(ptr.value, 0, size)
    return ptr.value


def free(ptr):
    """free."""
    _libc.free(ptr)


def mmap(addr=0, length=100, prot=PROT_READ_ | PROT_WRITE_, flags=MAP_PRIVATE_ | MAP_ANONYMOUS_,
         fd=0, offset=0):
    """mmap: the address. MemoryError if it fails."""
    ptr = _libc.mmap(addr, length, prot, flags, fd, offset)
    if ptr == _MAP_FAILED:
        raise MemoryError("Failed to mmap memory")
    return ptr


def munmap(addr, length):
    """munmap. MemoryError if it fails."""
    if _libc.munmap(addr, length):
        raise MemoryError("Failed to munmap requested memory")


def madvise(addr, length, flags=4):                 # MADV_DONTNEED
    """madvise. PyverbsRDMAError with errno if it fails."""
    if _libc.madvise(addr, length, flags):
        raise PyverbsRDMAErrno("Failed to madvise memory", ctypes.get_errno())
