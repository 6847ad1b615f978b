"""Cross-memory attach: one copy between two processes' private memory.

Part of the hardware layer. ``process_vm_readv``/``process_vm_writev`` let a
process read or write another's memory when the kernel allows it (same uid,
dumpable, and the Yama ptrace policy). They carry sends out of, and RDMA into,
memory the consumer registered itself (an LMR over a numpy array), which is not
in a shared segment.
"""

import ctypes
import errno
import os

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PTRACER = 0x59616D61
_PR_SET_PTRACER_ANY = ctypes.c_ulong(-1).value


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


try:
    _readv = _libc.process_vm_readv
    _writev = _libc.process_vm_writev
    for _f in (_readv, _writev):
        _f.restype = ctypes.c_ssize_t
        _f.argtypes = [ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong,
                       ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.c_ulong]
except AttributeError:           # not Linux
    _readv = _writev = None


class CmaError(OSError):
    pass


def _yama_scope():
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None             # no Yama: the classic same-uid rule


def _has_cap_sys_ptrace():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) & (1 << 19))
    except OSError:
        pass
    return False


def status():
    """(usable, why): whether peers of this uid can reach this process's memory."""
    if _readv is None:
        return False, "process_vm_readv is not available on this system"
    scope = _yama_scope()
    if scope in (None, 0):
        return True, "same-uid processes may attach (no Yama restriction)"
    if scope == 1:
        return True, "Yama ptrace_scope=1: allowed after prctl(PR_SET_PTRACER_ANY)"
    if _has_cap_sys_ptrace():
        return True, f"Yama ptrace_scope={scope}, but this process has CAP_SYS_PTRACE"
    return False, (f"Yama ptrace_scope={scope} forbids cross-memory attach; "
                   "register memory with lmr_create(pz, nbytes) for remote access")


def allow_peers():
    """Let same-uid peers attach to this process (needed under Yama ptrace_scope=1)."""
    if _yama_scope() == 1:
        _libc.prctl(_PR_SET_PTRACER, _PR_SET_PTRACER_ANY, 0, 0, 0)


def _vectors(pairs):
    arr = (_Iovec * len(pairs))()
    for i, (addr, n) in enumerate(pairs):
        arr[i].base = addr
        arr[i].len = n
    return arr


def _call(fn, pid, local, remote):
    total = sum(n for _, n in local)
    if total == 0:
        return
    lv, rv = _vectors(local), _vectors(remote)
    done = fn(pid, lv, len(local), rv, len(remote), 0)
    if done < 0:
        err = ctypes.get_errno()
        raise CmaError(err, f"cross-memory attach to pid {pid} failed: {os.strerror(err)}")
    if done != total:
        raise CmaError(errno.EFAULT, f"cross-memory attach to pid {pid} moved {done} of {total} bytes")


def read(pid, local, remote):
    """Copy from (address, length) pairs in process pid into local (address, length) pairs."""
    _call(_readv, pid, local, remote)


def write(pid, local, remote):
    """Copy local (address, length) pairs into (address, length) pairs in process pid."""
    _call(_writev, pid, local, remote)
