"""tests/nic_verbs.py shaped as rdma-core's pyverbs package, for the seam's
SHMDAT_PYVERBS hook: `pyverbs.device`, `pyverbs.cmid`, ... are the stand-in's
modules, so the registry lists the shm0 device's port as ofa-v2-shm0-1 and
ia_open("ofa-v2-shm0-1") takes the path it takes for a NIC (seam._real_pyverbs). The
stand-in's event_fd is the package's (rdma-core's has none: DAT looks in /proc/self/fd)."""

import sys

from tests import nic_verbs

for _name in nic_verbs.__all__:
    if _name not in ("shm0dv", "event_fd"):     # not pyverbs modules
        sys.modules[f"{__name__}.{_name}"] = getattr(nic_verbs, _name)
event_fd = nic_verbs.event_fd
