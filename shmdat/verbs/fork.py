"""Fork support (pyverbs.fork). shm0 pins no pages: an MR's memory is a
shared mapping or is reached by process id (cross-memory attach), so a child's
copy-on-write cannot move it from under the device and fork needs nothing
done, as libibverbs says of kernels with the copy-on-write fix."""

from . import libibverbs_enums as e


def fork_init():
    """ibv_fork_init: nothing to do on shm0, so it never fails."""


def is_fork_initialized():
    """ibv_is_fork_initialized: IBV_FORK_UNNEEDED."""
    return e.IBV_FORK_UNNEEDED
